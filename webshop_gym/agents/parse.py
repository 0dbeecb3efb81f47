"""Parse model responses into WebShop actions, checked against the admissible actions.

:func:`parse_response` returns ``(action, valid)``; :func:`parse_detailed` returns a
:class:`ParsedAction` with the reasons; :func:`parse_batch` does a batch.  The rules, in order:

1. **Extraction** by format (``fmt``):

   * ``think-answer``: the ``<answer>`` block; ``verl-agent``: the ``<action>`` block (tag rules
     in :mod:`.grammar`: any case, white space in tags, missing closing tag, several blocks ->
     the last complete one).  With no block, the whole response without its ``<think>`` block.
   * ``react``: the text after the last ``Action:`` line prefix (on the next non-blank line when
     the prefix ends its line, AgentBench's layout); else the whole response.
   * ``plain``: the whole response.

2. **Normalisation** of the extracted text: strip white space, code fences, wrapping quotes,
   backticks and ``*``; drop a leading ``Action:``/``Answer:``; drop punctuation after the last
   ``]``.  The action name is matched case-insensitively (``Click [Buy Now]``); the argument
   is stripped, its inner white space collapsed and lower-cased (the env lower-cases it too).
   When the text is not one action, every ``search[...]``/``click[...]`` written inside it is a
   candidate, the last first.  Without brackets, ``click buy now`` / ``search: red shoes`` and a
   bare clickable label (``Buy Now``) are read as that action.

3. **Admissibility**: an action is valid when it is in ``admissible``; the template
   ``search[<query>]`` (any ``search[<...>]``) in the list admits every search with a non-empty
   argument that is not itself a ``<placeholder>``.  When a click argument is not admissible as
   written, the same argument without trailing punctuation or wrapping quotes is tried.
   ``admissible=None`` admits every well-formed action.

4. **Closest** (only when ``closest=True``): an action that is still not admissible is replaced
   by the admissible action most similar to it (``difflib.SequenceMatcher`` ratio over the
   action strings, the first on ties; the search template is never chosen).  The result is
   valid and ``mapped`` is True.  An action longer than :data:`CLOSEST_CHARS` characters (or twice
   the longest admissible action, if that is more) is compared by its start, cut there: the ratio
   costs time in proportion to the product of both lengths, and no admissible action is that long.

Every step runs in time linear in the response's length (issue 46; ``benchmarks/action_parse.py``
times each format on adversarial answers of 100,000 characters).

An invalid result still carries an action string (the best candidate, else the stripped text,
``""`` when nothing is left) so the env can judge it: usually an invalid action (reward 0, one
step used), but the env follows the reference and also runs a ``search[...]`` on pages whose
admissible list has no search template.  ``format_ok`` says whether the response's *structure*
followed its format strictly (exactly one closed ``<think>`` block then one closed answer block
holding one action, nothing else around them; for ``react`` exactly one ``Action:`` line); the
action inside is normalised either way.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from webshop_gym.agents import grammar
from webshop_gym.error import InvalidAction, close_match, expect_one_of

__all__ = [
    "FORMATS",
    "ParsedAction",
    "answer_text",
    "is_admissible",
    "normalize_action",
    "parse_batch",
    "parse_detailed",
    "parse_or_raise",
    "parse_response",
]

FORMATS = ("think-answer", "verl-agent", "react", "plain")
_ANSWER_TAG = {"think-answer": "answer", "verl-agent": "action"}
_TEMPLATE = re.compile(r"^search\[<[^>]*>\]$")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
"""A code fence around an answer (the rule; :func:`_unfence` applies it in linear time)."""
_FENCE_OPEN = re.compile(r"```[a-zA-Z]*\s*")
_LEADING = re.compile(r"^(?:action|answer|final answer)\s*[:：]\s*", re.IGNORECASE)
_BARE = re.compile(r"^(search|click)\s*(?:[:：]\s*|\s+)(.+)$", re.IGNORECASE | re.DOTALL)
_WRAP = "\"'`*“”‘’"
_TRAILING = ".,;:!?。"


@dataclass(frozen=True)
class ParsedAction:
    """The outcome of parsing one response.

    Attributes:
        action: the action string to send to the env (canonical when one was found).
        valid: whether ``action`` is admissible.
        format_ok: whether the response followed its format strictly.
        mapped: whether ``action`` was replaced by the closest admissible action.
        reason: why the response is not valid (``""`` when it is).
        thought: the ``<think>`` block or ``Thought:`` text, when present.
    """

    action: str
    valid: bool
    format_ok: bool = False
    mapped: bool = False
    reason: str = ""
    thought: str | None = None

    def __iter__(self):  # ``action, valid = parse_detailed(...)``
        return iter((self.action, self.valid))


def _format_name(fmt) -> str:
    name = getattr(fmt, "name", fmt)
    expect_one_of("fmt", name, FORMATS)
    return name


def _unfence(text: str) -> str:
    r"""``_FENCE.sub("", text)`` of a stripped text, in linear time.

    ``re.sub`` tries ``\s*```$`` at every offset of a run of white space, scanning the rest of
    the run each time (quadratic).  In a stripped text the opening fence can only match at the
    start, and the closing one is the final three backticks with the white space before them
    (not reaching back into the opening match).
    """
    opening = _FENCE_OPEN.match(text)
    if opening is not None:
        text = text[opening.end() :]
    if text.endswith("```"):
        text = text[:-3].rstrip()
    return text


