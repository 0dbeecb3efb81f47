"""Goal-id resolution: a protocol's goal spec (data) to the episodes it plays, in our goal order.

A goal spec has two parts.  ``list`` says how the family's goal list is ordered: the reference's
``random.Random(233)`` shuffle (``{"shuffle_seed": 233}``, our order), another fixed seed (the
SEED fork's 0), or each worker's own seed (``"worker"``, the verl-agent fork), optionally followed
by a second permutation of the positions (RAGEN's ``random.Random(42)``).  ``indices`` says which
positions of that list are played: a ``range``, per-validation draws from one NumPy
``RandomState`` (verl-agent), env ``seeds`` mapped to positions (RAGEN), a ``file`` of ids the
user supplies (AgentGym, SEED), or a shipped id list (``ids``: ETO, IPR, WKM; :mod:`.idlists`).
Every episode is resolved to a *canonical* goal: its index in our goal list, which is the
reference's order.

Each rule here is written out from the family's code (the protocol file cites it) and the tests
compare it with values recorded from running that code.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from webshop_gym.data.goals import GOAL_SHUFFLE_SEED, reshuffled_order
from webshop_gym.error import ProtocolError
from webshop_gym.protocols.idlists import id_list

__all__ = ["Episode", "goal_list_order", "reachable_ids", "resolve_episodes", "spec_ids"]


@dataclass(frozen=True)
class Episode:
    """One episode a protocol plays.

    Attributes:
        goal: the canonical goal (index into our goal list, the reference's order).
        price_seed: the seed of the product prices and price caps the episode is scored with.
        position: the index the family's code passed to its env (into its own goal list).
        worker: the family's env worker that plays it (verl-agent), else ``None``.
        draw: which reset of the family's env drew it (verl-agent: two per validation), else ``None``.
    """

    goal: int
    price_seed: int
    position: int
    worker: int | None = None
    draw: int | None = None

    def as_dict(self) -> dict:
        """The episode as a JSON-ready dict (``None`` fields left out)."""
        out = {"goal": self.goal, "price_seed": self.price_seed, "position": self.position}
        if self.worker is not None:
            out["worker"] = self.worker
        if self.draw is not None:
            out["draw"] = self.draw
        return out


@functools.lru_cache(maxsize=160)  # 128 validation + 16 train workers of a verl-agent run; 56 KiB each at 6,910 goals
def _order(n: int, seed: int) -> np.ndarray:
    order = reshuffled_order(n, seed)
    order.flags.writeable = False
    return order


@functools.lru_cache(maxsize=4)
def _permutation(n: int, seed: int) -> np.ndarray:
    positions = list(range(n))
    random.Random(seed).shuffle(positions)  # a local generator, as RAGEN's env draws it
    out = np.asarray(positions, dtype=np.int64)
    out.flags.writeable = False
    return out


def _need_n(n: int | None, what: str) -> int:
    if n is None:
        raise ProtocolError(f"{what} needs the number of goals in the shop; pass num_goals= (or a shop)")
    return int(n)


def goal_list_order(list_spec: Mapping, list_seed: int | None, n: int | None) -> np.ndarray | None:
    """Canonical goal at each position of the family's goal list (``None``: the identity).

    Args:
        list_spec: the spec's ``list`` (``shuffle_seed``: an int or ``"worker"``; optional
            ``permutation_seed``).
        list_seed: the worker's seed, used when ``shuffle_seed`` is ``"worker"``.
        n: the number of goals (needed for any order other than the reference's).
    """
    shuffle = list_spec.get("shuffle_seed", GOAL_SHUFFLE_SEED)
    if shuffle == "worker":
        if list_seed is None:
            raise ProtocolError("a per-worker goal list needs the worker's seed")
        shuffle = list_seed
    order = None
    if int(shuffle) != GOAL_SHUFFLE_SEED:
        order = _order(_need_n(n, f"a goal list shuffled with seed {shuffle}"), int(shuffle))
    permutation = list_spec.get("permutation_seed")
    if permutation is not None:
        perm = _permutation(_need_n(n, f"a goal list permuted with seed {permutation}"), int(permutation))
        order = perm if order is None else order[perm]
    return order


def _canonical(order: np.ndarray | None, positions: np.ndarray, n: int | None, name: str) -> np.ndarray:
    positions = np.asarray(positions, dtype=np.int64)
    if n is not None and len(positions) and (positions.min() < 0 or positions.max() >= n):
        bad = int(positions[(positions < 0) | (positions >= n)][0])
        raise ProtocolError(f"protocol {name!r} plays goal position {bad}, but the shop has {n} goals")
    return positions.copy() if order is None else order[positions]


def _range(spec: Sequence, n: int | None, name: str) -> np.ndarray:
    start, stop = int(spec[0]), spec[1]
    if stop is None:
        stop = _need_n(n, f"protocol {name!r}'s open goal range [{start}, end)")
    elif n is not None and int(stop) > n:
        raise ProtocolError(f"protocol {name!r} plays goals {start}..{int(stop) - 1}, but the shop has {n} goals")
    return np.arange(start, int(stop), dtype=np.int64)


def _draws(draw: Mapping, seed: int, first: int, count: int) -> list[np.ndarray]:
    """Draws ``first .. first + count - 1`` of the family's one generator (verl-agent's ``reset``)."""
    if draw.get("generator") != "numpy.RandomState":
        raise ProtocolError(f"unknown draw generator {draw.get('generator')!r}")
    rng = np.random.RandomState(seed + int(draw.get("seed_offset", 0)))
    lo, hi = draw["population"]
    population = range(int(lo), int(hi))  # verl-agent passes a range to RandomState.choice
    out = []
    for k in range(first + count):
        idx = rng.choice(population, size=int(draw["size"]), replace=bool(draw.get("replace", False)))
        if k >= first:
            out.append(np.asarray(idx, dtype=np.int64))
    return out


def _price_seed(spec: Mapping, default, worker_seed: int | None) -> int:
    value = spec.get("price_seed", default)
    if value == "worker":
        if worker_seed is None:
            raise ProtocolError("price_seed 'worker' needs per-worker seeds")
        return int(worker_seed)
    return int(value)


def resolve_episodes(
    spec: Mapping,
    *,
    name: str,
    seed: int | None,
    validation: int,
    n: int | None,
    file_ids: np.ndarray | None,
    default_price_seed,
) -> list[Episode]:
    """The episodes of one evaluation under ``spec`` (a protocol's ``test``), in the family's order.

    Args:
        spec: the goal spec.
        name: the protocol's name (for messages).
        seed: the protocol's seed (verl-agent's ``env.seed``, RAGEN's ``seed.val``).
        validation: which validation of a run (verl-agent); other rules play the same goals each time.
        n: the number of goals in the shop, or ``None`` when unknown.
        file_ids: the ids read from the protocol's goal-id file, for ``file`` specs.
        default_price_seed: the protocol's ``price_seed``.
    """
    list_spec, indices = spec["list"], spec["indices"]
    if "draw" in indices:
        workers = spec.get("workers") or {}
        per_draw = int(indices["draw"].get("draws_per_validation", 1))
        draws = _draws(indices["draw"], int(seed), validation * per_draw, per_draw)
        episodes = []
        for k, drawn in enumerate(draws):
            for worker, position in enumerate(drawn.tolist()):
                worker_seed = int(seed) + int(workers.get("seed_offset", 0)) + worker
                order = goal_list_order(list_spec, worker_seed, n)
                goal = int(_canonical(order, np.array([position]), n, name)[0])
                episodes.append(Episode(goal, _price_seed(spec, default_price_seed, worker_seed), int(position),
                                        worker, validation * per_draw + k))
        return episodes
    positions = spec_positions(spec, name=name, seed=seed, n=n, file_ids=file_ids)
    order = goal_list_order(list_spec, None, n)
    goals = _canonical(order, positions, n, name)
    price = _price_seed(spec, default_price_seed, None)
    return [Episode(int(g), price, int(p)) for g, p in zip(goals.tolist(), positions.tolist())]


def spec_positions(spec: Mapping, *, name: str, seed: int | None, n: int | None,
                   file_ids: np.ndarray | None) -> np.ndarray:
    """Positions (into the family's goal list) a non-drawing spec plays, in order."""
    indices = spec["indices"]
    if "range" in indices:
        return _range(indices["range"], n, name)
    if "seeds" in indices:
        rule = indices["seeds"]
        mod = int(rule["mod"])
        # (seed + i) % mod without forming seed + i: a seed near 2**63 would overflow int64
        return (int(seed) % mod + np.arange(int(rule["count"]), dtype=np.int64)) % mod + int(rule["add"])
    if "ids" in indices:
        return np.array(id_list(indices["ids"]["list"]).ids, dtype=np.int64)
    if "file" in indices:
        if file_ids is None:
            raise ProtocolError(f"protocol {name!r} reads its goal ids from a file: pass it (--protocol-file FILE)")
        return np.asarray(file_ids, dtype=np.int64)
    raise ProtocolError(f"protocol {name!r}: unknown goal rule {sorted(indices)}")


def spec_ids(spec: Mapping, *, name: str, seed: int | None, n: int | None, file_ids: np.ndarray | None) -> np.ndarray:
    """Every canonical goal a (train) spec names, sorted and unique.

    A per-worker list (verl-agent) takes the union over the spec's workers: worker ``g`` reads
    its own list, shuffled with ``seed + seed_offset + g``.
    """
    list_spec = spec["list"]
    positions = spec_positions(spec, name=name, seed=seed, n=n, file_ids=file_ids)
    if list_spec.get("shuffle_seed") == "worker":
        workers = spec.get("workers") or {}
        parts = [
            _canonical(goal_list_order(list_spec, int(seed) + int(workers.get("seed_offset", 0)) + g, n), positions, n, name)
            for g in range(int(workers.get("count", 1)))
        ]
        return np.unique(np.concatenate(parts))
    return np.unique(_canonical(goal_list_order(list_spec, None, n), positions, n, name))


def reachable_ids(spec: Mapping, *, name: str, seed: int | None, n: int | None, file_ids: np.ndarray | None) -> np.ndarray:
    """Every canonical goal a test spec can ever play (any validation), sorted and unique.

    For fixed ids this is the resolved goals.  For verl-agent's per-validation draws it is the
    union, over the validation workers, of the goals each worker's own list holds at the drawn
    population (``range(500)``): any of them can come up in some validation.
    """
    indices = spec["indices"]
    if "draw" not in indices:
        episodes = resolve_episodes(spec, name=name, seed=seed, validation=0, n=n, file_ids=file_ids, default_price_seed=0)
        return np.unique(np.array([e.goal for e in episodes], dtype=np.int64))
    lo, hi = indices["draw"]["population"]
    population = np.arange(int(lo), int(hi), dtype=np.int64)
    workers = spec.get("workers") or {}
    parts = [
        _canonical(goal_list_order(spec["list"], int(seed) + int(workers.get("seed_offset", 0)) + w, n), population, n, name)
        for w in range(int(workers.get("count", 1)))
    ]
    return np.unique(np.concatenate(parts))
