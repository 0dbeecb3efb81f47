"""Batch helpers: split Gymnasium's batched ``info`` dict into one dict per env slot."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["SlotPolicies", "unbatch_infos"]


def _python(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.dtype != object:
        return value.tolist()
    return value


def _length(infos: Mapping[str, Any]) -> int | None:
    for key, value in infos.items():
        if isinstance(value, Mapping):
            n = _length(value)
            if n is not None:
                return n
        elif not key.startswith("_") and hasattr(value, "__len__"):
            return len(value)
    return None


def unbatch_infos(infos: Mapping[str, Any] | Sequence[Mapping[str, Any]], num_envs: int | None = None) -> list[dict]:
    """Return one info dict per slot.

    ``infos`` is either what :class:`~webshop_gym.envs.vector_env.WebShopVectorEnv` returns (a dict
    of arrays with ``_key`` masks, nested for ``available_actions``) or already a list of dicts
    (returned as shallow copies).  A slot gets a key only where its mask is set, so an idle slot
    of an eval-mode env comes out as ``{"idle": True}``.  Numpy scalars become Python values.

    Example:
        >>> import numpy as np
        >>> unbatch_infos({"steps": np.array([0, 3]), "_steps": np.array([True, True]),
        ...                "idle": np.array([False, True]), "_idle": np.array([False, True])})
        [{'steps': 0}, {'steps': 3, 'idle': True}]
    """
    if not isinstance(infos, Mapping):
        out = [dict(info) for info in infos]
        if num_envs is not None and len(out) != num_envs:
            raise ValueError(f"expected {num_envs} info dicts, got {len(out)}")
        return out
    n = _length(infos) if num_envs is None else int(num_envs)
    if n is None:
        return []
    out: list[dict] = [{} for _ in range(n)]
    for key, value in infos.items():
        if key.startswith("_"):
            continue
        mask = infos.get("_" + key)
        if isinstance(value, Mapping):
            values = unbatch_infos(value, n)
        else:
            if len(value) != n:
                raise ValueError(f"info[{key!r}] has {len(value)} entries, expected {n}")
            values = [_python(v) for v in value]
        for i in range(n):
            if mask is None or mask[i]:
                out[i][key] = values[i]
    return out


class SlotPolicies:
    """Per-slot policies behind one ``act_batch``: a batch policy made of a per-slot factory.

    A slot gets a fresh ``factory()`` policy (then ``reset(info)``) whenever its info says
    ``steps == 0``, as a batch policy clears a slot's history there; idle slots get ``""``.
    It stands in for a model's batch policy (:class:`~webshop_gym.agents.hf.HFPolicy`) where
    what matters is how a loop batches the slots: ``calls`` counts the ``act_batch`` calls and
    ``widest`` is the most live slots one call was given.

    Example:
        >>> from webshop_gym.agents.policies.registry import make_policy
        >>> batch = SlotPolicies(lambda: make_policy("rule"))
        >>> batch.act_batch(["", ""], [{"idle": True}, {"idle": True}]), batch.widest
        (['', ''], 0)
    """

    def __init__(self, factory: Callable[[], Any], name: str = "slot-policies"):
        self.factory, self.name = factory, name
        self.slots: dict[int, Any] = {}
        self.calls = 0
        self.widest = 0

    def act_batch(self, observations: Sequence[str], infos: Sequence[Mapping[str, Any]]) -> list[str]:
        """One action per slot: each live slot's own policy acts (a new one where ``steps == 0``)."""
        self.calls += 1
        live = [i for i, info in enumerate(infos) if not info.get("idle")]
        self.widest = max(self.widest, len(live))
        out = [""] * len(observations)
        for i in live:
            if infos[i]["steps"] == 0 and not infos[i].get("turn"):  # (a turn's reply asked again: same episode)
                self.slots[i] = self.factory()
                self.slots[i].reset(infos[i])
            out[i] = self.slots[i].act(observations[i], infos[i])
        return out
