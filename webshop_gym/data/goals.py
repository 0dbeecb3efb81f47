"""Goals: what an episode asks the agent to buy (SPEC section 2).

Goal construction follows the reference step by step, and draws its random numbers from a local
``random.Random(seed)`` in the reference's order: product prices (one uniform draw per price
range, in catalog order), then one price cap per target product (synthetic goals) or per human
instruction, then the fixed ``random.Random(233)`` shuffle.  The reference made the same draws
from Python's *global* RNG; with ``seed=0`` we therefore reproduce the reference run that seeded
it with 0 (the golden goal set of ``../shared``), and any other seed differs only in prices and
caps.  Goal order, texts up to the price clause, attributes and options never depend on the seed.

A goal set is columnar (a 1M-product shop has 3.7M synthetic goals): per-goal numbers are numpy
arrays, texts and lists are read-only views over catalog columns or cached string tables, and
``goals[i]`` builds the reference's goal dict on demand.  Built goal sets are cached in the
catalog's cache folder in two parts, so that a changed seed rebuilds only the small part that
depends on it:

* ``goals-<kind>-v<N>/``: the shuffled goals (target rows, option choices, instruction texts
  without the price clause, weights), which depend on the catalog alone;
* ``goals-<kind>-v<N>/seed-<seed>/``: product prices and each goal's price cap.

A goal set can be frozen to JSON and loaded back, and the reference's own ``goals.json`` (with
``prices.json`` beside it) loads as well; a loaded file is cached too, keyed by its contents.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import logging
import os
import random
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from webshop_gym.data.catalog import Catalog
from webshop_gym.data.columns import (
    Interner,
    Lookup,
    Ragged,
    RaggedWriter,
    RowView,
    StringColumn,
    StringColumnWriter,
    gather_rows,
    gather_strings,
    load_array,
    save_array,
)
from webshop_gym.error import GoalNotFound, expect_one_of
from webshop_gym.utils.memo import read_memo, write_memo
from webshop_gym.utils.paths import build_atomically, is_built

__all__ = ["DIGEST_MEMO", "GoalSet", "SPLITS", "build_goals", "product_prices", "reshuffled_order"]

log = logging.getLogger("webshop_gym")

DIGEST_MEMO = "digest.memo.json"
"""The goal-set digest's memo file beside the prices (:mod:`webshop_gym.utils.memo`)."""

PRICE_RANGE = [10.0 * i for i in range(1, 100)]
NO_PRICE_CAP = 1000000
GOAL_SHUFFLE_SEED = 233
SPLITS = {"test": (0, 500), "eval": (500, 1500), "train": (1500, None)}
"""Index ranges of the splits in the shuffled goal list (train runs to the end)."""

FORMAT = "webshop-gym/goal-set"
FORMAT_VERSION = 1
CACHE_VERSION = "1"
"""Bump when the cached goal layout or any goal rule changes."""


def price_clause(upper: float) -> str:
    """The text a price cap appends to an instruction (nothing for "no cap")."""
    return "" if upper == NO_PRICE_CAP else f", and price lower than {upper:.2f} dollars"


# --------------------------------------------------------------------------------------------
# Columns that look like lists


class Instructions(RowView):
    """Instruction texts: a stored text per goal plus, when ``upper`` is given, its price clause."""

    __slots__ = ("base", "upper")

    def __init__(self, base: Sequence[str], upper: np.ndarray | None):
        self.base = base
        self.upper = upper

    def __len__(self) -> int:
        return len(self.base)

    def row(self, i: int) -> str:
        text = self.base[i]
        return text if self.upper is None else text + price_clause(float(self.upper[i]))

    def __iter__(self) -> Iterator[str]:
        if self.upper is None:
            yield from self.base
            return
        for text, upper in zip(self.base, self.upper.tolist()):
            yield text + price_clause(upper)


