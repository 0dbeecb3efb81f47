"""The env's spaces are Gymnasium's own Text (every Unicode character): make_vec's async mode with its defaults."""

from __future__ import annotations

import copy
import multiprocessing

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.spaces.utils import flatten, unflatten
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector.utils import (
    batch_space,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

import webshop_gym  # noqa: F401  (registers the ids)
from webshop_gym import WebShopEnv, WebShopVectorEnv
from webshop_gym.core.actions import MAX_ACTION_LENGTH
from webshop_gym.envs.spaces import CODE_POINTS, UnicodeText

TEXTS = ["", "click[buy now]", 'click[28" x 28"]', "a\x00b", "\ud800 lone surrogate", "emoji \U0001f6d2 é ß 中",
         chr(CODE_POINTS - 1), "x" * 64]


def test_the_spaces_are_gymnasium_s_text_over_every_character(default_shop):
    env = WebShopEnv(shop=default_shop)
    assert isinstance(env.observation_space, spaces.Text) and isinstance(env.action_space, spaces.Text)
    assert env.action_space.max_length == MAX_ACTION_LENGTH and env.action_space.min_length == 0
    space = env.action_space
    assert len(space.character_set) == CODE_POINTS and all(c in space.character_set for c in "".join(TEXTS))
    assert space.character_list[0x1F6D2] == "\U0001f6d2" and space.character_index("\U0001f6d2") == 0x1F6D2
    assert all(space.contains(t) for t in TEXTS) and not space.contains(3) and not space.contains(b"x")
    assert not space.contains("x" * (MAX_ACTION_LENGTH + 1))
    assert UnicodeText(10) == UnicodeText(10) != UnicodeText(11) and hash(UnicodeText(10)) == hash(UnicodeText(10))
    assert isinstance(batch_space(space, 3), spaces.Tuple)


@pytest.mark.parametrize("text", TEXTS)
def test_flatten_and_shared_memory_round_trip_any_string(text):
    space = UnicodeText(max_length=64)
    flat = flatten(space, text)
    assert flat.shape == (64,) and flat.dtype == np.int32 and unflatten(space, flat) == text
    memory = create_shared_memory(space, n=2, ctx=multiprocessing.get_context("spawn"))
    write_to_shared_memory(space, 1, "y" * 64, memory)
    write_to_shared_memory(space, 1, text, memory)  # a shorter string over a longer one
    write_to_shared_memory(space, 0, "first", memory)
    view = read_from_shared_memory(space, memory, n=2)
    assert copy.deepcopy(view) == ("first", text) and type(copy.deepcopy(view)) is tuple
    write_to_shared_memory(space, 0, "second", memory)
    assert tuple(view) == ("second", text)  # the view follows the buffer, as NumPy views of a Box do


def test_a_string_over_the_bound_is_refused_by_flatten():
    with pytest.raises(ValueError, match="longer than the space's 4"):
        flatten(UnicodeText(max_length=4), "12345")


def test_make_vec_async_works_with_gymnasium_s_defaults_and_equals_sync(default_shop):
    """gym.make_vec(..., vectorization_mode="async") with shared_memory=True (the default), as sync and our vector env."""
    n = 3
    kwargs = {"max_steps": 4}
    async_envs = gym.make_vec("webshop_gym:WebShop-v0", num_envs=n, vectorization_mode="async", **kwargs)
    sync_envs = gym.make_vec("webshop_gym:WebShop-v0", num_envs=n, vectorization_mode="sync", **kwargs)
    ours = WebShopVectorEnv(n, shop=default_shop, **kwargs)
    try:
        assert async_envs.shared_memory  # Gymnasium's default, untouched
        a, b, c = async_envs.reset(seed=3), sync_envs.reset(seed=3), ours.reset(seed=3)
        assert data_equivalence(a, b) and data_equivalence(a[0], c[0])
        for actions in (("search[red shoes]", "click[nope]", "search[\U0001f6d2 é]"),
                        ("click[back to search]", "search[gluten free bacon]", "x" * 300),
                        ("click[buy now]",) * n, ("search[soap]",) * n):
            ra, rb, rc = async_envs.step(actions), sync_envs.step(actions), ours.step(actions)
            for x, y in zip(ra, rb):
                assert data_equivalence(x, y)
            assert data_equivalence(ra[0], rc[0]) and data_equivalence(ra[1], rc[1])
            assert async_envs.observation_space.contains(ra[0])
    finally:
        async_envs.close()
        sync_envs.close()
        ours.close()
