"""WebShop as a native verifiers 0.4 environment, run with verifiers' own code (``vf-eval``, its loaders).

verifiers 0.4 needs mcp 2 and OpenEnv 0.10 needs mcp < 2, so the two extras live in different
environments; these tests skip where verifiers is missing (the project's main environment) and run
in one made with ``pip install -e '.[dev,verifiers]' -e environments/webshop_verifiers``
(docs/training.md; the second distribution ships the module the id ``webshop-verifiers`` names).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_server import ChatServer, ToolCalls, scripted_tool_calls
from webshop_gym import WebShopEnv
from webshop_gym.agents.prompts import Turn, admissible_actions, make_prompt

ROOT = Path(__file__).resolve().parents[2]
VERIFIERS_MISSING = ("verifiers is not installed here: it goes in an environment of its own, without "
                     "webshop-gym[openenv] (pip install -e '.[dev,verifiers]' -e environments/webshop_verifiers; "
                     "docs/training.md)")


def require_verifiers():
    pytest.importorskip("verifiers.v1", reason=VERIFIERS_MISSING)


def test_without_verifiers_the_import_names_the_extra():
    code = (
        "import sys; sys.modules['verifiers'] = None\n"
        "try:\n    import webshop_gym.integrations.verifiers\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.startswith("DependencyNotInstalled ")
    assert "pip install webshop-verifiers" in out and "webshop-gym[verifiers]" in out and "mcp" in out


# -- with verifiers -----------------------------------------------------------------------------------


def test_the_plugin_id_resolves_to_our_taskset_env_and_the_null_harness_on_a_local_runtime():
    require_verifiers()
    import verifiers.v1 as vf

    from webshop_gym.integrations.verifiers import WebShopTaskset, WebShopVerifiersEnv

    assert vf.environment_class("webshop-verifiers") is WebShopVerifiersEnv
    assert vf.import_taskset("webshop-verifiers").WebShopTaskset is WebShopTaskset
    config = vf.resolve_env_config({"taskset": {"id": "webshop-verifiers"}})
    assert config.player.harness.id == "null" and config.player.runtime.type == "subprocess"
    assert config.agent_harnesses() == {"player": config.player.harness}


def test_tasks_are_the_split_s_goals_or_the_given_goal_indices(default_shop):
    require_verifiers()
    from webshop_gym.error import GoalNotFound
    from webshop_gym.integrations.verifiers import load_environment

    env = load_environment(split="test", limit=3)
    tasks = list(env.taskset)
    assert [t.data.goal_index for t in tasks] == [0, 1, 2]
    assert [t.data.instruction for t in tasks] == [default_shop.goals.instruction[i] for i in range(3)]
    assert tasks[0].key == "webshop-goal-0" and tasks[0].data.prompt is None
    assert tasks[0].data.system_prompt == make_prompt("think-answer").system
    train = list(load_environment(split="train", limit=1).taskset)
    assert train[0].data.goal_index == default_shop.goals.split_range("train").start
    picked = list(load_environment(goal_indices=[7, 3]).taskset)
    assert [t.data.goal_index for t in picked] == [7, 3]
    assert list(load_environment(format="verl-agent", limit=1).taskset)[0].data.system_prompt is None
    with pytest.raises(GoalNotFound, match=r"goal_indices \[99999\] are outside the goal set"):
        list(load_environment(goal_indices=[1, 99999]).taskset)
    with pytest.raises(ValueError, match="format"):
        load_environment(format="json")


@pytest.mark.parametrize("fmt", ["think-answer", "tools"])
def test_a_task_built_with_other_shop_settings_is_refused_before_the_model_is_called(fmt):
    require_verifiers()
    import asyncio

    from webshop_gym.error import InvalidArgument
    from webshop_gym.integrations.verifiers import load_environment

    human = list(load_environment(human_goals=True, goal_indices=[3], format=fmt).taskset)[0]
    env = load_environment(format=fmt, limit=1)  # synthetic goals: goal 3's instruction differs
    assert human.data.instruction != list(load_environment(goal_indices=[3]).taskset)[0].data.instruction
    with pytest.raises(InvalidArgument, match=r"is not goal 3's in this env's goal set .*same shop, goals, "
                                              r"human_goals and price_seed"):
        asyncio.run(env.run(human, None))  # no agents: it must fail before any model call


def _traces(run_root: Path) -> list[dict]:
    """The agent traces of a run's episodes (``traces.jsonl`` holds one episode a line)."""
    files = list(run_root.glob("*/traces.jsonl"))
    assert len(files) == 1, files
    episodes = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    assert all(e["ok"] and not e["errors"] and len(e["traces"]) == 1 for e in episodes), episodes
    return [e["traces"][0] for e in episodes]


