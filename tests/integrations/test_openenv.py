"""WebShop over OpenEnv, driven by OpenEnv's own clients against a real server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import default_sigint, require_extra, wait_until

require_extra("openenv", "openenv", "OpenEnv")

import requests  # noqa: E402
import websockets  # noqa: E402
from openenv.core.generic_client import GenericEnvClient  # noqa: E402

from webshop_gym import WebShopEnv  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.error import InvalidArgument  # noqa: E402
from webshop_gym.integrations.openenv import WebShopAction, WebShopEnvClient, WebShopObservation  # noqa: E402
from webshop_gym.integrations.openenv.app import Listener, create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPACE = ROOT / "examples" / "openenv_space"


@pytest.fixture(scope="module")
def serve():
    """Start ``create_app(**kwargs)`` on a free port in a thread; returns (app, base URL)."""
    listeners = []

    def start(**kwargs):
        app = create_app(**kwargs)
        listener = Listener(app, "127.0.0.1", 0)
        thread = threading.Thread(target=listener.run, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{listener.port}"
        for _ in range(200):
            if listener.server.started:
                break
            time.sleep(0.05)
        listeners.append((listener, thread))
        return app, url

    yield start
    for listener, thread in listeners:
        listener.stop()
        thread.join(10)


@pytest.fixture(scope="module")
def default_server(serve, default_shop):
    return serve(shop=default_shop, max_envs=80, idle_timeout=None)


_wait = wait_until


# -- routes and OpenEnv's own validator ----------------------------------------------------------


def test_health_schema_and_openenv_runtime_validation(default_server):
    from openenv.cli._validation import validate_running_environment

    _, url = default_server
    assert requests.get(f"{url}/health", timeout=10).json() == {"status": "healthy"}
    schema = requests.get(f"{url}/schema", timeout=10).json()
    assert schema["action"]["required"] == ["action"]
    assert set(schema["action"]["properties"]) == {"action", "metadata"}
    assert schema["action"]["properties"]["action"]["type"] == "string"  # verifiers' single-string-field rule
    declared = set(schema["observation"]["properties"])
    assert {"text", "instruction", "admissible_actions", "reward", "done", "reward_breakdown"} <= declared
    assert {"episode_id", "step_count", "goal_index"} <= set(schema["state"]["properties"])
    report = validate_running_environment(url, timeout_s=10)
    assert report["passed"], [c for c in report["criteria"] if not c["passed"]]
    assert report["mode"] == "simulation"


def test_stateless_http_routes_answer_json_errors(default_server):
    _, url = default_server
    out = requests.post(f"{url}/reset", json={"goal_index": 2}, timeout=10).json()
    assert out["observation"]["goal_index"] == 2 and out["done"] is False
    step = requests.post(f"{url}/step", json={"action": {"action": "search[x]"}}, timeout=10)
    assert step.status_code == 409 and "send a reset first" in step.json()["detail"]
    bad = requests.post(f"{url}/reset", json={"goal_index": 10**9}, timeout=10)
    assert bad.status_code == 422 and "goal_index" in bad.json()["detail"]
    assert requests.post(f"{url}/step", json={"action": {"act": "x"}}, timeout=10).status_code == 422
    assert requests.get(f"{url}/state", timeout=10).json()["episode_id"] is None
    assert requests.get(f"{url}/metadata", timeout=10).json()["name"] == "webshop"
    bad_split = requests.post(f"{url}/reset", json={"split": "tset"}, timeout=10)
    assert bad_split.status_code == 422 and "split must be one of test, eval, train" in bad_split.json()["detail"]


def test_openenv_task_api(default_server, default_shop):
    _, url = default_server
    splits = requests.get(f"{url}/webshop/splits", timeout=10).json()
    assert splits == [{"name": "test", "type": "test"}, {"name": "eval", "type": "validation"},
                      {"name": "train", "type": "train"}]
    assert requests.post(f"{url}/webshop/num_tasks", json={"split": "test"}, timeout=10).json() == {"num_tasks": 500}
    task = requests.post(f"{url}/webshop/task", json={"split": "eval", "index": 2}, timeout=10).json()["task"]
    assert task["goal_index"] == 502 and task["instruction"] == default_shop.goals.instruction[502]
    tasks = requests.post(f"{url}/webshop/task_range", json={"split": "test", "start": 498}, timeout=10).json()
    assert [t["goal_index"] for t in tasks["tasks"]] == [498, 499]
    assert len(requests.post(f"{url}/webshop/tasks", json={"split": "test"}, timeout=10).json()["tasks"]) == 500
    assert requests.post(f"{url}/webshop/task", json={"split": "test", "index": 500}, timeout=10).status_code == 400
    with GenericEnvClient(base_url=url).sync() as client:  # the task API's way to play a task
        assert client.reset(split="eval", index=2).observation["goal_index"] == 502


def _strict(text: str):
    """Parse JSON that must be strict: no NaN, Infinity or -Infinity tokens."""
    def refuse(token):
        raise AssertionError(f"not strict JSON: {token} in {text[:200]}")
    return json.loads(text, parse_constant=refuse)


# (route, raw body, what the answer must name); issue 34: the first two answered 500
HOSTILE_BODIES = [
    ("/reset", '{"split": ["a"]}', "split must be one of test, eval, train"),
    ("/reset", '{"seed": 1e400}', "seed"),
    ("/reset", '{"seed": NaN}', "seed"),
    ("/reset", '{"seed": -Infinity}', "seed"),
    ("/reset", '{"split": {"a": 1}}', "split must be one of"),
    ("/reset", '{"split": 1e400}', "split must be one of"),
    ("/reset", '{"goal_index": 1e400}', "goal_index"),
    ("/reset", '{"split": "test", "index": NaN}', "index within split"),
    ("/reset", '{"episode_id": 1e400}', "episode_id"),
    ("/reset", '{"seed": "\\ud800"}', "seed"),
    ("/reset", '[1e400]', "body"),
    ("/step", '{"action": {"action": 1e400}}', "action"),
    ("/step", '{"action": 1e400}', "action"),
    ("/step", '{"action": {"action": "x"}, "timeout_s": NaN}', "timeout_s"),
    ("/webshop/num_tasks", '{"split": ["a"]}', "split"),
    ("/webshop/task", '{"split": "test", "index": 1e400}', "index"),
    ("/webshop/task_range", '{"split": "test", "start": NaN}', "start"),
    ("/webshop/tasks", '{"split": 1e400}', "split"),
]


def test_http_routes_never_answer_500_and_every_error_is_strict_json(default_server):
    _, url = default_server
    for route, body, named in HOSTILE_BODIES:
        answer = requests.post(f"{url}{route}", data=body.encode(), headers={"content-type": "application/json"},
                               timeout=10)
        assert answer.status_code == 422, (route, body, answer.status_code, answer.text[:300])
        assert named in json.dumps(_strict(answer.text)["detail"]), (route, body, answer.text[:300])
    # the value echoed back is the JSON string of the number, as on the AgentGym API
    detail = requests.post(f"{url}/reset", data=b'{"seed": 1e400}', headers={"content-type": "application/json"},
                           timeout=10).json()["detail"]
    assert detail[0]["loc"] == ["body", "seed"] and detail[0]["input"] == "Infinity"
    assert requests.get(f"{url}/health", timeout=10).json() == {"status": "healthy"}


def test_wrong_typed_reset_arguments_are_named_over_the_websocket(default_server):
    _, url = default_server

    async def scenario():
        ws = await _raw(url)
        answers = []
        for data in ('{"split": ["a"]}', '{"split": {"a": 1}}', '{"seed": 1e400}', '{"goal_index": NaN}',
                     '{"episode_id": ["x"]}', '{"episode_id": "' + "e" * 256 + '"}'):
            await ws.send('{"type": "reset", "data": ' + data + "}")
            answers.append(_strict(await ws.recv()))
        await ws.send(json.dumps({"type": "reset", "data": {"split": "test", "index": 3}}))
        answers.append(json.loads(await ws.recv()))
        await ws.close()
        return answers

    *errors, played = asyncio.run(scenario())
    assert [e["data"]["code"] for e in errors] == ["EXECUTION_ERROR"] * 6
    messages = [e["data"]["message"] for e in errors]
    assert messages[0] == "split must be one of test, eval, train (test = the first 500 goals) or a protocol's NAME:train / NAME:test, got ['a'] (list)"
    assert messages[1].startswith("split must be one of") and "(dict)" in messages[1]
    assert messages[2] == "seed must be an integer >= 0 or None, got inf (float)"
    assert messages[3].startswith("goal_index must be an integer") and "nan (float)" in messages[3]
    assert messages[4] == "episode_id must be a string of at most 255 characters, got list"
    assert messages[5] == "episode_id must be a string of at most 255 characters, got 256 characters"
    assert not any("unhashable" in m for m in messages)
    assert played["type"] == "observation" and played["data"]["observation"]["goal_index"] == 3


def test_an_over_long_action_is_refused_with_its_bound(default_server):
    from webshop_gym.core.actions import MAX_ACTION_LENGTH
    from webshop_gym.integrations.openenv.app import MAX_FRAME_BYTES

    app, url = default_server
    schema = requests.get(f"{url}/schema", timeout=10).json()
    assert schema["action"]["properties"]["action"]["maxLength"] == MAX_ACTION_LENGTH == 100_000
    long_search = "search[" + "red shoes " * 20_000 + "]"  # 200,008 characters: ~40,000 words

    async def scenario():
        ws = await _raw(url)

        async def ask(message):
            await ws.send(json.dumps(message))
            return json.loads(await ws.recv())

        await ask({"type": "reset", "data": {"goal_index": 0}})
        refused = await ask({"type": "step", "data": {"action": long_search}})
        state = await ask({"type": "state"})
        at_bound = await ask({"type": "step", "data": {"action": "x" * MAX_ACTION_LENGTH}})  # within bounds: a no-op
        searched = await ask({"type": "step", "data": {"action": "search[red shoes]"}})
        await ws.close()
        big = await _raw(url)  # a frame over MAX_FRAME_BYTES closes the connection (1009, message too big)
        await big.send(json.dumps({"type": "step", "data": {"action": "search[" + "x" * MAX_FRAME_BYTES + "]"}}))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await big.recv()
        return refused, state, at_bound, searched, closed.value.rcvd

    refused, state, at_bound, searched, close = asyncio.run(scenario())
    assert refused["type"] == "error" and refused["data"]["code"] == "EXECUTION_ERROR"
    assert refused["data"]["message"] == ("action has 200,008 characters; an action has at most 100,000 "
                                          "(a search's keywords included)")
    assert state["data"]["step_count"] == 0  # refused, not stepped
    assert at_bound["type"] == "observation" and at_bound["data"]["observation"]["invalid_action"] is True
    assert searched["data"]["observation"]["page"] == "results"
    assert close is not None and close.code == 1009
    http = requests.post(f"{url}/step", json={"action": {"action": long_search}}, timeout=10)
    assert http.status_code == 422 and http.json()["detail"].startswith("action has 200,008 characters")
    assert _wait(lambda: app.state.webshop_pool.in_use == 0)


# -- golden trajectories over the WebSocket ------------------------------------------------------


async def _play_golden(url: str, trajectories: list[dict], sessions: int) -> list[tuple]:
    rows: list[tuple] = []
    queue = list(trajectories)

    async def worker():
        async with GenericEnvClient(base_url=url) as env:
            while queue:
                t = queue.pop()
                result = await env.reset(goal_index=t["goal_index"])
                for k, step in enumerate(t["steps"]):
                    if k:
                        result = await env.step({"action": step["action"]})
                    obs = result.observation
                    shown = {"has_search_bar": obs["has_search_bar"], "clickables": obs["clickables"]}
                    rows.append((t["goal_index"], k, obs["text"] == step["obs_text"],
                                 shown == step["available_actions"],
                                 (result.reward or 0.0) == step["reward"], result.done == step["done"],
                                 step["reward_info"] is None or obs["reward_breakdown"] == step["reward_info"]))

    await asyncio.gather(*(worker() for _ in range(sessions)))
    return rows


@pytest.mark.slow
@pytest.mark.shared
@pytest.mark.parametrize("human", [False, True])
def test_golden_trajectories_over_the_websocket(serve, golden_dir, real_shop, real_human_shop, human):
    folder = golden_dir / "human" if human else golden_dir
    shop = real_human_shop if human else real_shop
    app, url = serve(shop=shop, max_envs=8, idle_timeout=None)
    with open(folder / "trajectories.jsonl", encoding="utf-8") as handle:
        trajectories = [json.loads(line) for line in handle]
    rows = asyncio.run(_play_golden(url, trajectories, sessions=8))
    assert len(rows) == sum(len(t["steps"]) for t in trajectories) > (100 if human else 3000)
    assert [r for r in rows if not all(r[2:])] == []
    assert _wait(lambda: app.state.webshop_pool.in_use == 0)


# -- the typed client against WebShopEnv ---------------------------------------------------------


def test_typed_client_plays_what_webshopenv_plays(default_server, default_shop):
    _, url = default_server
    env = WebShopEnv(shop=default_shop)
    obs, info = env.reset(seed=7)
    with WebShopEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=7, episode_id="ep-7")
        assert isinstance(result.observation, WebShopObservation)
        assert (result.observation.text, result.observation.goal_index) == (obs, info["goal_index"])
        rng = random.Random(7)
        actions = ["search[" + " ".join(info["instruction"].split()[:5]) + "]"]
        done, steps = False, 0
        while not done:
            action = actions.pop() if actions else rng.choice(info["valid_actions"])
            obs, reward, terminated, truncated, info = env.step(action)
            result = client.step(WebShopAction(action=action) if steps % 2 else action)
            o = result.observation
            assert (o.text, o.page, o.steps, o.admissible_actions, o.invalid_action) == (
                obs, info["page"], info["steps"], info["valid_actions"], info["invalid_action"])
            assert (result.reward, result.done, o.truncated) == (reward, terminated or truncated, truncated)
            assert o.reward_breakdown == info.get("reward_info")
            done, steps = terminated or truncated, steps + 1
        state = client.state()
        assert (state.episode_id, state.step_count, state.goal_index, state.done) == ("ep-7", steps, info["goal_index"], True)
        with pytest.raises(RuntimeError, match="episode has finished"):
            client.step("click[back to search]")
        again = client.reset(split="test", index=3)
        assert again.observation.goal_index == 3 and client.state().split == "test"


def test_unknown_reset_arguments_are_refused_naming_the_known_ones(default_server):
    _, url = default_server
    with GenericEnvClient(base_url=url).sync() as client:  # a generic client: the server refuses it
        with pytest.raises(RuntimeError, match=r"unknown reset argument 'goal_idx': reset takes seed, episode_id, "
                                               r"goal_index, split, index \(did you mean 'goal_idx' -> 'goal_index'\?\)"):
            client.reset(goal_idx=3)
        assert client.reset(goal_index=3).observation["goal_index"] == 3  # the session lives on
    with WebShopEnvClient(base_url=url).sync() as client:  # the typed client refuses it before sending
        with pytest.raises(InvalidArgument, match="unknown reset arguments 'foo', 'goal_idx'"):
            client.reset(goal_idx=3, foo=1)
        state = client.state()
        assert state.goal_index is None and state.max_steps == 15
    answer = requests.post(f"{url}/reset", json={"goal_idx": 3}, timeout=10)
    assert answer.status_code == 422 and "unknown reset argument 'goal_idx'" in answer.json()["detail"]


@pytest.mark.parametrize("fmt", ["think-answer", "react", "verl-agent"])
def test_prompts_and_parsed_replies_from_observations_are_eval_s(default_server, default_shop, fmt):
    from webshop_gym.agents.prompts import Turn, make_prompt
    from webshop_gym.integrations.openenv import build_prompt, parse_action, prompt_messages

    _, url = default_server
    env, prompt = WebShopEnv(shop=default_shop), make_prompt(fmt)
    obs, info = env.reset(options={"goal_index": 4})
    turns, typed_turns = [], []
    with GenericEnvClient(base_url=url).sync() as generic, WebShopEnvClient(base_url=url).sync() as typed:
        result, typed_result = generic.reset(goal_index=4), typed.reset(goal_index=4)
        replies = [f"<answer>Search[{info['instruction'][:30]}]</answer>", "<think>first</think><answer>{}</answer>",
                   "Thought: buy\nAction: Click [Buy Now].", "<action>click[buy now]</action>"]
        for reply in replies:
            admissible = info["valid_actions"]
            if "{}" in reply:
                reply = reply.format(next(a for a in admissible if a.startswith("click[b0")))
            expected = make_prompt(fmt).messages(obs, info, turns)
            assert prompt_messages(result.observation, fmt, turns) == expected
            assert prompt_messages(typed_result, fmt, typed_turns) == expected  # a StepResult of the typed client
            assert build_prompt(result.observation, fmt, turns) == prompt.build(obs, info, turns)
            parsed = parse_action(reply, result.observation, fmt)
            assert parsed == prompt.parse_detailed(reply, admissible)
            turns.append(Turn(obs, parsed.action, reply, tuple(admissible)))
            typed_turns.append({"observation": obs, "action": parsed.action, "response": reply,
                                "valid_actions": admissible})
            obs, reward, terminated, truncated, info = env.step(parsed.action)
            result, typed_result = generic.step({"action": parsed.action}), typed.step(parsed.action)
            assert (result.observation["text"], result.reward) == (obs, reward)
            if terminated:
                break
    assert parse_action("<answer>Search[Red Shoes]</answer>").action == "search[red shoes]"
    with pytest.raises(InvalidArgument, match="observation has no text"):
        build_prompt({"instruction": "x"})
    with pytest.raises(InvalidArgument, match="format"):
        prompt_messages(result.observation, "json")


def test_seeded_resets_draw_the_goals_webshopenv_draws(default_server, default_shop):
    _, url = default_server
    env = WebShopEnv(shop=default_shop)
    with GenericEnvClient(base_url=url).sync() as client:
        for seed in (0, 1, 12345):
            assert client.reset(seed=seed).observation["goal_index"] == env.reset(seed=seed)[1]["goal_index"]
        split = client.reset(seed=5, split="eval").observation["goal_index"]
        assert 500 <= split < 1500


def test_seed_goals_name_goals_by_seed(serve, default_shop):
    _, url = serve(shop=default_shop, max_envs=2, idle_timeout=None, seed_goals=True)
    with GenericEnvClient(base_url=url).sync() as client:
        assert [client.reset(seed=s).observation["goal_index"] for s in (0, 7, 499)] == [0, 7, 499]
        assert client.reset(seed=3, split="eval").observation["goal_index"] == 503
        assert client.reset(seed=3, goal_index=9).observation["goal_index"] == 9
        with pytest.raises(RuntimeError, match="goal_index must be"):
            client.reset(seed=10**6)


# -- concurrency, capacity, eviction -------------------------------------------------------------


def _walk(shop, goal: int, seed: int, steps: int) -> tuple[list[str], list[tuple]]:
    """Actions of a seeded random walk in WebShopEnv and what it saw."""
    env = WebShopEnv(shop=shop, max_steps=None)
    rng = random.Random(seed)
    obs, info = env.reset(options={"goal_index": goal})
    actions, seen = [], []
    for k in range(steps):
        if k == 0 or rng.random() < 0.1:
            action = "search[" + " ".join(info["instruction"].split()[: rng.randint(2, 7)]) + "]"
        elif rng.random() < 0.05:
            action = "click[no such button]"
        else:
            action = rng.choice([a for a in info["valid_actions"] if a not in ("click[buy now]", "search[<query>]")]
                                or ["click[back to search]"])
        obs, reward, terminated, _, info = env.step(action)
        actions.append(action)
        seen.append((obs, reward, info["invalid_action"]))
    return actions, seen


def test_64_concurrent_sessions_are_isolated(serve, default_shop):
    app, url = serve(shop=default_shop, max_envs=64, idle_timeout=None, max_steps=None)
    pool = app.state.webshop_pool
    walks = {i: _walk(default_shop, goal=17 * i, seed=i, steps=12) for i in range(64)}
    peak = []

    async def session(i: int, started: asyncio.Barrier):
        actions, _ = walks[i]
        seen = []
        async with GenericEnvClient(base_url=url) as env:
            await env.reset(goal_index=17 * i)
            await started.wait()
            peak.append(pool.in_use)
            for action in actions:
                result = await env.step({"action": action})
                seen.append((result.observation["text"], result.reward, result.observation["invalid_action"]))
        return i, seen

    async def run_all():
        started = asyncio.Barrier(64)
        return await asyncio.gather(*(session(i, started) for i in range(64)))

    results = asyncio.run(run_all())
    assert max(peak) == 64
    for i, seen in results:
        assert seen == walks[i][1], f"session {i} diverged"
    assert _wait(lambda: pool.in_use == 0), "closed sessions must give their slots back"
    assert pool.stats["steps"] >= 64 * 12
    assert pool.stats["batches"] < pool.stats["steps"], "concurrent steps share batched engine calls"


async def _raw(url: str):
    return await websockets.connect(url.replace("http", "ws") + "/ws", compression=None)


def test_max_envs_limit_answers_with_an_error_frame(serve, default_shop):
    app, url = serve(shop=default_shop, max_envs=2, idle_timeout=None)

    async def scenario():
        a, b = await _raw(url), await _raw(url)
        for ws in (a, b):
            await ws.send(json.dumps({"type": "reset", "data": {"goal_index": 1}}))
            assert json.loads(await ws.recv())["type"] == "observation"
        c = await _raw(url)
        frame = json.loads(await c.recv())
        assert frame["type"] == "error" and frame["data"]["code"] == "CAPACITY_REACHED"
        assert "2/2 sessions" in frame["data"]["message"]
        await c.close()
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            async with GenericEnvClient(base_url=url) as env:
                await env.reset()
        await a.close()
        await asyncio.sleep(0.2)
        async with GenericEnvClient(base_url=url) as env:  # room again
            assert (await env.reset(goal_index=4)).observation["goal_index"] == 4
        await b.close()

    asyncio.run(scenario())
    assert _wait(lambda: app.state.webshop_pool.in_use == 0)


def test_malformed_messages_get_error_frames_and_the_session_lives_on(default_server):
    app, url = default_server

    async def scenario():
        ws = await _raw(url)

        async def ask(message):
            await ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(await ws.recv())

        cases = [
            ("not json{", "INVALID_JSON"),
            ({"type": "dance"}, "UNKNOWN_TYPE"),
            ({"type": "step", "data": {"action": 5}}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"act": "search[x]"}}, "VALIDATION_ERROR"),
            ({"type": "step"}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"action": "search[x]"}}, "EXECUTION_ERROR"),  # before any reset
            ({"type": "reset", "data": {"goal_index": 10**9}}, "EXECUTION_ERROR"),
            ({"type": "reset", "data": {"goal_index": "three"}}, "EXECUTION_ERROR"),
            ({"type": "reset", "data": {"seed": -1}}, "EXECUTION_ERROR"),
            ({"type": "reset", "data": {"split": "tset"}}, "EXECUTION_ERROR"),
            ({"type": "reset", "data": {"split": "test", "index": 500}}, "EXECUTION_ERROR"),
            ({"type": "reset", "data": {"goal_index": 1, "split": "test"}}, "EXECUTION_ERROR"),
        ]
        for message, code in cases:
            frame = await ask(message)
            assert frame["type"] == "error", message
            assert frame["data"]["code"] == code, (message, frame)
            assert frame["data"]["message"] and "Traceback" not in frame["data"]["message"]
        frame = await ask({"type": "reset", "data": {"goal_index": 10**9}})
        assert "goal_index must be" in frame["data"]["message"]
        frame = await ask({"type": "reset", "data": {"goal_index": 5}})
        assert frame["type"] == "observation" and frame["data"]["observation"]["goal_index"] == 5
        frame = await ask({"type": "step", "data": {"action": "x" * 100_000}})  # an invalid action: a no-op
        assert frame["type"] == "observation" and frame["data"]["observation"]["invalid_action"] is True
        frame = await ask({"type": "step", "data": {"action": "search[red shoes]"}})
        assert frame["data"]["observation"]["page"] == "results"
        await ws.close()
        # JSON that is not an object, or a binary frame: OpenEnv answers with an error frame and
        # ends that session (its design); the server carries on
        for message in ("[1, 2]", "3", b"\x00\x01"):
            other = await _raw(url)
            await other.send(message)
            frame = json.loads(await other.recv())
            assert frame["type"] == "error" and frame["data"]["code"] == "SESSION_ERROR", frame
            with pytest.raises(websockets.ConnectionClosed):
                await other.recv()

    asyncio.run(scenario())
    assert requests.get(f"{url}/health", timeout=10).json() == {"status": "healthy"}
    assert _wait(lambda: app.state.webshop_pool.in_use == 0)


@pytest.mark.slow
def test_idle_sessions_are_evicted_and_their_slots_reused(serve, default_shop):
    app, url = serve(shop=default_shop, max_envs=1, idle_timeout=1.0)
    pool = app.state.webshop_pool

    async def scenario():
        idle = await _raw(url)
        await idle.send(json.dumps({"type": "reset", "data": {"goal_index": 1}}))
        assert json.loads(await idle.recv())["type"] == "observation"
        assert pool.in_use == 1
        for _ in range(200):  # OpenEnv's reaper looks every max(timeout / 4, 5) s
            if pool.in_use == 0:
                break
            await asyncio.sleep(0.1)
        assert pool.in_use == 0
        async with GenericEnvClient(base_url=url) as env:  # the one allowed session is free again
            assert (await env.reset(goal_index=2)).observation["goal_index"] == 2
        # the evicted socket was told why, then closed (issue 34: it used to stay open for ever)
        frame = json.loads(await asyncio.wait_for(idle.recv(), 10))
        assert frame == {"type": "error", "data": {"code": "SESSION_ERROR", "message":
                         "this session was closed (idle for more than 1 s); open a new session"}}
        with pytest.raises(websockets.ConnectionClosedOK) as closed:
            await asyncio.wait_for(idle.recv(), 10)
        assert closed.value.rcvd.code == 1000 and "idle for more than 1 s" in closed.value.rcvd.reason
        async with GenericEnvClient(base_url=url) as env:  # OpenEnv's client reconnects by itself
            await env.reset(goal_index=3)
            for _ in range(200):
                if pool.in_use == 0:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.2)
            with pytest.raises(RuntimeError, match=r"send a reset first .* closed after 1 s idle reconnects"):
                await env.step({"action": "search[x]"})  # on a new session: the old one was closed
            assert (await env.reset(goal_index=4)).observation["goal_index"] == 4

    asyncio.run(scenario())


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts file descriptors in /proc")
def test_clients_that_never_close_cannot_exhaust_the_server(tmp_path):
    # Issue 34: an evicted session's socket stayed open, so every idle timeout a client that drops
    # sessions without closing them got a fresh --max-envs (256 connections after 4 rounds of 70
    # against --max-envs 64).  Here: 4 rounds of 10 sessions against --max-envs 8, none closed.
    proc = subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", "openenv", "--port", "0", "--max-envs", "8",
                             "--idle-timeout", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, env=dict(os.environ), preexec_fn=default_sigint)
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        url = lines[1].split("serving at ")[1].split()[0]
        with GenericEnvClient(base_url=url).sync() as client:  # one session opened and closed: the server is warm
            client.reset(goal_index=0)
        time.sleep(0.5)
        baseline = _fds(proc.pid)

        async def rounds():
            kept, peaks, after = [], [], []
            for _ in range(4):
                sockets = [await _raw(url) for _ in range(10)]
                kept += sockets  # never closed, never collected: a trainer that drops its clients
                frames = []
                for ws in sockets:
                    with contextlib.suppress(websockets.ConnectionClosed):  # refused ones are closed at once
                        await ws.send(json.dumps({"type": "reset", "data": {"goal_index": 1}}))
                    frames.append(json.loads(await ws.recv()))
                assert [f["type"] for f in frames].count("observation") == 8
                assert [f["data"]["code"] for f in frames if f["type"] == "error"] == ["CAPACITY_REACHED"] * 2
                peaks.append(_fds(proc.pid))
                deadline = time.monotonic() + 20  # the reaper looks every 5 s; the client acks the close
                while _fds(proc.pid) > baseline and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                after.append(_fds(proc.pid))
                assert peaks[-1] >= baseline + 8 and after[-1] == baseline, (baseline, peaks, after)
            told = [json.loads(await asyncio.wait_for(ws.recv(), 10)) for ws in kept[:8]]  # round 1's, evicted
            return told

        told = asyncio.run(rounds())
        assert all("idle for more than 1 s" in t["data"]["message"] for t in told)
        with GenericEnvClient(base_url=url).sync() as client:  # and the server still serves
            assert client.reset(goal_index=3).observation["goal_index"] == 3
    finally:
        proc.kill()
        proc.communicate()


# -- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("flags, expected", [
    (["--max-envs", "0"], "argument --max-envs: must be a positive integer, got '0'"),
    (["--max-envs", "100000"], "argument --max-envs: must be at most 8,192, got '100000'"),
    (["--max-envs", "many"], "argument --max-envs: must be a positive integer, got 'many'"),
    (["--port", "65536"], "argument --port: must be a port number in 0-65535"),
    (["--idle-timeout", "-3"], "argument --idle-timeout: must be a finite number >= 0 (seconds, at most 31,536,000), got '-3'"),
    (["--shop", "/no/such/dir"], "argument --shop: directory '/no/such/dir' does not exist"),
    (["--observation-mode", "pdf"], "argument --observation-mode: invalid choice: 'pdf'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_cli_rejects_bad_flags_in_one_line(capsys, flags, expected):
    with pytest.raises(SystemExit) as exit_info:
        main(["openenv", *flags])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert expected in err[-1] and err[-1].startswith(("webshop-gym openenv: error:", "webshop-gym: error:"))
    assert "Traceback" not in "\n".join(err)


@pytest.mark.parametrize("kwargs, expected", [
    ({"max_envs": 0}, "max_envs must be"),
    ({"max_envs": 10**6}, "max_envs must be"),
    ({"idle_timeout": 0}, "idle_timeout must be"),
    ({"idle_timeout": "soon"}, "idle_timeout must be"),
    ({"observation_mode": "pdf"}, "observation_mode"),
])
def test_create_app_rejects_bad_arguments(default_shop, kwargs, expected):
    from webshop_gym.error import Error

    with pytest.raises((Error, ValueError), match=expected):  # the engine's check of observation_mode is a ValueError
        create_app(default_shop, warm_up=False, **kwargs)


def test_cli_help_and_add_parser():
    import argparse

    from webshop_gym.cli import openenv as cli

    parser = argparse.ArgumentParser(prog="x")
    cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["openenv", "--max-envs", "3", "--human-goals", "--port", "0"])
    assert (args.max_envs, args.human_goals, args.port, args.host, args.func) == (3, True, 0, "127.0.0.1", cli.run)


def test_cli_port_in_use_is_one_line(capsys, default_server, default_shop, monkeypatch):
    _, url = default_server
    port = url.rsplit(":", 1)[1]
    from webshop_gym.integrations.openenv import app as app_module

    monkeypatch.setattr(app_module, "create_app", lambda *a, **k: create_app(default_shop, max_envs=1, warm_up=False))
    assert main(["openenv", "--port", port]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"webshop-gym openenv: error: cannot listen on 127.0.0.1:{port}")


@pytest.mark.slow
def test_cli_serves_until_ctrl_c(tmp_path):

    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", "openenv", "--port", "0", "--max-envs", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                            preexec_fn=default_sigint)
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert "products" in lines[0] and "up to 2 sessions" in lines[0], lines
        url = lines[1].split("serving at ")[1].split()[0]
        with GenericEnvClient(base_url=url).sync() as client:
            assert client.reset(goal_index=0).observation["page"] == "start"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.strip().endswith("webshop-gym openenv: stopped")
    assert "Traceback" not in err


# -- the Hugging Face Space folder ---------------------------------------------------------------


def test_space_folder_passes_openenv_structure_checks():
    import yaml
    from openenv.cli._cli_utils import validate_env_structure
    from openenv.cli._validation import validate_multi_mode_deployment

    validate_env_structure(SPACE)  # raises on a missing required file
    ok, issues = validate_multi_mode_deployment(SPACE)
    assert [i for i in issues if "uv.lock" not in i] == []
    manifest = yaml.safe_load((SPACE / "openenv.yaml").read_text())
    assert manifest["name"] == "webshop" and manifest["app"] == "server.app:app"
    report = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", str(SPACE)], capture_output=True,
                            text=True, timeout=120, cwd=ROOT)  # OpenEnv's own validator, as a user runs it
    assert "PASS  static.manifest" in report.stdout and "Verdict: FAIL" not in report.stdout, report.stdout
    readme = (SPACE / "README.md").read_text()
    assert readme.startswith("---\n") and "sdk: docker" in readme and f"app_port: {manifest['port']}" in readme


# -- the environment facade, directly -------------------------------------------------------------


def test_facade_batches_concurrent_steps_and_refuses_overlapping_ones(default_shop):
    from webshop_gym.integrations.openenv.environment import (
        NoEpisode,
        SessionClosed,
        SlotPool,
        WebShopEnvironment,
    )

    pool = SlotPool(default_shop, 3)
    envs = [WebShopEnvironment(pool) for _ in range(3)]
    with pytest.raises(NoEpisode, match="send a reset first"):
        envs[0].step(WebShopAction(action="search[x]"))
    for i, env in enumerate(envs):
        env.reset(goal_index=i)
    assert pool.in_use == 3

    async def steps():
        return await asyncio.gather(*(env.step_async(WebShopAction(action="search[red shoes]")) for env in envs),
                                    return_exceptions=True)

    out = asyncio.run(steps())
    assert [o.page for o in out] == ["results"] * 3 and pool.stats["batches"] == 1

    async def overlapping():
        return await asyncio.gather(envs[0].step_async("click[next >]"), envs[0].step_async("click[next >]"),
                                    return_exceptions=True)

    first, second = asyncio.run(overlapping())
    assert first.page == "results" and "already in progress" in str(second)
    solo = WebShopEnv(shop=default_shop)
    solo.reset(options={"goal_index": 0})
    solo.step("search[red shoes]")
    assert first.text == solo.step("click[next >]")[0]
    envs[1].close()
    assert pool.in_use == 2
    with pytest.raises(SessionClosed, match="open a new session"):
        envs[1].reset()


def test_space_server_module_builds_the_app_from_its_environment(monkeypatch, default_shop):
    import importlib.util

    monkeypatch.setenv("WEBSHOP_MAX_ENVS", "3")
    monkeypatch.delenv("WEBSHOP_SHOP", raising=False)
    spec = importlib.util.spec_from_file_location("webshop_space_app", SPACE / "server" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.main)
    app = module.app  # built on first access, as `uvicorn server.app:app` does
    assert app.state.webshop_pool.num_slots == 4 and module.app is app
    assert len(app.state.webshop_pool.shop.goals) == len(default_shop.goals)


def test_cli_without_openenv_names_the_extra(monkeypatch, capsys):
    from webshop_gym.integrations.openenv import app as app_module

    def never(*args, **kwargs):
        raise AssertionError("the server must not start without OpenEnv")

    monkeypatch.setattr(app_module, "serve", never)  # a wrong outcome fails instead of serving forever
    for name in [m for m in sys.modules if m == "openenv" or m.startswith("openenv.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if the extra were not installed
    assert main(["openenv", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("webshop-gym openenv: error: the OpenEnv server needs OpenEnv")
    assert err[0].endswith("pip install 'webshop-gym[openenv]'")


# -- the prompt helpers' edges (issue 46) ---------------------------------------------------------


def test_a_reply_parsed_without_an_observation_is_never_reported_admissible():
    from webshop_gym.integrations.openenv import parse_action

    parsed = parse_action("<think>look</think><answer>search[red shoes]</answer>", None)
    assert parsed.action == "search[red shoes]" and parsed.format_ok
    assert parsed.valid is False and "no observation" in parsed.reason
    action, valid = parse_action("<answer>click[buy now]</answer>")
    assert (action, valid) == ("click[buy now]", False)


@pytest.mark.parametrize("entry, message", [
    ({"action": "search[x]"}, r"history\[1\].*observation"),
    ({"observation": "Search", "action": 3}, r"history\[1\].*action must be a string, got int"),
    ({"observation": ["Search"], "action": "search[x]"}, r"history\[1\].*observation must be a string, got list"),
    ({"observation": "Search", "action": "search[x]", "response": 5}, r"history\[1\].*response"),
    ({"observation": "Search", "action": "search[x]", "valid_actions": "search[<query>]"}, r"history\[1\].*valid_actions"),
    ({"observation": "Search", "action": "search[x]", "valid_actions": [1, 2]}, r"history\[1\].*valid_actions"),
    (42, r"history\[1\] must be a Turn or a dict"),
    (("only one",), r"history\[1\] must be a Turn or a dict"),
    (object(), r"history\[1\] must be a Turn or a dict"),
])
def test_bad_history_entries_get_one_clear_error(entry, message):
    from webshop_gym.agents.prompts import Turn
    from webshop_gym.integrations.openenv import build_prompt, prompt_messages

    obs = {"text": "WebShop [SEP] Instruction: [SEP] i need bacon [SEP] Search", "instruction": "i need bacon",
           "admissible_actions": ["search[<query>]"], "steps": 2}
    good = Turn("WebShop [SEP] Instruction: [SEP] i need bacon [SEP] Search", "search[bacon]")
    for fmt in ("think-answer", "react", "verl-agent"):
        for build in (prompt_messages, build_prompt):
            with pytest.raises(InvalidArgument, match=message):
                build(obs, fmt, [good, entry])
    with pytest.raises(InvalidArgument, match="history must be a sequence"):
        prompt_messages(obs, "think-answer", 7)


@pytest.mark.parametrize("change, message", [
    ({"admissible_actions": None}, "admissible_actions must be a list of action strings, got NoneType"),
    ({"admissible_actions": 5}, "admissible_actions must be a list of action strings, got int"),
    ({"admissible_actions": "search[<query>]"}, "admissible_actions must be a list of action strings, got str"),
    ({"admissible_actions": ["search[<query>]", 7]}, "admissible_actions must be a list of action strings, got list"),
    ({"instruction": None}, "instruction must be a string, got NoneType"),
    ({"text": 3}, "text must be a string, got int"),
    ({"steps": "two"}, "steps must be a non-negative integer, got 'two'"),
    ({"steps": -1}, "steps must be a non-negative integer, got -1"),
])
def test_a_malformed_observation_gets_one_clear_error(change, message):
    from webshop_gym.integrations.openenv import build_prompt, parse_action, prompt_messages

    obs = {"text": "WebShop [SEP] Instruction: [SEP] i need bacon [SEP] Search", "instruction": "i need bacon",
           "admissible_actions": ["search[<query>]"], "steps": 0, **change}
    for call in (lambda: prompt_messages(obs), lambda: build_prompt(obs, "react"),
                 lambda: parse_action("<answer>search[bacon]</answer>", obs)):
        with pytest.raises(InvalidArgument, match=message.replace("[", r"\[").replace("]", r"\]")) as info:
            call()
        assert "\n" not in str(info.value)
