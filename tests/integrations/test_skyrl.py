"""WebShop as a SkyRL-gym text env: made by skyrl_gym's own registry, driven as SkyRL's generator drives it.

SkyRL's trainer (``skyrl`` 0.4.0, which holds ``SkyRLGymGenerator``) needs Python >= 3.12, so these
tests play its generator's contract, read from ``skyrl/train/generators/skyrl_gym_generator.py``:
``skyrl_gym.make(env_class, env_config=..., extras=<row>)``, ``init(prompt)``, then per turn
``step(reply)`` with the reply and the observations appended to one conversation, and its
token-in-token-out bookkeeping (the reply's ids, then the observation's ids cut from a fixed base
conversation).  The episodes are compared with ``webshop-gym eval`` on the same goals and model.
"""

from __future__ import annotations

import copy
import json
import sys
import urllib.request

import pytest

from tests.helpers import require_extra  # noqa: E402

require_extra("skyrl_gym", "skyrl", "skyrl-gym")

import skyrl_gym  # noqa: E402

from tests.helpers import load_example  # noqa: E402
from tests.openai_server import ChatServer  # noqa: E402
from webshop_gym.cli.app import main as cli  # noqa: E402
from webshop_gym.error import DependencyNotInstalled, Error, InvalidArgument  # noqa: E402
from webshop_gym.integrations import skyrl  # noqa: E402
from webshop_gym.integrations.shop_choice import SHOP_ENV, shop_digest  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402


def _ask(url: str, messages: list[dict]) -> str:
    body = json.dumps({"model": "scripted", "messages": messages}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["choices"][0]["message"]["content"]


def _extras(row: dict) -> dict:
    """The row's columns other than prompt and env_class (SkyRL's PromptDataset), and the generator's max_turns."""
    return {**{k: v for k, v in row.items() if k not in ("prompt", "env_class")}, "max_turns": 1}


def _generator_episode(row: dict, model) -> tuple[list[list[dict]], list[float], object]:
    """One trajectory as SkyRLGymGenerator.agent_loop plays it: the conversation sent per turn, the rewards, the env."""
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=_extras(row))
    chat, _ = env.init(copy.deepcopy(row["prompt"]))
    sent, rewards, done = [], [], False
    while not done:
        sent.append(copy.deepcopy(chat))
        reply = model(chat)
        out = env.step(reply)
        rewards.append(out["reward"])
        done = out["done"]
        chat += [{"role": "assistant", "content": reply}, *out["observations"]]
    env.close()
    return sent, rewards, env


@pytest.mark.parametrize("fmt", ["think-answer", "react"])
def test_the_generator_s_conversation_rewards_and_prompt_tokens_are_eval_s(tmp_path, default_shop, fmt):
    with ChatServer(models=["scripted"], answer=lambda messages: _scripted(messages, fmt)) as server:
        out = tmp_path / "eval.jsonl"
        assert cli(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--prompt", fmt,
                    "--num-goals", "3", "--concurrency", "1", "--out", str(out), "--quiet"]) == 0
        eval_requests = [r["messages"] for r in server.requests]
        eval_usage = [r["usage"]["prompt_tokens"] for r in server.responses]
        server.requests.clear()
        server.responses.clear()
        rows = skyrl.skyrl_rows("test", limit=3, format=fmt)
        played = [_generator_episode(row, lambda chat: _ask(server.url, chat)) for row in rows]
        skyrl_requests = [r["messages"] for r in server.requests]
        skyrl_usage = [r["usage"]["prompt_tokens"] for r in server.responses]
    assert skyrl_requests == eval_requests  # every prompt, message for message
    assert skyrl_usage == eval_usage  # the prompt tokens the endpoint counted
    episodes = read_log(out).episodes
    assert [e.goal_index for e in episodes] == [r["goal_index"] for r in rows] == [0, 1, 2]
    assert [s["usage"]["prompt_tokens"] for e in episodes for s in e.steps] == skyrl_usage  # as eval logged them
    for episode, (_, rewards, env) in zip(episodes, played):
        steps = episode.steps
        assert [s["action"] for s in steps] == env.episode.actions
        seen = [t.observation for t in env.episode.turns[1:]] + [env.episode.obs]  # each page an action led to
        assert [s["observation"] for s in steps] == seen
        assert rewards[:-1] == [0.0] * (len(rewards) - 1)
        assert rewards[-1] == pytest.approx(steps[-1]["reward"]) and sum(rewards) == pytest.approx(episode.reward)
        metrics = env.get_metrics()
        assert metrics["reward"] == pytest.approx(episode.reward) and metrics["steps"] == len(steps)
    assert any(e.reward > 0 for e in episodes)


