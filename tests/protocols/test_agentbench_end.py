"""Issue 53 item 2: an LLM plays AgentBench's rule: a reply without an action ends the episode, reward 0.

AgentBench v0.2 (THUDM/AgentBench 9b7a46c, ``src/server/tasks/webshop/__init__.py`` lines 68-106):
each of 10 rounds asks the model once; a reply with no ``Action: search[...]``/``click[...]``
(lines 82-88) is appended to the history and ends the sample with reward 0 (lines 97-99) and status
``AGENT_VALIDATION_FAILED``, without a step of the env.

The replies are scripted (a local OpenAI-compatible server): the same answers are played by the
local lanes (an :class:`OpenAIPolicy` object is a batch policy) and by the served loop
(``openai:scripted``), through the one reading of replies of :mod:`webshop_gym.agents.turns`, and
the two run files must agree line for line.  The shipped AgentBench protocols need the full shop;
these tests play their rule on the real 1k shop (the same ``steps``, prompt and step cap).
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from tests.helpers import readers_score_every_episode, run_episodes, run_lines, scripted_view
from webshop_gym.agents.turns import ENDED_WITHOUT_ACTION, EpisodeTurns, TurnRule, reply_actions
from webshop_gym.cli.app import main
from webshop_gym.evaluation.local import evaluate
from webshop_gym.protocols import Protocol, definition, get_protocol
from webshop_gym.protocols.decoding import normalized
from webshop_gym.protocols.steps import steps_of

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")


def _react(action: str) -> str:
    return f"Thought:\nI think this is the next step.\n\nAction:\n{action}"


NO_ACTION = "Thought:\nI am not sure what to do here, so I will think about it more."


def _product(admissible: list[str]) -> str:
    return next(a for a in admissible if re.fullmatch(r"click\[b[0-9a-z]{9}\]", a))


def buys(messages: list[dict]) -> str:
    """A search, the first product, buy now."""
    query, turn, admissible = scripted_view(messages)
    return _react([f"search[{query}]", _product(admissible) if turn == 1 else "", "click[buy now]"][min(turn, 2)])


def stops_on_a_product_page(messages: list[dict]) -> str:
    """A search, the first product, then a reply without an action (then, were it asked again, a purchase)."""
    query, turn, admissible = scripted_view(messages)
    if turn == 0:
        return _react(f"search[{query}]")
    if turn == 1:
        return _react(_product(admissible))
    return NO_ACTION if turn == 2 else _react("click[buy now]")


def never_acts(messages: list[dict]) -> str:
    return NO_ACTION


def names_no_action(messages: list[dict]) -> str:
    """An ``Action:`` line that holds no search[...] or click[...]: AgentBench's regex finds no action."""
    return "Thought:\nThe page is loading.\n\nAction:\nwait for the page"


@pytest.fixture(scope="module")
def real(real_dir):
    return real_dir


def _on_the_1k_shop(name: str = "agentbench", goals: int = 2, steps: dict | None = None) -> dict:
    """The AgentBench protocol's data on the real 1k shop: its goals ``0 .. goals - 1``, every rule kept."""
    data = copy.deepcopy(get_protocol(name).data)
    ragen = get_protocol("ragen")
    data["shop"], data["goal_kind"] = copy.deepcopy(ragen.data["shop"]), ragen.goal_kind
    data["test"] = {"list": {"shuffle_seed": 233}, "indices": {"range": [0, goals]}}
    if steps is not None:
        data["steps"] = steps
    return data


def _run(answer, real_dir, tmp_path, goals=2, steps=None, tag=""):
    """The same scripted replies played by the local lanes and by the served loop: (local, served, requests)."""
    from tests.openai_server import ChatServer
    from webshop_gym.agents.openai import OpenAIPolicy

    protocol = Protocol(_on_the_1k_shop(goals=goals, steps=steps), "")
    with ChatServer(answer=answer) as server:
        agent = OpenAIPolicy("scripted", base_url=server.url, prompt="react", max_retries=0)
        try:
            local = evaluate(agent, shop=str(real_dir), protocol=protocol, num_envs=2,
                             out=tmp_path / f"local{tag}.jsonl")
        finally:
            agent.close()
        asked = len(server.requests)
        served = evaluate("openai:scripted", shop=str(real_dir), protocol=protocol, base_url=server.url,
                          max_retries=0, concurrency=2, out=tmp_path / f"served{tag}.jsonl")
        requests = (asked, len(server.requests) - asked)
    return local, served, requests


