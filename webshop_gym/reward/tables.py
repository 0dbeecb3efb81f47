"""Arrays the reward kernel reads, prepared once per (catalog, goal set) and cached.

Product-side arrays come straight from the compiled catalog (memory-mapped).  Goal-side arrays
are built once per goal set, with numpy over the goal set's columns: each goal's query, category
parts become ids in the catalog's vocabularies, its title nouns are those of its product's title
(``noun_row``: read from the catalog's title nouns at each purchase, so a large shop tags a goal's
title at its first purchase, not at compile time) or, for a goal whose title differs from its
product's, ids tagged with spaCy here (never at step time), its attributes become raw UTF-8
bytes (substring tests) and fuzz ids, and its options become fuzz ids with the reference's quirk
for synthetic goals (``normalize_color`` and ``str`` of the ``(name, value)`` pair).  Strings are
processed once per *distinct* value, never once per goal.

A goal set cached on disk (:func:`~webshop_gym.data.goals.build_goals`, frozen goal files) gets its
tables cached beside it (``reward-v<N>/``), so a later process maps them.  They do not depend
on the price seed: the caps (``upper``) are read from the goal set.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from webshop_gym.data.catalog import Catalog
from webshop_gym.data.colors import normalize_color
from webshop_gym.data.columns import (
    Ragged,
    StringColumn,
    gather_rows,
    gather_strings,
    load_array,
    save_array,
)
from webshop_gym.data.fuzz import FuzzTable, FuzzTableBuilder
from webshop_gym.data.goals import GoalSet, IdRows, Options, flat_ids
from webshop_gym.data.records import CATEGORY_SEPARATOR
from webshop_gym.utils.paths import build_atomically, is_built

TABLES_FOLDER = "reward-v2"
"""Bump when the goal tables' layout or rules change."""

def max_joined_length(fuzz: FuzzTable) -> int:
    """Longest processed string of the table (its tokens joined by spaces), at least 1."""
    tok_len = np.diff(np.asarray(fuzz.tokens.offsets))
    off = np.asarray(fuzz.strings.offsets)
    vals = np.asarray(fuzz.strings.values)
    cumulative = np.concatenate([[0], np.cumsum(tok_len[vals] + 1)]) if len(vals) else np.zeros(1, np.int64)
    sums = cumulative[off[1:]] - cumulative[off[:-1]]
    return int(max(1, sums.max(initial=0)))


@dataclass(frozen=True, eq=False)
class GoalTables:
    """Goal-side arrays (see :func:`build_goal_tables`)."""

    query: np.ndarray
    parts: Ragged
    noun_row: np.ndarray
    nouns: Ragged
    noun_count: np.ndarray
    attr_offsets: np.ndarray
    attr_fz: np.ndarray
    attr_text: StringColumn
    opt_offsets: np.ndarray
    opt_fz: np.ndarray
    upper: np.ndarray
    fuzz: FuzzTable
    max_joined: int


# --------------------------------------------------------------------------------------------
# Pieces


def _map_names(ids: np.ndarray, names, vocabulary: StringColumn, catalog_ids: np.ndarray | None = None) -> np.ndarray:
    """Ids into ``vocabulary`` (-1 when absent) of ``names[ids]``, one lookup per distinct name."""
    if names is vocabulary:
        return np.asarray(ids, dtype=np.int32)
    lookup = {s: i for i, s in enumerate(vocabulary)}
    distinct = np.unique(ids)
    mapped = np.full(int(distinct.max(initial=-1)) + 1, -1, dtype=np.int32)
    for i in distinct.tolist():
        mapped[i] = lookup.get(names[i], -1)
    return mapped[ids]