class IdRows(RowView):
    """Lists of strings: row ``i`` is ``[names[j] for j in rows[index[i]]]`` (``index`` optional)."""

    __slots__ = ("rows", "names", "index")

    def __init__(self, rows: Ragged, names: Sequence[str], index: np.ndarray | None = None):
        self.rows = rows
        self.names = names
        self.index = index

    def __len__(self) -> int:
        return len(self.rows) if self.index is None else len(self.index)

    def ids(self, i: int) -> np.ndarray:
        """The ids of row ``i``."""
        return self.rows[int(i if self.index is None else self.index[i])]

    def row(self, i: int) -> list[str]:
        names = self.names
        return [names[j] for j in self.ids(i).tolist()]

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """``(offsets, ids)`` of every row, in goal order (a gather when rows are indexed)."""
        return gather_rows(self.rows, self.index)


class Options(RowView):
    """Goal options: a ``name -> value`` dict (synthetic goals) or a list of values (human goals).

    ``values`` holds value ids per goal; ``names`` (same offsets) the option-name ids, ``-1``
    where a goal's options are a list; ``is_dict`` says which goals have a dict.
    """

    __slots__ = ("values", "value_names", "names", "option_names", "is_dict", "index")

    def __init__(self, values: Ragged, value_names: Sequence[str], names: np.ndarray | None = None,
                 option_names: Sequence[str] | None = None, is_dict: np.ndarray | bool = False,
                 index: np.ndarray | None = None):
        self.values = values
        self.value_names = value_names
        self.names = names
        self.option_names = option_names
        self.is_dict = is_dict
        self.index = index

    def __len__(self) -> int:
        return len(self.values) if self.index is None else len(self.index)

    def goal_is_dict(self, i: int) -> bool:
        """Whether goal ``i``'s options are a dict."""
        return bool(self.is_dict if isinstance(self.is_dict, bool) else self.is_dict[i])

    def row(self, i: int) -> list[str] | dict[str, str]:
        a, b = self.values.bounds(int(i if self.index is None else self.index[i]))
        values = [self.value_names[v] for v in self.values.values[a:b].tolist()]
        if not self.goal_is_dict(i):
            return values
        names = [self.option_names[n] for n in self.names[a:b].tolist()]
        return dict(zip(names, values))


def flat_ids(column) -> tuple[np.ndarray, Sequence[str]]:
    """``(ids, names)`` with ``column[i] == names[ids[i]]`` for a (possibly nested) :class:`Lookup`."""
    if isinstance(column, Lookup):
        ids = np.asarray(column.ids)
        names = column.names
        while isinstance(names, Lookup):
            ids = np.asarray(names.ids)[ids]
            names = names.names
        return ids, names
    interner = Interner()
    return np.fromiter((interner.add(s) for s in column), dtype=np.int64, count=len(column)), interner.strings


# --------------------------------------------------------------------------------------------
# The goal set