def _clean(text: str) -> str:
    text = text.strip()
    text = _unfence(text).strip()
    for _ in range(3):
        before = text
        text = text.strip().strip(_WRAP).strip()
        text = _LEADING.sub("", text)
        if "]" in text and not text.endswith("]"):
            tail = text[text.rindex("]") + 1 :]
            if tail.strip(_TRAILING + _WRAP + " \t\r\n") == "":
                text = text[: text.rindex("]") + 1]
        if text == before:
            break
    return text


def _canonical_arg(arg: str) -> str:
    return " ".join(arg.split()).lower()


def normalize_action(text: str) -> list[str]:
    """Candidate actions written in ``text``, best first, in canonical form.

    >>> normalize_action(' "Click [Buy Now]." ')
    ['click[buy now]']
    >>> normalize_action("I would search[red shoes] and then click[b0abc]")
    ['click[b0abc]', 'search[red shoes]']
    >>> normalize_action("click[a] or click[b]")
    ['click[b]', 'click[a]', 'click[a] or click[b]']
    """
    text = _clean(text)
    out: list[str] = []
    whole = grammar.split_action(text)
    greedy = None if whole is None else f"{whole[0]}[{_canonical_arg(whole[1])}]"
    # The whole text as one action comes first, unless its argument holds brackets: then the
    # actions written inside it do (``search[a] then click[b]``), and it comes last.
    if greedy is not None and not any(c in whole[1] for c in "[]"):
        out.append(greedy)
    for name, arg in reversed(grammar.action_candidates(text)):
        action = f"{name}[{_canonical_arg(arg)}]"
        if action not in out:
            out.append(action)
    if greedy is not None and greedy not in out:
        out.append(greedy)
    if not out:
        bare = _BARE.match(text)
        if bare is not None and "\n" not in bare.group(2).strip():
            out.append(f"{bare.group(1).lower()}[{_canonical_arg(bare.group(2).strip(_WRAP + _TRAILING))}]")
    return out


def _template(admissible: Sequence[str]) -> bool:
    return any(_TEMPLATE.match(a) for a in admissible)


def is_admissible(action: str, admissible: Sequence[str] | None) -> bool:
    """Whether a canonical action is admissible (the search template admits any real query)."""
    whole = grammar.split_action(action)
    if whole is None:
        return False
    name, arg = whole
    if admissible is None:
        return bool(arg.strip())
    if name == "search":
        query = arg.strip()
        if not query or (query.startswith("<") and query.endswith(">")):
            return False
        return _template(admissible) or action in admissible
    return action in admissible


