"""Frozen goal sets: a goal file (ours, or the reference's ``goals.json`` with ``prices.json``), streamed into the cache.

:func:`load_goal_file` reads the file once and caches it beside the catalog, keyed by the
file's hash; the result is a :class:`~webshop_gym.data.goals.GoalSet` like a built one.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np

from webshop_gym.data.catalog import Catalog
from webshop_gym.data.columns import (
    Interner,
    Lookup,
    Ragged,
    RaggedWriter,
    StringColumn,
    StringColumnWriter,
    load_array,
    save_array,
)
from webshop_gym.data.goals import (
    CACHE_VERSION,
    FORMAT,
    FORMAT_VERSION,
    GoalSet,
    IdRows,
    Instructions,
    Options,
)
from webshop_gym.data.jsonstream import JsonStream
from webshop_gym.data.records import file_sha256
from webshop_gym.error import DataError
from webshop_gym.utils.paths import build_atomically, is_built

__all__ = ["load_goal_file"]

_GOAL_FIELDS = {
    "asin": str, "category": str, "query": str, "name": str, "product_category": str,
    "instruction_text": str, "attributes": list, "price_upper": (int, float), "goal_options": (dict, list),
}  # fmt: skip


def _check_goal(path, index: int, goal) -> dict:
    if not isinstance(goal, dict):
        raise DataError(path, f"expected a goal object, got {type(goal).__name__}", index)
    for key, kind in _GOAL_FIELDS.items():
        if key not in goal:
            raise DataError(path, "required field is missing", index, key)
        if not isinstance(goal[key], kind) or isinstance(goal[key], bool):
            raise DataError(path, f"wrong type {type(goal[key]).__name__}", index, key)
    if not goal["attributes"] or not all(isinstance(a, str) for a in goal["attributes"]):
        raise DataError(path, "expected a non-empty list of strings", index, "attributes")
    if goal["price_upper"] <= 0:
        raise DataError(path, "must be positive", index, "price_upper")
    opts = goal["goal_options"]
    values = opts.values() if isinstance(opts, dict) else opts
    if not all(isinstance(v, str) for v in values) or (isinstance(opts, dict) and not all(isinstance(k, str) for k in opts)):
        raise DataError(path, "option names and values must be strings", index, "goal_options")
    weight = goal.get("weight", 1.0)
    if not isinstance(weight, (int, float)) or isinstance(weight, bool) or weight < 0:
        raise DataError(path, "must be a non-negative number", index, "weight")
    return {**goal, "weight": float(weight)}


def _prices_from_mapping(path, mapping, catalog: Catalog) -> np.ndarray:
    if not isinstance(mapping, dict):
        raise DataError(path, "expected an object asin -> price", None, "prices")
    prices = np.empty(len(catalog), dtype=np.float64)
    for row, asin in enumerate(catalog.asin):
        value = mapping.get(asin)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise DataError(path, f"no numeric price for product {asin!r} of the catalog", asin, "prices")
        prices[row] = float(value)
    return prices


class _RecordWriter:
    """Collects checked goal records column by column into a cache folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.text = StringColumnWriter(folder, "instruction")
        self.strings = {k: Interner() for k in ("asin", "category", "query", "name", "product_category")}
        self.ids = {k: [] for k in self.strings}
        self.attr_names, self.attributes = Interner(), RaggedWriter()
        self.option_names, self.value_names = Interner(), Interner()
        self.option_rows, self.option_name_ids = RaggedWriter(), []
        self.is_dict: list[bool] = []
        self.upper: list[float] = []
        self.weight: list[float] = []

    def add(self, goal: dict) -> None:
        for key, interner in self.strings.items():
            self.ids[key].append(interner.add(goal[key]))
        self.text.append(goal["instruction_text"])
        self.attributes.append([self.attr_names.add(a) for a in goal["attributes"]])
        opts = goal["goal_options"]
        if isinstance(opts, dict):
            self.option_rows.append([self.value_names.add(v) for v in opts.values()])
            self.option_name_ids.extend(self.option_names.add(k) for k in opts)
        else:
            self.option_rows.append([self.value_names.add(v) for v in opts])
            self.option_name_ids.extend([-1] * len(opts))
        self.is_dict.append(isinstance(opts, dict))
        self.upper.append(float(goal["price_upper"]))
        self.weight.append(goal["weight"])

    def finish(self, catalog: Catalog, prices: np.ndarray, meta: dict) -> None:
        f = self.folder
        self.text.close()
        for key, interner in self.strings.items():
            save_array(f, f"{key}_id", np.asarray(self.ids[key], dtype=np.int32))
            interner.column().save(f, f"{key}_names")
        asins = self.strings["asin"].strings
        save_array(f, "target", catalog.rows_of(asins).astype(np.int32)[np.asarray(self.ids["asin"], dtype=np.int64)]
                   if asins else np.zeros(0, np.int32))
        self.attributes.save(f, "attributes")
        self.attr_names.column().save(f, "attribute_names")
        self.option_rows.save(f, "option_values")
        save_array(f, "option_name_ids", np.asarray(self.option_name_ids, dtype=np.int32))
        self.option_names.column().save(f, "option_names")
        self.value_names.column().save(f, "value_names")
        save_array(f, "is_dict", np.asarray(self.is_dict, dtype=bool))
        save_array(f, "price_upper", np.asarray(self.upper, dtype=np.float64))
        weight = np.asarray(self.weight, dtype=np.float64)
        save_array(f, "weight", weight)
        save_array(f, "cum_weight", np.cumsum(weight))
        save_array(f, "prices", prices)
        dicts = set(self.is_dict)
        kind = "synthetic" if dicts == {True} else "human" if dicts == {False} else "mixed"
        (f / "meta.json").write_text(json.dumps({**meta, "kind": kind, "goals": len(self.is_dict)}))


