"""Pyserini's BM25 ranking without Java (the default search backend).

:class:`BM25Search` returns exactly what :class:`~webshop_gym.search.lucene.LuceneSearch` returns
(the same top-k catalog rows in the same order), from an inverted index of numpy arrays
(:mod:`webshop_gym.search.postings`) that it builds once per catalog from its own analysis of
each product (:mod:`webshop_gym.search.indexing`: no Lucene index, no JVM):

1. the query is analysed as Anserini analyses it (:mod:`webshop_gym.search.analysis`, exact for
   every string);
2. each distinct term becomes one clause boosted by its count, as Anserini's bag-of-words query;
   more than 1,024 distinct terms is Lucene's clause limit, where Pyserini fails: no results;
3. a Numba kernel scores BM25 as Lucene does and keeps the top k by score, then asin.

Java is needed only for an external Lucene index given as ``index=`` (e.g. the reference's: its
postings are read through the JVM once and cached); the ``pyserini`` backend is the oracle.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import numpy as np

from webshop_gym.data.catalog import Catalog
from webshop_gym.error import SearchEngineError
from webshop_gym.search import scoring
from webshop_gym.search.analysis import analyze
from webshop_gym.search.cache import DEFAULT_CACHE_BYTES, QueryCache
from webshop_gym.search.indexing import build_analysed_postings, postings_folder_name
from webshop_gym.search.lucene import CachedSearch
from webshop_gym.search.postings import (
    POSTINGS_VERSION,
    Postings,
    load_postings,
    postings_from_lucene,
    save_postings,
)
from webshop_gym.search.ranges import MIN_DOCS, RANGES_VERSION, RangePostings, ensure_ranges
from webshop_gym.search.shipped import install_shipped
from webshop_gym.search.stems import StemTable, load_stem_table
from webshop_gym.utils.paths import build_atomically, cache_dir, is_built

__all__ = ["BM25Search", "STEMS_AT_LOAD"]

STEMS_AT_LOAD = 50_000
"""Largest catalog whose missing stem table a load builds (about 5 s at most); a larger one's is built
with its postings, or by ``webshop-gym data index`` (:meth:`BM25Search.prepare` with ``build=True``)."""

EXHAUSTIVE_POSTINGS = 4096
"""A query over the plain postings whose terms have at most this many postings in all adds every
list whole and takes the top k once (no bounding: faster for short lists; the same results)."""

_EMPTY = np.zeros(0, dtype=np.int32)
_EMPTY.flags.writeable = False


class _Scratch(threading.local):
    """Per-thread work arrays of the kernel (two int32 and one float64 per document)."""

    def arrays(self, n: int):
        if getattr(self, "n", -1) != n:
            self.n = n
            self.slot = np.full(n, -1, dtype=np.int32)
            self.touched = np.zeros(n, dtype=np.int32)
            self.vals = np.zeros(n, dtype=np.float64)
        return self.slot, self.touched, self.vals

    def one(self, k: int):
        """The query pointer, output row and count of a single query's kernel call (reused: the caller copies)."""
        if getattr(self, "k", -1) != k:
            self.k = k
            self.q_ptr = np.zeros(2, dtype=np.int64)
            self.out = np.empty((1, k), dtype=np.int32)
            self.counts = np.zeros(1, dtype=np.int64)
        return self.q_ptr, self.out, self.counts


