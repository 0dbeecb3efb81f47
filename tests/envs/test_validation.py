"""Arguments of reset and the constructors: one validation, one message style (issue 13, items 2, 10-12)."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode

import webshop_gym  # noqa: F401  (registers the ids)
from webshop_gym import WebShopEnv, WebShopVectorEnv
from webshop_gym.error import GoalNotFound, InvalidArgument

BAD_GOALS = [3.5, 3.0, "3", True, np.bool_(True), b"3", "abc", float("nan"), float("inf"), None, [3]]


@pytest.mark.parametrize("bad", BAD_GOALS[:-2], ids=repr)
def test_single_env_rejects_non_integer_goals_naming_goal_index(default_shop, bad):
    env = WebShopEnv(shop=default_shop)
    with pytest.raises(InvalidArgument, match=r"^goal_index must be an integer in \[0, \d+\)"):
        env.reset(options={"goal_index": bad})


@pytest.mark.parametrize("bad", [3.5, "3", True, b"3", float("nan")], ids=repr)
def test_vector_env_rejects_the_same_goals_with_the_same_message(default_shop, bad):
    single, vec = WebShopEnv(shop=default_shop), WebShopVectorEnv(2, shop=default_shop)
    with pytest.raises(InvalidArgument) as a:
        single.reset(options={"goal_index": bad})
    with pytest.raises(InvalidArgument) as b:
        vec.reset(options={"goal_index": bad})
    assert str(a.value) == str(b.value)


@pytest.mark.parametrize("bad", [-1, 2**70, 10**6])
def test_out_of_range_goals_are_goal_not_found_everywhere(default_shop, bad):
    single, vec = WebShopEnv(shop=default_shop), WebShopVectorEnv(2, shop=default_shop)
    with pytest.raises(GoalNotFound, match="goal_index must be an integer in"):
        single.reset(options={"goal_index": bad})
    with pytest.raises(GoalNotFound, match="goal_index must be an integer in"):
        vec.reset(options={"goal_index": bad})
    with pytest.raises(GoalNotFound, match=r"goal_index\[1\]"):
        vec.reset(options={"goal_index": [0, bad]})


def test_numpy_integers_are_integers(default_shop):
    env = WebShopEnv(shop=default_shop)
    _, info = env.reset(seed=np.int64(4), options={"goal_index": np.int32(7)})
    assert info["goal_index"] == 7
    vec = WebShopVectorEnv(2, shop=default_shop)
    _, infos = vec.reset(seed=np.uint8(1), options={"goal_index": np.array([5, 6])})
    assert list(infos["goal_index"]) == [5, 6]


@pytest.mark.parametrize("bad", [3.5, -1, "1", b"1", [1]], ids=repr)
def test_bad_seeds_name_the_seed(default_shop, bad):
    with pytest.raises(InvalidArgument, match="^seed must be an integer >= 0 or None"):
        WebShopEnv(shop=default_shop).reset(seed=bad)


def test_vector_seeds_and_options(default_shop):
    vec = WebShopVectorEnv(2, shop=default_shop)
    with pytest.raises(InvalidArgument, match=r"seed\[1\] must be an integer >= 0"):
        vec.reset(seed=[1, 2.5])
    with pytest.raises(InvalidArgument, match="list of 2 per-slot seeds, got 3"):
        vec.reset(seed=[1, 2, 3])
    with pytest.raises(InvalidArgument, match="unknown reset option 'goal'.*did you mean 'goal_index'"):
        vec.reset(options={"goal": 1})
    with pytest.raises(InvalidArgument, match="options must be a dict"):
        WebShopEnv(shop=default_shop).reset(options=[("goal_index", 1)])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"num_envs": "4"}, "num_envs must be an integer >= 1, got '4' (str)"),
    ({"num_envs": 0}, "num_envs must be an integer >= 1, got 0"),
    ({"num_envs": 2.0}, "num_envs must be an integer >= 1, got 2.0 (float)"),
    ({"num_envs": 4, "group_size": 3}, "num_envs (4) must be a multiple of group_size (3)"),
    ({"num_envs": 4, "num_workers": -1}, "num_workers must be an integer >= 0, got -1"),
    ({"num_envs": 2, "num_workers": 5}, "num_workers (5) must not exceed num_envs (2)"),
    ({"num_envs": 2, "max_steps": 0}, "max_steps must be an integer >= 1 or None, got 0"),
    ({"num_envs": 2, "autoreset_mode": "sometimes"}, "autoreset_mode must be one of 'next-step', 'same-step', 'disabled'"),
    ({"num_envs": 2, "price_seed": 1.5, "shop": None}, "price_seed must be an integer >= 0, got 1.5 (float)"),
], ids=lambda x: str(x)[:40])
def test_constructor_arguments(default_shop, kwargs, message):
    with pytest.raises(InvalidArgument) as error:
        WebShopVectorEnv(**{"shop": default_shop, **kwargs})
    assert message in str(error.value)


@pytest.mark.parametrize(("spelling", "mode"), [
    ("next-step", AutoresetMode.NEXT_STEP), ("same-step", AutoresetMode.SAME_STEP), ("disabled", AutoresetMode.DISABLED),
    ("NextStep", AutoresetMode.NEXT_STEP), ("SameStep", AutoresetMode.SAME_STEP), ("Disabled", AutoresetMode.DISABLED),
    ("next_step", AutoresetMode.NEXT_STEP), ("SAME_STEP", AutoresetMode.SAME_STEP), (AutoresetMode.DISABLED, AutoresetMode.DISABLED),
])
def test_autoreset_mode_spellings_through_make_vec(spelling, mode):
    envs = gym.make_vec("webshop_gym:WebShop-v0", num_envs=2, vectorization_mode="vector_entry_point", autoreset_mode=spelling)
    assert envs.autoreset_mode == mode and envs.metadata["autoreset_mode"] == mode


def test_a_failed_reset_leaves_gym_make_envs_usable():
    env = gym.make("webshop_gym:WebShop-v0")
    for bad in ("abc", 3.5, -1):
        with pytest.raises((InvalidArgument, GoalNotFound)):
            env.reset(options={"goal_index": bad})
    obs, info = env.reset(options={"goal_index": 3})
    assert info["goal_index"] == 3
    obs, reward, terminated, truncated, info = env.step("search[shoes]")
    assert info["page"] == "results" and not info["invalid_action"]
    obs, reward, terminated, truncated, info = env.step("search[socks]")
    assert info["page"] == "results"


@pytest.mark.slow
def test_unpicklable_actions_in_workers_are_invalid_no_ops_and_never_desynchronise(default_shop):
    """Lambdas and locks are invalid actions in workers exactly as in one process (issue 13, item 2)."""
    n = 4  # two workers: slots 0-1 and 2-3
    local = WebShopVectorEnv(n, shop=default_shop, max_steps=6)
    pooled = WebShopVectorEnv(n, shop=default_shop, max_steps=6, num_workers=2)

    class Text(str):
        pass

    try:
        a, b = local.reset(seed=5), pooled.reset(seed=5)
        assert data_equivalence(a, b)
        query = "search[" + str(a[1]["instruction"][0]).split(" with ")[0] + "]"
        plans = [
            [query, Text(query), query, query],
            [lambda: 1, "click[next >]", threading.Lock(), b"click[next >]"],  # bad actions in both workers
            ["click[next >]", "click[< prev]", "click[next >]", {"not": "a string"}],
            ["click[< prev]", "click[next >]", "click[< prev]", "click[next >]"],
        ]
        for actions in plans:
            ra, rb = local.step(actions), pooled.step(actions)
            for x, y in zip(ra, rb):
                assert data_equivalence(x, y)
        # the bad actions were invalid no-ops, and every worker answered the step it was given
        assert list(ra[4]["page"]) == list(rb[4]["page"])
        steps = pooled.step(["click[nope]"] * n)[4]["steps"]
        assert list(steps) == [5] * n
    finally:
        pooled.close()
        local.close()


@pytest.mark.parametrize("bad", [-5, 0, 2.5, "10", True])
def test_num_products_must_be_positive(bad):
    """`load_shop(num_products=-5)` used to load 995 products (issue 13, item 9)."""
    from webshop_gym import load_shop

    with pytest.raises(ValueError, match="num_products must be a positive integer or None"):
        load_shop(num_products=bad, progress=False)
