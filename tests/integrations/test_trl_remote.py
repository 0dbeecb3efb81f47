"""TRL against a remote shop: ``WebShopRemoteToolEnv`` over a real ``webshop-gym openenv`` server on 127.0.0.1."""

from __future__ import annotations

import functools
import time

import pytest

from tests.helpers import require_extra  # noqa: E402

require_extra("openenv", "openenv", "OpenEnv")

from tests.helpers import ServedApp, wait_until  # noqa: E402
from tests.integrations.test_trl import TRL_DEPRECATION, grpo_config, tiny_trl  # noqa: E402,F401
from webshop_gym import load_shop  # noqa: E402
from webshop_gym.error import InvalidArgument  # noqa: E402
from webshop_gym.integrations.openenv.app import create_app  # noqa: E402
from webshop_gym.integrations.trl import (  # noqa: E402
    EpisodeFinished,
    EpisodeLost,
    InadmissibleAction,
    WebShopRemoteToolEnv,
    WebShopToolEnv,
    webshop_dataset,
)


@pytest.fixture(scope="module")
def serve():
    served = []

    def start(shop, **kwargs):
        served.append(ServedApp(create_app(shop, idle_timeout=None, **kwargs)))
        return served[-1].url

    yield start
    for server in served:
        server.stop()


@pytest.fixture(scope="module")
def url(serve, default_shop):
    return serve(default_shop)


def _play(env, goal: int) -> list[str]:
    """A scripted episode: an inadmissible click, a search, the first product, buy; every text returned."""
    texts = [env.reset(goal_index=goal)]
    with pytest.raises(InadmissibleAction) as refused:
        env.click("buy now")
    texts.append(str(refused.value))
    texts.append(env.search(" ".join(env.instruction.split()[:6])))
    product = next(label for label in env.info["valid_actions"] if label.startswith("click[b0"))[len("click["):-1]
    texts.append(env.click(product))
    texts.append(env.click("buy now"))
    with pytest.raises(EpisodeFinished) as over:
        env.search("more")
    texts.append(str(over.value))
    return texts


def test_the_remote_env_says_and_pays_what_the_in_process_env_does(url):
    remote, local = WebShopRemoteToolEnv(url=url), WebShopToolEnv(split=None)
    for goal in (0, 1500, 7):
        assert _play(remote, goal) == _play(local, goal)
        assert remote.get_reward() == local.get_reward() and remote.reward_info == local.reward_info
        assert (remote.actions, remote.invalid_actions, remote.steps, remote.done) == (
            local.actions, local.invalid_actions, local.steps, local.done)
    assert remote.reconnections == 0 and "goal 7, step 4" in repr(remote)
    with pytest.raises(ValueError, match="is not goal 3's on the server"):
        remote.reset(goal_index=3, instruction="something else")
    with pytest.raises(RuntimeError, match="goal_index"):
        remote.reset(goal_index=10**6)
    with pytest.raises(AttributeError, match="no local shop"):
        remote.shop  # noqa: B018
    remote.close()


def test_a_zero_argument_factory_reads_the_url_from_the_environment(url, monkeypatch):
    monkeypatch.setenv("WEBSHOP_GYM_OPENENV_URL", url)
    env = WebShopRemoteToolEnv()
    assert env.reset(goal_index=2).startswith("\n\nInstruction: ")
    monkeypatch.delenv("WEBSHOP_GYM_OPENENV_URL")
    with pytest.raises(InvalidArgument, match="WEBSHOP_GYM_OPENENV_URL"):
        WebShopRemoteToolEnv()
    with pytest.raises(InvalidArgument, match="split"):
        WebShopRemoteToolEnv(url=url, split="dev")


def test_a_dropped_socket_is_repaired_by_replaying_the_episode(url):
    remote, local = WebShopRemoteToolEnv(url=url), WebShopToolEnv(split=None)
    for env in (remote, local):
        env.reset(goal_index=11)
        env.search("men's boots")
    remote._run(remote._client._ws.close())  # the socket drops between two tool calls
    product = next(a for a in local.info["valid_actions"] if a.startswith("click[b0"))[len("click["):-1]
    assert remote.click(product) == local.click(product)
    assert remote.reconnections == 1
    assert remote.click("buy now") == local.click("buy now") and remote.get_reward() == local.get_reward()


