"""WebShop in GEM (gem-llm 0.1.0): ``gem.make``, ``gem.make_vec``, GEM's history wrappers and the way GEM's GRPO gives a group one goal."""

from __future__ import annotations

import copy
import logging

import pytest

from tests.helpers import require_extra  # noqa: E402

# our module first: it imports gem and undoes the logging set-up gem's import does (a bare `import gem`
# would leave every later test of this worker logging INFO to stderr); without gem it raises
# DependencyNotInstalled, which pytest.importorskip would not skip
require_extra("webshop_gym.integrations.gem", "gem", "gem-llm", distributions=("gem-llm",))

import gem  # noqa: E402

from tests.openai_server import scripted_answer  # noqa: E402
from webshop_gym import WebShopEnv  # noqa: E402
from webshop_gym.agents.prompts import Turn, admissible_actions, make_prompt  # noqa: E402
from webshop_gym.error import Error, InvalidArgument  # noqa: E402
from webshop_gym.integrations import gem as webshop_gem  # noqa: E402
from webshop_gym.integrations.shop_choice import SHOP_ENV  # noqa: E402


def _reply(observations: list[str], fmt: str = "think-answer") -> str:
    """The scripted policy on a GEM episode's observations so far: search the instruction, open the first result, buy."""
    return scripted_answer([{"role": "user", "content": o} for o in observations], fmt)


def _replayed(shop, goal: int, replies: list[str], fmt: str):
    """The same replies in WebShopEnv with eval's prompt class: the messages before each reply and after the last, rewards, info."""
    env, prompt = WebShopEnv(shop=shop, split=None), make_prompt(fmt)
    obs, info = env.reset(options={"goal_index": goal})
    turns, messages, rewards = [], [prompt.messages(obs, info, [])], []
    for reply in replies:
        parsed = prompt.parse_detailed(reply, admissible_actions(info))
        turns.append(Turn(obs, parsed.action, reply, tuple(admissible_actions(info))))
        obs, reward, terminated, truncated, info = env.step(parsed.action)
        messages.append(prompt.messages(obs, info, turns))
        rewards.append((reward, terminated, truncated))
    return messages, rewards, info


def _play(env, fmt: str = "think-answer"):
    """Play the scripted policy to the end on a (possibly wrapped) env; return the observations, replies and last step."""
    obs, _ = env.reset()
    seen, replies, out = [obs], [], None
    while out is None or not (out[2] or out[3]):
        replies.append(_reply(seen, fmt))
        out = env.step(replies[-1])
        seen.append(out[0])
    return seen, replies, out


def test_one_import_registers_every_id_and_gem_make_builds_them(default_shop):
    assert sorted(webshop_gem.ENV_IDS) == sorted(
        f"webshop:{s}{h}" for s in ("train", "eval", "test") for h in ("", "-human"))
    test = gem.make("webshop:test")
    assert list(test.goal_range) == list(range(500)) and test.config["human_goals"] is False
    assert gem.make("webshop:train").goal_range[0] == 1500 and gem.make("webshop:eval").goal_range[0] == 500
    human = gem.make("webshop:test-human")
    prompt, info = human.reset(goal_index=3)
    assert info["instruction"] == human.env.shop.goals.instruction[3] and human.env.shop.goals.kind == "human"
    with pytest.raises(Error, match="holds no goals"):
        gem.make("webshop:train-human")  # the embedded shop's human goals are test and eval only
    webshop_gem.register()  # a second registration changes nothing (gem.register would raise)
    assert gem.make("webshop:test", prompt="react", max_steps=4).config["max_steps"] == 4


