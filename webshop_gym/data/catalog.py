"""The product catalog: the reference's JSON files compiled once into read-only columns.

Loading follows SPEC section 1 rule for rule (skipped asins, first record of a duplicated asin,
``num_products``, pricing, options, attributes).  The result is cached on disk under
:func:`webshop_gym.utils.paths.cache_dir`, keyed by a hash of the input files and of this module's
compiler version, and memory-mapped read-only, so that many processes share its pages.

Stages share one cache folder: the *base* (every column the simulator and the search index
need, compiled by :mod:`webshop_gym.data.compiler` while streaming the JSON files) and the *nouns*
(spaCy title nouns for the reward, :class:`~webshop_gym.data.title_nouns.TitleNouns`), which is compiled
the first time a reward needs it (``load_shop`` does so eagerly).  Each stage is written to a
temporary folder and renamed into place, under a file lock, so an interrupted compile never
leaves half a cache; a complete cache loads from a read-only folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from webshop_gym.data.columns import Ragged, StringColumn, load_array
from webshop_gym.data.compiler import ARRAY_FIELDS, RAGGED_FIELDS, STRING_FIELDS, compile_base
from webshop_gym.data.fuzz import FuzzTable
from webshop_gym.data.records import (
    ShopFiles,
    content_sha256,
    file_sha256,
    find_shop_files,
)
from webshop_gym.utils.paths import build_atomically, cache_dir, is_built

__all__ = ["Catalog", "load_catalog"]

log = logging.getLogger("webshop_gym")

COMPILER_VERSION = "2"
"""Bump when the compiled layout or any loading rule changes: old caches are then ignored."""
NOUNS_FOLDER = "nouns-v3"  # bump when the tagging or the nouns layout changes
NOUNS_COMPLETE_FOLDER = NOUNS_FOLDER + "-all"
TAG_ALL_UP_TO = 50_000
"""Shops with at most this many products tag every title when compiled; larger shops tag each
title on first use, a goal's at its first purchase as a purchased product's (``webshop-gym data
compile`` tags all).  Tagging the 1M shop's 555,814 goal titles up front took 395 s of two cores."""

# --------------------------------------------------------------------------------------------
# The compiled catalog