def _scripted(messages, fmt):
    from tests.openai_server import scripted_answer

    return scripted_answer(messages, fmt)


def test_the_generator_s_token_ids_are_the_chat_template_of_eval_s_messages(default_shop):
    """Token in, token out: SkyRL's ids for each turn equal the tokens of eval's prompt for it (``--policy hf``)."""
    pytest.importorskip("transformers", reason="transformers is not installed: pip install 'webshop-gym[hf]'")
    pytest.importorskip("trl", reason="TRL (its Qwen2.5 chat template) is not installed: pip install 'webshop-gym[trl]'")
    from trl.chat_template_utils import qwen2_5_chat_template

    from tests.openai_server import scripted_answer
    from webshop_gym.agents.prompts import make_prompt

    tiny = load_example("trl_cpu_smoke")
    tokenizer = tiny.build_tokenizer(tiny.corpus(default_shop, [make_prompt("think-answer").system]), qwen2_5_chat_template)
    eos = tokenizer.eos_token_id

    def template(messages, generation):
        return tokenizer.apply_chat_template(messages, add_generation_prompt=generation, tokenize=True, return_dict=False)

    base = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "I am a user."}]
    base_ids = template(base, False)
    base_ids = base_ids[: len(base_ids) - base_ids[::-1].index(eos)]  # cut after the last EOS, as SkyRL does
    for row in skyrl.skyrl_rows("test", limit=2):
        env = skyrl_gym.make("webshop", env_config={}, extras=_extras(row))
        chat, _ = env.init(row["prompt"])
        ids = template(chat, True)
        done = False
        while not done:
            # eval --policy hf: the chat template of the format's messages, as text, then tokenized
            text = tokenizer.apply_chat_template(env.episode.messages(), tokenize=False, add_generation_prompt=True)
            assert ids == tokenizer(text, add_special_tokens=False)["input_ids"]
            reply = scripted_answer(chat)
            out = env.step(reply)
            done = out["done"]
            reply_ids = tokenizer.encode(reply, add_special_tokens=False) + [eos]  # the engine stops at EOS
            obs_ids = template([*base, *out["observations"]], not done)[len(base_ids):] if out["observations"] else []
            ids = ids + reply_ids + obs_ids
            chat += [{"role": "assistant", "content": reply}, *out["observations"]]
        assert out["reward"] == env.get_metrics()["reward"]


def test_the_env_is_registered_on_import_under_its_documented_id():
    assert skyrl.ENV_ID == "webshop" and "webshop" in skyrl_gym.registry
    assert skyrl_gym.registry["webshop"].entry_point == "webshop_gym.integrations.skyrl:WebShopSkyRLEnv"
    skyrl.register()  # idempotent: skyrl_gym would raise on a second registration of the id
    env = skyrl_gym.make("webshop", env_config={}, extras={"goal_index": 7})
    assert isinstance(env, skyrl.WebShopSkyRLEnv) and env.max_turns == 15


def test_rows_and_settings_from_the_config_section_or_the_row(tmp_path, default_shop):
    path = skyrl.write_skyrl_dataset(tmp_path / "train.jsonl", "train", limit=3, max_steps=4, format="react")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["goal_index"] for r in rows] == [1500, 1501, 1502]
    assert rows[0]["env_class"] == "webshop" and "max_steps" not in rows[0]  # settings ride in extra_info
    assert rows[0]["extra_info"] == {"shop": "embedded", "shop_digest": shop_digest(default_shop), "max_steps": 4,
                                     "format": "react"}
    assert rows[0]["instruction"] == default_shop.goals.instruction[1500]
    env = skyrl_gym.make("webshop", env_config={}, extras=_extras(rows[0]))
    assert env.init(rows[0]["prompt"])[0] == rows[0]["prompt"] and env.max_turns == 4
    for _ in range(4):  # inadmissible replies use the steps; the cap ends the episode, reward 0
        out = env.step("no action here")
    assert out["done"] and out["reward"] == 0.0 and out["observations"] == []
    assert env.get_metrics()["invalid_actions"] == 4
    # a config section (a subclassed SkyRLGymConfig's; SkyRL's own has none) sets what the row does not
    env = skyrl_gym.make("webshop", env_config={"max_steps": 2}, extras={"goal_index": 3})
    assert env.max_turns == 2
    # a setting given as a column of its own is read as before
    assert skyrl_gym.make("webshop", env_config={}, extras={"goal_index": 3, "max_steps": 5}).max_turns == 5


