"""The WebShop reward (SPEC section 6): a readable reference scorer and a Numba batch kernel.

:func:`webshop_gym.reward.reference.reward` is the specification in plain Python;
:class:`RewardModel` validates inputs, prepares arrays once per (catalog, goal set) and scores
whole batches with the compiled kernel of :mod:`webshop_gym.reward._kernels`.  Tests check the
two agree on every total and breakdown field.  Imports :mod:`webshop_gym.data` below it, never
search, the simulator or anything above.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING

import numpy as np

from webshop_gym.data.colors import COLOR_SET, normalize_color
from webshop_gym.data.fuzz import FuzzTableBuilder
from webshop_gym.error import GoalNotFound
from webshop_gym.reward import reference

if TYPE_CHECKING:
    from webshop_gym.data.catalog import Catalog
    from webshop_gym.data.goals import GoalSet
    from webshop_gym.reward.tables import GoalTables, ProductTables

__all__ = ["BREAKDOWN_KEYS", "COLOR_SET", "RewardBatch", "RewardModel", "normalize_color", "reference"]

BREAKDOWN_KEYS = (
    "r_type", "r_att", "w_att", "query_match", "category_match", "title_score",
    "r_option", "w_option", "r_price", "w_price",
)  # fmt: skip
"""Breakdown fields, in the reference's order (``r_option``/``w_option`` only with goal options)."""

# The kernel's output arrays, in the order of its arguments.
_FLOAT_OUT = ("total", "r_type", "r_att", "w_att", "title_score", "r_option", "w_option", "w_price")
_BOOL_OUT = ("query_match", "category_match", "r_price")
_INT_OUT = ("n_att", "n_opt")
_OUT = (*_FLOAT_OUT, *_BOOL_OUT, *_INT_OUT)


def _breakdown(r_type, r_att, w_att, query_match, category_match, title_score, r_option, w_option, r_price,
               w_price) -> dict:
    """One purchase's breakdown as the reference's verbose info dict (Python numbers; no option part when NaN)."""
    out = {"r_type": r_type, "r_att": r_att, "w_att": w_att, "query_match": query_match,
           "category_match": category_match, "title_score": title_score}  # fmt: skip
    if not math.isnan(r_option):
        out["r_option"] = r_option
        out["w_option"] = w_option
    out["r_price"] = r_price
    out["w_price"] = w_price
    return out


@dataclass(frozen=True)
class RewardBatch:
    """Totals and breakdown arrays of a scored batch (``r_option``/``w_option`` NaN without goal options)."""

    total: np.ndarray
    r_type: np.ndarray
    r_att: np.ndarray
    w_att: np.ndarray
    query_match: np.ndarray
    category_match: np.ndarray
    title_score: np.ndarray
    r_option: np.ndarray
    w_option: np.ndarray
    r_price: np.ndarray
    w_price: np.ndarray
    n_att: np.ndarray
    n_opt: np.ndarray

    def __len__(self) -> int:
        return len(self.total)

    def info(self, i: int) -> dict:
        """Return item ``i``'s breakdown as the reference's verbose info dict."""
        # ``item``: the Python float/bool at once, without a numpy scalar in between
        return _breakdown(self.r_type.item(i), self.r_att.item(i), self.w_att.item(i), self.query_match.item(i),
                          self.category_match.item(i), self.title_score.item(i), self.r_option.item(i),
                          self.w_option.item(i), self.r_price.item(i), self.w_price.item(i))

    def infos(self) -> list[dict]:
        """Every item's :meth:`info`, in order (each array read once)."""
        columns = (self.r_type, self.r_att, self.w_att, self.query_match, self.category_match, self.title_score,
                   self.r_option, self.w_option, self.r_price, self.w_price)
        return [_breakdown(*values) for values in zip(*[column.tolist() for column in columns])]

    def arrays(self) -> dict[str, np.ndarray]:
        """Return the breakdown as a dict of arrays (reference key order)."""
        return {k: getattr(self, k) for k in BREAKDOWN_KEYS}


