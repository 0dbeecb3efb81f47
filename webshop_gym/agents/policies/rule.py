"""The reference's rule-like baseline.

Search the instruction, open the first result, pick the options the instruction names, buy.
"""

from __future__ import annotations

from typing import Any

from webshop_gym.agents.policies.base import instruction_query

__all__ = ["RulePolicy"]


class RulePolicy:
    """Search the instruction, open the first result, pick the named options, buy.

    The search is the instruction without its price clause; in each option group the policy
    clicks the longest value that occurs in the instruction (first on ties; a group with no such
    value is left alone).

    The reference's own rule baseline clicks a random value where none matches; this one is
    deterministic instead.
    """

    name = "rule"

    def __init__(self, **_: Any):
        self._plan: list[str] = []
        self._opened = False

    def reset(self, info: dict[str, Any]) -> None:
        """Start a new episode."""
        self._plan = []
        self._opened = False

    def act(self, obs: str, info: dict[str, Any]) -> str:
        """Return the next action."""
        page = info.get("page")
        clickables = info["available_actions"]["clickables"]
        if page == "start":
            return f"search[{instruction_query(info['instruction'])}]"
        if page == "results":
            asins = [c for c in clickables if c not in ("back to search", "< prev", "next >")]
            if not asins:
                return "click[back to search]"
            return f"click[{asins[0]}]"
        if page == "item":
            if not self._opened:
                self._opened = True
                self._plan = [f"click[{v}]" for v in self._choose_options(obs, info)]
            if self._plan:
                return self._plan.pop(0)
            return "click[buy now]"
        if page in ("description", "features", "reviews", "attributes"):
            return "click[< prev]"
        return "click[back to search]"

    @staticmethod
    def _choose_options(obs: str, info: dict[str, Any]) -> list[str]:
        instruction = info["instruction"].lower()
        groups = _option_groups(obs, info)
        chosen = []
        for values in groups:
            best = None
            for value in values:
                if value in instruction and (best is None or len(value) > len(best)):
                    best = value
            if best is not None:
                chosen.append(best)
        return chosen


def _option_groups(obs: str, info: dict[str, Any]) -> list[list[str]]:
    """Option values of an item page, grouped, read from the ``text`` observation.

    After ``< Prev`` the page lists each group's name followed by its values (the clickables);
    the title follows the last value.
    """
    clickables = info["available_actions"]["clickables"]
    buttons = {"back to search", "< prev", "description", "features", "reviews", "attributes", "buy now"}
    values = [c for c in clickables if c not in buttons]
    if not values:
        return []
    parts = [p.strip().lower() for p in obs.split(" [SEP] ")]
    if "< prev" not in parts:
        return [values]
    wanted = set(values)
    seen: set[str] = set()
    groups: list[list[str]] = []
    for part in parts[parts.index("< prev") + 1 :]:
        if seen >= wanted:
            break
        if part in wanted and groups:
            groups[-1].append(part)
            seen.add(part)
        else:
            groups.append([])  # a group name
    return [g for g in groups if g] or [values]