@dataclass(frozen=True, eq=False)
class GoalSet:
    """An ordered list of goals plus the product prices their reward uses.

    Per goal ``i``: ``asin[i]`` (the target), ``target[i]`` (its catalog row, ``-1`` when the
    catalog lacks it), ``instruction[i]``, ``attributes[i]``, ``options[i]`` (a ``name -> value``
    dict for synthetic goals, a list of values for human goals), ``price_upper[i]``,
    ``weight[i]`` and the target's ``category``, ``query``, ``name`` and ``product_category``.
    ``prices[row]`` is the price of every catalog product.  Every column is a read-only
    sequence (numpy arrays, or views that decode on access): nothing per goal lives in Python
    objects until asked for.
    """

    kind: str
    seed: int | None
    asin: Sequence[str]
    target: np.ndarray
    instruction: Sequence[str]
    attributes: Sequence[list[str]]
    options: Sequence
    price_upper: np.ndarray
    weight: np.ndarray
    category: Sequence[str]
    query: Sequence[str]
    name: Sequence[str]
    product_category: Sequence[str]
    prices: np.ndarray
    source: str = ""
    folder: Path | None = None
    """Cache folder of the seed-independent part (reward tables are cached beside it)."""
    seed_folder: Path | None = None
    """Cache folder of the seed-dependent part (prices and caps)."""
    _cache: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.target)

    def __getitem__(self, index: int) -> dict:
        """Return goal ``index`` as the reference's goal dict."""
        if not -len(self) <= index < len(self):
            raise GoalNotFound(f"goal index {index} is out of range: this goal set has {len(self)} goals")
        index = index % len(self)
        upper = float(self.price_upper[index])
        options = self.options[index]
        return {
            "asin": self.asin[index],
            "category": self.category[index],
            "query": self.query[index],
            "name": self.name[index],
            "product_category": self.product_category[index],
            "instruction_text": self.instruction[index],
            "attributes": list(self.attributes[index]),
            "price_upper": int(upper) if upper == NO_PRICE_CAP else upper,
            "goal_options": dict(options) if isinstance(options, dict) else list(options),
            "weight": float(self.weight[index]),
        }

    def split_range(self, split: str | None) -> range:
        """Return the goal indices of a split (``None``: all goals)."""
        if split is None or split == "all":
            return range(len(self))
        expect_one_of("split", split, [*SPLITS, "all", None])
        start, stop = SPLITS[split]
        stop = len(self) if stop is None else min(stop, len(self))
        return range(min(start, len(self)), stop)

    @property
    def cum_weights(self) -> np.ndarray:
        """Cumulative weights for weighted goal sampling."""
        cached = self._cache.get("cum")
        if cached is None:
            cached = np.cumsum(self.weight)
            self._cache["cum"] = cached
        return cached

    def sample(self, rng: np.random.Generator, indices: range | np.ndarray | None = None) -> int:
        """Draw a goal index in proportion to weight (within ``indices`` when given).

        ``indices`` is a range (a split) or an array of goal indices (a protocol's train goals).
        """
        if indices is not None and not isinstance(indices, range):
            ids = np.asarray(indices, dtype=np.int64)
            if len(ids) == 0:
                raise GoalNotFound("cannot sample from an empty set of goals")
            cum_ids = np.cumsum(np.asarray(self.weight, dtype=np.float64)[ids])
            x = rng.random() * cum_ids[-1]
            return int(ids[min(int(np.searchsorted(cum_ids, x, side="right")), len(ids) - 1)])
        cum = self.cum_weights
        lo = 0 if indices is None else indices.start
        hi = len(self) if indices is None else indices.stop
        if hi <= lo:
            raise GoalNotFound("cannot sample from an empty goal range")
        base = cum[lo - 1] if lo > 0 else 0.0
        x = base + rng.random() * (cum[hi - 1] - base)
        return int(min(max(np.searchsorted(cum, x, side="right"), lo), hi - 1))

    def digest(self) -> str:
        """A SHA-256 (hex, 16 chars) of everything an episode's reward depends on in this goal set.

        It covers, in order, each goal's target asin, instruction, attributes, options, price cap
        and weight, then every product price: two runs whose goal sets have the same digest
        scored the same goals against the same prices.  Kept beside the goal set's prices in a
        checked memo file (:data:`DIGEST_MEMO`).
        """
        cached = self._cache.get("digest")
        if cached is not None:
            return cached
        memo = self.seed_folder / DIGEST_MEMO if self.seed_folder is not None else None
        kept = read_memo(memo) if memo is not None else None
        if isinstance(kept, str) and len(kept) == 16 and all(c in "0123456789abcdef" for c in kept):
            cached = kept
        else:
            h = hashlib.sha256()
            for asin, text, attrs, options, upper, weight in zip(
                self.asin, self.instruction, self.attributes, self.options,
                self.price_upper.tolist(), self.weight.tolist(),
            ):  # fmt: skip
                options = sorted(options.items()) if isinstance(options, dict) else list(options)
                record = [asin, text, list(attrs), options, float(upper), float(weight)]
                h.update(json.dumps(record, ensure_ascii=True).encode("ascii"))
                h.update(b"\n")
            h.update(np.ascontiguousarray(self.prices, dtype="<f8").tobytes())
            cached = h.hexdigest()[:16]
            if memo is not None:
                write_memo(memo, cached)
        self._cache["digest"] = cached
        return cached

    # -- freezing -------------------------------------------------------------------------------

    def to_json(self, catalog: Catalog) -> dict:
        """Return the frozen form: every goal with its text and cap, and the product prices."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "kind": self.kind,
            "seed": self.seed,
            "catalog": catalog.key,
            "prices": {catalog.asin[i]: float(self.prices[i]) for i in range(len(catalog))},
            "goals": [self[i] for i in range(len(self))],
        }

    def save(self, path: str | os.PathLike, catalog: Catalog) -> None:
        """Write the frozen goal set to ``path`` (JSON), goal by goal (memory stays small)."""
        with open(path, "w", encoding="utf-8") as out:
            head = {"format": FORMAT, "version": FORMAT_VERSION, "kind": self.kind, "seed": self.seed,
                    "catalog": catalog.key}
            out.write("{\n")
            for key, value in head.items():
                out.write(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},\n")
            out.write(' "prices": {')
            for i, (asin, price) in enumerate(zip(catalog.asin, self.prices.tolist())):
                out.write(("," if i else "") + f"\n  {json.dumps(asin, ensure_ascii=False)}: {json.dumps(price)}")
            out.write("\n },\n \"goals\": [")
            for i in range(len(self)):
                out.write(("," if i else "") + "\n  " + json.dumps(self[i], ensure_ascii=False))
            out.write("\n ]\n}\n")


# --------------------------------------------------------------------------------------------
# Building goals from a catalog


def product_prices(catalog: Catalog, rng: random.Random) -> np.ndarray:
    """Draw every product's price: the single price, or one uniform draw in its range."""
    pricing = np.asarray(catalog.pricing)
    prices = pricing[:, 0].copy()
    for row in np.flatnonzero(~np.isnan(pricing[:, 1])).tolist():
        prices[row] = rng.uniform(pricing[row, 0], pricing[row, 1])
    return prices


