"""What every evaluation loop (local, served, demos) shares about one episode: its seed and the info it keeps."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from webshop_gym.evaluation.progress_rate import progress_rate

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