def _check_head(path: Path, head: dict, final: bool) -> None:
    """Check the ``format`` and ``version`` keys of our goal-set file (``final``: they must be there)."""
    if ("format" in head or final) and head.get("format") != FORMAT:
        raise DataError(path, f"not a goal set: expected a list of goals or an object with format {FORMAT!r}")
    if ("version" in head or final) and head.get("version") != FORMAT_VERSION:
        raise DataError(path, f"unsupported goal-set version {head.get('version')!r}; expected {FORMAT_VERSION}")


def _read_goal_file(path: Path, catalog: Catalog, folder: Path) -> None:
    """Stream a frozen goal file into a cache folder (see :func:`load_goal_file`)."""
    writer = _RecordWriter(folder)
    try:
        _stream_goal_file(path, catalog, writer)
    except BaseException:
        writer.text.abort()
        raise


def _stream_goal_file(path: Path, catalog: Catalog, writer: _RecordWriter) -> None:

    with JsonStream(path) as stream:
        first = stream._peek()
        if first == "[":
            prices_path = path.with_name("prices.json")
            for i, goal in stream.items("a list of goals"):
                if i == 0 and not prices_path.is_file():  # (after reading one goal: is this a goal list?)
                    raise DataError(path, f"a reference goal list needs prices.json beside it ({prices_path} is missing)")
                writer.add(_check_goal(path, i, goal))
            stream.end()
            if not prices_path.is_file():
                raise DataError(path, f"a reference goal list needs prices.json beside it ({prices_path} is missing)")
            with JsonStream(prices_path) as prices_stream:
                mapping = dict(prices_stream.members("an object asin -> price"))
                prices_stream.end()
            prices = _prices_from_mapping(prices_path, mapping, catalog)
            seed = None
        elif first == "{":
            head: dict = {}
            mapping = None
            seen_goals = False
            for key in stream.keys("a goal set"):
                if key == "goals" and stream._peek() == "[":
                    _check_head(path, head, final=False)
                    for i, goal in stream.items("a list of goals"):
                        writer.add(_check_goal(path, i, goal))
                    seen_goals = True
                elif key == "prices":
                    mapping = stream.value()
                else:
                    head[key] = stream.value()
            stream.end()
            _check_head(path, head, final=True)
            if not seen_goals:
                raise DataError(path, "expected a list", None, "goals")
            prices = _prices_from_mapping(path, mapping, catalog)
            seed = head.get("seed")
        else:
            raise DataError(path, f"not a goal set: expected a list of goals or an object with format {FORMAT!r}")
    writer.finish(catalog, prices, {"source": str(path), "seed": seed})


def load_goal_file(path: str | os.PathLike, catalog: Catalog, report: dict | None = None) -> GoalSet:
    """Load a frozen goal set: ours, or the reference's ``goals.json`` with ``prices.json``.

    The file is read once (streamed, so a goal set of millions of goals stays within memory)
    and cached in the catalog's folder under a hash of its contents (and of ``prices.json``).

    Args:
        path: a file written by :meth:`GoalSet.save`, or a reference ``goals.json`` (a list of
            goal records) whose product prices are read from ``prices.json`` in the same folder.
        catalog: the catalog the goals refer to (prices must cover all its products).
        report: a dict that receives ``{"goals": {"cached": bool, "seconds": float}}``.

    Raises:
        DataError: the file or a goal record is malformed, or a product price is missing.
    """
    started = time.perf_counter()
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"goal file {str(path)!r} does not exist")
    key = hashlib.sha256(file_sha256(path).encode())
    prices_path = path.with_name("prices.json")
    if prices_path.is_file():
        key.update(file_sha256(prices_path).encode())
    folder = catalog.folder / f"goalfile-v{CACHE_VERSION}-{key.hexdigest()[:24]}"
    cached = is_built(folder)
    if not cached:
        build_atomically(folder, lambda tmp: _read_goal_file(path, catalog, tmp), what=f"the goal set {path.name}")
    if report is not None:
        report["goals"] = {"cached": cached, "seconds": round(time.perf_counter() - started, 3)}
    return _open_file(folder, str(path))


def _open_file(folder: Path, source: str) -> GoalSet:
    meta = json.loads((folder / "meta.json").read_text())

    def lookup(key: str) -> Lookup:
        return Lookup(load_array(folder, f"{key}_id"), StringColumn.load(folder, f"{key}_names"))

    values = Ragged.load(folder, "option_values")
    upper = load_array(folder, "price_upper")
    goals = GoalSet(
        kind=meta["kind"],
        seed=meta["seed"],
        asin=lookup("asin"),
        target=load_array(folder, "target"),
        instruction=Instructions(StringColumn.load(folder, "instruction"), None),
        attributes=IdRows(Ragged.load(folder, "attributes"), StringColumn.load(folder, "attribute_names")),
        options=Options(values, StringColumn.load(folder, "value_names"), names=load_array(folder, "option_name_ids"),
                        option_names=StringColumn.load(folder, "option_names"), is_dict=load_array(folder, "is_dict")),
        price_upper=upper,
        weight=load_array(folder, "weight"),
        category=lookup("category"),
        query=lookup("query"),
        name=lookup("name"),
        product_category=lookup("product_category"),
        prices=load_array(folder, "prices"),
        source=source,
        folder=folder,
        seed_folder=folder,
    )
    goals._cache["cum"] = load_array(folder, "cum_weight")
    return goals