@dataclass(frozen=True, eq=False)
class Catalog:
    """Read-only columns of a compiled catalog; product id = row.

    Text columns are :class:`~webshop_gym.data.columns.StringColumn`; list-valued fields are
    :class:`~webshop_gym.data.columns.Ragged` rows over id arrays or other columns.
    """

    folder: Path
    meta: dict
    asin: StringColumn
    asin_sorted: np.ndarray  # 'S' array of asins, sorted
    asin_order: np.ndarray  # row of each entry of asin_sorted
    title: StringColumn
    description: StringColumn
    bullets: Ragged  # row -> ids into bullet_text
    bullet_text: StringColumn
    price_tag: StringColumn
    pricing: np.ndarray  # float64 (n, 2); second column NaN for single prices
    main_image: StringColumn
    rating: StringColumn
    reviews: Ragged  # row -> review ids
    review_title: StringColumn
    review_score: StringColumn
    review_body: StringColumn
    category: np.ndarray  # int32 ids into category_names
    category_names: StringColumn
    query: np.ndarray  # int32 ids into query_names (lower-cased, stripped)
    query_names: StringColumn
    product_category: np.ndarray  # int32 ids into product_category_names
    product_category_names: StringColumn
    option_groups: Ragged  # row -> group ids
    group_name: StringColumn  # per group
    group_values: Ragged  # group -> value ids
    value_text: StringColumn  # per value (normalised as the loader does)
    value_fz: np.ndarray  # per value: id in fuzz (normalize_color applied)
    value_group: np.ndarray  # per value: its group
    value_name_id: np.ndarray  # per value: id into value_names (distinct value texts)
    value_names: StringColumn
    group_name_id: np.ndarray  # per group: id into option_names (distinct option names)
    option_names: StringColumn
    attributes: Ragged  # row -> ids into attribute_names
    attribute_names: StringColumn
    attribute_fz: np.ndarray  # per attribute name: id in fuzz
    instruction: StringColumn  # synthetic instruction ("" when none)
    has_instruction: np.ndarray  # bool
    instruction_attributes: Ragged  # row -> ids into attribute_names
    human: Ragged  # row -> human instruction ids
    human_text: StringColumn
    human_attributes: Ragged  # human id -> attribute ids
    human_options: Ragged  # human id -> ids into human_option_text
    human_option_text: StringColumn
    title_lower: StringColumn
    bullets_lower: StringColumn  # bullets joined by a space, lower-cased
    description_lower: StringColumn
    category_parts: Ragged  # product category -> sorted unique ids into part_names
    part_names: StringColumn
    product_attribute_fz: np.ndarray  # per entry of attributes.values: its fuzz id
    fuzz: FuzzTable
    _nouns: dict = field(default_factory=dict, repr=False)

    # -- sizes and lookups ------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.asin)

    @property
    def key(self) -> str:
        """The cache key (hash of inputs and compiler version)."""
        return self.meta["key"]

    def content_digests(self) -> dict[str, str]:
        """SHA-256 (16 hex) of each input file's canonical content (:func:`~webshop_gym.data.records.content_sha256`).

        Two copies of the same data written differently (indentation, key order no page shows, escapes) give
        the same digests; a file no longer at its recorded path, or changed since the catalog
        was compiled, is left out.  Computed once per catalog object.
        """
        found = self._nouns.get("content_digests")
        if found is None:
            found = {}
            for name, source in sorted((self.meta.get("source") or {}).items()):
                path = Path(source)
                recorded = (self.meta.get("files") or {}).get(name)
                if not path.is_file() or (recorded is not None and file_sha256(path) != recorded):
                    continue
                found[name] = content_sha256(path, recorded)[:16]
            self._nouns["content_digests"] = found
        return dict(found)

    def row_of(self, asin: str) -> int:
        """Return the row of ``asin``, or -1 when it is not in the catalog."""
        needle = np.bytes_(asin.encode("utf-8", "surrogatepass"))
        i = int(np.searchsorted(self.asin_sorted, needle))
        if i < len(self.asin_sorted) and self.asin_sorted[i] == needle:
            return int(self.asin_order[i])
        return -1

    def rows_of(self, asins: Sequence[str]) -> np.ndarray:
        """Vectorised :meth:`row_of` (``-1`` for unknown asins)."""
        needles = np.array([a.encode("utf-8", "surrogatepass") for a in asins], dtype=self.asin_sorted.dtype)
        idx = np.searchsorted(self.asin_sorted, needles)
        idx = np.minimum(idx, len(self.asin_sorted) - 1)
        found = self.asin_sorted[idx] == needles
        return np.where(found, self.asin_order[idx], -1).astype(np.int64)

    def options_of(self, row: int) -> dict[str, list[str]]:
        """Return the options of a product as the reference's ``options`` dict."""
        out = {}
        for g in self.option_groups[row]:
            out[self.group_name[g]] = [self.value_text[v] for v in self.group_values[g]]
        return out

    def product_record(self, row: int) -> dict:
        """Return one product as the reference's processed product dict (for tests and tools)."""
        bullets = [self.bullet_text[b] for b in self.bullets[row]]
        lo, hi = self.pricing[row]
        return {
            "asin": self.asin[row],
            "Title": self.title[row],
            "name": self.title[row],
            "Description": self.description[row],
            "BulletPoints": bullets,
            "Price": self.price_tag[row],
            "pricing": [float(lo)] if np.isnan(hi) else [float(lo), float(hi)],
            "options": self.options_of(row),
            "Attributes": [self.attribute_names[a] for a in self.attributes[row]],
            "category": self.category_names[self.category[row]],
            "query": self.query_names[self.query[row]],
            "product_category": self.product_category_names[self.product_category[row]],
            "MainImage": self.main_image[row],
            "Rating": self.rating[row],
            "Reviews": [
                {"title": self.review_title[r], "score": self.review_score[r], "body": self.review_body[r]}
                for r in self.reviews[row]
            ],
        }

    # -- nouns (second compile stage) -------------------------------------------------------

    @property
    def title_noun_store(self):
        """The :class:`~webshop_gym.data.title_nouns.TitleNouns` of this catalog (compiled on first use)."""
        return self._ensure_nouns()

    @property
    def nouns(self) -> Ragged:
        """Per product: sorted unique ids into :attr:`noun_names` of its title's nouns.

        Rows of titles not tagged yet are empty: use :meth:`product_nouns` or :meth:`title_nouns`,
        which tag on demand.
        """
        return self._ensure_nouns().nouns

    @property
    def noun_seq(self) -> Ragged:
        """Per product: ids of its title's nouns in order, duplicates kept (see :attr:`nouns`)."""
        return self._ensure_nouns().noun_seq

    @property
    def noun_count(self) -> np.ndarray:
        """Per product: number of noun tokens in the title, duplicates included (see :attr:`nouns`)."""
        return self._ensure_nouns().noun_count

    @property
    def noun_names(self) -> StringColumn:
        """The vocabulary of noun ids: every lower-cased token of every title, sorted."""
        return self._ensure_nouns().vocab

    def title_nouns(self, row: int) -> list[str]:
        """Return the lower-cased nouns of a product's title in order (duplicates kept)."""
        return self._ensure_nouns().words(int(row))

    def product_nouns(self, rows) -> tuple[np.ndarray, np.ndarray]:
        """Sorted unique noun ids of each of ``rows``, as ``(offsets, values)`` (tags on demand)."""
        return self._ensure_nouns().unique(np.asarray(rows, dtype=np.int64))

    def goal_target_rows(self) -> np.ndarray:
        """Rows that goals point at: products with a synthetic instruction or a human one with attributes."""
        rows = np.asarray(self.has_instruction).copy()
        per_human = np.diff(np.asarray(self.human_attributes.offsets)) > 0
        owner = np.repeat(np.arange(len(self)), np.diff(np.asarray(self.human.offsets)))
        rows[owner[per_human[np.asarray(self.human.values)]]] = True
        return np.flatnonzero(rows)

    def _ensure_nouns(self, progress: bool = False, complete: bool = False, report: dict | None = None):
        store = self._nouns.get("store")
        if store is None or (complete and not store.complete):
            store = _compile_nouns(self, progress=progress, complete=complete, report=report)
            self._nouns["store"] = store
        elif report is not None:
            report["nouns"] = {"cached": True, "complete": store.complete}
        return store

    def ensure_nouns(self, progress: bool = False, complete: bool = False, report: dict | None = None) -> None:
        """Compile (or map) the title nouns now.

        Args:
            progress: show progress bars while tagging.
            complete: tag every title, so that no reward waits for spaCy (large shops otherwise
                tag no title now and each one on first use).
            report: a dict that receives ``{"nouns": {...}}``: whether the stage was cached, seconds.
        """
        self._ensure_nouns(progress=progress, complete=complete, report=report)