def _writable(a: np.ndarray, dtype) -> np.ndarray:
    """``a`` as a C-contiguous writable array of ``dtype`` (itself when it is one already)."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a if a.flags.writeable else a.copy()


def _no_nouns(n: int) -> tuple[np.ndarray, ...]:
    """Title-noun kernel arguments of ``n`` purchases whose titles have no nouns."""
    off = np.zeros(n + 1, np.int64)
    return off, np.zeros(0, np.int32), off.copy(), np.zeros(0, np.int32), np.zeros(n, np.int32)


class RewardModel:
    """Scores purchases for one (catalog, goal set) pair.

    Args:
        catalog: the compiled catalog (its title nouns are compiled on first use).
        goals: the goal set whose goals are scored.
    """

    def __init__(self, catalog: Catalog, goals: GoalSet):
        self.catalog = catalog
        self.goals = goals
        self._lock = threading.Lock()
        self._products: ProductTables | None = None
        self._goal_tables: GoalTables | None = None
        self._fuzz = None
        self._max_joined = 1
        self._tables: tuple | None = None  # (fuzz table, head, tail, entry point) of _kernel_tables
        self._extra_ids: dict[str, int] = {}
        self._goal_nouns: dict[int, list[str]] = {}
        self._one = threading.local()  # score_one's reused arrays, one set per thread
        self.jit_seconds: float | None = None

    # -- preparation ------------------------------------------------------------------------

    def prepare(self, progress: bool = False, report: dict | None = None) -> None:
        """Build (or map from the cache) every table now, so the first purchase does not wait.

        Args:
            progress: show progress bars while compiling title nouns or goal tables.
            report: a dict that receives ``{"nouns": ..., "reward_tables": ...}`` (cached?, seconds).
        """
        from webshop_gym.reward.tables import build_product_tables, goal_tables

        with self._lock:
            if self._goal_tables is None:
                self.catalog.ensure_nouns(progress=progress, report=report)
                self._products = build_product_tables(self.catalog)
                self._goal_tables = goal_tables(self.catalog, self.goals, progress=progress, report=report)
                self._fuzz = self._goal_tables.fuzz
                self._max_joined = self._goal_tables.max_joined

    def warmup(self) -> float:
        """Compile (or load from numba's cache) the kernel; return the seconds it took."""
        self.prepare()
        started = time.perf_counter()
        if len(self.catalog) and len(self.goals):
            self.score(np.zeros(1, np.int64), np.zeros(1, np.int64), [[]], np.zeros(1), _untagged=True)
        self.jit_seconds = time.perf_counter() - started
        return self.jit_seconds

    def value_ids(self, values: Sequence[int]) -> np.ndarray:
        """Fuzz ids of catalog option values (by value id)."""
        return np.asarray(self.catalog.value_fz)[np.asarray(values, dtype=np.int64)]

    def string_ids(self, values: Sequence[str]) -> list[int]:
        """Fuzz ids of arbitrary selected option strings (``normalize_color`` applied)."""
        self.prepare()
        keys = [normalize_color(v) for v in values]
        missing = [k for k in dict.fromkeys(keys) if k not in self._extra_ids]
        if missing:
            from webshop_gym.reward.tables import max_joined_length

            with self._lock:
                builder = FuzzTableBuilder(base=self._fuzz)
                for k in missing:
                    self._extra_ids[k] = builder.add(k)
                self._fuzz = builder.build()
                self._max_joined = max_joined_length(self._fuzz)
        return [self._extra_ids[k] for k in keys]

    # -- scoring ------------------------------------------------------------------------------

    def score(
        self,
        goal_indices: Sequence[int] | np.ndarray,
        rows: Sequence[int] | np.ndarray,
        selected_fz: Sequence[Sequence[int]],
        prices: Sequence[float] | np.ndarray,
        kernel: bool = True,
        _untagged: bool = False,
    ) -> RewardBatch:
        """Score a batch with the kernel.

        Args:
            goal_indices: goal of each purchase.
            rows: catalog row of each purchased product.
            selected_fz: fuzz ids of each purchase's selected option values
                (see :meth:`value_ids` and :meth:`string_ids`).
            prices: price paid for each purchase.
            kernel: use the compiled kernel (``False`` runs its pure-Python twin).
            _untagged: score as if both titles had no nouns (:meth:`warmup`: the kernel compiled
                without tagging a title, which a large shop does on first use).
        """
        if self._goal_tables is None:
            self.prepare()
        # fresh C-contiguous writable copies: the types the kernel's entry point was resolved for
        goal_indices = np.array(goal_indices, dtype=np.int64)
        rows = np.array(rows, dtype=np.int64)
        prices = np.array(prices, dtype=np.float64)
        if goal_indices.ndim != 1 or rows.ndim != 1 or prices.ndim != 1:
            raise ValueError("goal indices, rows and prices must be one-dimensional sequences")
        n = len(goal_indices)
        if not (len(rows) == len(selected_fz) == len(prices) == n):
            raise ValueError(
                f"batch arrays differ in length: goals {n}, rows {len(rows)}, "
                f"options {len(selected_fz)}, prices {len(prices)}"
            )
        # the bounds checked on Python ints: numpy's min/max cost ~1.5 us each on a batch of one
        goal_list, row_list = goal_indices.tolist(), rows.tolist()
        if n and (min(goal_list) < 0 or max(goal_list) >= len(self.goals)):
            bad = next(g for g in goal_list if g < 0 or g >= len(self.goals))
            raise GoalNotFound(f"goal index {bad} is out of range: the goal set has {len(self.goals)} goals")
        if n and (min(row_list) < 0 or max(row_list) >= len(self.catalog)):
            raise IndexError(f"product rows must be in [0, {len(self.catalog)})")
        if n == 1:  # the common case, a single purchase: no generators
            sel = np.array(selected_fz[0], dtype=np.int32)
            if sel.ndim != 1:
                raise ValueError("each purchase's selected option ids must be a flat sequence of ints")
            sel_off = np.array([0, len(sel)], dtype=np.int64)
        else:
            sel_off = np.array([0, *accumulate(len(s) for s in selected_fz)], dtype=np.int64)
            sel = np.fromiter((x for s in selected_fz for x in s), dtype=np.int32, count=int(sel_off[-1]))
        # one block per dtype, a C-contiguous row per output (the kernel sees the same array types)
        out = dict(zip(_OUT, (*np.empty((len(_FLOAT_OUT), n), np.float64), *np.empty((len(_BOOL_OUT), n), np.bool_),
                              *np.empty((len(_INT_OUT), n), np.int32))))  # fmt: skip
        nouns = _no_nouns(n) if _untagged else self._title_nouns(goal_indices, rows)
        head, tail, entry = self._kernel_tables()
        args = (0, n, *head, *nouns, *tail, goal_indices, rows, sel_off, sel, prices,
                *out.values())  # fmt: skip
        if not kernel:
            from webshop_gym.reward import _kernels

            _kernels.score_range(*args)
        else:
            (entry or self._entry_point(args, head))(*args)
        return RewardBatch(**out)

    def score_one(self, goal_index: int, row: int, selected_fz: Sequence[int], price: float) -> tuple[float, dict]:
        """Score a single purchase: ``(batch.total[0], batch.info(0))`` of ``score`` on a batch of one.

        Less Python around the kernel: the goal, row, price and output arrays are per-thread arrays
        reused from call to call (of the types ``score`` passes, so both call the same entry point),
        and the result comes back as Python numbers, so nothing of them outlives the call.  The
        simulator's purchase of one slot (``WebShopEnv.step``) calls it.
        """
        if self._goal_tables is None:
            self.prepare()
        goal_index, row = int(goal_index), int(row)
        if not 0 <= goal_index < len(self.goals):
            raise GoalNotFound(f"goal index {goal_index} is out of range: the goal set has {len(self.goals)} goals")
        if not 0 <= row < len(self.catalog):
            raise IndexError(f"product rows must be in [0, {len(self.catalog)})")
        sel = np.array(selected_fz, dtype=np.int32)
        if sel.ndim != 1:
            raise ValueError("each purchase's selected option ids must be a flat sequence of ints")
        one = self._one
        if not hasattr(one, "goal"):
            one.goal, one.row = np.zeros(1, np.int64), np.zeros(1, np.int64)
            one.price, one.sel_off = np.zeros(1, np.float64), np.zeros(2, np.int64)
            one.floats = np.empty((len(_FLOAT_OUT), 1), np.float64)
            one.bools = np.empty((len(_BOOL_OUT), 1), np.bool_)
            one.outs = (*one.floats, *one.bools, *np.empty((len(_INT_OUT), 1), np.int32))  # as score's rows
        one.goal[0], one.row[0], one.price[0], one.sel_off[1] = goal_index, row, price, len(sel)
        nouns = self._title_nouns(one.goal, one.row)
        head, tail, entry = self._kernel_tables()
        args = (0, 1, *head, *nouns, *tail, one.goal, one.row, one.sel_off, sel, one.price, *one.outs)
        (entry or self._entry_point(args, head))(*args)
        total, r_type, r_att, w_att, title_score, r_option, w_option, w_price = one.floats[:, 0].tolist()
        query_match, category_match, r_price = one.bools[:, 0].tolist()
        return total, _breakdown(r_type, r_att, w_att, query_match, category_match, title_score, r_option, w_option, r_price,
                                 w_price)

    def _title_nouns(self, goal_indices: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """The kernel's title-noun arguments, one row per purchase.

        They are the purchased title's nouns ``(offsets, values)``, the goal's, and the goal's
        number of noun tokens.

        A large shop tags titles on first use (the catalog's title nouns), so a goal's title is
        tagged at its first purchase here, as a purchased product's is.
        """
        gt, store = self._goal_tables, self.catalog.title_noun_store
        if len(rows) == 1:  # a single purchase (the single env's): no numpy gathers
            row, g = int(rows[0]), int(goal_indices[0])
            t = int(gt.noun_row[g])
            if not store.complete:
                store.ensure((row, t) if t >= 0 else (row,))
            p_val, _ = store.one(row)
            if t >= 0:
                g_val, count = store.one(t)
            else:
                g_val, count = np.array(gt.nouns[g], dtype=np.int32), int(gt.noun_count[g])
            return (np.array([0, len(p_val)], dtype=np.int64), p_val, np.array([0, len(g_val)], dtype=np.int64),
                    g_val, np.array([count], dtype=np.int32))
        target = np.asarray(gt.noun_row)[goal_indices]
        own = target >= 0
        if not store.complete:  # titles not tagged yet, the purchased and the goals' ones in one call
            store.ensure([*rows.tolist(), *target[own].tolist()])
        pn_off, pn_val = store.unique(rows)
        if own.all():
            gn_off, gn_val = store.unique(target)
            count = store.counts(target)
        else:  # goals named otherwise than their product's title: nouns tagged with the goal tables
            own_off, own_val = store.unique(target[own])
            own_count = store.counts(target[own])
            pieces, count, k = [], np.empty(len(target), dtype=np.int32), 0
            for b, g in enumerate(goal_indices.tolist()):
                if own[b]:
                    pieces.append(np.asarray(own_val[own_off[k] : own_off[k + 1]], dtype=np.int32))
                    count[b] = own_count[k]
                    k += 1
                else:
                    pieces.append(np.asarray(gt.nouns[g], dtype=np.int32))
                    count[b] = gt.noun_count[g]
            gn_off = np.zeros(len(pieces) + 1, dtype=np.int64)
            np.cumsum([len(x) for x in pieces], out=gn_off[1:])
            gn_val = np.concatenate(pieces)
        return (_writable(pn_off, np.int64), _writable(pn_val, np.int32), _writable(gn_off, np.int64),
                _writable(gn_val, np.int32), _writable(count, np.int32))

    def _entry_point(self, args: tuple, head: tuple):
        """Resolve the kernel's entry point for ``args`` and keep it beside the tables ``head`` belongs to."""
        from webshop_gym.reward import _kernels

        entry = _kernels.score_range_entry(args)
        if self._tables is not None and self._tables[1] is head:
            self._tables = (*self._tables[:3], entry)
        return entry

    def _kernel_tables(self) -> tuple[tuple, tuple, object]:
        """The kernel's table arguments before and after the purchased titles' nouns, and its entry point.

        They change only when :meth:`string_ids` adds strings to the fuzz table, so they are
        gathered once per table (a purchase then costs the kernel, not thirty ``np.asarray``).
        The entry point (:func:`webshop_gym.utils.jit.entry_point`: the compiled ``score_range``
        for these tables' types, called without numba typing some fifty arguments on every call)
        is ``None`` until the first purchase resolves it.
        """
        fz = self._fuzz
        cached = self._tables
        if cached is not None and cached[0] is fz:
            return cached[1], cached[2], cached[3]
        c, gt, pt = self.catalog, self._goal_tables, self._products
        head = (
            np.asarray(fz.tokens.offsets), np.asarray(fz.tokens.values),
            np.asarray(fz.strings.offsets), np.asarray(fz.strings.values), self._max_joined,
            np.asarray(c.query), np.asarray(c.product_category),
            np.asarray(c.category_parts.offsets), np.asarray(c.category_parts.values),
        )  # fmt: skip
        tail = (
            pt.attr_offsets, pt.attr_fz,
            np.asarray(c.title_lower.data), np.asarray(c.title_lower.offsets),
            np.asarray(c.bullets_lower.data), np.asarray(c.bullets_lower.offsets),
            np.asarray(c.description_lower.data), np.asarray(c.description_lower.offsets),
            gt.query, np.asarray(gt.parts.offsets), np.asarray(gt.parts.values),
            gt.attr_offsets, gt.attr_fz, np.asarray(gt.attr_text.data), np.asarray(gt.attr_text.offsets),
            gt.opt_offsets, gt.opt_fz, gt.upper,
        )  # fmt: skip
        self._tables = (fz, head, tail, None)
        return head, tail, None

    # -- the reference path -------------------------------------------------------------------

    def goal_nouns(self, goal_index: int) -> list[str]:
        """Return the nouns of a goal's title, duplicates kept."""
        cached = self._goal_nouns.get(goal_index)
        if cached is None:
            row = int(self.goals.target[goal_index])
            name = self.goals.name[goal_index]
            if row >= 0 and self.catalog.title[row] == name:
                cached = self.catalog.title_nouns(row)
            else:
                from webshop_gym.data.tagger_pool import tag_nouns

                cached = tag_nouns([name])[0]
            self._goal_nouns[goal_index] = cached
        return cached

    def reference(self, goal_index: int, row: int, options: Mapping[str, str], price: float) -> tuple[float, dict]:
        """Score one purchase with the pure-Python reference scorer."""
        return reference.reward(
            self.catalog.product_record(row),
            self.goals[goal_index],
            price,
            dict(options),
            self.catalog.title_nouns(row),
            self.goal_nouns(goal_index),
        )
