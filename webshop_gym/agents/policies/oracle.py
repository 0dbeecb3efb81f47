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

import itertools
from typing import Any

import numpy as np

from webshop_gym.agents.policies.base import instruction_query
from webshop_gym.agents.policies.rule import RulePolicy

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
        """Option values (one per chosen group, page order) that maximise the reward."""
        catalog, rewards = self.shop.catalog, self.shop.rewards
        groups = [list(catalog.group_values[g]) for g in catalog.option_groups[row]]
        price = float(self.shop.prices[row])
        choices = [[None, *map(int, vals)] for vals in groups]

        def score(combos):
            selected = [[v for v in combo if v is not None] for combo in combos]
            fz = [[int(x) for x in rewards.value_ids(s)] for s in selected]
            n = len(combos)
            batch = rewards.score(np.full(n, goal), np.full(n, row), fz, np.full(n, price))
            return batch.total

        size = 1
        for c in choices:
            size *= len(c)
        if size <= self.max_combinations:
            combos = list(itertools.product(*choices))
            totals = score(combos)
            clicks = np.array([sum(v is not None for v in c) for c in combos])
            best = int(np.lexsort((clicks, -totals))[0])
            combo = combos[best]
            total = float(totals[best])
        else:  # one group at a time, keeping the best value of each
            combo = [None] * len(choices)
            total = float(score([tuple(combo)])[0])
            for g, options in enumerate(choices):
                trial = [tuple(combo[:g] + [v] + combo[g + 1 :]) for v in options]
                totals = score(trial)
                pick = int(np.argmax(totals))
                combo[g] = options[pick]
                total = float(totals[pick])
        values = [catalog.value_text[v] for v in combo if v is not None]
        return values, total

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