def _goal_nouns(catalog: Catalog, goals: GoalSet, progress: bool) -> tuple[np.ndarray, Ragged, np.ndarray]:
    """Per goal: the catalog row whose title nouns are its own, and the nouns of the others.

    ``(noun_row, nouns, noun_count)``: the row (-1: none), and for goals without one the sorted
    unique noun ids of its title and its number of noun tokens (empty and 0 where a row is given).

    A goal named like its product's title reads that title's nouns from the catalog at each
    purchase (tagged then if the catalog has not tagged it yet): nothing is tagged here for it.
    """
    target = np.asarray(goals.target, dtype=np.int64)
    ids, names = flat_ids(goals.name)
    if names is catalog.title and np.array_equal(ids, target):
        own = np.ones(len(goals), dtype=bool)
    else:
        titles = catalog.title
        own = np.array([t >= 0 and names[n] == titles[t] for t, n in zip(target.tolist(), ids.tolist())], dtype=bool)
    noun_row = np.where(own, target, -1).astype(np.int64)
    count = np.zeros(len(goals), dtype=np.int32)
    if own.all():
        return noun_row, Ragged(np.zeros(len(goals) + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)), count
    from webshop_gym.data.tagger_pool import tag_nouns

    store = catalog.title_noun_store
    other = np.flatnonzero(~own)
    distinct = sorted(set(ids[other].tolist()))
    tagged = dict(zip(distinct, tag_nouns([names[n] for n in distinct], progress=progress)))
    extra = {n: sorted(set(store.ids(words))) for n, words in tagged.items()}
    lengths = np.zeros(len(goals), dtype=np.int64)
    for g in other.tolist():
        lengths[g] = len(extra[int(ids[g])])
        count[g] = len(tagged[int(ids[g])])
    out_offsets = np.zeros(len(goals) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.int32)
    for g in other.tolist():
        out[out_offsets[g] : out_offsets[g + 1]] = extra[int(ids[g])]
    return noun_row, Ragged(out_offsets, out), count


def _option_keys(catalog: Catalog, options: Options) -> tuple[np.ndarray, np.ndarray, np.ndarray, list, list]:
    """Per goal option: ``(offsets, name ids or -1, value ids, name strings, value strings)``.

    Value ids index distinct value strings, so that equal options share one fuzz entry.
    """
    if options.index is not None and options.names is not None:
        raise ValueError("indexed options with names are not supported")
    offsets, values = gather_rows(options.values, options.index)
    if options.names is None:
        names = np.full(len(values), -1, dtype=np.int64)
    elif isinstance(options.names, np.ndarray):
        names = np.asarray(options.names, dtype=np.int64)
    else:
        names = np.asarray(options.names[:], dtype=np.int64)
    value_names = options.value_names
    if value_names is catalog.value_text:  # per-value texts: use their distinct ids
        values = np.asarray(catalog.value_name_id)[values]
        value_names = catalog.value_names
    if not isinstance(options.is_dict, bool):
        per_entry = np.repeat(np.asarray(options.is_dict), np.diff(offsets))
        names = np.where(per_entry, names, -1)
    elif not options.is_dict:
        names = np.full(len(values), -1, dtype=np.int64)
    return offsets, names, np.asarray(values, dtype=np.int64), options.option_names, value_names


# --------------------------------------------------------------------------------------------
# Building, saving, loading


def build_goal_tables(catalog: Catalog, goals: GoalSet, folder: Path | None = None,
                      progress: bool = False) -> GoalTables:
    """Prepare the goal-side arrays of ``goals`` against ``catalog`` (written into ``folder`` if given)."""
    # query and category parts
    ids, names = flat_ids(goals.query)
    query = _map_names(ids, names, catalog.query_names)
    ids, names = flat_ids(goals.product_category)
    if names is catalog.product_category_names:
        offsets, values = gather_rows(catalog.category_parts, ids)
    else:
        part_ids = {s: i for i, s in enumerate(catalog.part_names)}
        distinct = np.unique(ids)
        table = Ragged.build([
            sorted({part_ids[w] for w in (x.strip() for x in names[n].split(CATEGORY_SEPARATOR)) if w in part_ids})
            for n in distinct.tolist()
        ])
        offsets, values = gather_rows(table, np.searchsorted(distinct, ids))
    parts = Ragged(offsets, values.astype(np.int32))
    noun_row, nouns, noun_count = _goal_nouns(catalog, goals, progress)

    builder = FuzzTableBuilder(base=catalog.fuzz)
    # attributes
    attributes = goals.attributes
    if not isinstance(attributes, IdRows):
        raise TypeError("goal attributes must be an IdRows column")
    attr_offsets, attr_ids = attributes.flat()
    attr_ids = np.asarray(attr_ids, dtype=np.int64)
    if attributes.names is catalog.attribute_names:
        attr_fz = np.asarray(catalog.attribute_fz)[attr_ids]
        attr_names = catalog.attribute_names
    else:
        attr_names = attributes.names
        distinct = np.unique(attr_ids)
        fz = np.zeros(int(distinct.max(initial=-1)) + 1, dtype=np.int32)
        for a in distinct.tolist():
            fz[a] = builder.add(attr_names[a])
        attr_fz = fz[attr_ids]
    if not isinstance(attr_names, StringColumn):
        attr_names = StringColumn.build(attr_names)
    attr_text = gather_strings(attr_names, attr_ids, folder, "attr_text")

    # options
    opt_offsets, name_ids, value_ids, option_names, value_names = _option_keys(catalog, goals.options)
    width = len(value_names) + 1
    codes = (name_ids + 1) * width + value_ids
    distinct, inverse = np.unique(codes, return_inverse=True)
    fz = np.empty(len(distinct), dtype=np.int32)
    for k, code in enumerate(distinct.tolist()):
        name, value = divmod(code, width)
        key = value_names[value] if name == 0 else (option_names[name - 1], value_names[value])
        fz[k] = builder.add(normalize_color(key))
    opt_fz = fz[inverse.reshape(-1)] if len(codes) else np.zeros(0, np.int32)
    fuzz = builder.build()
    return GoalTables(
        query=np.asarray(query, dtype=np.int32),
        parts=parts,
        noun_row=noun_row,
        nouns=nouns,
        noun_count=np.asarray(noun_count, dtype=np.int32),
        attr_offsets=np.asarray(attr_offsets, dtype=np.int64),
        attr_fz=np.asarray(attr_fz, dtype=np.int32),
        attr_text=attr_text,
        opt_offsets=np.asarray(opt_offsets, dtype=np.int64),
        opt_fz=np.asarray(opt_fz, dtype=np.int32),
        upper=np.asarray(goals.price_upper, dtype=np.float64),
        fuzz=fuzz,
        max_joined=max_joined_length(fuzz),
    )


