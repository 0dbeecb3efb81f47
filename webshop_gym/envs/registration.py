"""Registers the environments with Gymnasium (on ``import webshop_gym``)."""

from __future__ import annotations

import gymnasium as gym

__all__ = ["register_envs"]

ENVS = {
    "WebShop-v0": {},
    "WebShopHuman-v0": {"human_goals": True},
}
"""Environment ids and their keyword arguments (variants differ only in kwargs)."""


def register_envs() -> None:
    """Register every WebShop id (idempotent)."""
    for env_id, kwargs in ENVS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="webshop_gym.envs.env:WebShopEnv",
            vector_entry_point="webshop_gym.envs.vector_env:WebShopVectorEnv",
            kwargs=dict(kwargs),
            # The env truncates itself after max_steps (default 15): no TimeLimit wrapper on top.
            max_episode_steps=None,
            # Gymnasium's passive checker breaks the env for good when the first reset raises
            # (its next step fails with a TypeError inside the checker).  Our envs validate every
            # argument and are certified by `gymnasium.utils.env_checker.check_env` in the tests,
            # so the passive checker is off by default (`gym.make(..., disable_env_checker=False)`
            # turns it back on).
            disable_env_checker=True,
        )