def test_agentbenchs_rule_reads_a_reply_as_one_action_or_none():
    for name in ("agentbench", "agentbench-dev"):
        rule = TurnRule.of(get_protocol(name).data)
        assert rule == TurnRule(None, 1, None, "end") and rule.splits
    assert not TurnRule.of(get_protocol("agentbench-fc").data).splits  # the FC release: a reply is a step
    rule = TurnRule.of(get_protocol("agentbench").data)
    assert reply_actions(_react("click[Buy Now]"), "react", rule) == ["click[Buy Now]"]
    assert reply_actions(_react("search[red shoes]"), "react", rule) == ["search[red shoes]"]
    assert reply_actions("Thought: go.\nAction: search[red shoes]", "react", rule) == ["search[red shoes]"]
    assert reply_actions(NO_ACTION, "react", rule) == []                   # no Action: line
    assert reply_actions(names_no_action([]), "react", rule) == []          # an Action: line with no action
    assert reply_actions(_react("search[]"), "react", rule) == []           # AgentBench's regex needs a keyword
    turns = EpisodeTurns(rule)
    assert turns.reply(_react("search[red shoes]"), "react") and turns.playing and not turns.ends
    parsed, model = turns.next_action(["search[<query>]"])
    assert (parsed.action, parsed.valid, model["turn"], model["part"]) == ("search[red shoes]", True, 0, 0)
    assert not turns.ends and not turns.out_of_turns
    assert not turns.reply(NO_ACTION, "react") and turns.ends and not turns.playing
    assert turns.silent(1) == {"turn": 1, "after_step": 1,
                               "model": {"response": NO_ACTION, "actions": [], "reason": "no action found"}}


def test_a_reply_without_an_action_ends_the_episode_local_and_served_alike(real, tmp_path):
    local, served, requests = _run(stops_on_a_product_page, real, tmp_path)
    assert run_lines(tmp_path / "local.jsonl") == run_lines(tmp_path / "served.jsonl")
    # three replies an episode and none after the one without an action (the script would buy at the 4th)
    assert requests == (2 * 3, 2 * 3)
    for head, steps in run_episodes(tmp_path / "local.jsonl").values():
        assert head["turns"] == 3 and head["ended"] == ENDED_WITHOUT_ACTION
        assert [s["action"].split("[")[0] for s in steps] == ["search", "click"]
        assert [(t["turn"], t["after_step"]) for t in head["turns_without_action"]] == [(2, 2)]
        assert head["turns_without_action"][0]["model"] == {"response": NO_ACTION, "actions": [],
                                                            "reason": "no action found"}
        assert not any(s["terminated"] or s["truncated"] or s["invalid_action"] for s in steps)
    for result in (local, served):
        assert result["protocol_record"]["deviations"] == []
        for e in result["episodes_detail"]:
            assert (e["reward"], e["success"], e["steps"], e["turns"], e["purchased"], e["truncated"], e["ended"]) == (
                0.0, False, 2, 3, False, False, ENDED_WITHOUT_ACTION)
    own = get_protocol("agentbench").definition()["steps"]
    assert steps_of(local["protocol_record"]["definition"]) == steps_of(served["protocol_record"]["definition"]) == own
    # the run's readers count these episodes as finished and scored (reward 0), not as cut before their end
    readers_score_every_episode(tmp_path, [(True, 0.0, 2)] * 2)


def test_a_first_reply_without_an_action_ends_the_episode_before_any_step(real, tmp_path):
    for answer, tag in ((never_acts, "never"), (names_no_action, "named")):
        local, served, requests = _run(answer, real, tmp_path, goals=1, tag=tag)
        assert requests == (1, 1)
        assert run_lines(tmp_path / f"local{tag}.jsonl") == run_lines(tmp_path / f"served{tag}.jsonl")
        (head, steps), = run_episodes(tmp_path / f"served{tag}.jsonl").values()
        assert steps == [] and head["turns"] == 1 and head["ended"] == ENDED_WITHOUT_ACTION
        assert [(t["turn"], t["after_step"]) for t in head["turns_without_action"]] == [(0, 0)]
        for result in (local, served):
            e, = result["episodes_detail"]
            assert (e["reward"], e["steps"], e["turns"], e["purchased"], e["truncated"]) == (0.0, 0, 1, False, False)