class BM25Search(CachedSearch):
    """Pyserini-exact BM25 search over a catalog, scored by a Numba kernel.

    Args:
        catalog: the compiled catalog.
        index: an existing Lucene index folder (e.g. the reference's); its postings are read
            through the JVM once and cached.  Default: the catalog's own postings, built without
            Java on first use (:mod:`webshop_gym.search.indexing`).
        cache_bytes: byte budget of the query cache (0 disables it).
        progress: show progress bars when the index or the postings have to be built.
        ranges: search document ranges grouped by product type (:mod:`webshop_gym.search.ranges`,
            built once per catalog and cached): ``None`` (default) for shops of at least
            :data:`~webshop_gym.search.ranges.MIN_DOCS` documents, ``True`` always, ``False``
            never.  The results are the same either way; only the speed differs.

    Example:
        >>> from webshop_gym import load_shop
        >>> shop = load_shop()
        >>> rows = shop.search("gluten free snack")
        >>> len(shop.asins(rows)) <= 50
        True
    """

    backend = "bm25"

    def __init__(
        self,
        catalog: Catalog,
        index: str | os.PathLike | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        progress: bool = True,
        ranges: bool | None = None,
    ):
        if ranges not in (None, True, False):
            raise ValueError(f"ranges must be None, True or False, got {ranges!r}")
        self.catalog = catalog
        self.use_ranges = ranges
        self._ranges: RangePostings | None = None
        self._ranges_checked = False
        self._index_arg = Path(index) if index is not None else None
        self.progress = progress
        self.cache = QueryCache(cache_bytes)
        self._postings: Postings | None = None
        self._stems: StemTable | None = None
        self._lock = threading.Lock()
        self._scratch = _Scratch()
        self._kernel = None  # the plain kernel's entry point for the postings' types (resolved at the first search)
        self._all_rows: bool | None = None  # does every document map to a catalog row (no -1 to drop)?

    # -- where things live ------------------------------------------------------------------

    @property
    def postings_path(self) -> Path:
        """The folder of the postings (the catalog's own, built without Java, or an external index's)."""
        if self._index_arg is None:
            return self.catalog.folder / postings_folder_name()
        path = self._index_arg.resolve()
        stamp = sorted((p.name, p.stat().st_size) for p in path.iterdir() if p.is_file()) if path.is_dir() else []
        digest = hashlib.sha256(json.dumps([str(path), self.catalog.key, stamp]).encode()).hexdigest()[:20]
        return cache_dir() / "external-postings" / f"{digest}-v{POSTINGS_VERSION}"

    @property
    def ranges_path(self) -> Path:
        """The folder of the document ranges (:mod:`webshop_gym.search.ranges`), beside the postings."""
        postings = self.postings_path
        return postings.parent / f"ranges-v{RANGES_VERSION}-{postings.name}"

    # -- loading ----------------------------------------------------------------------------

    def postings(self) -> Postings:
        """The memory-mapped postings (built on first use)."""
        if self._postings is None:
            with self._lock:
                if self._postings is None:
                    missing = not is_built(self.postings_path)
                    # the stem table is built with the postings, from the words their build stems
                    # (or, where the postings come ready, from the documents); a cache built before
                    # it existed gets one at load only where that is quick (`webshop-gym data index`
                    # builds any)
                    self._stems = load_stem_table(self.catalog, build=False)
                    words: dict[str, str] = {}
                    self._postings = self._load(words)
                    if self._stems is None and (missing or len(self.catalog) <= STEMS_AT_LOAD):
                        self._stems = load_stem_table(self.catalog, progress=self.progress,
                                                      document_words=words or None)
        return self._postings

    def _load(self, words: dict[str, str]) -> Postings:
        """The postings, built (or read from the external index) first when missing.

        ``words``: filled with the documents' words and their stems when the postings are built here.
        """
        folder = self.postings_path
        if not is_built(folder):
            if self._index_arg is None:
                if not install_shipped(self.catalog, folder):  # the embedded shop's come with the package
                    build_analysed_postings(self.catalog, folder, self._stems, progress=self.progress, words=words)
            else:
                lucene = self._index_arg
                if not any(lucene.glob("segments*")):
                    raise SearchEngineError(f"no Lucene index at {lucene}: pass index= an existing index folder")
                build_atomically(folder, lambda tmp: save_postings(tmp, postings_from_lucene(lucene, self.catalog)))
        postings = load_postings(folder)
        if len(postings.norms) and self._index_arg is None and postings.meta.get("documents") != len(self.catalog):
            raise SearchEngineError(f"the postings at {folder} do not match the catalog: delete the folder to rebuild")
        return postings

    def ranges(self) -> RangePostings | None:
        """The document ranges this engine searches (built on first use), or ``None`` for the plain postings."""
        if not self._ranges_checked:
            postings = self.postings()
            with self._lock:
                if not self._ranges_checked:
                    wanted = self.use_ranges if self.use_ranges is not None else postings.num_docs >= MIN_DOCS
                    if wanted and postings.num_docs:
                        self._ranges = ensure_ranges(self.ranges_path, postings, self.catalog.query, progress=self.progress)
                    self._ranges_checked = True
        return self._ranges

    def prepare(self, build: bool = True) -> None:
        """Load the postings and the kernel now, not at the first search.

        Args:
            build: also build the postings (and the stem table) when they are missing; with
                ``False`` missing postings wait for the first search.
        """
        if build or self._postings is not None or is_built(self.postings_path):
            self.postings()
            self.ranges()
            if build and self._stems is None:
                self._stems = load_stem_table(self.catalog, progress=self.progress)
            self._warm_up()

    def _warm_up(self) -> None:
        """Call each kernel the searches use once, so that no first search resolves one.

        The lone-query path's entry point and the batch kernel (or the ranges' kernel) are
        resolved here, on a query of the index's first term, and the term dictionary is built.
        Results are not cached.
        """
        postings = self.postings()
        postings.term_ids  # noqa: B018  (built on first use)
        if not postings.num_docs or not len(postings.terms):
            return
        clause = (np.zeros(1, dtype=np.int32), np.ones(1, dtype=np.float32))  # term 0, boost 1
        ranges = self.ranges()
        if ranges is None:
            self._rank_one(postings, *clause, 1)
        self._rank_many(postings, ranges, [clause, clause], 1)

    # -- searching --------------------------------------------------------------------------

    def query_terms(self, query: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The clauses of a normalised query: term ids and boosts (``None``: Lucene would fail).

        Terms the index does not hold are left out (they match nothing) but count towards
        Lucene's clause limit.
        """
        terms = analyze(query, self._stems, most_distinct=scoring.MAX_CLAUSES)
        counts: dict[str, int] = {}  # first-seen order, as the clauses are built
        for t in terms:
            counts[t] = counts.get(t, 0) + 1
        if len(counts) > scoring.MAX_CLAUSES:
            return None
        get = self.postings().term_ids.get
        ids = [get(t, -1) for t in counts]
        if -1 in ids:  # terms the index lacks: no clause
            known = [(i, c) for i, c in zip(ids, counts.values()) if i >= 0]
            return np.array([i for i, _ in known], dtype=np.int32), np.array([c for _, c in known], dtype=np.float32)
        return np.array(ids, dtype=np.int32), np.array(list(counts.values()), dtype=np.float32)

    def _search_many(self, queries: list[str], k: int) -> list[np.ndarray]:
        """Rank distinct queries in one kernel call."""
        postings = self.postings()
        ranges = self.ranges()
        if len(queries) == 1 and ranges is None and k > 0 and postings.num_docs:
            return [self._search_one(postings, queries[0], k)]
        return self._rank_many(postings, ranges, [self.query_terms(q) for q in queries], k)

    def _rank_many(self, postings: Postings, ranges: RangePostings | None, clauses: list, k: int) -> list[np.ndarray]:
        """The top ``k`` rows of each query's clauses ``(term ids, boosts)`` (``None``: no result), in one kernel call."""
        from webshop_gym.search._kernels import search_batch_jit

        q_ptr = np.zeros(len(clauses) + 1, dtype=np.int64)
        for i, c in enumerate(clauses):
            q_ptr[i + 1] = q_ptr[i] + (len(c[0]) if c is not None else 0)
        term_ids = np.concatenate([c[0] for c in clauses if c is not None] or [np.zeros(0, np.int32)])
        boosts = np.concatenate([c[1] for c in clauses if c is not None] or [np.zeros(0, np.float32)])
        out = np.empty((len(clauses), max(k, 0)), dtype=np.int32)
        counts = np.zeros(len(clauses), dtype=np.int64)
        if postings.num_docs and k > 0 and ranges is not None:
            ranges.search(postings, q_ptr, term_ids, boosts, k, out, counts)
        elif postings.num_docs and k > 0:
            slot, touched, vals = self._scratch.arrays(postings.num_docs)
            search_batch_jit(q_ptr, term_ids, boosts, postings.term_ptr, postings.docs, postings.tf, postings.idf,
                             postings.max_tf, k, EXHAUSTIVE_POSTINGS, slot, touched, vals, out, counts)
        return [self._rows(postings, out[i, :n]) if n else _EMPTY for i, n in enumerate(counts.tolist())]

    def _rows(self, postings: Postings, docs: np.ndarray) -> np.ndarray:
        """The catalog rows of result documents ``docs``: a new read-only int32 array, best first."""
        rows = postings.doc_rows[docs]  # a new array (fancy indexing copies)
        if self._all_rows is None:
            self._all_rows = bool((np.asarray(postings.doc_rows) >= 0).all())
        if not self._all_rows:
            rows = rows[rows >= 0]  # documents of an external index that the catalog lacks
        if rows.dtype != np.int32:
            rows = rows.astype(np.int32)
        rows.flags.writeable = False
        return rows

    def _search_one(self, postings: Postings, query: str, k: int) -> np.ndarray:
        """One query over the plain postings: what :meth:`_search_many` returns for it, with less Python around the kernel.

        The query pointer, output row and count are per-thread arrays reused from call to call (the
        rows are copied out), and the kernel is called through its entry point for these argument
        types (:func:`webshop_gym.utils.jit.entry_point`), which skips numba's typing of 14 arguments.
        """
        clause = self.query_terms(query)
        if clause is None or not len(clause[0]):
            return _EMPTY
        return self._rank_one(postings, clause[0], clause[1], k)

    def _rank_one(self, postings: Postings, term_ids: np.ndarray, boosts: np.ndarray, k: int) -> np.ndarray:
        """The top ``k`` rows of one query's clauses (at least one term) over the plain postings."""
        slot, touched, vals = self._scratch.arrays(postings.num_docs)
        q_ptr, out, counts = self._scratch.one(k)
        q_ptr[1] = len(term_ids)
        args = (q_ptr, term_ids, boosts, postings.term_ptr, postings.docs, postings.tf, postings.idf, postings.max_tf,
                k, EXHAUSTIVE_POSTINGS, slot, touched, vals, out, counts)
        kernel = self._kernel
        if kernel is None:
            from webshop_gym.search._kernels import search_batch_jit
            from webshop_gym.utils.jit import entry_point

            kernel = self._kernel = entry_point(search_batch_jit, args)
        kernel(*args)
        n = counts.item(0)
        return self._rows(postings, out[0, :n]) if n else _EMPTY

    def close(self) -> None:
        """Nothing to release (the arrays are memory-mapped); kept for the backend interface."""
