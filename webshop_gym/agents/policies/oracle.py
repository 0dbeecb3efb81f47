"""A goal-aware oracle: finds the target with search and buys it with the best options.

The oracle reads the goal (``info["goal_index"]``) and the shop, which no agent may.  For each
episode it plans: the first query (the instruction without its price clause, then the target's
title, then its query) whose top 50 results hold the target; the results page it is on; the
option values that maximise the reward (every combination is scored with the reward kernel
when there are at most ``max_combinations``, else one group at a time); then buy.  When even
the best plan scores below 1.0 (or the target cannot be found), :attr:`reachable` is False and
:attr:`reason` says why.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from webshop_gym.agents.policies.base import instruction_query
from webshop_gym.agents.policies.rule import RulePolicy
from webshop_gym.reward.reachability import best_options

__all__ = ["OraclePolicy"]


class OraclePolicy:
    """Reach reward 1.0 whenever the target is reachable.

    Args:
        shop: the shop the env runs (default: the embedded shop with default goals).
        max_combinations: combinations of option values scored exhaustively.
        max_pages: results pages the oracle is willing to page through.
    """

    name = "oracle"

    def __init__(self, shop=None, max_combinations: int = 4096, max_pages: int = 5, **_: Any):
        if shop is None:
            from webshop_gym.shop import load_shop

            shop = load_shop(progress=False)
        self.shop = shop
        self.max_combinations = max_combinations
        self.max_pages = max_pages
        self.plan: list[str] = []
        self.reachable = True
        self.reason = ""
        self.expected_reward = 0.0
        self._fallback = RulePolicy()

    def reset(self, info: dict[str, Any]) -> None:
        """Plan the episode for ``info["goal_index"]``."""
        self._fallback.reset(info)
        self.plan, self.reachable, self.reason, self.expected_reward = self.make_plan(int(info["goal_index"]))

    def act(self, obs: str, info: dict[str, Any]) -> str:
        """Return the next planned action (the rule policy's once the plan is spent)."""
        if self.plan:
            return self.plan.pop(0)
        return self._fallback.act(obs, info)

    # -- planning -----------------------------------------------------------------------------

    def best_options(self, goal: int, row: int) -> tuple[list[str], float]:
        """Option values (one per chosen group, page order) that maximise the reward (:func:`~webshop_gym.reward.reachability.best_options`)."""
        return best_options(self.shop.catalog, self.shop.rewards, self.shop.prices, goal, row, self.max_combinations)

    def make_plan(self, goal: int) -> tuple[list[str], bool, str, float]:
        """Return (actions, reachable, reason, expected reward) for a goal."""
        goals, catalog = self.shop.goals, self.shop.catalog
        row = int(goals.target[goal])
        if row < 0:
            return [], False, "the target product is not in the catalog", 0.0
        values, total = self.best_options(goal, row)
        queries = [instruction_query(goals.instruction[goal]), catalog.title[row], catalog.query_names[catalog.query[row]]]
        for query in queries:
            query = query.strip().lower()
            if not query:
                continue
            rows = self.shop.search(query)
            hits = np.flatnonzero(np.asarray(rows) == row)
            if len(hits) and hits[0] // 10 < self.max_pages:
                page = int(hits[0]) // 10 + 1
                plan = [f"search[{query}]"] + ["click[next >]"] * (page - 1)
                plan += [f"click[{catalog.asin[row].lower()}]"] + [f"click[{v}]" for v in values] + ["click[buy now]"]
                if total < 1.0:
                    return plan, False, f"the best purchase of the target scores {total:.3f}", total
                return plan, True, "", total
        return [], False, "no query brings the target into the first results pages", 0.0
