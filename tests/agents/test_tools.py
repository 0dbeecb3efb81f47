"""`eval --prompt tools`: a tool-calling model is evaluated as the TRL environment trained it (issue 29)."""

from __future__ import annotations

import ast
import json
import re

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer, ToolCalls  # noqa: E402
from webshop_gym.agents.tools import TASK_PROMPT, call_action, tool_schemas  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.integrations.trl import InadmissibleAction, WebShopToolEnv  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402

GOAL = 0


def _labels(text: str) -> list[str]:
    found = re.search(r"click\(label\) with label one of (\[.*?\])", text)
    return json.loads(found.group(1)) if found else []


def _script(messages):
    """search the instruction, a label no page has, then open the first product and buy it (two calls at once)."""
    turn = sum(m["role"] == "assistant" for m in messages)
    if turn == 0:
        instruction = re.search(r"Instruction: (.*)", messages[0]["content"]).group(1)
        return ToolCalls([("search", {"query": instruction.split(", and price")[0] + "\n"})], content="Let me search.")
    if turn == 1:
        return ToolCalls([("click", {"label": "Lowest Price Ever"})])
    products = [x for x in _labels(messages[-1]["content"]) if re.fullmatch(r"b[0-9a-z]{9}", x)]
    return ToolCalls([("click", {"label": products[0]}), ("click", {"label": "buy now"})])


def _trl_rollout(calls: list[tuple[str, dict]]) -> tuple[str, list[str], float]:
    """The same calls through the TRL environment: reset's text, each tool message's content, the reward."""
    env = WebShopToolEnv(split=None)
    first = env.reset(goal_index=GOAL)
    contents = []
    for name, arguments in calls:
        try:
            contents.append(str(getattr(env, name)(**arguments)))
        except InadmissibleAction as exc:  # TRL 1.16 turns a failed tool into {"error": str(exc)}
            contents.append(str({"error": str(exc)}))
    return first, contents, env.get_reward()


def test_the_tool_schemas_are_the_ones_trl_builds_from_the_environment():
    utils = pytest.importorskip("transformers.utils", reason="pip install 'webshop-gym[trl]'")
    built = [utils.get_json_schema(WebShopToolEnv.search), utils.get_json_schema(WebShopToolEnv.click)]
    assert built == tool_schemas(returns=True)
    assert all("return" not in t["function"] for t in tool_schemas())  # the API's schema


def test_an_eval_episode_is_the_trl_rollout_of_the_same_calls(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    with ChatServer(answer=_script) as server:
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--prompt", "tools",
                     "--num-goals", "1", "--out", str(out), "--json", str(tmp_path / "r.json"),
                     "--quiet"]) == 0
        bodies = list(server.requests)
    # every request offers the two tools; the last request holds the whole conversation
    assert all(b["tools"] == tool_schemas() and "stop" not in b for b in bodies)
    conversation = bodies[-1]["messages"]
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
             for m in conversation if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    calls += _script(conversation).calls  # the last answer (two calls), which no later request holds
    first, contents, reward = _trl_rollout(calls)
    assert conversation[0] == {"role": "user", "content": TASK_PROMPT + first}
    tool_messages = [m for m in conversation if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == contents[: len(tool_messages)]
    assert ast.literal_eval(tool_messages[1]["content"])["error"].startswith(
        "click('Lowest Price Ever') is not admissible on this page (invalid action 1; step 2 of 15)")
    assert all(m["tool_call_id"].startswith("call_") and m["name"] in ("search", "click") for m in tool_messages)
    episode = read_log(out).episodes[0]
    assert episode.steps[-1]["reward"] == reward and episode.steps[-1]["terminated"]
    assert [s["action"] for s in episode.steps] == [call_action(n, a)[0] for n, a in calls]
    assert [s["invalid_action"] for s in episode.steps] == [False, True, False, False]
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["requests"] == len(bodies) == 3 and result["score"] == pytest.approx(100 * reward)
    capsys.readouterr()


def test_an_answer_without_a_tool_call_is_an_invalid_action_and_the_episode_goes_on(tmp_path, capsys):
    def answer(messages):
        turn = sum(m["role"] == "assistant" for m in messages)
        if turn == 0:
            return "I would like to think first."
        if turn == 1:
            return ToolCalls([("search", {"q": "shoes"})])  # the wrong argument name
        if turn == 2:
            return ToolCalls([("checkout", {"label": "now"})])  # no such tool
        return ToolCalls([("search", {"query": "shoes"})])

    out = tmp_path / "run.jsonl"
    with ChatServer(answer=answer) as server:
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--prompt", "tools",
                     "--num-goals", "1", "--max-steps", "4", "--out", str(out), "--quiet"]) == 0
        conversation = server.requests[-1]["messages"]
    steps = read_log(out).episodes[0].steps
    assert [s["invalid_action"] for s in steps] == [True, True, True, False]
    assert [s["model"]["reason"] for s in steps][:3] == [
        "no tool call", "bad tool call: search() takes exactly one argument, 'query'; got ['q']",
        "bad tool call: Tool checkout not found."]
    assert conversation[2] == {"role": "user", "content": "No tool was called. Admissible actions: search(query)"}
    assert conversation[4]["role"] == "tool" and "takes exactly one argument" in conversation[4]["content"]
    assert conversation[6]["content"] == str({"error": "Tool checkout not found."})
    capsys.readouterr()


def test_tools_need_a_served_model(capsys):
    assert main(["eval", "--policy", "rule", "--prompt", "tools", "--num-goals", "1"]) == 2
    assert "--prompt tools needs a served model" in capsys.readouterr().err