def test_importing_leaves_the_program_s_logging_as_it_was():
    import subprocess
    import sys

    script = ("import logging, webshop_gym.integrations.gem, gem\n"
              "root = logging.getLogger(); print(root.level, len(root.handlers))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(logging.WARNING), "0"]  # gem's basicConfig(level=INFO) undone


@pytest.mark.parametrize("fmt", ["think-answer", "react"])
def test_episodes_give_eval_s_messages_as_new_text_and_webshop_env_s_rewards(default_shop, fmt):
    env = gem.make("webshop:test", prompt=fmt)
    for goal in (0, 1, 7):
        first, info = env.reset(goal_index=goal)
        seen, replies, out = [first], [], None
        while out is None or not (out[2] or out[3]):
            replies.append(_reply(seen, fmt))
            out = env.step(replies[-1])
            seen.append(out[0])
            assert out[4]["parsed_action"] == replies[-1]  # what GEM's wrappers show as the assistant's turn
        want, want_rewards, want_info = _replayed(default_shop, goal, replies, fmt)
        # the reset is the task (eval's system message and first page), each step only the page it led to
        assert first == want[0][0]["content"] + "\n\n" + want[0][1]["content"]
        assert seen[1:] == [m[-1]["content"] for m in want[1:]]
        assert env.messages()[1:] == want[-1][2:] and env.messages()[0]["content"] == first
        assert out[1:4] == want_rewards[-1] and out[2] and out[1] > 0
        assert out[4]["reward_info"] == want_info["reward_info"] and out[4]["goal_index"] == goal


def _chat_tokenizer():
    """A tokenizer with a ChatML template (what concat_chat needs), built offline."""
    require_extra("transformers", "hf", "transformers")
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), eos_token="<|im_end|>")
    tokenizer.chat_template = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                               "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    return tokenizer