def _price_cap(price: float, rng: random.Random) -> float:
    """Two of the first four multiples of 10 above ``price``, drawn as the reference does: the larger."""
    start = bisect.bisect_right(PRICE_RANGE, price)
    candidates = PRICE_RANGE[start : start + 4]
    if len(candidates) >= 2:
        return max(rng.sample(candidates, 2))
    return float(NO_PRICE_CAP)


def _shuffle_order(n: int) -> np.ndarray:
    """The reference's ``random.Random(233).shuffle`` as a permutation: goal ``k`` is built goal ``order[k]``."""
    order = list(range(n))
    random.Random(GOAL_SHUFFLE_SEED).shuffle(order)
    return np.asarray(order, dtype=np.int64)


def reshuffled_order(n: int, seed: int) -> np.ndarray:
    """Goal index (in this package's order) at each position of the goal list shuffled with ``seed``.

    Our goals are the reference's built list shuffled with ``random.Random(233)``.  Forks of the
    reference shuffle the same built list with another seed (the verl-agent fork with each
    worker's seed, the SEED fork with 0).  A shuffle of a list is a permutation that depends only
    on the list's length and the seed, so position ``j`` of the fork's list is our goal
    ``reshuffled_order(n, seed)[j]``; ``seed=233`` gives ``arange(n)``.
    """
    position_of = np.empty(n, dtype=np.int64)
    position_of[_shuffle_order(n)] = np.arange(n, dtype=np.int64)  # built index -> our position
    order = list(range(n))
    random.Random(seed).shuffle(order)  # fork position -> built index
    return position_of[np.asarray(order, dtype=np.int64)]