# --------------------------------------------------------------------------------------------
# Compiling and opening


def _open(folder: Path, meta: dict) -> Catalog:
    kwargs = {name: StringColumn.load(folder, name) for name in STRING_FIELDS}
    kwargs.update({name: Ragged.load(folder, name) for name in RAGGED_FIELDS})
    kwargs.update({name: load_array(folder, name) for name in ARRAY_FIELDS})
    return Catalog(folder=folder, meta=meta, fuzz=FuzzTable.load(folder, "fuzz"), **kwargs)


def file_hashes(files: ShopFiles) -> dict[str, str]:
    """Return the SHA-256 of each input file, by file name."""
    return {p.name: file_sha256(p) for p in files.paths()}


def catalog_key(files: ShopFiles, num_products: int | None, hashes: dict[str, str] | None = None) -> str:
    """Return the cache key of a shop: hash of the files' contents, options and compiler version."""
    payload = {
        "compiler": COMPILER_VERSION,
        "num_products": num_products,
        "files": hashes if hashes is not None else file_hashes(files),
        "roles": [str(p.name) for p in files.paths()],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def check_num_products(num_products) -> int | None:
    """Validate ``num_products`` (None or a positive integer)."""
    if num_products is None:
        return None
    if isinstance(num_products, bool) or not isinstance(num_products, (int, np.integer)) or num_products < 1:
        raise ValueError(f"num_products must be a positive integer or None, got {num_products!r}")
    return int(num_products)


def load_catalog(
    path: str | os.PathLike,
    num_products: int | None = None,
    progress: bool = True,
    cache: str | os.PathLike | None = None,
    report: dict | None = None,
) -> Catalog:
    """Load a shop directory's catalog, compiling and caching it on first use.

    Args:
        path: a directory in the reference format (see :func:`find_shop_files`).
        num_products: keep only the first N product records of the file (SPEC section 1).
        progress: show progress bars while compiling.
        cache: cache folder (default :func:`webshop_gym.utils.paths.cache_dir`).
        report: a dict that receives ``{"catalog": {"cached": bool, "seconds": float}}``.

    Returns:
        The memory-mapped catalog.

    Raises:
        ShopNotFound: the directory or its product file is missing.
        DataError: a file or record is malformed (the message names file, record and field).
        CacheNotWritable: the catalog must be compiled but the cache folder is read-only.
    """
    started = time.perf_counter()
    num_products = check_num_products(num_products)
    files = find_shop_files(path)
    hashes = file_hashes(files)
    key = catalog_key(files, num_products, hashes)
    root = Path(cache).expanduser() if cache is not None else cache_dir(create=False)
    final = root / "catalogs" / key

    def build(tmp: Path) -> None:
        begun = time.perf_counter()
        compiled = compile_base(files, num_products, tmp, progress=progress)
        meta = {
            "key": key,
            "compiler": COMPILER_VERSION,
            "source": {p.name: str(p.resolve()) for p in files.paths()},
            "files": hashes,
            "num_products": num_products,
            "counts": compiled["counts"],
            "compile_seconds": round(time.perf_counter() - begun, 3),
            "stage_seconds": compiled["seconds"],
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))

    cached = is_built(final)
    if not cached:
        build_atomically(final, build, what=f"the compiled catalog of {files.products.parent}")
    meta = json.loads((final / "meta.json").read_text())
    catalog = _open(final, meta)
    if report is not None:
        report["catalog"] = {"cached": cached, "seconds": round(time.perf_counter() - started, 3)}
    return catalog