def _variants(action: str) -> list[str]:
    """The action with its argument's trailing punctuation / wrapping quotes removed."""
    whole = grammar.split_action(action)
    if whole is None:
        return []
    name, arg = whole
    out = []
    for stripped in (arg.rstrip(_TRAILING).strip(), arg.strip(_WRAP).strip(), arg.strip(_WRAP + _TRAILING).strip()):
        if stripped and stripped != arg:
            out.append(f"{name}[{stripped}]")
    return out


CLOSEST_CHARS = 1000
"""The longest start of an action that ``closest=True`` compares (see rule 4)."""


def _closest(query: str, admissible: Sequence[str]) -> str | None:
    options = [a for a in admissible if not _TEMPLATE.match(a)]
    if options:
        query = query[: max(CLOSEST_CHARS, 2 * max(map(len, options)))]
    best, best_score = None, -1.0
    for option in options:
        score = difflib.SequenceMatcher(None, query, option, autojunk=False).ratio()
        if score > best_score:
            best, best_score = option, score
    return best


def _extract(text: str, fmt: str) -> tuple[str | None, bool, str | None]:
    """(extracted text or None, format_ok, thought)."""
    if fmt in _ANSWER_TAG:
        tag = _ANSWER_TAG[fmt]
        tags = grammar.find_tags(text)  # once: both kinds of block are read from them
        thinks = grammar.find_blocks(text, "think", tags)
        answers = grammar.find_blocks(text, tag, tags)
        think = grammar.choose_block(thinks)
        thought = think.content.strip() if think is not None else None
        block = grammar.choose_block(answers)
        if block is None:
            if thinks and not any(b.closed for b in thinks):
                return None, False, thought  # the response ended inside <think>
            rest = text
            if think is not None and think.closed:
                rest = text[think.end :]
            rest = grammar.strip_tags(rest)
            return (rest if rest.strip() else None), False, thought
        format_ok = (
            len(thinks) == 1 and thinks[0].closed and len(answers) == 1 and answers[0].closed
            and thinks[0].end <= answers[0].start
            and not text[: thinks[0].start].strip() and not text[answers[0].end :].strip()
            and not text[thinks[0].end : answers[0].start].strip()
        )
        return block.content, format_ok, thought
    if fmt == "react":
        found = grammar.extract_prefixed(text, "action")
        thought = grammar.extract_prefixed(text, "thought")
        thought = thought.strip() if thought else None
        if found is None:
            return (text if text.strip() else None), False, thought
        format_ok = len(re.findall(r"(?im)^[ \t>*_#-]*action\s*(?:\d+\s*)?[:：]", text)) == 1
        return found, format_ok, thought
    return (text if text.strip() else None), True, None


def answer_text(text: str, fmt="think-answer") -> str | None:
    """The text of a response's answer, or ``None`` when the response holds none.

    ``think-answer`` and ``verl-agent``: the content of the answer block (``<answer>``,
    ``<action>``; the tag rules of rule 1); ``react``: the text after the last ``Action:`` line
    prefix; ``plain``: the whole response.  Unlike rule 1 there is no fallback to the rest of the
    response: a protocol whose replies are turns (:mod:`webshop_gym.agents.turns`) reads a reply
    without its format's answer as a reply that carries no action.

    >>> answer_text("<think>two steps</think><answer>search[red shoes] || click[next >]</answer>")
    'search[red shoes] || click[next >]'
    >>> answer_text("I would search for red shoes.") is None
    True
    """
    fmt = _format_name(fmt)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if fmt in _ANSWER_TAG:
        block = grammar.choose_block(grammar.find_blocks(text, _ANSWER_TAG[fmt]))
        found = None if block is None else block.content
    elif fmt == "react":
        found = grammar.extract_prefixed(text, "action")
    else:
        found = text
    return found if found is not None and found.strip() else None