def _build_synthetic(catalog: Catalog, folder: Path, progress: bool) -> dict:
    """Write the seed-independent part of the synthetic goals into ``folder``."""
    targets = np.flatnonzero(np.asarray(catalog.has_instruction)).tolist()
    group_offsets = np.asarray(catalog.option_groups.offsets)
    value_offsets = np.asarray(catalog.group_values.offsets)
    goal_target = array("i")
    goal_cap = array("i")
    option_values = RaggedWriter()
    texts = StringColumnWriter(folder, "unshuffled_text")
    counts: dict[int, int] = {}
    bar = _bar(len(targets), "building synthetic goals", progress)
    for slot, row in enumerate(targets):
        groups = [(catalog.group_name[g], g) for g in range(group_offsets[row], group_offsets[row + 1])]
        groups.sort(key=lambda item: item[0])
        choices = []
        for name, g in groups:
            choices.append([(v, f"{name}: {catalog.value_text[v]}")
                            for v in range(value_offsets[g], value_offsets[g + 1])])
        instruction = catalog.instruction[row]
        n_goals = 0
        for combination in itertools.product(*choices):
            option_text = ", and ".join(text for _, text in combination)
            texts.append(f"{instruction} with {option_text}" if option_text else instruction)
            option_values.append([v for v, _ in combination])
            n_goals += 1
        goal_target.extend(itertools.repeat(row, n_goals))
        goal_cap.extend(itertools.repeat(slot, n_goals))
        for a in catalog.instruction_attributes[row].tolist():
            counts[a] = counts.get(a, 0) + n_goals
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    weights_of_target = {}
    for row in targets:
        attrs = catalog.instruction_attributes[row].tolist()
        weights_of_target[row] = sum(1.0 / counts[a] for a in attrs) / len(attrs)
    texts.close()
    order = _shuffle_order(len(goal_target))
    target = np.frombuffer(goal_target, dtype=np.int32)[order]
    per_row = np.zeros(len(catalog), dtype=np.float64)
    for row, w in weights_of_target.items():
        per_row[row] = w
    weight = per_row[target]
    offsets, flat = gather_rows(option_values.build(), order)
    save_array(folder, "target", target)
    save_array(folder, "cap_slot", np.frombuffer(goal_cap, dtype=np.int32)[order])
    save_array(folder, "weight", weight)
    save_array(folder, "cum_weight", np.cumsum(weight))
    Ragged(offsets, flat.astype(np.int32)).save(folder, "option_values")
    gather_strings(StringColumn.load(folder, "unshuffled_text"), order, folder, "base_text")
    for suffix in (".data.npy", ".offsets.npy"):
        (folder / f"unshuffled_text{suffix}").unlink()
    return {"goals": len(target), "caps": len(targets)}


def _build_human(catalog: Catalog, folder: Path, progress: bool) -> dict:
    """Write the seed-independent part of the human goals into ``folder``."""
    has_attrs = np.diff(np.asarray(catalog.human_attributes.offsets)) > 0
    owner = np.repeat(np.arange(len(catalog), dtype=np.int32), np.diff(np.asarray(catalog.human.offsets)))
    human_rows = np.asarray(catalog.human.values)  # human ids in catalog order
    ids = human_rows[has_attrs[human_rows]]
    targets = owner[has_attrs[human_rows]]
    order = _shuffle_order(len(ids))
    save_array(folder, "target", targets[order].astype(np.int32))
    save_array(folder, "human_id", ids[order].astype(np.int32))
    save_array(folder, "cap_slot", order.astype(np.int32))
    weight = np.ones(len(ids), dtype=np.float64)
    save_array(folder, "weight", weight)
    save_array(folder, "cum_weight", np.cumsum(weight))
    writer = StringColumnWriter(folder, "base_text")
    for h in ids[order].tolist():
        writer.append(catalog.human_text[h].strip("."))
    writer.close()
    return {"goals": len(ids), "caps": len(ids)}


def _build_prices(catalog: Catalog, structure: Path, kind: str, seed: int, folder: Path) -> None:
    """Write a seed's product prices and each goal's price cap into ``folder``."""
    rng = random.Random(seed)
    prices = product_prices(catalog, rng)
    meta = json.loads((structure / "meta.json").read_text())
    if kind == "synthetic":
        slots = np.flatnonzero(np.asarray(catalog.has_instruction)).tolist()
    else:
        has_attrs = np.diff(np.asarray(catalog.human_attributes.offsets)) > 0
        owner = np.repeat(np.arange(len(catalog)), np.diff(np.asarray(catalog.human.offsets)))
        human_rows = np.asarray(catalog.human.values)
        slots = owner[has_attrs[human_rows]].tolist()
    assert len(slots) == meta["caps"]
    caps = np.array([_price_cap(prices[row], rng) for row in slots], dtype=np.float64)
    cap_slot = load_array(structure, "cap_slot")
    save_array(folder, "prices", prices)
    save_array(folder, "price_upper", caps[np.asarray(cap_slot)] if len(cap_slot) else np.zeros(0))
    (folder / "meta.json").write_text(json.dumps({"seed": seed, "kind": kind}))


def _bar(total: int, desc: str, progress: bool):
    if not progress or total < 20_000:
        return None
    from tqdm import tqdm

    from webshop_gym.utils import progress as _progress

    return tqdm(disable=_progress.disable(), total=total, desc=desc, unit="target", leave=False, dynamic_ncols=True)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    return int(seed)