def _compile_nouns(catalog: Catalog, progress: bool = False, complete: bool = False, report: dict | None = None):
    """Open the catalog's title nouns, compiling the stage first when it is missing."""
    from webshop_gym.data import tagger as nouns_mod
    from webshop_gym.data.title_nouns import TitleNouns

    started = time.perf_counter()
    partial = catalog.folder / NOUNS_FOLDER
    full = catalog.folder / NOUNS_COMPLETE_FOLDER
    extra = catalog.folder / (NOUNS_FOLDER + ".extra")
    cached = True

    def build_partial(tmp: Path) -> None:
        rows = np.arange(len(catalog)) if len(catalog) <= TAG_ALL_UP_TO else np.zeros(0, dtype=np.int64)
        counts = TitleNouns.build(tmp, catalog.title, rows, progress=progress)
        (tmp / "meta.json").write_text(json.dumps({"tagger": nouns_mod.model_id(), **counts,
                                                   "seconds": round(time.perf_counter() - started, 3)}))

    if is_built(full):
        store = TitleNouns(full, catalog.title, None)
    else:
        if not is_built(partial):
            cached = False
            build_atomically(partial, build_partial, what="the title nouns of the catalog")
        store = TitleNouns(partial, catalog.title, extra)
        if complete and not store.complete:
            cached = False

            def build_full(tmp: Path) -> None:
                counts = TitleNouns.build_complete(tmp, store, progress=progress)
                (tmp / "meta.json").write_text(json.dumps({"tagger": nouns_mod.model_id(), **counts,
                                                           "seconds": round(time.perf_counter() - started, 3)}))

            build_atomically(full, build_full, what="the title nouns of the catalog")
            store = TitleNouns(full, catalog.title, None)
    if report is not None:
        report["nouns"] = {"cached": cached, "complete": store.complete,
                           "seconds": round(time.perf_counter() - started, 3)}
    if not cached:
        log.info("tagged title nouns of %s in %.1f s", catalog.folder.name, time.perf_counter() - started)
    return store