def _wire(messages: list[dict]) -> list[tuple[str, str]]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content)
        out.append((m["role"], content or ""))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["think-answer", "react"])
def test_vf_eval_plays_episodes_whose_rewards_and_conversations_are_webshop_env_s(tmp_path, default_shop, fmt):
    require_verifiers()
    vf_eval = Path(sys.executable).with_name("vf-eval")
    with ChatServer(models=["scripted"]) as server:
        command = [str(vf_eval), "webshop-verifiers", "-m", "scripted", "--client.base-url", server.url,
                   "--no-push", "--no-rich", "-n", "2", "-r", "1",
                   "-o", str(tmp_path / "runs"), "--env.taskset.format", fmt]
        done = subprocess.run(command, capture_output=True, text=True, timeout=400, cwd=tmp_path, env=dict(os.environ))
        assert done.returncode == 0, done.stderr[-3000:]
        requests = list(server.requests)
        answers = [r["content"] for r in server.responses]
    traces = _traces(tmp_path / "runs")
    assert sorted(t["task"]["data"]["goal_index"] for t in traces) == [0, 1]
    assert requests and all(r.get("stream") is True for r in requests)  # verifiers' proxy streams
    prompt = make_prompt(fmt)
    for trace in traces:
        assert trace["ok"] and not trace["errors"], trace["errors"]
        goal = trace["task"]["data"]["goal_index"]
        actions = trace["info"]["webshop"]["actions"]
        assert actions and actions[-1] == "click[buy now]"
        # the same actions in WebShopEnv: the same reward and breakdown, and the same conversation
        env = WebShopEnv(shop=default_shop, split=None)
        obs, info = env.reset(options={"goal_index": goal})
        turns, sent = [], []
        for action in actions:
            sent.append(prompt.messages(obs, info, turns))
            turns.append(Turn(obs, action, None, tuple(admissible_actions(info))))
            obs, reward, terminated, truncated, info = env.step(action)
        assert terminated
        assert trace["rewards"]["webshop_reward"]["score"] == pytest.approx(reward)
        for name in ("r_type", "r_att", "r_option", "r_price"):
            assert trace["metrics"][name] == pytest.approx(float(info["reward_info"][name]))
        assert trace["metrics"]["success"] == float(reward == 1.0)
        assert trace["metrics"]["steps"] == len(actions)
        assert trace["metrics"]["invalid_actions"] == 0
        # every prompt the model got is the format's messages for that step (what eval sends), its
        # own answers in between
        instruction = info["instruction"]
        mine = [_wire(r["messages"]) for r in requests if instruction in r["messages"][1]["content"]]
        assert len(mine) == len(actions)
        assert [[m for m in got if m[0] != "assistant"] for got in mine] == \
               [[m for m in _wire(want) if m[0] != "assistant"] for want in sent]
        assert all(m[1] in answers for got in mine for m in got if m[0] == "assistant")
        assert mine[0][0] == ("system", prompt.system)


def test_the_null_harness_is_the_player_s_default_even_when_the_cli_pins_another_field():
    require_verifiers()
    import verifiers.v1 as vf

    config = vf.resolve_env_config({"taskset": {"id": "webshop-verifiers"}, "player": {"max_turns": 40}})
    assert config.player.max_turns == 40 and config.player.harness.id == "null"


# -- the tools format ---------------------------------------------------------------------------------


def _tool_script(messages: list[dict]):
    """A tool-calling model: search, an answer without a tool call, a label no page has, then a product and
    "buy now" in one answer (with a third call after the purchase, which is never stepped)."""
    return scripted_tool_calls(messages, ["I am not sure yet.", ToolCalls([("click", {"label": "Lowest Price Ever"})])])


def _by_goal(requests: list[dict], instructions: dict[int, str]) -> dict[int, list[dict]]:
    return {g: [r for r in requests if f"Instruction: {text}\n" in r["messages"][0]["content"]]
            for g, text in instructions.items()}


def _seen(request: dict) -> list[tuple[str, str]]:
    """What the model read in a request: every user and tool message, and the calls it made."""
    out = []
    for m in request["messages"]:
        if m["role"] == "assistant":
            out += [("call", c["function"]["name"] + c["function"]["arguments"]) for c in m.get("tool_calls") or []]
        else:
            out.append((m["role"], m["content"]))
    return out


