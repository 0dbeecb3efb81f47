"""OpenEnv's own harness route: ``MCPHarnessAdapter`` + ``build_model_step`` over the server's MCP tools.

Checked episode by episode against ``webshop-gym eval --prompt tools`` with the same scripted
tool-calling model (``tests/openai_server.py``): the tools the model is offered, every message it
reads, the actions and the rewards.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re

import pytest

from tests.helpers import require_extra  # noqa: E402

require_extra("openenv", "openenv", "OpenEnv")

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction  # noqa: E402
from openenv.core.harness import HarnessRunLimits, MCPHarnessAdapter  # noqa: E402
from openenv.core.harness.collect import _model_step_loop, build_model_step  # noqa: E402
from openenv.core.llm_client import OpenAIClient  # noqa: E402
from openenv.core.mcp_client import MCPToolClient  # noqa: E402

from tests.helpers import ServedApp, wait_until  # noqa: E402
from tests.openai_server import ChatServer, ToolCalls, scripted_tool_calls  # noqa: E402
from webshop_gym.agents.tools import tool_schemas  # noqa: E402
from webshop_gym.cli.app import main as cli  # noqa: E402
from webshop_gym.error import InvalidArgument  # noqa: E402
from webshop_gym.integrations.openenv import WebShopSessionFactory  # noqa: E402
from webshop_gym.integrations.openenv.app import create_app  # noqa: E402
from webshop_gym.integrations.trl import WebShopToolEnv  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402


@pytest.fixture(scope="module")
def shop_server(default_shop):
    server = ServedApp(create_app(default_shop, idle_timeout=None, max_envs=16))
    yield server.app, server.url
    server.stop()


def _tool_script(messages: list[dict]):
    """Search; click a label no page has; then a product, "buy now" and one more call."""
    return scripted_tool_calls(messages, [ToolCalls([("click", {"label": "Lowest Price Ever"})])])


def _seen(request: dict) -> list[tuple[str, str]]:
    """What the model read in a request: every user and tool message, and the calls it made."""
    out = []
    for m in request["messages"]:
        if m["role"] == "assistant":
            out += [("call", c["function"]["name"] + json.dumps(json.loads(c["function"]["arguments"])))
                    for c in m.get("tool_calls") or []]
        else:
            out.append((m["role"], m["content"]))
    return out


def test_the_server_lists_our_tool_schemas_and_steps_calls_with_rewards(shop_server):
    _, url = shop_server
    with MCPToolClient(base_url=url).sync() as client:
        client.reset(goal_index=5)
        tools = client.list_tools()
        assert [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.input_schema}} for t in tools] == tool_schemas()
        local = WebShopToolEnv(split=None)
        local.reset(goal_index=5)
        assert client.call_tool("search", query="men's boots") == local.search("men's boots")
        refused = client.step(CallToolAction(tool_name="click", arguments={"label": "nothing here"}))
        with pytest.raises(Exception) as local_error:
            local.click("nothing here")
        assert refused.observation.result == {"data": str(local_error.value), "is_error": True}
        assert refused.reward == 0.0 and not refused.done and refused.observation.metadata["invalid_action"]
        bad = client.step(CallToolAction(tool_name="type", arguments={"text": "x"})).observation
        assert bad.result == {"data": "Tool type not found.", "is_error": True}  # stepped as an invalid action
        assert client.step(ListToolsAction()).observation.tools == tools  # listing takes no step
        assert client.state().step_count == 3


def test_mcp_harness_adapter_plays_eval_s_tool_episodes(shop_server, tmp_path):
    _, url = shop_server
    factory = WebShopSessionFactory(url)
    with ChatServer(models=["scripted"], answer=_tool_script) as model:
        rollouts = {}
        llm = OpenAIClient(model.url, None, model="scripted")
        step = build_model_step(llm)
        for goal in (0, 1):
            session = factory.create(task={"goal_index": goal})
            try:
                rollout = MCPHarnessAdapter().run_white_box(step, session, HarnessRunLimits(max_turns=15))
                rollouts[goal] = (rollout, session.verify(rollout.messages))
            finally:
                session.close()
        # the model client's connections live on build_model_step's loop: close them there
        asyncio.run_coroutine_threadsafe(llm._client.close(), _model_step_loop()).result(10)
        harness_requests = list(model.requests)
        model.requests.clear()
        out = tmp_path / "eval.jsonl"
        assert cli(["eval", "--policy", "openai:scripted", "--base-url", model.url, "--prompt", "tools",
                    "--num-goals", "2", "--concurrency", "1", "--out", str(out), "--quiet"]) == 0
        eval_requests = list(model.requests)
    assert len(harness_requests) == len(eval_requests) == 6
    assert all(r["tools"] == tool_schemas() for r in harness_requests + eval_requests)  # one definition
    assert [_seen(r) for r in harness_requests] == [_seen(r) for r in eval_requests]  # message for message
    episodes = {e.goal_index: e for e in read_log(out).episodes}
    for goal, (rollout, verify) in rollouts.items():
        actions = [s["action"] for s in episodes[goal].steps]
        assert actions[1] == "click[Lowest Price Ever]" and actions[-1] == "click[buy now]" and len(actions) == 4
        assert [e.arguments for e in rollout.tool_trace] == [
            {"query": actions[0][len("search["):-1]} if i == 0 else {"label": a[len("click["):-1]}
            for i, a in enumerate(actions)]
        assert rollout.done and verify.done
        assert verify.env_reward == pytest.approx(episodes[goal].reward) and verify.env_reward > 0
        assert rollout.tool_trace[-1].result.metadata["reward"] == verify.env_reward


def test_tasks_are_goal_indices_rows_or_splits(shop_server, default_shop):
    app, url = shop_server
    factory = WebShopSessionFactory(url)
    for task, goal in ((7, 7), ({"goal_index": 9, "prompt": "ignored"}, 9), ({"split": "eval", "index": 2}, 502)):
        session = factory.create(task=task)
        assert session.goal_index == goal and session.instruction == default_shop.goals.instruction[goal]
        session.close()
    for bad in ("3", {"prompt": "x"}, 2.5):
        with pytest.raises(InvalidArgument, match="a task is"):
            factory.create(task=bad)
    with pytest.raises(InvalidArgument, match="base_url"):
        WebShopSessionFactory("localhost:8000")
    assert wait_until(lambda: app.state.webshop_pool.in_use == 0)  # closed sessions hand their slots back


# -- TRL's async GRPO openenv_harness: its own _run_session against the server -----------------


def _trl_harness_loop(tokenizer, factory, rows, num_generations=2):
    """TRL's ``_HarnessRolloutLoop`` as ``HarnessRolloutWorker`` builds it, with a scripted model for vLLM."""
    import queue
    from types import SimpleNamespace

    from trl.experimental.async_grpo.openenv_harness import _HarnessRolloutLoop

    loop = _HarnessRolloutLoop(
        harness_session_factory=factory, harness_adapter=MCPHarnessAdapter(), model_name="scripted", dataset=rows,
        reward_funcs=[], processing_class=tokenizer, eos_token_ids=[tokenizer.eos_token_id],
        rollout_buffer=queue.Queue(), model_version_value=SimpleNamespace(value=0),
        heartbeat_value=SimpleNamespace(value=0.0), failed_event=None, exception_info_queue=queue.Queue(),
        metrics_queue=queue.Queue(), num_generations=num_generations, max_inflight_tasks=2,
        max_tool_calling_iterations=6)

    async def scripted_turn(prompt_ids):  # replaces the POST to vLLM's /v1/completions
        """Search the instruction, click the first product, buy it; then answer without a call."""
        seen = tokenizer.decode(prompt_ids)
        calls = seen.count("<tool_response>")
        if calls == 0:
            call = {"name": "search", "arguments": {"query": re.findall(r"Instruction: (.*)", seen)[-1][:80]}}
        elif calls == 1:
            labels = json.loads(re.findall(r"with label one of (\[.*\])", seen)[-1])
            call = {"name": "click", "arguments": {"label": next(x for x in labels if re.fullmatch("b0[0-9a-z]{8}", x))}}
        elif calls == 2:
            call = {"name": "click", "arguments": {"label": "buy now"}}
        else:
            ids = tokenizer("done<|im_end|>")["input_ids"]
            return ids, [0.0] * len(ids)
        ids = tokenizer(f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>")["input_ids"]
        return ids, [0.0] * len(ids)

    loop._generate_one_turn = scripted_turn
    return loop


def _replayed_reward(shop, goal: int, completion: list[dict]) -> tuple[float, list[str]]:
    """WebShopEnv's reward for the calls of a TRL completion, played on ``goal``."""
    from webshop_gym import WebShopEnv

    calls = [c["function"] for m in completion if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    actions = [f"{c['name']}[{next(iter(json.loads(c['arguments']).values()))}]" for c in calls]
    env = WebShopEnv(shop=shop)
    env.reset(options={"goal_index": goal})
    reward = 0.0
    for action in actions:
        _, reward, done, _, _ = env.step(action)
        if done:
            break
    return reward, actions


# TRL warns once per process on importing trl.experimental: an error (warnings are errors) when this test imports it first
@pytest.mark.filterwarnings("ignore:You are importing from 'trl.experimental'")
def test_trl_async_grpo_harness_plays_each_row_s_goal_with_webshop_env_s_reward(shop_server, default_shop):
    """TRL calls ``factory.create(row["prompt"], seed=group_id, episode_id=...)``: every rollout plays its row's goal."""
    require_extra("trl.experimental.async_grpo.openenv_harness", "trl", "TRL's async GRPO harness")
    from tests.helpers import load_example
    from webshop_gym.integrations.trl import webshop_dataset

    _, url = shop_server
    tokenizer = load_example("trl_cpu_smoke").tokenizer_for(default_shop)
    rows = webshop_dataset("train", url=url, limit=3, as_dataset=False)
    rows = [rows[2], rows[0], rows[1]]  # not in split order: the goal is the row's, not the split's
    loop = _trl_harness_loop(tokenizer, functools.partial(WebShopSessionFactory, url, goals=rows), rows)
    try:
        played = []
        for group_id in (0, 0, 1, 2, 3):  # two rollouts of group 0; group 3 is row 0 again (TRL's next epoch)
            row = rows[group_id % len(rows)]
            result = loop._loop.run_until_complete(loop._generate_one(row["prompt"], {}, [], group_id=group_id))
            completion, completion_ids, sequences, calls, failures, reward = result
            assert completion and completion_ids and sequences, "TRL scored the rollout as unscorable"
            assert completion[0]["role"] == "user" and f"Instruction: {row['instruction']}" in completion[0]["content"]
            expected, actions = _replayed_reward(default_shop, row["goal_index"], completion)
            assert len(actions) == calls == 3 and failures == 0 and actions[-1] == "click[buy now]"
            assert reward == pytest.approx(expected)
            played.append(reward)
        assert any(r > 0 for r in played)
    finally:
        loop._session_pool.shutdown(wait=True)
        loop._tool_pool.shutdown(wait=True)
        loop._loop.close()


def test_message_tasks_map_the_group_into_the_split_without_a_dataset(shop_server):
    from webshop_gym.integrations.remote_tasks import remote_goals

    app, url = shop_server
    train = [goal for goal, _ in remote_goals(url, "train")]
    prompt = [{"role": "user", "content": "anything"}]
    factory = WebShopSessionFactory(url)
    for group_id, goal in ((0, train[0]), (4, train[4]), (len(train) + 1, train[1])):
        session = factory.create(prompt, seed=group_id, episode_id="r")
        assert session.goal_index == goal
        session.close()
    session = WebShopSessionFactory(url, split="eval").create(prompt, seed=0)
    assert session.goal_index == 500
    session.close()
    with pytest.raises(InvalidArgument, match="seed="):
        factory.create(prompt)
    with pytest.raises(InvalidArgument, match="MCPHarnessAdapter"):
        WebShopSessionFactory(url, sampling={"temperature": 1.0})
    with pytest.raises(InvalidArgument, match="goal_index"):
        WebShopSessionFactory(url, goals=[{"prompt": prompt}])
    assert wait_until(lambda: app.state.webshop_pool.in_use == 0)
