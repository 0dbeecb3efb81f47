"""Goal splits for the envs: the plain splits, or a protocol's train (or test) goals.

``split="verl-agent-500:train"`` (a protocol name, a colon, ``train`` or ``test``) or a
:class:`ProtocolSplit` (for a seed or a goal-id file) selects a protocol's goals wherever the envs
take ``split``.  A protocol's test goals are refused unless the caller passes
``allow_test_goals=True``: ``NAME:test`` always, and ``NAME:train`` when the family's own train
goals include goals its test can play (verl-agent's do: see docs/protocols.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from webshop_gym.error import InvalidArgument, TestGoalsRefused
from webshop_gym.protocols.definition import get_protocol

__all__ = ["ProtocolSplit", "goal_ids", "parse_split"]

PARTS = ("train", "test")


@dataclass(frozen=True)
class ProtocolSplit:
    """A protocol's train or test goals, with the protocol's seed and goal-id file when it takes them.

    Attributes:
        protocol: the protocol's name (:func:`~webshop_gym.protocols.protocol_names`).
        part: ``"train"`` or ``"test"``.
        seed: the protocol's seed (``None``: its default).
        ids_file: the goal-id file of a protocol that reads one.
    """

    protocol: str
    part: str = "train"
    seed: int | None = None
    ids_file: str | os.PathLike | None = None

    def __str__(self) -> str:
        return f"{self.protocol}:{self.part}"


def parse_split(split) -> ProtocolSplit | None:
    """A :class:`ProtocolSplit` for ``"NAME:train"``/``"NAME:test"`` (or one given), else ``None`` (a plain split)."""
    if isinstance(split, ProtocolSplit):
        out = split
    elif isinstance(split, str) and ":" in split:
        name, part = split.split(":", 1)
        out = ProtocolSplit(name, part)
    else:
        return None
    if out.part not in PARTS:
        raise InvalidArgument(f"split {str(out)!r}: the part after the colon must be 'train' or 'test', got {out.part!r}")
    get_protocol(out.protocol)  # unknown names fail here, listing the known ones
    return out


def goal_ids(shop, split, *, allow_test_goals: bool = False) -> range | np.ndarray:
    """The goal indices a split names in ``shop``.

    Args:
        shop: the :class:`~webshop_gym.shop.Shop`.
        split: ``"test"``, ``"eval"``, ``"train"``, ``"all"`` or ``None`` (a range of the goal
            list), ``"NAME:train"``/``"NAME:test"`` or a :class:`ProtocolSplit` (a sorted,
            read-only array of a protocol's goals; the shop is checked against the protocol's).
        allow_test_goals: let a protocol split hold goals the protocol tests on.

    Raises:
        TestGoalsRefused: a protocol split holds the protocol's test goals and ``allow_test_goals`` is False.
        ShopMismatch: the shop is not the protocol's.
    """
    chosen = parse_split(split)
    if chosen is None:
        return shop.goals.split_range(split)
    protocol = get_protocol(chosen.protocol)
    protocol.check_shop(shop)
    n = len(shop.goals)
    test_file = chosen.ids_file if chosen.part == "test" or protocol.reads_file else None
    if chosen.part == "test":
        if not allow_test_goals:
            raise TestGoalsRefused(f"split {str(chosen)!r} is protocol {protocol.name!r}'s test goals: pass "
                                   "allow_test_goals=True to use them in an env anyway")
        ids = protocol.test_ids(chosen.seed, num_goals=n, ids_file=test_file)
    else:
        train_file = chosen.ids_file if protocol.train is not None and "file" in protocol.train["indices"] else None
        ids = protocol.train_ids(chosen.seed, num_goals=n, ids_file=train_file)
        if not allow_test_goals and not protocol.needs_file:
            overlap = np.intersect1d(ids, protocol.test_ids(chosen.seed, num_goals=n), assume_unique=True)
            if len(overlap):
                raise TestGoalsRefused(
                    f"split {str(chosen)!r} holds {len(overlap):,} of the {len(ids):,} goals that protocol "
                    f"{protocol.name!r} can test on; pass allow_test_goals=True to train on them anyway"
                    + (", or use 'verl-agent-500:train' (disjoint from its test goals)" if protocol.name == "verl-agent" else "")
                )
    ids = np.asarray(ids, dtype=np.int64)
    ids.flags.writeable = False
    return ids