def _line(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


@pytest.mark.parametrize("wrapper", ["concat", "concat_with_action", "concat_chat"])
def test_gem_s_history_wrappers_give_the_env_s_own_conversation(wrapper, capsys):
    """GEM's own wrappers (get_wrapper_fns) build, after every step, the env's conversation once: no repeats."""
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    tokenizer = _chat_tokenizer() if wrapper == "concat_chat" else None
    base = gem.make("webshop:test", use_mp=False)  # GEM's tinker example's keyword, ignored
    assert base.ignored_keywords == {"use_mp": False}
    (wrap,) = get_wrapper_fns(wrapper, tokenizer=tokenizer)
    env = wrap(base)
    obs, _ = env.reset()
    step = 0
    while True:  # search, open the first result, buy: checked after 0, 1, 2 and 3 steps
        messages = base.messages()
        if wrapper == "concat":
            own = "".join(_line(m["content"]) for m in messages if m["role"] == "user")
        elif wrapper == "concat_with_action":
            own = "".join(_line(m["content"]) for m in messages)
        else:
            own = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        assert len(obs) == len(own) and obs == own, f"after {step} steps"
        assert obs.count(base.episode.info["instruction"]) == 1  # the task once, whatever the step
        if base.episode.done:
            break
        users = [m["content"] for m in messages if m["role"] == "user"]
        obs, reward, terminated, truncated, info = env.step(_reply(users))
        step += 1
    assert step == 3 and reward > 0
    capsys.readouterr()  # get_wrapper_fns prints what it built


def test_every_test_goal_is_evaluated_through_a_wrapper_with_eval(default_shop, capsys):
    """GEM's wrappers pass reset only a seed: eval=True (GEM's keyword) walks the split, one goal per reset."""
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    (concat,) = get_wrapper_fns("concat")
    env = concat(gem.make("webshop:test", eval=True, max_steps=1))
    played = []
    for _ in range(len(env.unwrapped.goal_range) + 2):
        _, info = env.reset()
        played.append(info["goal_index"])
        env.step("<think>x</think><answer>click[buy now]</answer>")
    assert played == list(range(500)) + [0, 1]  # every test goal once, in order, then again
    drawn = gem.make("webshop:test")
    assert [drawn.reset()[1]["goal_index"] for _ in range(5)] != [0, 1, 2, 3, 4]  # without eval: drawn
    capsys.readouterr()


def test_the_shop_comes_from_webshop_gym_shop_or_a_registered_id(real_dir, monkeypatch):
    monkeypatch.setenv(SHOP_ENV, str(real_dir))
    env = gem.make("webshop:test")
    assert env.env.shop.path == real_dir.resolve()
    monkeypatch.delenv(SHOP_ENV)
    assert gem.make("webshop:test").env.shop.path != real_dir.resolve()  # the embedded shop
    from gem.envs.registration import ENV_REGISTRY

    if "my-shop:test" not in ENV_REGISTRY:
        gem.register("my-shop:test", "webshop_gym.integrations.gem:WebShopGemEnv", shop=str(real_dir), split="test")
    assert gem.make("my-shop:test").env.shop.path == real_dir.resolve()


def test_make_vec_plays_every_slot_and_seeds_each_env(default_shop):
    for async_mode in (False, True):
        vec = gem.make_vec(["webshop:train"] * 4, vec_kwargs=[{"seed": 10 + j} for j in range(4)], async_mode=async_mode)
        prompts, infos = vec.reset()
        goals = [i["goal_index"] for i in infos]
        again = gem.make_vec(["webshop:train"] * 4, vec_kwargs=[{"seed": 10 + j} for j in range(4)])
        assert [i["goal_index"] for i in again.reset()[1]] == goals  # the same seeds draw the same goals
        assert all(g >= 1500 for g in goals) and len(set(goals)) == 4
        total, sent, seen = [0.0] * 4, [[] for _ in range(4)], [[p] for p in prompts]
        for _ in range(3):  # search, open, buy: every slot ends its episode (and GEM resets it)
            replies = [_reply(seen[k]) for k in range(4)]
            for k, reply in enumerate(replies):
                sent[k].append(reply)
            prompts, rewards, terminated, truncated, infos = vec.step(replies)
            for k, p in enumerate(prompts):
                seen[k].append(p)
            total = [t + r for t, r in zip(total, rewards)]
        assert terminated.all() and not truncated.any() and all(t > 0 for t in total)
        for k, goal in enumerate(goals):  # each slot's reward is WebShopEnv's for its replies
            assert total[k] == pytest.approx(_replayed(default_shop, goal, sent[k], "think-answer")[1][-1][0])


def test_a_grpo_group_shares_its_goal_as_gem_s_grpo_sets_it(default_shop):
    """GEM's collect_experience_multiple: reset one env, get_state once per member, set_state a deep copy into each slot."""
    vec = gem.make_vec(["webshop:train"] * 4, vec_kwargs=[{"seed": j} for j in range(4)])
    vec.reset()
    leader = vec.envs[0]
    first, _ = leader.reset()
    group = [copy.deepcopy(leader.get_state()) for _ in range(4)]
    for i, state in enumerate(group):
        vec.envs[i].set_state(copy.deepcopy(state))
    goal = leader.episode.goal_index
    assert [e.episode.goal_index for e in vec.envs] == [goal] * 4
    assert [e.episode.prompt() for e in vec.envs] == [first] * 4
    # members then diverge: one buys at once (invalid: nothing to buy on the start page), others search
    replies = [_reply([first]), "<think>x</think><answer>click[buy now]</answer>", _reply([first]), _reply([first])]
    prompts, rewards, terminated, truncated, infos = vec.step(replies)
    assert [i["action_is_valid"] for i in infos] == [True, False, True, True]
    assert prompts[0] == prompts[2] == prompts[3] != prompts[1]
    # a mid-episode state is copied too (what GEM's deepcopy fallback would do): the same page, and
    # the copy then plays on exactly as the original would
    mid = vec.envs[0].get_state()
    copy_env = vec.envs[0].spawn(same_state=True)
    assert copy_env.episode.prompt() == vec.envs[0].episode.prompt() and copy_env.get_state() == mid
    reply = _reply([m["content"] for m in copy_env.messages() if m["role"] == "user"])
    assert copy_env.step(reply)[:4] == vec.envs[0].step(reply)[:4]


def test_bad_arguments_and_states_get_one_clear_error():
    env = gem.make("webshop:test")
    with pytest.raises(InvalidArgument, match="no episode yet"):
        env.step("search[x]")
    with pytest.raises(InvalidArgument, match="seed must be"):
        env.reset(seed=-1)
    with pytest.raises(Error, match="goal_index"):
        env.reset(goal_index=10**7)
    with pytest.raises(InvalidArgument, match="state must be a dict from get_state"):
        env.set_state({"goal": 1})
    for fmt in ("json", "verl-agent"):  # verl-agent repeats its history in every prompt: not GEM's way
        with pytest.raises(InvalidArgument, match="prompt must be one of think-answer, react for GEM"):
            gem.make("webshop:test", prompt=fmt)
    env.reset(goal_index=0)
    assert env.sample_random_action().startswith("<think>")
