"""Issue 53 item 2: an LLM plays RAGEN's turns and actions, in the local and the served loop alike.

RAGEN (ragen/llm_agent/ctx_manager.py ``_parse_response``, es_manager.py ``_process_env_input``):
a reply's answer is split on ``||``, the first ``max_actions_per_turn`` actions are executed in
order (a purchase ends the turn: the rest are dropped), a reply without an action spends a turn
and none of the ``max_actions_per_traj`` actions, and the episode has ``max_turn`` turns.

The replies are scripted (a local OpenAI-compatible server): the same answers are played by the
local lanes (an :class:`OpenAIPolicy` object is a batch policy) and by the served loop
(``openai:scripted``), and the two run files must agree line for line.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from tests.helpers import readers_score_every_episode, run_episodes, run_lines, scripted_view
from webshop_gym.agents.turns import ENDED_OUT_OF_TURNS, EpisodeTurns, TurnRule, reply_actions
from webshop_gym.cli.app import main
from webshop_gym.evaluation.local import evaluate
from webshop_gym.protocols import Protocol, get_protocol

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

THINK = "<think>scripted</think>"


def _answer(actions: str) -> str:
    return f"{THINK}<answer>{actions}</answer>"


def every_rule(messages: list[dict]) -> str:
    """Two actions; no action; three (the third dropped); one; a purchase on the first of two."""
    query, turn, admissible = scripted_view(messages)
    if turn == 0:
        return _answer(f"search[{query}] || click[next >]")
    if turn == 1:
        return f"{THINK} I will look at this page again."  # no answer: a turn spent, no action
    if turn == 2:
        return _answer("click[< prev] || click[next >] || click[buy now]")
    if turn == 3:
        products = [a for a in admissible if re.fullmatch(r"click\[b[0-9a-z]{9}\]", a)]
        return _answer(products[0])
    return _answer("click[buy now] || click[back to search]")


def never_acts(messages: list[dict]) -> str:
    return f"{THINK}still thinking"


def searches_then_thinks(messages: list[dict]) -> str:
    query, turn, _ = scripted_view(messages)
    return _answer(f"search[{query}]") if turn == 0 else f"{THINK}still thinking"


def pages_back_and_forth(messages: list[dict]) -> str:
    query, turn, _ = scripted_view(messages)
    return _answer(f"search[{query}] || click[next >]" if turn == 0 else "click[< prev] || click[next >]")


@pytest.fixture(scope="module")
def real(real_dir):
    return real_dir


def _small(name: str, goals: int = 2) -> Protocol:
    data = copy.deepcopy(get_protocol(name).data)
    data["test"] = {"list": {"shuffle_seed": 233, "permutation_seed": 42}, "indices": {"range": [0, goals]}}
    data.pop("train", None)
    return Protocol(data, "")


def _run(answer, real_dir, tmp_path, name="ragen-eval", goals=2):
    """The same scripted replies played by the local lanes and by the served loop: (local, served) results."""
    from tests.openai_server import ChatServer
    from webshop_gym.agents.openai import OpenAIPolicy

    protocol = _small(name, goals)
    decoding = protocol.data["decoding"]  # the object decodes as the protocol, as the served string form does
    with ChatServer(answer=answer) as server:
        agent = OpenAIPolicy("scripted", base_url=server.url, prompt="think-answer", max_retries=0,
                             max_new_tokens=decoding["max_new_tokens"],
                             temperature=decoding["temperature"] if decoding["do_sample"] else 0.0)
        try:
            local = evaluate(agent, shop=str(real_dir), protocol=protocol, num_envs=2, out=tmp_path / "local.jsonl")
        finally:
            agent.close()
        served = evaluate("openai:scripted", shop=str(real_dir), protocol=protocol, base_url=server.url,
                          max_retries=0, concurrency=2, out=tmp_path / "served.jsonl")
    return local, served


def test_a_reply_is_split_on_the_separator_and_cut_at_the_actions_a_turn_carries():
    rule = TurnRule.of(get_protocol("ragen-eval").data)
    assert rule == TurnRule(10, 2, "||", "turn") and rule.splits
    assert reply_actions(_answer("search[a b] ||click[next >]|| click[buy now]"), "think-answer", rule) == [
        "search[a b]", "click[next >]"]
    assert reply_actions(_answer(" || click[x] || "), "think-answer", rule) == ["click[x]"]  # empty parts dropped
    assert reply_actions(f"{THINK} click[x]", "think-answer", rule) == []  # no answer: no action
    assert reply_actions(_answer("   "), "think-answer", rule) == []
    one = TurnRule.of(get_protocol("ragen-small").data)
    assert one == TurnRule(12, 1, "||", "turn") and one.splits  # base.yaml's action_sep applies to every config
    assert reply_actions(_answer("click[a] || click[b]"), "think-answer", one) == ["click[a]"]
    assert not TurnRule.of(get_protocol("verl-agent").data).splits
    turns = EpisodeTurns(rule)
    assert turns.reply(_answer("search[red shoes] || I am done"), "think-answer") and turns.playing
    first, model = turns.next_action(["search[<query>]"])
    assert (first.action, first.valid, model["response"], model["actions"]) == (
        "search[red shoes]", True, _answer("search[red shoes] || I am done"), ["search[red shoes]", "I am done"])
    second, model = turns.next_action(["click[back to search]"])
    assert not second.valid and model["part"] == 1 and "response" not in model  # played: an invalid action
    assert not turns.playing and not turns.out_of_turns


def test_ragen_turns_local_and_served_alike(real_dir, tmp_path):
    shown: list[tuple[int, list[str]]] = []

    def answer(messages):
        _, turn, admissible = scripted_view(messages)
        shown.append((turn, admissible))
        return every_rule(messages)

    local, served = _run(answer, real_dir, tmp_path)
    # the model sees the page after its turn's last action: after 'search || next >' the second results
    # page (it has '< prev'), the same page again after a reply without an action
    assert len(shown) == 2 * 2 * 5
    for turn, admissible in shown:
        assert ("click[< prev]" in admissible) == (turn > 0), (turn, admissible)
        assert ("click[next >]" in admissible) == (turn in (1, 2, 3))  # results page 2, an item page at turn 4
        assert ("click[buy now]" in admissible) == (turn == 4)
    assert run_lines(tmp_path / "local.jsonl") == run_lines(tmp_path / "served.jsonl")
    for result in (local, served):
        assert result["protocol_record"]["deviations"] == []
        assert result["protocol_record"]["fingerprint"] == local["protocol_record"]["fingerprint"]
    for head, steps in run_episodes(tmp_path / "local.jsonl").values():
        # turn 0: two actions; turn 1: none; turn 2: three, the third dropped; turn 3: one; turn 4: a purchase
        # on its first action, the second dropped
        assert head["turns"] == 5 and len(steps) == 6
        assert [s["action"].split("[")[0] + "[" + ("ASIN" if re.fullmatch(r"click\[b[0-9a-z]{9}\]", s["action"])
                                                   else s["action"].split("[", 1)[1]) for s in steps] == [
            "search[" + steps[0]["action"].split("[", 1)[1], "click[next >]", "click[< prev]", "click[next >]",
            "click[ASIN", "click[buy now]"]
        assert [(s["model"]["turn"], s["model"]["part"]) for s in steps] == [(0, 0), (0, 1), (2, 0), (2, 1), (3, 0),
                                                                             (4, 0)]
        assert steps[2]["model"]["actions"] == ["click[< prev]", "click[next >]"]  # the reply's actions as kept
        assert steps[5]["model"]["actions"] == ["click[buy now]", "click[back to search]"]
        assert [(t["turn"], t["after_step"]) for t in head["turns_without_action"]] == [(1, 2)]
        assert steps[-1]["terminated"] and not any(s["invalid_action"] for s in steps)
    for e in local["episodes_detail"]:
        assert e["purchased"] and e["steps"] == 6 and e["turns"] == 5
    assert [e["reward"] for e in local["episodes_detail"]] == [e["reward"] for e in served["episodes_detail"]]
    # the rewards are the env's: the run replays step for step in WebShopEnv
    assert main(["replay", str(tmp_path / "local.jsonl")]) == 0


def test_the_turn_cap_ends_an_episode_of_replies_without_an_action(real_dir, tmp_path):
    local, served = _run(never_acts, real_dir, tmp_path, goals=1)
    assert run_lines(tmp_path / "local.jsonl") == run_lines(tmp_path / "served.jsonl")
    (head, steps), = run_episodes(tmp_path / "served.jsonl").values()
    assert head["turns"] == 10 and steps == [] and len(head["turns_without_action"]) == 10
    assert [t["after_step"] for t in head["turns_without_action"]] == [0] * 10
    e, = served["episodes_detail"]
    assert (e["steps"], e["turns"], e["truncated"], e["purchased"], e["reward"]) == (0, 10, False, False, 0.0)
    assert e["ended"] == head["ended"] == ENDED_OUT_OF_TURNS  # the engine's step cap was not reached
    assert served["requests"] == 10
    readers_score_every_episode(tmp_path, [(True, 0.0, 0)])


def test_the_turn_cap_after_a_step_ends_the_episode_scored(real_dir, tmp_path):
    """One search, then replies without an action until the 10 turns are spent: ended after 1 step, scored 0."""
    local, served = _run(searches_then_thinks, real_dir, tmp_path, goals=1)
    assert run_lines(tmp_path / "local.jsonl") == run_lines(tmp_path / "served.jsonl")
    (head, steps), = run_episodes(tmp_path / "served.jsonl").values()
    assert head["turns"] == 10 and len(steps) == 1 and len(head["turns_without_action"]) == 9
    e, = served["episodes_detail"]
    assert (e["steps"], e["turns"], e["truncated"], e["purchased"], e["reward"]) == (1, 10, False, False, 0.0)
    assert e["ended"] == head["ended"] == ENDED_OUT_OF_TURNS and not steps[-1]["truncated"]
    readers_score_every_episode(tmp_path, [(True, 0.0, 1)])


def test_the_action_cap_ends_an_episode_mid_turn(real_dir, tmp_path):
    """Turns of two actions: the 9th action is the first of the 5th turn; the second is never played."""
    local, served = _run(pages_back_and_forth, real_dir, tmp_path, goals=1)
    assert run_lines(tmp_path / "local.jsonl") == run_lines(tmp_path / "served.jsonl")
    (head, steps), = run_episodes(tmp_path / "local.jsonl").values()
    assert head["turns"] == 5 and len(steps) == 9 and steps[-1]["truncated"]
    assert (steps[-1]["model"]["turn"], steps[-1]["model"]["part"]) == (4, 0)
    e, = local["episodes_detail"]
    assert (e["steps"], e["turns"], e["truncated"], e["reward"]) == (9, 5, True, 0.0)


def test_ragen_small_plays_one_action_a_turn_and_a_silent_reply_spends_a_turn(real_dir, tmp_path):
    """12 turns of one action: of 'a || b' only the first part is one action (RAGEN keeps the first 1)."""
    local, served = _run(every_rule, real_dir, tmp_path, name="ragen-small", goals=1)
    assert run_lines(tmp_path / "local.jsonl") == run_lines(tmp_path / "served.jsonl")
    (head, steps), = run_episodes(tmp_path / "local.jsonl").values()
    # base.yaml's separator splits every RAGEN reply; one action a turn keeps the first: of turn 0's
    # 'search[q] || click[next >]' the search, of turn 2's three actions 'click[< prev]' (no previous page on
    # the first results page: an invalid action, which spends one of the 9 actions, as RAGEN's env executes it)
    assert head["turns"] == 5 and [t["turn"] for t in head["turns_without_action"]] == [1]
    assert [s["action"].split("[")[0] for s in steps] == ["search", "click", "click", "click"]
    assert [s["action"] for s in steps][1:] == ["click[< prev]", steps[2]["action"], "click[buy now]"]
    assert [s["invalid_action"] for s in steps] == [False, True, False, False]
    assert [s["model"]["actions"] for s in steps][1:] == [["click[< prev]"], [steps[2]["action"]], ["click[buy now]"]]
    e, = local["episodes_detail"]
    assert (e["steps"], e["turns"], e["invalid_actions"], e["purchased"]) == (4, 5, 1, True)
    assert local["protocol_record"]["deviations"] == [] and served["protocol_record"]["deviations"] == []


def test_an_llm_on_ragen_eval_gets_the_protocols_own_fingerprint():
    p = get_protocol("ragen-eval")
    prompt = {"format": "think-answer", "history": None}
    played, deviations = p.played(prompt=prompt, decoding=p.data["decoding"])
    assert deviations == [] and played.definition() == p.definition()
    other, _ = get_protocol("ragen-512").played(prompt=prompt, decoding=get_protocol("ragen-512").data["decoding"])
    assert played.definition_digest() != other.definition_digest()
    assert get_protocol("ragen-small").played(prompt=prompt)[1] == []
    # function calls carry no reply text to split: one action a reply, recorded
    tools, deviations = p.played(prompt={"format": "tools", "history": None})
    assert deviations[-1].startswith("steps: every reply spends one of the 9 steps")
    assert tools.definition()["steps"]["actions_per_turn"] == 1


def test_eval_ragen_eval_through_the_cli(real_dir, tmp_path, capsys):
    from tests.openai_server import ChatServer

    out = tmp_path / "run.jsonl"
    figures = tmp_path / "figures.json"
    with ChatServer(answer=every_rule) as server:
        argv = ["eval", "--quiet", "--policy", "openai:scripted", "--base-url", server.url, "--shop", str(real_dir),
                "--protocol", "ragen-eval", "--seed", "123", "--shard", "0/256", "--max-retries", "0", "--out", str(out),
                "--json", str(figures)]
        assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "not its published setting" not in printed, printed  # the protocol's own setting: no deviation
    fingerprint = re.search(r"^protocol +ragen-eval, fingerprint ([0-9a-f]{16})", printed, re.M).group(1)
    result = json.loads(figures.read_text())
    assert result["protocol"]["deviations"] == []
    episodes = run_episodes(out)
    assert len(episodes) == 2 and all(h["turns"] == 5 and len(s) == 6 for h, s in episodes.values())
    header = json.loads(out.read_text().splitlines()[0])
    assert header["protocol"]["fingerprint"] == result["protocol"]["fingerprint"] == fingerprint
    # the fingerprint of the plan as the protocol defines it (what a rule policy's run of it records)
    from webshop_gym import load_shop
    from webshop_gym.evaluation.plan import prepare

    shop = load_shop(real_dir, progress=False)
    assert prepare(shop, protocol="ragen-eval", seed=123).record["fingerprint"] == fingerprint
    assert prepare(shop, protocol="ragen-512", seed=123).record["fingerprint"] != fingerprint


def test_the_viewer_rebuilds_each_turns_request(real_dir, tmp_path, default_shop):
    """The run viewer's prompt of an action is its turn's request, with the replies without an action in its history."""
    from webshop_gym.server import create_app

    from tests.openai_server import ChatServer

    protocol = _small("ragen-eval", 1)
    with ChatServer(answer=every_rule) as server:
        evaluate("openai:scripted", shop=str(real_dir), protocol=protocol, base_url=server.url, max_retries=0,
                 concurrency=1, out=tmp_path / "served.jsonl")
        sent = [body["messages"] for body in server.requests]
    (head, steps), = run_episodes(tmp_path / "served.jsonl").values()
    assert len(sent) == head["turns"] == 5
    app = create_app({"TESTING": True, "SHOP": default_shop, "RUNS": str(tmp_path), "SEED": 0, "MAX_SESSIONS": 2})
    try:
        client = app.test_client()
        for k, step in enumerate(steps):
            rebuilt = client.get(f"/runs/served/0/prompt/{k}")
            assert rebuilt.status_code == 200, rebuilt.get_data(as_text=True)
            assert rebuilt.get_json() == sent[step["model"]["turn"]], k
    finally:
        app.extensions["webshop_gym"].close()
        app.extensions["webshop_gym_runs"].close()