def build_goals(catalog: Catalog, human_goals: bool = False, seed: int = 0, progress: bool = False,
                report: dict | None = None) -> GoalSet:
    """Build the shop's goals as the reference does (SPEC section 2), then shuffle them.

    The result is cached in the catalog's folder (see the module's docstring): a later call,
    in any process, maps it instead of building it.

    Args:
        catalog: the compiled catalog.
        human_goals: human instructions (the original benchmark) instead of synthetic goals
            (the 1k-shop setting of the RL papers).
        seed: seeds prices and price caps; ``0`` reproduces the reference's seed-0 run.
        progress: show a progress bar while building a large goal set.
        report: a dict that receives ``{"goals": {...}, "prices": {...}}`` (cached?, seconds).
    """
    seed = _check_seed(seed)
    kind = "human" if human_goals else "synthetic"
    structure = catalog.folder / f"goals-{kind}-v{CACHE_VERSION}"
    started = time.perf_counter()
    cached = is_built(structure)
    if not cached:
        def build(tmp: Path) -> None:
            begun = time.perf_counter()
            counts = (_build_human if human_goals else _build_synthetic)(catalog, tmp, progress)
            (tmp / "meta.json").write_text(json.dumps({"kind": kind, "catalog": catalog.key, **counts,
                                                       "seconds": round(time.perf_counter() - begun, 3)}))

        build_atomically(structure, build, what=f"the {kind} goals of the catalog")
        log.info("built %s goals of %s in %.1f s", kind, catalog.folder.name, time.perf_counter() - started)
    if report is not None:
        report["goals"] = {"cached": cached, "seconds": round(time.perf_counter() - started, 3)}

    started = time.perf_counter()
    seed_folder = structure / f"seed-{seed}"
    cached = is_built(seed_folder)
    if not cached:
        build_atomically(seed_folder, lambda tmp: _build_prices(catalog, structure, kind, seed, tmp),
                         what=f"the prices of seed {seed}")
    if report is not None:
        report["prices"] = {"cached": cached, "seconds": round(time.perf_counter() - started, 3)}
    return _open_built(catalog, structure, seed_folder, kind, seed)


def _open_built(catalog: Catalog, structure: Path, seed_folder: Path, kind: str, seed: int) -> GoalSet:
    target = load_array(structure, "target")
    upper = load_array(seed_folder, "price_upper")
    if kind == "synthetic":
        values = Ragged.load(structure, "option_values")
        attributes = IdRows(catalog.instruction_attributes, catalog.attribute_names, target)
        options = Options(values, catalog.value_text, names=_NameIds(values, catalog),
                          option_names=catalog.option_names, is_dict=True)
    else:
        human_id = load_array(structure, "human_id")
        attributes = IdRows(catalog.human_attributes, catalog.attribute_names, human_id)
        options = Options(catalog.human_options, catalog.human_option_text, index=human_id)
    goals = GoalSet(
        kind=kind,
        seed=seed,
        asin=Lookup(target, catalog.asin),
        target=target,
        instruction=Instructions(StringColumn.load(structure, "base_text"), upper),
        attributes=attributes,
        options=options,
        price_upper=upper,
        weight=load_array(structure, "weight"),
        category=Lookup(target, Lookup(np.asarray(catalog.category), catalog.category_names)),
        query=Lookup(target, Lookup(np.asarray(catalog.query), catalog.query_names)),
        name=Lookup(target, catalog.title),
        product_category=Lookup(target, Lookup(np.asarray(catalog.product_category), catalog.product_category_names)),
        prices=load_array(seed_folder, "prices"),
        folder=structure,
        seed_folder=seed_folder,
    )
    goals._cache["cum"] = load_array(structure, "cum_weight")
    return goals


class _NameIds:
    """Option-name ids of the values in a Ragged of catalog value ids (computed on access)."""

    __slots__ = ("values", "value_group", "group_name_id")

    def __init__(self, values: Ragged, catalog: Catalog):
        self.values = np.asarray(values.values)
        self.value_group = np.asarray(catalog.value_group)
        self.group_name_id = np.asarray(catalog.group_name_id)

    def __getitem__(self, index: slice) -> np.ndarray:
        return self.group_name_id[self.value_group[self.values[index]]]

    def __len__(self) -> int:
        return len(self.values)
