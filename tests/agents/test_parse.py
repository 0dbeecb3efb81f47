"""Response grammar and parsers: malformed answers, normalisation, admissibility, closest mapping."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webshop_gym.agents import (
    ParsedAction,
    ThinkAnswerPrompt,
    VerlAgentPrompt,
    extract_tag,
    find_blocks,
    is_admissible,
    normalize_action,
    parse_batch,
    parse_detailed,
    parse_or_raise,
    parse_response,
)
from webshop_gym.agents.grammar import action_candidates, extract_prefixed, split_action
from webshop_gym.error import InvalidAction

ITEM = [
    "click[back to search]", "click[< prev]", "click[description]", "click[features]", "click[reviews]",
    "click[buy now]", "click[large]", "click[x-large]", "click[4 ounce (pack of 2)]", "click[28\" x 28\"]",
]
START = ["search[<query>]"]
RESULTS = ["click[back to search]", "click[next >]", "click[b0abc12345]", "click[b0xyz98765]"]


# -- grammar ----------------------------------------------------------------------------------


def test_blocks_closed_unclosed_orphan():
    blocks = find_blocks("<think>a</think><answer>b</answer>", "answer")
    assert [(b.content, b.closed) for b in blocks] == [("b", True)]
    assert [(b.content, b.closed) for b in find_blocks("<Answer >x", "answer")] == [("x", False)]
    orphan = find_blocks("<think>r</think> click[a] </answer>", "answer")
    assert [(b.content.strip(), b.closed) for b in orphan] == [("click[a]", False)]
    # a second opening tag ends the first block
    twice = find_blocks("<answer>a<answer>b</answer>", "answer")
    assert [(b.content, b.closed) for b in twice] == [("a", False), ("b", True)]
    # an unclosed block stops at the next known tag
    assert find_blocks("<think>r<answer>b</answer>", "think")[0].content == "r"


def test_extract_tag_prefers_last_closed_block():
    assert extract_tag("<answer>one</answer><answer>two</answer>", "answer").content == "two"
    assert extract_tag("<answer>one</answer><answer>cut off", "answer").content == "one"
    assert extract_tag("<answer>  </answer>", "answer") is None
    assert extract_tag("<ANSWER>\n  x \n</ ANSWER>", "answer").content.strip() == "x"


def test_action_grammar():
    assert split_action("Click [Buy Now]") == ("click", "Buy Now")
    assert split_action("click[a]b]") == ("click", "a]b")  # the reference's greedy argument
    assert split_action("push[x]") is None
    assert action_candidates("first click[a], then search[b c].") == [("click", "a"), ("search", "b c")]
    assert extract_prefixed("Thought: x\nAction: click[a]\nAction 2: click[b]", "action") == "click[b]"
    assert extract_prefixed("**Action:** click[a]", "action") == "** click[a]"


# -- parse: a table of malformed answers ----------------------------------------------------------

CASES = [
    # (response, admissible, fmt, expected action, valid, format_ok)
    ("<think>ok</think><answer>click[buy now]</answer>", ITEM, "think-answer", "click[buy now]", True, True),
    ("<think>ok</think>\n<answer>click[buy now]</answer>\n", ITEM, "think-answer", "click[buy now]", True, True),
    ("<THINK>ok</THINK><ANSWER>CLICK[BUY NOW]</ANSWER>", ITEM, "think-answer", "click[buy now]", True, True),
    ("<think>ok</think><answer> Click [Buy Now]. </answer>", ITEM, "think-answer", "click[buy now]", True, True),
    ("<think>ok</think><answer>click[buy now]", ITEM, "think-answer", "click[buy now]", True, False),
    ("click[large]</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("click[large]", ITEM, "think-answer", "click[large]", True, False),
    ("Sure! I would click[x-large] here.", ITEM, "think-answer", "click[x-large]", True, False),
    ("<answer>click[large]</answer><answer>click[buy now]</answer>", ITEM, "think-answer", "click[buy now]", True, False),
    ("<think>a</think><think>b</think><answer>click[large]</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<think>ok</think><answer>click[large]</answer> and more text", ITEM, "think-answer", "click[large]", True, False),
    ("<think>ok</think><answer>click[large] click[buy now]</answer>", ITEM, "think-answer", "click[buy now]", True, False),
    ("<answer>Buy Now</answer>", ITEM, "think-answer", "click[buy now]", True, False),
    ("<answer>click buy now</answer>", ITEM, "think-answer", "click[buy now]", True, False),
    ("<answer>`click[large]`</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<answer>\"click[large]\"</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<answer>click['large']</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<answer>click[large.]</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<answer>click[large];</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<answer>```\nclick[large]\n```</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<answer>Action: click[large]</answer>", ITEM, "think-answer", "click[large]", True, False),
    ("<answer>click[  4 ounce   (pack of 2) ]</answer>", ITEM, "think-answer", "click[4 ounce (pack of 2)]", True, False),
    ("<answer>click[28\" x 28\"]</answer>", ITEM, "think-answer", "click[28\" x 28\"]", True, False),
    ("<answer>click[medium]</answer>", ITEM, "think-answer", "click[medium]", False, False),
    ("<answer>click[B0ABC12345]</answer>", RESULTS, "think-answer", "click[b0abc12345]", True, False),
    ("<answer>search[Red Shoes]</answer>", START, "think-answer", "search[red shoes]", True, False),
    ("<answer>search[]</answer>", START, "think-answer", "search[]", False, False),
    ("<answer>search[   ]</answer>", START, "think-answer", "search[]", False, False),
    ("<answer>search[<query>]</answer>", START, "think-answer", "search[<query>]", False, False),
    ("<answer>search[red shoes]</answer>", RESULTS, "think-answer", "search[red shoes]", False, False),
    ("<think>I will search[bacon", START, "think-answer", "", False, False),
    ("", START, "think-answer", "", False, False),
    ("   \n ", ITEM, "think-answer", "", False, False),
    ("I have no idea.", ITEM, "think-answer", "I have no idea.", False, False),
    ("<think>ok</think><action>click[large]</action>", ITEM, "verl-agent", "click[large]", True, True),
    ("<think>ok</think><Action>click[Large]</Action>", ITEM, "verl-agent", "click[large]", True, True),
    ("<action>click[large]</action>", ITEM, "verl-agent", "click[large]", True, False),
    ("<think>ok</think><answer>click[large]</answer>", ITEM, "verl-agent", "click[large]", True, False),
    ("Thought: it fits\nAction: click[buy now]", ITEM, "react", "click[buy now]", True, True),
    ("thought: it fits\naction: Click[Buy Now].", ITEM, "react", "click[buy now]", True, True),
    ("Thought: x\nAction: click[large]\nAction: click[buy now]", ITEM, "react", "click[buy now]", True, False),
    ("click[buy now]", ITEM, "react", "click[buy now]", True, False),
    ("click[buy now]", ITEM, "plain", "click[buy now]", True, True),
]


@pytest.mark.parametrize(("text", "admissible", "fmt", "action", "valid", "format_ok"), CASES)
def test_malformed_answers(text, admissible, fmt, action, valid, format_ok):
    result = parse_detailed(text, admissible, fmt)
    assert (result.action, result.valid, result.format_ok) == (action, valid, format_ok), result
    assert parse_response(text, admissible, fmt) == (action, valid)
    if not valid:
        assert result.reason
        with pytest.raises(InvalidAction):
            parse_or_raise(text, admissible, fmt)
    else:
        assert result.reason == "" and not result.mapped


def test_thought_is_reported():
    assert parse_detailed("<think> fits </think><answer>click[large]</answer>", ITEM).thought == "fits"
    assert parse_detailed("Thought: fits\nAction: click[large]", ITEM, "react").thought == "fits"


def test_closest_only_when_asked():
    text = "<think>x</think><answer>click[larg]</answer>"
    assert parse_response(text, ITEM) == ("click[larg]", False)
    result = parse_detailed(text, ITEM, closest=True)
    assert (result.action, result.valid, result.mapped) == ("click[large]", True, True)
    # a search on a page without a search box maps to a click; the template is never chosen
    assert parse_response("<answer>search[b0abc12345]</answer>", RESULTS, closest=True) == ("click[b0abc12345]", True)
    assert parse_response("<answer>junk</answer>", START, closest=True) == ("junk", False)
    assert parse_response("", ITEM, closest=True) == ("", False)


def test_no_admissible_list_accepts_well_formed_actions():
    assert parse_response("<answer>click[anything]</answer>", None) == ("click[anything]", True)
    assert parse_response("<answer>search[]</answer>", None) == ("search[]", False)


def test_batch_and_unpacking():
    texts = ["<answer>click[large]</answer>", "<answer>nope</answer>", "<answer>search[x]</answer>"]
    actions, valids = parse_batch(texts, [ITEM, ITEM, START])
    assert actions == ["click[large]", "nope", "search[x]"] and valids == [True, False, True]
    action, valid = parse_detailed(texts[0], ITEM)
    assert (action, valid) == ("click[large]", True)
    assert isinstance(parse_detailed(texts[0], ITEM), ParsedAction)
    with pytest.raises(ValueError):
        parse_batch(texts, [ITEM])
    with pytest.raises(ValueError, match="fmt"):
        parse_response("x", ITEM, fmt="xml")


def test_prompt_objects_parse_with_their_format():
    assert ThinkAnswerPrompt().parse("<think>a</think><answer>click[large]</answer>", ITEM) == "click[large]"
    assert VerlAgentPrompt().parse_response("<think>a</think><action>click[large]</action>", ITEM) == ("click[large]", True)
    assert parse_response("<think>a</think><action>click[large]</action>", ITEM, fmt=VerlAgentPrompt()) == ("click[large]", True)
    with pytest.raises(InvalidAction, match="did you mean"):
        ThinkAnswerPrompt().parse("<answer>click[larg]</answer>", ITEM)


def test_normalize_and_admissible():
    assert normalize_action(" 'Click [Buy   Now]'. ") == ["click[buy now]"]
    assert normalize_action("search[a] then click[b]") == ["click[b]", "search[a]", "search[a] then click[b]"]
    assert is_admissible("search[x]", START) and not is_admissible("search[x]", RESULTS)
    assert not is_admissible("search[<your query>]", START)
    assert is_admissible("search[x]", ["search[<your query>]"])


# -- property tests ------------------------------------------------------------------------------

label_text = st.text(
    alphabet=st.characters(codec="ascii", categories=("L", "N", "Zs"), include_characters="-()&'x\"+,/"),
    min_size=1, max_size=30,
).map(lambda s: " ".join(s.split()).lower()).filter(
    lambda s: s and s[-1] not in ".,;:!?'\"" and s[0] not in "'\"" and not (s.startswith("<") and s.endswith(">"))
)
thoughts = st.text(alphabet=st.characters(codec="ascii", exclude_characters="<>[]"), max_size=60)


@st.composite
def noisy_answer(draw):
    labels = draw(st.lists(label_text, min_size=1, max_size=6, unique=True))
    admissible = [f"click[{label}]" for label in labels]
    target = draw(st.sampled_from(labels))
    name = draw(st.sampled_from(["click", "Click", "CLICK"]))
    space = draw(st.sampled_from(["", " "]))
    arg = draw(st.sampled_from([target, target.upper(), f"  {target} ", target.title()]))
    action = f"{name}{space}[{arg}]" + draw(st.sampled_from(["", ".", " .", "!", ","]))
    action = draw(st.sampled_from([action, f"'{action}'", f"`{action}`", f"**{action}**"]))
    open_tag = draw(st.sampled_from(["<answer>", "<ANSWER>", "< answer >", "<Answer>"]))
    close_tag = draw(st.sampled_from(["</answer>", "</ANSWER>", "</ answer>", ""]))
    think = draw(thoughts)
    pre = draw(st.sampled_from(["", f"<think>{think}</think>", f"<think>{think}</think>\n", f"<THINK>{think}</THINK> "]))
    return pre + open_tag + action + close_tag, admissible, f"click[{target}]"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(noisy_answer())
def test_noisy_answers_parse_to_the_intended_action(sample):
    text, admissible, expected = sample
    result = parse_detailed(text, admissible)
    assert result.valid, (text, result)
    # several labels can normalise to the same string only when they are equal
    assert result.action == expected


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200), st.lists(label_text, max_size=5), st.sampled_from(["think-answer", "verl-agent", "react", "plain"]))
def test_parser_is_total_and_consistent(text, labels, fmt):
    admissible = ["search[<query>]"] + [f"click[{label}]" for label in labels]
    result = parse_detailed(text, admissible, fmt)
    assert isinstance(result.action, str) and isinstance(result.valid, bool)
    assert result.valid == is_admissible(result.action, admissible)
    mapped = parse_detailed(text, admissible, fmt, closest=True)
    if mapped.mapped:
        assert mapped.valid and mapped.action in admissible and mapped.action != "search[<query>]"


@settings(max_examples=200, deadline=None)
@given(thoughts, st.sampled_from(ITEM))
def test_prompt_formats_round_trip(think, action):
    for prompt in (ThinkAnswerPrompt(), VerlAgentPrompt()):
        text = prompt.format_response(action, think)
        result = prompt.parse_detailed(text, ITEM)
        assert (result.action, result.valid) == (action, True)
        assert result.format_ok or not think.strip() or "<" in think