def test_rows_name_the_shop_portably_and_the_training_machine_resolves_it(tmp_path, real_dir, monkeypatch):
    """No local path in the file; WEBSHOP_GYM_SHOP (the shop, or a folder holding it) finds it where SkyRL trains."""
    monkeypatch.delenv(SHOP_ENV, raising=False)
    path = skyrl.write_skyrl_dataset(tmp_path / "test.jsonl", "test", limit=2, shop=real_dir)
    text = path.read_text()
    rows = [json.loads(line) for line in text.splitlines()]
    assert str(real_dir.parent) not in text and rows[0]["extra_info"]["shop"] == "webshop-small"
    with pytest.raises(InvalidArgument, match=f"names shop 'webshop-small': set {SHOP_ENV} to its directory") as e:
        skyrl_gym.make("webshop", env_config={}, extras=_extras(rows[0]))
    assert "\n" not in str(e.value)
    for where in (real_dir, real_dir.parent):
        monkeypatch.setenv(SHOP_ENV, str(where))
        env = skyrl_gym.make("webshop", env_config={}, extras=_extras(rows[1]))
        assert env.init(rows[1]["prompt"])[0] == rows[1]["prompt"]
        assert env.episode.env.shop.path == real_dir.resolve()
    tampered = {**rows[0], "extra_info": {**rows[0]["extra_info"], "shop_digest": "0" * 16}}
    with pytest.raises(InvalidArgument, match="is not the shop the rows were built on"):
        skyrl_gym.make("webshop", env_config={}, extras=_extras(tampered))
    # the embedded shop's rows play the embedded shop whatever WEBSHOP_GYM_SHOP says
    embedded = skyrl.skyrl_rows("test", limit=1, shop="embedded")[0]
    assert embedded["extra_info"]["shop"] == "embedded"
    env = skyrl_gym.make("webshop", env_config={}, extras=_extras(embedded))
    assert env.init(embedded["prompt"])[0] == embedded["prompt"]


@pytest.mark.parametrize("extras, message", [
    ({}, "needs an integer goal_index"),
    ({"goal_index": "3"}, "needs an integer goal_index"),
    ({"goal_index": 10**7}, "goal_index"),
    ({"goal_index": 3, "format": "verl-agent"}, "think-answer, react"),
    ({"goal_index": 3, "instruction": "something else"}, "is not goal 3's"),
    ({"goal_index": 3, "extra_info": "max_steps=4"}, "extra_info must be a dict"),
    ({"goal_index": 3, "extra_info": {"shop": "no-such-shop"}}, "names shop 'no-such-shop'"),
])
def test_bad_rows_are_refused_with_one_clear_error(extras, message):
    with pytest.raises(Error, match=message) as refused:  # ours, never a bare KeyError or TypeError
        skyrl_gym.make("webshop", env_config={}, extras=extras)
    assert "\n" not in str(refused.value)


def test_a_prompt_from_other_settings_is_refused(default_shop):
    row = skyrl.skyrl_rows("test", limit=1)[0]
    env = skyrl_gym.make("webshop", env_config={"format": "react"}, extras=_extras(row))
    with pytest.raises(InvalidArgument, match="the row's prompt is not goal 0's first prompt"):
        env.init(row["prompt"])
    assert env.init([])[0][0]["role"] == "system"  # an empty prompt: the env's own first messages


def test_skyrl_s_launcher_hook_says_what_it_needs_where_skyrl_is_missing(monkeypatch):
    if sys.version_info >= (3, 12):
        pytest.skip("this checks the message on Python < 3.12, where SkyRL's trainer does not install")
    with pytest.raises(DependencyNotInstalled, match=r"Python >= 3.12"):
        skyrl.main(["trainer.override_entrypoint=webshop_gym.integrations.skyrl", "environment.env_class=webshop"])