def test_an_episode_that_cannot_be_re_established_is_lost_with_reward_zero(url, serve, default_shop):
    other = serve(load_shop(progress=False, seed=1))  # the same goals, other prices: the pages differ
    remote = WebShopRemoteToolEnv(url=url)
    remote.reset(goal_index=11)
    remote.search("men's boots")
    remote._run(remote._client._ws.close())
    remote.url = other  # as if the server came back with other settings
    with pytest.raises(EpisodeLost, match="did not reach the page the episode was on"):
        remote.click(next(a for a in remote.info["valid_actions"] if a.startswith("click[b0"))[len("click["):-1])
    assert remote.get_reward() == 0.0 and remote.done
    with pytest.raises(EpisodeFinished):
        remote.click("buy now")


@pytest.mark.slow
@pytest.mark.filterwarnings(TRL_DEPRECATION)
def test_grpo_trains_two_steps_against_the_remote_shop_with_the_in_process_rewards(tiny_trl, tmp_path, monkeypatch, url):  # noqa: F811
    tokenizer, tiny = tiny_trl
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")

    def train(factory, dataset, name):
        rewards, logs = [], []

        class Logs(TrainerCallback):
            def on_log(self, args, state, control, logs_=None, **kwargs):
                logs.append(dict(kwargs.get("logs") or logs_ or {}))

        get_reward = factory.func.get_reward if isinstance(factory, functools.partial) else factory.get_reward

        def recording(self):
            value = get_reward(self)
            rewards.append((self.goal_index, list(self.actions), value))
            return value

        cls = factory.func if isinstance(factory, functools.partial) else factory
        monkeypatch.setattr(cls, "get_reward", recording)
        trainer = GRPOTrainer(model=tiny.build_model(tokenizer, tiny.ToolCallConstraint(tokenizer)),
                              args=grpo_config(tmp_path / name), train_dataset=dataset,
                              processing_class=tokenizer, environment_factory=factory, callbacks=[Logs()])
        trainer.train()
        monkeypatch.undo()
        monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
        assert trainer.state.global_step == 2
        return rewards, [e["reward"] for e in logs if "reward" in e]

    # the remote trainer's dataset comes from the server too (docs/training.md's line for this route)
    remote_rewards, remote_logged = train(functools.partial(WebShopRemoteToolEnv, url=url),
                                          webshop_dataset("train", url=url, limit=2), "remote")
    local_rewards, local_logged = train(WebShopToolEnv, webshop_dataset("train", limit=2), "local")
    assert len(remote_rewards) == 8 and all(actions[-1] == "click[buy now]" for _, actions, _ in remote_rewards)
    assert remote_rewards == local_rewards and any(value > 0 for _, _, value in remote_rewards)
    assert remote_logged == pytest.approx(local_logged) and len(remote_logged) == 2


# -- capacity and sessions of dropped instances (issue 46) ----------------------------------------


def test_at_capacity_the_remote_env_says_so_and_names_the_limit(serve, default_shop):
    from webshop_gym.integrations.trl import ServerFull

    full = serve(default_shop, max_envs=2)
    holding = [WebShopRemoteToolEnv(url=full) for _ in range(2)]
    for env in holding:
        env.reset(goal_index=1)
    third = WebShopRemoteToolEnv(url=full)
    with pytest.raises(ServerFull) as refused:
        third.reset(goal_index=1)
    message = str(refused.value)
    assert "2/2 sessions" in message and "--max-envs" in message and full in message
    assert "\n" not in message and "Traceback" not in message
    assert isinstance(refused.value, RuntimeError)  # still a RuntimeError for callers that catch it
    holding[0].close()
    deadline = time.monotonic() + 10
    while True:  # the server frees the slot once it sees the socket close
        try:
            assert third.reset(goal_index=1).startswith("\n\nInstruction: ")
            break
        except ServerFull:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    for env in (holding[1], third):
        env.close()


def _in_use(app) -> int:
    return app.state.webshop_pool.in_use


@pytest.fixture()
def counted(default_shop):
    """A server whose slot pool the test can read: (app, url)."""
    server = ServedApp(create_app(default_shop, idle_timeout=None, max_envs=8))
    yield server.app, server.url
    server.stop()


