"""WebShop in GEM (gem-llm 0.1.0): ``gem.make``, ``gem.make_vec`` and the way GEM's GRPO gives a group one goal."""

from __future__ import annotations

import copy
import logging

import pytest

# our module first: it imports gem and undoes the logging set-up gem's import does (a bare `import gem`
# would leave every later test of this worker logging INFO to stderr)
from tests.helpers import require_extra  # noqa: E402

require_extra("webshop_gym.integrations.gem", "gem", ("gem-llm",))

import gem  # noqa: E402

from tests.openai_server import scripted_answer  # noqa: E402
from webshop_gym import WebShopEnv  # noqa: E402
from webshop_gym.agents.prompts import Turn, admissible_actions, make_prompt  # noqa: E402
from webshop_gym.error import Error, InvalidArgument  # noqa: E402
from webshop_gym.integrations import gem as webshop_gem  # noqa: E402


def _reply(prompt: str, fmt: str = "verl-agent") -> str:
    """The scripted policy on a GEM observation: search the instruction, open the first result, buy."""
    if fmt == "verl-agent":
        task = prompt.split("Your task is to: ", 1)[1].split(".\n", 1)[0]
        actions = [a.strip().strip(",").strip("'") for a in prompt.split("[\n", 1)[1].split("\n]", 1)[0].splitlines()]
        if "search[<your query>]" in actions:
            action = "search[" + task.split(", and price lower than")[0] + "]"
        elif "click[buy now]" in actions:
            action = "click[buy now]"
        else:
            action = next(a for a in actions if a.startswith("click[b0"))
        return f"<think>next</think><action>{action}</action>"
    # the whole prompt for the instruction, its last turn (after the last blank line) for what is admissible now
    return scripted_answer([{"role": "user", "content": prompt}, {"role": "user", "content": prompt.split("\n\n")[-1]}],
                           fmt)


def _replayed(shop, goal: int, replies: list[str], fmt: str):
    """The same replies in WebShopEnv with eval's prompt class: the prompts, rewards and infos."""
    env, prompt = WebShopEnv(shop=shop, split=None), make_prompt(fmt)
    obs, info = env.reset(options={"goal_index": goal})
    turns, prompts, rewards = [], [prompt.build(obs, info, [])], []
    for reply in replies:
        parsed = prompt.parse_detailed(reply, admissible_actions(info))
        turns.append(Turn(obs, parsed.action, reply, tuple(admissible_actions(info))))
        obs, reward, terminated, truncated, info = env.step(parsed.action)
        prompts.append(prompt.build(obs, info, turns))
        rewards.append((reward, terminated, truncated))
    return prompts, rewards, info


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


@pytest.mark.parametrize("fmt", ["verl-agent", "think-answer", "react"])
def test_episodes_give_eval_s_prompts_and_webshop_env_s_rewards(default_shop, fmt):
    env = gem.make("webshop:test", prompt=fmt)
    for goal in (0, 1, 7):
        prompt, info = env.reset(goal_index=goal)
        prompts, replies, out = [prompt], [], None
        while out is None or not (out[2] or out[3]):
            replies.append(_reply(prompts[-1], fmt))
            out = env.step(replies[-1])
            prompts.append(out[0])
        want_prompts, want_rewards, want_info = _replayed(default_shop, goal, replies, fmt)
        assert prompts == want_prompts
        assert out[1:4] == want_rewards[-1] and out[2] and out[1] > 0
        assert out[4]["reward_info"] == want_info["reward_info"] and out[4]["goal_index"] == goal


def test_make_vec_plays_every_slot_and_seeds_each_env(default_shop):
    for async_mode in (False, True):
        vec = gem.make_vec(["webshop:train"] * 4, vec_kwargs=[{"seed": 10 + j} for j in range(4)], async_mode=async_mode)
        prompts, infos = vec.reset()
        goals = [i["goal_index"] for i in infos]
        again = gem.make_vec(["webshop:train"] * 4, vec_kwargs=[{"seed": 10 + j} for j in range(4)])
        assert [i["goal_index"] for i in again.reset()[1]] == goals  # the same seeds draw the same goals
        assert all(g >= 1500 for g in goals) and len(set(goals)) == 4
        total, sent = [0.0] * 4, [[] for _ in range(4)]
        for _ in range(3):  # search, open, buy: every slot ends its episode (and GEM resets it)
            replies = [_reply(p) for p in prompts]
            for k, reply in enumerate(replies):
                sent[k].append(reply)
            prompts, rewards, terminated, truncated, infos = vec.step(replies)
            total = [t + r for t, r in zip(total, rewards)]
        assert terminated.all() and not truncated.any() and all(t > 0 for t in total)
        for k, goal in enumerate(goals):  # each slot's reward is WebShopEnv's for its replies
            assert total[k] == pytest.approx(_replayed(default_shop, goal, sent[k], "verl-agent")[1][-1][0])


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
    replies = [_reply(first), "<think>x</think><action>click[buy now]</action>", _reply(first), _reply(first)]
    prompts, rewards, terminated, truncated, infos = vec.step(replies)
    assert [i["action_is_valid"] for i in infos] == [True, False, True, True]
    assert prompts[0] == prompts[2] == prompts[3] != prompts[1]
    # a mid-episode state is copied too (what GEM's deepcopy fallback would do): the same page, and
    # the copy then plays on exactly as the original would
    mid = vec.envs[0].get_state()
    copy_env = vec.envs[0].spawn(same_state=True)
    assert copy_env.episode.prompt() == vec.envs[0].episode.prompt() and copy_env.get_state() == mid
    reply = _reply(copy_env.episode.prompt())
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
    with pytest.raises(InvalidArgument, match="format"):
        gem.make("webshop:test", prompt="json")
    env.reset(goal_index=0)
    assert env.sample_random_action().startswith("<think>")