def _save(tables: GoalTables, folder: Path, seconds: float) -> None:
    save_array(folder, "query", tables.query)
    tables.parts.save(folder, "parts")
    save_array(folder, "noun_row", tables.noun_row)
    tables.nouns.save(folder, "nouns")
    save_array(folder, "noun_count", tables.noun_count)
    save_array(folder, "attr_offsets", tables.attr_offsets)
    save_array(folder, "attr_fz", tables.attr_fz)
    save_array(folder, "opt_offsets", tables.opt_offsets)
    save_array(folder, "opt_fz", tables.opt_fz)
    tables.fuzz.save(folder, "fuzz")
    (folder / "meta.json").write_text(json.dumps({"max_joined": tables.max_joined, "seconds": round(seconds, 3)}))


def _load(folder: Path, goals: GoalSet) -> GoalTables:
    meta = json.loads((folder / "meta.json").read_text())
    return GoalTables(
        query=load_array(folder, "query"),
        parts=Ragged.load(folder, "parts"),
        noun_row=load_array(folder, "noun_row"),
        nouns=Ragged.load(folder, "nouns"),
        noun_count=load_array(folder, "noun_count"),
        attr_offsets=load_array(folder, "attr_offsets"),
        attr_fz=load_array(folder, "attr_fz"),
        attr_text=StringColumn.load(folder, "attr_text"),
        opt_offsets=load_array(folder, "opt_offsets"),
        opt_fz=load_array(folder, "opt_fz"),
        upper=np.asarray(goals.price_upper, dtype=np.float64),
        fuzz=FuzzTable.load(folder, "fuzz"),
        max_joined=int(meta["max_joined"]),
    )


def goal_tables(catalog: Catalog, goals: GoalSet, progress: bool = False, report: dict | None = None) -> GoalTables:
    """The goal tables of ``goals``: mapped from the cache, or built (and cached when the goal set is)."""
    started = time.perf_counter()
    if goals.folder is None:
        tables = build_goal_tables(catalog, goals, progress=progress)
        cached = False
    else:
        folder = goals.folder / TABLES_FOLDER
        cached = is_built(folder)
        if not cached:
            def build(tmp: Path) -> None:
                begun = time.perf_counter()
                _save(build_goal_tables(catalog, goals, folder=tmp, progress=progress), tmp,
                      time.perf_counter() - begun)

            build_atomically(folder, build, what="the reward tables of the goal set")
        tables = _load(folder, goals)
    if report is not None:
        report["reward_tables"] = {"cached": cached, "seconds": round(time.perf_counter() - started, 3)}
    return tables


@dataclass(frozen=True, eq=False)
class ProductTables:
    """Product-side arrays derived once from the catalog."""

    attr_offsets: np.ndarray
    attr_fz: np.ndarray


def build_product_tables(catalog: Catalog) -> ProductTables:
    """Each product's attribute fuzz ids (compiled with the catalog), with the attribute offsets."""
    return ProductTables(np.asarray(catalog.attributes.offsets), np.asarray(catalog.product_attribute_fz))