def parse_detailed(
    text: str,
    admissible: Sequence[str] | None,
    fmt="think-answer",
    closest: bool = False,
) -> ParsedAction:
    """Parse one response (rules in the module docstring).

    Args:
        text: the model's response.
        admissible: the admissible actions (``info["valid_actions"]``), or None to admit every
            well-formed action.
        fmt: ``think-answer``, ``verl-agent``, ``react`` or ``plain`` (or a prompt object with
            that ``name``).
        closest: map an inadmissible action to the closest admissible one.

    Example:
        >>> parse_detailed("<think>fits</think><ANSWER>Click[Buy Now].</ANSWER>", ["click[buy now]"])
        ParsedAction(action='click[buy now]', valid=True, format_ok=True, mapped=False, reason='', thought='fits')
    """
    fmt = _format_name(fmt)
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    extracted, format_ok, thought = _extract(text, fmt)
    if extracted is None:
        candidates: list[str] = []
        fallback = ""
    else:
        candidates = normalize_action(extracted)
        fallback = _clean(extracted)
    if format_ok and fmt in _ANSWER_TAG:  # the answer block must hold exactly one action
        cleaned = _clean(extracted)
        format_ok = grammar.split_action(cleaned) is not None and len(grammar.action_candidates(cleaned)) <= 1
    chosen = None
    for candidate in candidates:
        for option in (candidate, *_variants(candidate)):
            if is_admissible(option, admissible):
                chosen = option
                break
        if chosen is not None:
            break
    if chosen is not None:
        return ParsedAction(chosen, True, format_ok, False, "", thought)
    action = candidates[0] if candidates else fallback
    if not candidates:
        reason = "no action found" if extracted is None or not fallback else "no search[...] or click[...] action found"
        if admissible is not None and fallback:
            label = _canonical_arg(fallback.strip(_WRAP + _TRAILING))
            if f"click[{label}]" in admissible:  # a bare clickable label
                return ParsedAction(f"click[{label}]", True, False, False, "", thought)
    elif grammar.split_action(action)[0] == "search" and not grammar.split_action(action)[1].strip():
        reason = "empty search"
    elif re.match(r"^search\[<.*>\]$", action):
        reason = "the search template's placeholder, not a query"
    else:
        reason = "not admissible"
    if closest and admissible and (action or fallback):
        target = _closest(action or fallback, admissible)
        if target is not None:
            return ParsedAction(target, True, format_ok, True, "", thought)
    return ParsedAction(action, False, format_ok, False, reason, thought)


def parse_response(
    text: str,
    admissible: Sequence[str] | None,
    fmt="think-answer",
    closest: bool = False,
) -> tuple[str, bool]:
    """Parse one response into ``(action, valid)`` (see :func:`parse_detailed`).

    >>> parse_response("<think>ok</think><answer>click[buy now]</answer>", ["click[buy now]"])
    ('click[buy now]', True)
    >>> parse_response("<answer>click[large]</answer>", ["click[x-large]", "click[buy now]"], closest=True)
    ('click[x-large]', True)
    """
    result = parse_detailed(text, admissible, fmt, closest)
    return result.action, result.valid


def parse_batch(
    texts: Sequence[str],
    admissible: Sequence[Sequence[str] | None] | None,
    fmt="think-answer",
    closest: bool = False,
) -> tuple[list[str], list[bool]]:
    """Parse a batch: ``(actions, valids)``, one entry per response.

    ``admissible`` holds one list per response (or None for no check at all).
    """
    if admissible is None:
        admissible = [None] * len(texts)
    if len(admissible) != len(texts):
        raise ValueError(f"expected one admissible list per response ({len(texts)}), got {len(admissible)}")
    results = [parse_detailed(t, a, fmt, closest) for t, a in zip(texts, admissible, strict=True)]
    return [r.action for r in results], [r.valid for r in results]


def parse_or_raise(text: str, admissible: Sequence[str] | None, fmt="think-answer", closest: bool = False) -> str:
    """Return the admissible action of a response or raise :class:`InvalidAction` saying why."""
    result = parse_detailed(text, admissible, fmt, closest)
    if not result.valid:
        shown = text if len(text) <= 200 else text[:200] + "..."
        hint = ""
        if admissible:

            match = close_match(result.action, admissible)
            hint = f"; did you mean {match!r}?" if match else ""
        raise InvalidAction(f"{result.reason or 'invalid'}: got {result.action!r} from response {shown!r}{hint}")
    return result.action
