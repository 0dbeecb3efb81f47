"""Which goals can score 1.0 at all: a property of the goal, computed once per shop and goal set.

The reference's reward has a quirk: some goals ask for an option value (or an attribute) that
their own target product does not offer, so no purchase of the target scores 1.0, whatever the
agent does (20 of the 500 test goals of the real 1k shop).  A run should not blame the agent
for those.  :func:`best_options` finds the option values that maximise the reward of buying a
product for a goal (every combination scored with the reward kernel when there are at most
``max_combinations``, else one option group at a time); :func:`goal_reachability` does it for
every goal's target and, for each goal whose best purchase scores below 1.0, says why: the
asked options the target does not offer, the asked attributes it lacks, a type or a price that
fails.

The answer depends only on the catalog, the goal set and its prices, so it is memoised beside
the goal set's prices in the cache (``reachability-v2.memo.json``, a checked memo file:
:mod:`webshop_gym.utils.memo`; about 8 s for the 6,910 goals of the real 1k shop on a 2-core
machine, then a file read).  A memo whose data was altered is found by its checksum, named and
computed again.  A goal counts as reachable when
buying its target with the best options scores exactly 1.0; another product that would also
score 1.0 is not searched for (``docs/runs.md``, *Reachable goals*).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from webshop_gym.reward.reference import attribute_reward, option_reward
from webshop_gym.utils.memo import read_memo, write_memo

__all__ = ["Reachability", "best_options", "goal_reachability"]

#: The memo's file name beside the goal set's prices (bump the version when the rule changes).
MEMO = "reachability-v3.memo.json"


@dataclass(frozen=True)
class Reachability:
    """Per goal: whether a purchase can score 1.0, the best reward of its target, and why not.

    Attributes:
        reachable: bool per goal.
        best: the best reward of buying the target (0.0 when the target is not in the catalog).
        reason: ``""`` for a reachable goal, else one line naming what no purchase of the
            target satisfies, then the best reward a purchase of the target reaches (``option
            color: r.brown2070 offered by the target but never credited by the reference reward's
            option match, even when chosen; the best purchase of the target scores 0.857``).
            The kinds (``docs/runs.md``, *Reachable goals*): an option the target does not offer;
            an option it offers that the reference reward never credits (its option match
            compares the chosen value with the goal's ``name: value`` pair, and fails for values
            such as ``r.brown2070``); no one choice matching every option; an attribute, the
            type or the price that fails; a target not in the catalog.
    """

    reachable: np.ndarray
    best: np.ndarray
    reason: list[str]

    def __len__(self) -> int:
        return len(self.reachable)

    def of(self, goal: int) -> tuple[bool, str]:
        """``(reachable, reason)`` of one goal."""
        return bool(self.reachable[goal]), self.reason[goal]

    @property
    def unreachable(self) -> int:
        """Goals that cannot score 1.0."""
        return int((~self.reachable).sum())


def best_options(catalog, rewards, prices, goal: int, row: int, max_combinations: int = 4096) -> tuple[list[str], float]:
    """Option values (one per chosen group, page order) that maximise the reward of buying ``row`` for ``goal``.

    Args:
        catalog: the shop's :class:`~webshop_gym.data.catalog.Catalog`.
        rewards: its :class:`~webshop_gym.reward.RewardModel`.
        prices: per catalog row, the price the reward compares with the cap.
        goal: the goal.
        row: the product bought.
        max_combinations: combinations scored exhaustively (more: one group at a time).

    Returns:
        ``(values, reward)``; among the best combinations, the one with the fewest clicks.
    """
    groups = [list(catalog.group_values[g]) for g in catalog.option_groups[row]]
    price = float(prices[row])
    choices = [[None, *map(int, vals)] for vals in groups]

    def score(combos):
        selected = [[v for v in combo if v is not None] for combo in combos]
        fz = [[int(x) for x in rewards.value_ids(s)] for s in selected]
        n = len(combos)
        return rewards.score(np.full(n, goal), np.full(n, row), fz, np.full(n, price)).total

    size = 1
    for c in choices:
        size *= len(c)
    if size <= max_combinations:
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
    return [catalog.value_text[v] for v in combo if v is not None], total


def _offered(catalog, row: int) -> list[str]:
    return [catalog.value_text[int(v)] for g in catalog.option_groups[row] for v in catalog.group_values[g]]


def unoffered_options(asked, offered: Sequence[str]) -> list[str]:
    """The asked options (``name: value`` or ``value``) that none of ``offered`` matches, by the reward's rule."""
    pairs = list(asked.items()) if isinstance(asked, dict) else [("", v) for v in asked or []]
    out = []
    for name, value in pairs:
        _, hits = option_reward(list(offered), {name: value} if name else [value])
        if not hits:
            out.append(f"{name}: {value}" if name else str(value))
    return out