def test_an_instance_dropped_without_close_releases_its_session_when_collected(counted):
    import gc

    app, url = counted
    envs = [WebShopRemoteToolEnv(url=url) for _ in range(3)]
    for env in envs:
        env.reset(goal_index=2)
        env.search("boots")
    assert wait_until(lambda: _in_use(app) == 3)
    del env
    envs.pop()  # one instance dropped without close()
    gc.collect()
    assert wait_until(lambda: _in_use(app) == 2), "a collected instance must hand its session back"
    envs.clear()
    gc.collect()
    assert wait_until(lambda: _in_use(app) == 0)


def test_instances_alive_at_process_exit_release_their_sessions(counted):
    import subprocess
    import sys

    app, url = counted
    script = ("from webshop_gym.integrations.trl import WebShopRemoteToolEnv\n"
              f"keep = [WebShopRemoteToolEnv(url={url!r}) for _ in range(3)]\n"
              "for env in keep:\n    env.reset(goal_index=3)\n"
              "print('ready', flush=True)\n"
              "import os, time\n"
              "time.sleep(0.5)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ready" in done.stdout, done.stderr[-2000:]
    assert done.stderr == ""
    assert wait_until(lambda: _in_use(app) == 0, timeout=5), "sessions of a finished process must be released"


# -- the goal dataset from the server (issue 45) -------------------------------------------------


def test_the_dataset_comes_from_the_server_without_a_local_shop(url, monkeypatch):
    import webshop_gym.integrations.trl as trl

    local = {split: webshop_dataset(split, limit=4, as_dataset=False) for split in ("train", "test", "eval")}
    local_protocol = webshop_dataset("train", protocol="webshop-gym", limit=5, as_dataset=False)

    def no_shop(*args, **kwargs):
        raise AssertionError("webshop_dataset(url=...) loaded a shop")

    monkeypatch.setattr(trl, "shared_shop", no_shop)
    monkeypatch.setattr(trl, "load_shop", no_shop)
    for split, rows in local.items():
        assert webshop_dataset(split, url=url, limit=4, as_dataset=False) == rows
    assert webshop_dataset("train", protocol="webshop-gym", url=url, limit=5, as_dataset=False) == local_protocol
    remote = webshop_dataset("test", url=url, limit=3)  # a datasets.Dataset, as TRL takes it
    env = WebShopRemoteToolEnv(url=url)
    for row in remote:
        assert env.reset(**row).startswith("\n\nInstruction: " + row["instruction"])
    env.close()
    drawn = WebShopRemoteToolEnv(url=url, split="webshop-gym:train", seed=3)  # rows without goal_index
    train_goals = {r["goal_index"] for r in webshop_dataset("train", protocol="webshop-gym", url=url, as_dataset=False)}
    for _ in range(3):
        drawn.reset()
        assert drawn.goal_index in train_goals
    drawn.close()
    from webshop_gym.error import TestGoalsRefused

    with pytest.raises(TestGoalsRefused, match="test goals"):
        webshop_dataset("test", protocol="webshop-gym", url=url)
    assert len(webshop_dataset("test", protocol="webshop-gym", url=url, allow_test_goals=True, as_dataset=False)) == 500
    with pytest.raises(InvalidArgument, match="refused split 'verl-agent:train'.*needs the 1k release"):
        webshop_dataset("train", protocol="verl-agent", url=url, allow_test_goals=True)
    with pytest.raises(InvalidArgument, match="the shop settings are the server's"):
        webshop_dataset("train", url=url, human_goals=True)
    from webshop_gym.integrations.remote_tasks import RemoteShopError

    with pytest.raises(RemoteShopError, match="cannot read the goals of http://127.0.0.1:9"):
        webshop_dataset("train", url="http://127.0.0.1:9", as_dataset=False)


def test_a_protocol_s_train_goals_that_overlap_its_test_goals_are_refused_remotely_as_locally(serve, real_dir):
    real = load_shop(real_dir, progress=False)
    there = serve(real)
    from webshop_gym.error import TestGoalsRefused

    with pytest.raises(TestGoalsRefused, match="'verl-agent:train' holds"):
        webshop_dataset("train", protocol="verl-agent", url=there)
    with pytest.raises(TestGoalsRefused, match="'verl-agent:train' holds"):
        webshop_dataset("train", protocol="verl-agent", shop=real)
    assert webshop_dataset("train", protocol="verl-agent-500", url=there, as_dataset=False) == \
        webshop_dataset("train", protocol="verl-agent-500", shop=real, as_dataset=False)
