"""AgentBoard's progress rate of one played episode, exactly as AgentBoard's code computes it.

AgentBoard's site (``agentboard/environment/WebShop/web_agent_site/app.py`` at bb7255e) scores
every page it serves with ``s / 3 + i / 3 + b / 3``, three running values of the episode:

* ``s``, a results page: the best reward of the products on the page, each over every
  combination of its option values (``itertools.product`` of its option groups, at the product's
  price; app.py lines 131-161);
* ``i``, a product page or one of its sub pages: the reward of the **last** combination the loop
  scores, because ``maxr = -1`` is reset inside the loop (lines 197-210): the first combination
  scoring exactly 1.0 (the loop breaks there), else the last one in ``itertools.product`` order;
  a product with an option group that has no value (no combination at all) is scored without
  options at ``pricing[0]``;
* ``b``, the purchase page: the purchase's raw reward (lines 294-306).

``s`` and ``i`` only grow (``if search_max > s_s[0]``).  AgentBoard's env
(``agentboard/environment/webshop_env.py`` lines 287-292 and 321-326) keeps the highest page score it reads,
and on the purchase page also the raw reward itself (``Your score``): the episode's progress is
``max(every page's score, the purchase's raw reward)``.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["ITEM_PAGES", "progress_rate", "scores_of"]

ITEM_PAGES = ("item", "description", "features", "reviews", "attributes")
"""A product's page and its sub pages: AgentBoard's ``item_page`` and ``item_sub_page`` score the product the same way."""

_CHUNK = 4096


def scores_of(shop, goal: int, row: int) -> tuple[float, float]:
    """``(results-page value, product-page value)`` of product ``row`` for ``goal``, as AgentBoard's site scores them.

    The results-page value is the best reward over every combination of the product's option
    values; the product-page value is the reward of the first combination scoring exactly 1.0,
    else of the last combination (``itertools.product`` order: groups and values as the item page
    lists them).  Both at the product's price; a product with an option group without values has
    no combination and is scored without options at ``pricing[0]``.
    """
    catalog, rewards = shop.catalog, shop.rewards
    groups = [[int(v) for v in catalog.group_values[g]] for g in catalog.option_groups[row]]
    combos = list(itertools.product(*groups))  # [()] for a product without option groups, as AgentBoard's
    if combos:
        price = float(shop.prices[row])
    else:
        combos, price = [()], float(catalog.pricing[row][0])
    totals = []
    for start in range(0, len(combos), _CHUNK):
        part = combos[start:start + _CHUNK]
        fz = [[int(x) for x in rewards.value_ids(list(c))] if c else [] for c in part]
        n = len(part)
        totals.append(np.asarray(rewards.score(np.full(n, goal), np.full(n, row), fz, np.full(n, price)).total, float))
    values = np.concatenate(totals)
    ones = np.flatnonzero(values == 1.0)
    return float(values.max()), float(values[ones[0]] if len(ones) else values[-1])


def _clicked(action: str) -> str | None:
    text = str(action).strip()
    return text[len("click["):-1].strip().lower() if text.lower().startswith("click[") and text.endswith("]") else None


def progress_rate(shop, episode: dict) -> float:
    """AgentBoard's progress rate of one played episode, in [0, 1] (see the module docstring).

    Args:
        shop: the episode's shop (its prices are the ones the episode was scored with).
        episode: a finished record with its ``trajectory`` (``info`` with ``page`` and
            ``available_actions`` per step, and the ``action``), ``final_info``, ``reward`` (the
            raw reward) and ``purchased``.
    """
    goal = int(episode["goal_index"])
    known: dict[int, tuple[float, float]] = {}

    def scores(asin: str) -> tuple[float, float] | None:
        row = shop.catalog.row_of(str(asin).upper())
        if row < 0:
            return None
        if row not in known:
            known[row] = scores_of(shop, goal, row)
        return known[row]

    steps = episode.get("trajectory") or []
    infos = [s.get("info") or {} for s in steps] + [episode.get("final_info") or {}]
    s = i = 0.0
    best = 0.0
    opened = None
    for k, info in enumerate(infos):
        page = info.get("page")
        clickables = (info.get("available_actions") or {}).get("clickables") or []
        shown = [c for c in clickables if scores(c) is not None] if page == "results" else []
        if shown:
            s = max(s, max(scores(c)[0] for c in shown))
        if page in ITEM_PAGES and opened is not None:
            i = max(i, scores(opened)[1])
        best = max(best, s / 3 + i / 3)
        picked = _clicked(steps[k].get("action", "")) if k < len(steps) else None
        if picked is not None and picked in {str(c).lower() for c in shown}:
            opened = picked
    if episode.get("purchased"):
        bought = float(episode.get("reward") or 0.0)
        best = max(best, s / 3 + i / 3 + bought / 3, bought)
    return best