def _reason(catalog, rewards, goals, goal: int, row: int, values: list[str], total: float) -> str:
    """Why the best purchase of the target scores ``total`` < 1.0, in one line."""
    if row < 0:
        return "the target product is not in the catalog"
    _, info = rewards.reference(goal, row, {str(i): v for i, v in enumerate(values)}, float(goals.prices[row]))
    parts = []
    offered = _offered(catalog, row)
    missing = unoffered_options(goals.options[goal], offered)
    texts = {v.strip().lower() for v in offered}
    on_page = [m for m in missing if m.rsplit(": ", 1)[-1].strip().lower() in texts]
    absent = [m for m in missing if m not in on_page]
    if absent:
        parts.append("option " + ", ".join(absent) + " not offered by the target")
    if on_page:  # the quirk of issue 56: the page offers it, the reference's option match never credits it
        parts.append("option " + ", ".join(on_page) + " offered by the target but never credited by the reference "
                     "reward's option match, even when chosen")
    if not missing and info.get("r_option") is not None and float(info["r_option"]) < 1.0:
        parts.append("no one choice of the target's options matches every asked option")
    if float(info.get("r_att", 1.0)) < 1.0:
        product = catalog.product_record(row)
        lacking = [a for a in goals.attributes[goal] if attribute_reward(product, {"attributes": [a]})[1] == 0]
        parts.append("attribute " + ", ".join(lacking) + " not found in the target" if lacking
                     else "an asked attribute is not found in the target")
    if float(info.get("r_type", 1.0)) < 1.0:
        parts.append(f"the target's own type scores r_type {float(info['r_type']):g}")
    if not info.get("r_price", True):
        parts.append(f"the target's price {float(goals.prices[row]):.2f} is over the cap {float(goals.price_upper[goal]):.2f}")
    best = f"the best purchase of the target scores {total:.3f}"
    return "; ".join([*parts, best]) if parts else best


def goal_best(catalog, goals, rewards, goal: int, max_combinations: int = 4096) -> tuple[float, str]:
    """One goal's best reward of buying its target and, when below 1.0, why (``""`` when reachable)."""
    row = int(goals.target[goal])
    if row < 0:
        return 0.0, "the target product is not in the catalog"
    values, total = best_options(catalog, rewards, goals.prices, goal, row, max_combinations)
    return total, ("" if total >= 1.0 else _reason(catalog, rewards, goals, goal, row, values, total))


def _compute(catalog, goals, rewards, max_combinations: int) -> Reachability:
    n = len(goals)
    best = np.zeros(n)
    reason = [""] * n
    for g in range(n):
        best[g], reason[g] = goal_best(catalog, goals, rewards, g, max_combinations)
    return Reachability(best >= 1.0, best, reason)


def _memo_path(goals):
    folder = getattr(goals, "seed_folder", None)
    return folder / MEMO if folder is not None else None


def memoised(goals) -> Reachability | None:
    """The goal set's memoised :class:`Reachability`, or ``None`` when there is none, it is stale or damaged."""
    memo = _memo_path(goals)
    data = read_memo(memo) if memo is not None else None
    if not isinstance(data, dict) or data.get("goals") != len(goals) or data.get("digest") != goals.digest():
        return None  # none, or another goal set's (computed again and written over)
    best, reason = data.get("best"), data.get("reason")
    if not (isinstance(best, list) and isinstance(reason, list) and len(best) == len(reason) == len(goals)):
        return None
    best = np.asarray(best, float)
    return Reachability(best >= 1.0, best, [str(r) for r in reason])


def goal_reachability(catalog, goals, rewards, max_combinations: int = 4096) -> Reachability:
    """Every goal's :class:`Reachability`, memoised beside the goal set's prices (see the module docstring).

    Args:
        catalog: the shop's catalog.
        goals: its goal set (the memo goes beside its prices).
        rewards: its reward model.
        max_combinations: see :func:`best_options`.
    """
    known = memoised(goals)
    if known is not None:
        return known
    found = _compute(catalog, goals, rewards, max_combinations)
    memo = _memo_path(goals)
    if memo is not None:  # (a read-only cache keeps nothing: computed again next time)
        write_memo(memo, {"goals": len(goals), "digest": goals.digest(), "best": found.best.tolist(),
                          "reason": found.reason})
    return found

