"""Random valid actions (searching the instruction's words), then a purchase."""

from __future__ import annotations

from typing import Any

import numpy as np

from webshop_gym.agents.policies.base import instruction_query

__all__ = ["RandomPolicy"]


class RandomPolicy:
    """Random valid actions, then a purchase.

    Clicks a random valid action (never ``back to search``); on the search page it searches a
    random slice of the instruction's words; on an item page it buys with probability
    ``buy_probability`` (and always once the episode has taken 12 steps).

    Args:
        seed: seed of its generator (reproducible runs).
        buy_probability: chance to buy on an item page.
    """

    name = "random"

    def __init__(self, seed: int | None = 0, buy_probability: float = 0.3, **_: Any):
        self.rng = np.random.default_rng(seed)
        self.buy_probability = buy_probability

    def seed_episode(self, seed: int | None) -> None:
        """Restart the generator from ``seed``.

        The evaluation loop does this per episode, from the run seed and the goal, so results do
        not depend on which slot runs a goal.
        """
        self.rng = np.random.default_rng(seed)

    def reset(self, info: dict[str, Any]) -> None:
        """Start a new episode."""

    def act(self, obs: str, info: dict[str, Any]) -> str:
        """Return the next action."""
        valid = [a for a in info.get("valid_actions", []) if a != "click[back to search]"]
        if info.get("page") == "item" and (self.rng.random() < self.buy_probability or info.get("steps", 0) >= 12):
            return "click[buy now]"
        if not valid:
            return "click[back to search]"
        action = valid[int(self.rng.integers(len(valid)))]
        if action.startswith("search["):
            words = instruction_query(info["instruction"]).split()
            k = int(self.rng.integers(1, max(2, len(words) + 1)))
            start = int(self.rng.integers(0, max(1, len(words) - k + 1)))
            action = f"search[{' '.join(words[start:start + k])}]"
        return action