def test_an_episode_of_actions_plays_as_one_action_per_reply(real, tmp_path):
    """Replies that all carry an action: the same steps, rewards and pages as the one-action-per-reply rule."""
    local, served, _ = _run(buys, real, tmp_path)
    assert run_lines(tmp_path / "local.jsonl") == run_lines(tmp_path / "served.jsonl")
    plain, _, _ = _run(buys, real, tmp_path, steps={"unparsable": "step"}, tag="-step")
    mine, theirs = run_episodes(tmp_path / "local.jsonl"), run_episodes(tmp_path / "local-step.jsonl")
    assert mine.keys() == theirs.keys() and len(mine) == 2
    for key, (head, steps) in mine.items():
        assert "ended" not in head and head["turns"] == 3 and head["turns_without_action"] == []
        other = theirs[key][1]
        assert [s["action"] for s in steps] == [s["action"] for s in other]
        assert [(s["reward"], s["terminated"], s["truncated"], s["observation"]) for s in steps] == [
            (s["reward"], s["terminated"], s["truncated"], s["observation"]) for s in other]
        assert steps[-1]["terminated"] and steps[-1]["action"] == "click[buy now]"
    for e, f in zip(local["episodes_detail"], plain["episodes_detail"]):
        assert (e["reward"], e["steps"], e["purchased"]) == (f["reward"], f["steps"], True) and "ended" not in e
    assert [e["reward"] for e in local["episodes_detail"]] == [e["reward"] for e in served["episodes_detail"]]


def test_an_llm_on_agentbench_gets_the_protocols_own_fingerprint():
    for name in ("agentbench", "agentbench-dev"):
        p = get_protocol(name)
        greedy = normalized({"do_sample": False, "max_new_tokens": 256})
        played, deviations = p.played(prompt={"format": "react", "history": None}, decoding=greedy)
        # AgentBench fixes no decoding: the run's is recorded; every other field is the protocol's own
        assert deviations == [] and played.definition() == {**p.definition(), "decoding": greedy}
        assert played.definition()["steps"]["unparsable"] == "end"
        assert p.played(prompt={"format": "react", "history": None}) == (p, [])
        # function calls carry no reply text to read: one action a reply, recorded as a deviation
        tools, deviations = p.played(prompt={"format": "tools", "history": None})
        assert deviations[-1].startswith("steps: every reply spends one of the 10 steps")
        assert tools.definition()["steps"]["unparsable"] == "step"


@pytest.fixture
def agentbench_on_the_1k_shop(tmp_path, monkeypatch):
    """The shipped protocols with ``agentbench`` on the real 1k shop (its goals 0 and 1), every rule kept."""
    folder = tmp_path / "protocols"
    folder.mkdir()
    for name in definition.protocol_names():
        data = _on_the_1k_shop(goals=2) if name == "agentbench" else get_protocol(name).data
        (folder / f"{name}.json").write_text(json.dumps(data))
    for cached in (definition.protocol_names, definition._shipped, definition.alias_names):
        cached.cache_clear()
    monkeypatch.setattr(definition, "_data_dir", lambda: folder)
    yield
    monkeypatch.undo()
    for cached in (definition.protocol_names, definition._shipped, definition.alias_names):
        cached.cache_clear()


def test_eval_agentbench_through_the_cli(agentbench_on_the_1k_shop, real_dir, tmp_path, capsys):
    from tests.openai_server import ChatServer
    from webshop_gym import load_shop
    from webshop_gym.evaluation.plan import prepare

    out = tmp_path / "run.jsonl"
    figures = tmp_path / "figures.json"
    with ChatServer(answer=stops_on_a_product_page) as server:
        argv = ["eval", "--quiet", "--policy", "openai:scripted", "--base-url", server.url, "--shop", str(real_dir),
                "--protocol", "agentbench", "--max-retries", "0", "--out", str(out), "--json", str(figures)]
        assert main(argv) == 0
        assert len(server.requests) == 2 * 3
    printed = capsys.readouterr().out
    assert "not its published setting" not in printed, printed  # the protocol's own setting: no deviation
    fingerprint = re.search(r"^protocol +agentbench, fingerprint ([0-9a-f]{16})", printed, re.M).group(1)
    result = json.loads(figures.read_text())
    assert result["protocol"]["deviations"] == []
    header = json.loads(out.read_text().splitlines()[0])
    assert header["protocol"]["fingerprint"] == result["protocol"]["fingerprint"] == fingerprint
    episodes = run_episodes(out)
    assert len(episodes) == 2
    for head, steps in episodes.values():
        assert (head["turns"], len(steps), head["ended"]) == (3, 2, ENDED_WITHOUT_ACTION)
    # the fingerprint of the plan as the protocol defines it (what a rule policy's run of it records)
    shop = load_shop(real_dir, progress=False)
    own = prepare(shop, protocol="agentbench", prompt={"format": "react", "history": None},
                  decoding=header["protocol"]["played_decoding"]).record
    assert own["deviations"] == [] and own["fingerprint"] == fingerprint
    assert steps_of(own["definition"]) == get_protocol("agentbench").definition()["steps"]
