"""The Lucene index of a catalog and the ``pyserini`` search backend (SPEC section 3).

Pyserini builds the index (automatically, cached beside the catalog); this backend queries it
through the JVM.

One Lucene document per product, id = asin, text = lower-case of
``Title + " " + Description + " " + BulletPoints[0] + " " + option_text``.  Ranking is
Pyserini's ``LuceneSearcher`` default (English analyzer, BM25 with k1=0.9, b=0.4); Anserini
breaks ties of equal scores by document id (the asin), so ranking does not depend on the order
in which documents were indexed (a test compares our index with the reference's on 1,044
queries: identical top-50 lists).

Results are catalog rows (``numpy.int32``).  A thread-safe LRU cache on the normalised query
(lower case, runs of white space collapsed; neither changes what Lucene sees), bounded in bytes,
answers repeated queries in microseconds: RL agents repeat queries constantly (a GRPO group
searches the same instruction G times).

The default backend, :class:`~webshop_gym.search.bm25.BM25Search`, ranks identically without
Java at query time; this one stays selectable (``search_backend="pyserini"``) as the oracle.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from webshop_gym.data.catalog import Catalog
from webshop_gym.error import SearchEngineError
from webshop_gym.search import java as _java
from webshop_gym.search.cache import DEFAULT_CACHE_BYTES, QueryCache
from webshop_gym.utils.paths import build_atomically, is_built

__all__ = ["LuceneSearch", "SearchBackend", "document_text", "build_index", "normalize_query", "SEARCH_RETURN_N",
           "INDEX_VERSION"]

SEARCH_RETURN_N = 50
INDEX_VERSION = "1"
_EMPTY = np.zeros(0, dtype=np.int32)
_EMPTY.flags.writeable = False


class SearchBackend(Protocol):
    """What the simulator needs from a search engine."""

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> np.ndarray:
        """Return the catalog rows of the top ``k`` products for ``query``."""
        ...

    def search_batch(self, queries: Sequence[str], k: int = SEARCH_RETURN_N) -> list[np.ndarray]:
        """Return :meth:`search` for each query."""
        ...

    def prepare(self, build: bool = True) -> None:
        """Get ready now so that the first search does not wait (``build``: also build files)."""
        ...

    def close(self) -> None:
        """Release what the backend holds."""
        ...


def normalize_query(query: str) -> str:
    """Return the cache key of a query: lower case, white space collapsed."""
    return " ".join(query.lower().split())


class CachedSearch:
    """What both backends share: where the index lives, and the query cache in front of the search.

    A subclass sets ``catalog``, ``_index_arg`` and ``cache`` and gives :meth:`_search_many`,
    which ranks distinct, normalised, non-empty queries that the cache did not answer.
    """

    catalog: Catalog
    cache: QueryCache
    _index_arg: Path | None

    @property
    def index_arg(self) -> Path | None:
        """The external index given at construction (``None``: the catalog's own)."""
        return self._index_arg

    @property
    def index_path(self) -> Path:
        """The Lucene index folder in use (the catalog's own, in its cache folder, by default)."""
        if self._index_arg is not None:
            return self._index_arg
        return self.catalog.folder / f"index-v{INDEX_VERSION}"

    def _search_many(self, queries: list[str], k: int) -> list[np.ndarray]:
        raise NotImplementedError

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> np.ndarray:
        """Return the catalog rows of the top ``k`` products for ``query`` (read-only int32)."""
        key = (normalize_query(query), int(k))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        rows = self._search_many([key[0]], key[1])[0] if key[0] else _EMPTY
        self.cache.put(key, rows)
        return rows

    def search_batch(self, queries: Sequence[str], k: int = SEARCH_RETURN_N, cache: bool = True) -> list[np.ndarray]:
        """Search many queries: cache hits first, then the distinct misses together (``cache=False``: no cache)."""
        k = int(k)
        if cache and len(queries) == 1:  # one query (a single env's search): the same steps without the lists
            key = (normalize_query(queries[0]), k)
            rows = self.cache.get(key)
            if rows is None:
                rows = _EMPTY
                if key[0]:
                    rows = self._search_many([key[0]], k)[0]
                    self.cache.put(key, rows)
            return [rows]
        keys = [(normalize_query(q), k) for q in queries]
        out: list[np.ndarray | None] = [self.cache.get(key) if cache else None for key in keys]
        missing = list(dict.fromkeys(key[0] for key, got in zip(keys, out) if got is None and key[0]))
        found = dict(zip(missing, self._search_many(missing, k))) if missing else {}
        if cache:
            for q, rows in found.items():
                self.cache.put((q, k), rows)
        return [got if got is not None else found.get(key[0], _EMPTY) for got, key in zip(out, keys)]


def document_text(catalog: Catalog, row: int) -> str:
    """Return the indexed text of one product (SPEC section 3).

    A product without bullet points contributes an empty first bullet (the reference would
    fail on it).
    """
    bullets = catalog.bullets[row]
    first = catalog.bullet_text[int(bullets[0])] if len(bullets) else ""
    parts = []
    for g in catalog.option_groups[row]:
        values = ", ".join(catalog.value_text[v] for v in catalog.group_values[g])
        parts.append(f"{catalog.group_name[g]}: {values}")
    option_text = ", and ".join(parts)
    return " ".join([catalog.title[row], catalog.description[row], first, option_text]).lower()


def build_index(catalog: Catalog, folder: str | os.PathLike, progress: bool = True, batch: int = 1000) -> Path:
    """Build the Lucene index of a catalog into ``folder`` (atomically; no-op when it exists).

    Args:
        catalog: the compiled catalog.
        folder: the index folder to create.
        progress: show a progress bar.
        batch: documents per call into Java.

    Returns:
        The index folder.
    """
    final = Path(folder)

    def build(tmp: Path) -> None:
        _java.start()
        from pyserini.index.lucene import LuceneIndexer

        started = time.perf_counter()
        target = tmp / "lucene"
        # Anserini breaks score ties by document id (the asin), not by indexing order, so several
        # indexing threads rank exactly like the reference's single-threaded index.
        indexer = LuceneIndexer(args=["-index", str(target)], threads=max(1, min(4, os.cpu_count() or 1)))
        rows = range(len(catalog))
        bar = None
        if progress:
            from tqdm import tqdm

            from webshop_gym.utils import progress as _progress

            bar = tqdm(disable=_progress.disable(), total=len(catalog), desc="indexing products", unit="doc")
        try:
            for start in range(0, len(catalog), batch):
                docs = [
                    json.dumps({"id": catalog.asin[r], "contents": document_text(catalog, r)})
                    for r in rows[start : start + batch]
                ]
                indexer.add_batch_raw(docs)
                if bar is not None:
                    bar.update(len(docs))
        finally:
            indexer.close()
            if bar is not None:
                bar.close()
        (tmp / "meta.json").write_text(
            json.dumps({"documents": len(catalog), "seconds": round(time.perf_counter() - started, 3)})
        )

    if not is_built(final):
        build_atomically(final, build)
    return final


class LuceneSearch(CachedSearch):
    """BM25 search over a catalog with Pyserini's ``LuceneSearcher``.

    Args:
        catalog: the compiled catalog.
        index: an existing Lucene index folder (e.g. the reference's); default: the catalog's own
            index in its cache folder, built on first use.
        cache_bytes: byte budget of the query cache (0 disables it).
        threads: Java threads for :meth:`search_batch`.
        batch_size: queries per Java batch call.
        progress: show a progress bar when the index has to be built.

    Example:
        >>> from webshop_gym import load_shop
        >>> shop = load_shop(search_backend="pyserini")
        >>> rows = shop.search("gluten free snack")
        >>> len(shop.asins(rows)) <= 50
        True
    """

    backend = "pyserini"

    def __init__(
        self,
        catalog: Catalog,
        index: str | os.PathLike | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        threads: int = 2,
        batch_size: int = 64,
        progress: bool = True,
    ):
        self.catalog = catalog
        self._index_arg = Path(index) if index is not None else None
        self.threads = threads
        self.batch_size = batch_size
        self.progress = progress
        self.cache = QueryCache(cache_bytes)
        self._searcher = None
        self._lock = threading.Lock()

    def _lucene_path(self) -> Path:
        path = self.index_path
        if self._index_arg is None:
            build_index(self.catalog, path, progress=self.progress)
            return path / "lucene"
        return path

    def searcher(self):
        """Return the ``LuceneSearcher`` (starts the JVM and builds the index when needed)."""
        if self._searcher is None:
            with self._lock:
                if self._searcher is None:
                    _java.start()
                    from pyserini.search.lucene import LuceneSearcher

                    path = self._lucene_path()
                    if not any(path.glob("segments*")):
                        raise SearchEngineError(
                            f"no Lucene index at {path}: pass index= an existing index folder, or delete "
                            f"{self.index_path} to have it rebuilt"
                        )
                    try:
                        self._searcher = LuceneSearcher(str(path))
                    except Exception as exc:
                        raise SearchEngineError(f"cannot open the Lucene index at {path}: {exc}") from exc
        return self._searcher

    def _rows(self, hits) -> np.ndarray:
        if not hits:
            return _EMPTY
        rows = self.catalog.rows_of([hit.docid for hit in hits])
        rows = rows[rows >= 0].astype(np.int32)  # documents of an external index that the catalog lacks
        rows.flags.writeable = False
        return rows

    def _lucene(self, query: str, k: int):
        searcher = self.searcher()
        try:
            return searcher.search(query, k=k)
        except Exception:  # a Java exception, e.g. TooManyClauses for a 10 kB query: no results, never a crash
            return []

    def prepare(self, build: bool = True) -> None:
        """Start the JVM and open (or build) the index now, not at the first search.

        Args:
            build: with ``False`` nothing happens (the JVM starts at the first search).
        """
        if build:
            self.searcher()

    def _search_many(self, queries: list[str], k: int) -> list[np.ndarray]:
        """Rank distinct queries: one alone directly, more in Java batches."""
        if len(queries) == 1:
            return [self._rows(self._lucene(queries[0], k))]
        found: list[np.ndarray] = []
        # Java holds every hit's stored document until the call returns: keep batches small.
        for start in range(0, len(queries), self.batch_size):
            chunk = queries[start : start + self.batch_size]
            qids = [str(i) for i in range(len(chunk))]
            searcher = self.searcher()
            try:
                results = searcher.batch_search(chunk, qids, k=k, threads=self.threads)
            except Exception:
                results = {qid: self._lucene(q, k) for q, qid in zip(chunk, qids)}
            found.extend(self._rows(results.get(qid, [])) for qid in qids)
        return found

    def close(self) -> None:
        """Release the searcher."""
        with self._lock:
            if self._searcher is not None:
                try:
                    self._searcher.close()
                except Exception:
                    pass
                self._searcher = None

