"""Arrays the reward kernel reads, prepared once per (catalog, goal set).

Product-side arrays come straight from the compiled catalog (memory-mapped).  Goal-side arrays
are built when a goal set is first scored: each goal's query, category parts and title nouns
become ids in the catalog's vocabularies (a goal whose title differs from its product's is
tagged with spaCy here, never at step time), its attributes become raw UTF-8 bytes (substring
tests) and fuzz ids, and its options become fuzz ids with the reference's quirk for synthetic
goals (``normalize_color`` and ``str`` of the ``(name, value)`` pair).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from webshop_gym._columns import Ragged, StringColumn
from webshop_gym.catalog import CATEGORY_SEPARATOR, Catalog
from webshop_gym.goals import GoalSet
from webshop_gym.reward.colors import normalize_color
from webshop_gym.reward.strings import FuzzTable, FuzzTableBuilder


def _ids(lookup: dict[str, int], words) -> list[int]:
    return sorted({lookup[w] for w in words if w in lookup})


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


def build_goal_tables(catalog: Catalog, goals: GoalSet) -> GoalTables:
    """Prepare the goal-side arrays of ``goals`` against ``catalog``."""
    query_ids = {s: i for i, s in enumerate(catalog.query_names.tolist())}
    part_ids = {s: i for i, s in enumerate(catalog.part_names.tolist())}
    noun_ids = {s: i for i, s in enumerate(catalog.noun_names.tolist())}

    # Nouns: reuse the target product's when the goal's title is that product's title.
    to_tag: dict[str, list[str]] = {}
    noun_rows: list[list[int] | None] = []
    noun_count = np.zeros(len(goals), dtype=np.int32)
    for i, (row, name) in enumerate(zip(goals.target.tolist(), goals.name)):
        if row >= 0 and catalog.title[row] == name:
            noun_rows.append([int(x) for x in catalog.nouns[row]])
            noun_count[i] = catalog.noun_count[row]
        else:
            to_tag.setdefault(name, [])
            noun_rows.append(None)
    if to_tag:
        from webshop_gym.nouns import tag_nouns

        names = list(to_tag)
        for name, words in zip(names, tag_nouns(names)):
            to_tag[name] = words
        for i, name in enumerate(goals.name):
            if noun_rows[i] is None:
                words = to_tag[name]
                noun_rows[i] = _ids(noun_ids, words)
                noun_count[i] = len(words)

    builder = FuzzTableBuilder(base=catalog.fuzz)
    attr_offsets = [0]
    attr_fz: list[int] = []
    attr_text: list[str] = []
    opt_offsets = [0]
    opt_fz: list[int] = []
    for attrs, options in zip(goals.attributes, goals.options):
        for a in attrs:
            attr_fz.append(builder.add(a))
            attr_text.append(a)
        attr_offsets.append(len(attr_fz))
        items = list(options.items()) if isinstance(options, dict) else list(options)
        for o in items:
            opt_fz.append(builder.add(normalize_color(o)))
        opt_offsets.append(len(opt_fz))
    fuzz = builder.build()
    return GoalTables(
        query=np.array([query_ids.get(q, -1) for q in goals.query], dtype=np.int32),
        parts=Ragged.build([_ids(part_ids, (x.strip() for x in pc.split(CATEGORY_SEPARATOR)))
                            for pc in goals.product_category]),
        nouns=Ragged.build(noun_rows),
        noun_count=noun_count,
        attr_offsets=np.asarray(attr_offsets, dtype=np.int64),
        attr_fz=np.asarray(attr_fz, dtype=np.int32),
        attr_text=StringColumn.build(attr_text),
        opt_offsets=np.asarray(opt_offsets, dtype=np.int64),
        opt_fz=np.asarray(opt_fz, dtype=np.int32),
        upper=np.asarray(goals.price_upper, dtype=np.float64),
        fuzz=fuzz,
        max_joined=max_joined_length(fuzz),
    )


@dataclass(frozen=True, eq=False)
class ProductTables:
    """Product-side arrays derived once from the catalog."""

    attr_offsets: np.ndarray
    attr_fz: np.ndarray


def build_product_tables(catalog: Catalog) -> ProductTables:
    """Map each product's attribute ids to fuzz ids (same offsets)."""
    values = np.asarray(catalog.attribute_fz)[np.asarray(catalog.attributes.values)]
    return ProductTables(np.asarray(catalog.attributes.offsets), values.astype(np.int32))