def test_the_tools_server_lists_exactly_our_tool_schemas_and_runs_no_call():
    require_verifiers()
    import asyncio

    import verifiers.v1 as vf

    from webshop_gym.agents.tools import tool_schemas
    from webshop_gym.integrations.verifiers import WebShopTaskset, load_environment
    from webshop_gym.integrations.verifiers_tools import NOT_RUN_HERE, WebShopTools

    server = WebShopTools(vf.SharedToolsetConfig())
    listed = asyncio.run(server.list_tools())
    assert [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.input_schema}} for t in listed] == tool_schemas()
    assert server.server_name == ""  # bare names: search, click
    refused = asyncio.run(server.call_tool("search", {"query": "x"}))
    assert refused.is_error and NOT_RUN_HERE in refused.content[0].text
    env = load_environment(format="tools", limit=1)
    assert list(env.taskset)[0].data.system_prompt is None
    assert [type(t) for t in WebShopTaskset.toolsets(env.taskset.config)] == [WebShopTools]
    assert WebShopTaskset.toolsets(load_environment(limit=1).taskset.config) == []


@pytest.mark.slow
def test_vf_eval_in_the_tools_format_plays_eval_s_conversation_and_webshop_env_s_rewards(tmp_path, default_shop):
    require_verifiers()
    from webshop_gym.agents.tools import tool_schemas
    from webshop_gym.runs.log import read_log

    vf_eval = Path(sys.executable).with_name("vf-eval")
    with ChatServer(models=["scripted"], answer=_tool_script) as server:
        command = [str(vf_eval), "webshop-verifiers", "-m", "scripted", "--client.base-url", server.url,
                   "--no-push", "--no-rich", "-n", "2", "-r", "1", "-o", str(tmp_path / "runs"),
                   "--env.taskset.format", "tools"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=400, cwd=tmp_path, env=dict(os.environ))
        assert done.returncode == 0, done.stderr[-3000:]
        vf_requests = list(server.requests)
        server.requests.clear()
        # the same model through `webshop-gym eval --prompt tools`
        out = tmp_path / "eval.jsonl"
        evaluated = subprocess.run([str(vf_eval.with_name("webshop-gym")), "eval", "--policy", "openai:scripted",
                                    "--base-url", server.url, "--prompt", "tools", "--num-goals", "2",
                                    "--out", str(out), "--quiet"], capture_output=True, text=True, timeout=400,
                                   cwd=ROOT)
        assert evaluated.returncode == 0, evaluated.stderr[-3000:]
        eval_requests = list(server.requests)
    traces = {t["task"]["data"]["goal_index"]: t for t in _traces(tmp_path / "runs")}
    assert sorted(traces) == [0, 1]
    assert vf_requests and all(r.get("stream") is True and r["tools"] == tool_schemas() for r in vf_requests)
    instructions = {g: default_shop.goals.instruction[g] for g in traces}
    vf_by_goal, eval_by_goal = _by_goal(vf_requests, instructions), _by_goal(eval_requests, instructions)
    episodes = {e.goal_index: e for e in read_log(out).episodes}
    for goal, trace in traces.items():
        assert trace["ok"] and trace["stop_condition"] == "episode_over"
        actions = trace["info"]["webshop"]["actions"]
        assert actions[1] == "" and actions[2] == "click[Lowest Price Ever]" and actions[-1] == "click[buy now]"
        # the model read, request by request, what `eval --prompt tools` sends it (no system message)
        assert len(vf_by_goal[goal]) == len(eval_by_goal[goal]) == 4
        assert [_seen(r) for r in vf_by_goal[goal]] == [_seen(r) for r in eval_by_goal[goal]]
        assert vf_by_goal[goal][2]["messages"][-1]["content"].startswith("No tool was called. Admissible actions:")
        assert [s["action"] for s in episodes[goal].steps] == actions
        # the same actions in WebShopEnv: the same reward and breakdown
        env = WebShopEnv(shop=default_shop, split=None)
        env.reset(options={"goal_index": goal})
        for action in actions:
            _, reward, terminated, _, info = env.step(action)
        assert terminated and trace["rewards"]["webshop_reward"]["score"] == pytest.approx(reward)
        assert episodes[goal].steps[-1]["reward"] == pytest.approx(reward)
        for name in ("r_type", "r_att", "r_option", "r_price"):
            assert trace["metrics"][name] == pytest.approx(float(info["reward_info"][name]))
        assert trace["metrics"]["steps"] == len(actions) == 5
        assert trace["metrics"]["invalid_actions"] == 2 and trace["metrics"]["format_errors"] == 1
