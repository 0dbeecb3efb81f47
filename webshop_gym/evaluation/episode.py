"""What every evaluation loop (local, served, demos) shares about one episode: its seed and the info it keeps."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from webshop_gym.reward.reachability import best_options

__all__ = ["SLIM_KEYS", "episode_seed", "mark_reachability", "progress_rate", "slim_info"]

#: The ``info`` keys a policy is handed each step (the rest stays with the engine).
SLIM_KEYS = ("goal_index", "instruction", "page", "steps", "invalid_action", "available_actions", "valid_actions")


def episode_seed(seed: int, goal_index: int, sample: int = 0) -> int:
    """The seed of one episode's policy: a function of the run seed, the goal and the sample only.

    ``sample`` counts the earlier plays of the goal in the run (``eval --samples K``: 0 to K - 1);
    the first play's seed is the one a run of one play per goal uses.
    """
    entropy = [int(seed), int(goal_index)] + ([int(sample)] if sample else [])
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


def slim_info(info: dict) -> dict:
    """``info`` cut to :data:`SLIM_KEYS`."""
    return {k: info[k] for k in SLIM_KEYS if k in info}


def mark_reachability(shop, then: Callable[[dict], None] | None = None) -> Callable[[dict], None]:
    """A callback that gives each finished episode its goal's ``reachable`` and ``reason``, then calls ``then``.

    Reachability is a property of the goal (:meth:`~webshop_gym.shop.Shop.reachability`, computed
    once per shop and goal set), so every policy's run says which goals no purchase can solve,
    and every reader reports SR on the reachable goals beside SR.
    """
    def mark(episode: dict) -> None:
        episode["reachable"], episode["reason"] = shop.reachable(int(episode["goal_index"]))
        if then is not None:
            then(episode)

    return mark


def _clicked(action: str) -> str | None:
    text = str(action).strip()
    return text[len("click["):-1].strip().lower() if text.lower().startswith("click[") and text.endswith("]") else None


def progress_rate(shop, episode: dict) -> float:
    """AgentBoard's progress rate of one played episode, in [0, 1].

    A third each of: the best reward of any product shown on a results page the agent saw, the
    best reward of a product page it opened (each product at its price, over its option
    combinations: :func:`webshop_gym.reward.reachability.best_options`), and the reward of its
    purchase (0 without one).  AgentBoard's site computes the same three parts as pages are
    served (``web_agent_site/app.py``, the ``progress_reward`` of each page) and keeps the best.

    Args:
        shop: the episode's shop (its prices are the ones the episode was scored with).
        episode: a finished record with its ``trajectory`` (``info`` with ``page`` and
            ``available_actions`` per step, and the ``action``), ``final_info``, ``reward`` and
            ``purchased``.
    """
    goal = int(episode["goal_index"])
    best: dict[int, float] = {}

    def value(asin: str) -> float:
        row = shop.catalog.row_of(asin.upper())
        if row < 0:
            return 0.0
        if row not in best:
            best[row] = best_options(shop.catalog, shop.rewards, shop.prices, goal, row)[1]
        return best[row]

    steps = episode.get("trajectory") or []
    infos = [s.get("info") or {} for s in steps] + [episode.get("final_info") or {}]
    search = item = 0.0
    opened = None
    for k, info in enumerate(infos):
        page = info.get("page")
        clickables = (info.get("available_actions") or {}).get("clickables") or []
        shown = [c for c in clickables if shop.catalog.row_of(str(c).upper()) >= 0] if page == "results" else []
        if shown:
            search = max(search, max(value(c) for c in shown))
        if page == "item" and opened is not None:
            item = max(item, value(opened))
        picked = _clicked(steps[k].get("action", "")) if k < len(steps) else None
        if picked is not None and picked in {str(c).lower() for c in shown}:
            opened = picked
    bought = float(episode.get("reward") or 0.0) if episode.get("purchased") else 0.0
    return (search + item + bought) / 3.0
