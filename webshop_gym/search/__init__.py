"""Search: Pyserini's BM25 over a catalog (SPEC section 3), two interchangeable backends.

* ``"bm25"`` (default, :class:`BM25Search`): the same ranking as Pyserini, scored by a Numba
  kernel over postings exported from Pyserini's Lucene index; no JVM at query time.
* ``"pyserini"`` (:class:`LuceneSearch`): Pyserini's ``LuceneSearcher`` through the JVM, the
  ranking oracle.

Both return catalog rows (read-only ``int32`` arrays, best first) and keep a byte-bounded LRU
cache of normalised queries.  :func:`make_search` picks one by name.  Imports :mod:`webshop_gym.data`
and :mod:`webshop_gym.utils` only: never reward, the simulator or anything above.
"""

from __future__ import annotations

import os

from webshop_gym.data.catalog import Catalog
from webshop_gym.error import expect_one_of
from webshop_gym.search.bm25 import BM25Search
from webshop_gym.search.cache import DEFAULT_CACHE_BYTES, QueryCache
from webshop_gym.search.lucene import (
    INDEX_VERSION,
    SEARCH_RETURN_N,
    LuceneSearch,
    SearchBackend,
    build_index,
    document_text,
    normalize_query,
)

__all__ = [
    "BM25Search", "LuceneSearch", "SearchBackend", "QueryCache", "SEARCH_BACKENDS", "DEFAULT_SEARCH_BACKEND",
    "DEFAULT_CACHE_BYTES", "SEARCH_RETURN_N", "INDEX_VERSION", "make_search", "build_index", "document_text",
    "normalize_query",
]  # fmt: skip

SEARCH_BACKENDS = {"bm25": BM25Search, "pyserini": LuceneSearch}
"""Backend name -> class."""

DEFAULT_SEARCH_BACKEND = "bm25"


def make_search(
    catalog: Catalog,
    backend: str = DEFAULT_SEARCH_BACKEND,
    index: str | os.PathLike | None = None,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
    progress: bool = True,
) -> BM25Search | LuceneSearch:
    """Create the search backend ``backend`` (``"bm25"`` or ``"pyserini"``) over a catalog.

    Raises:
        ValueError: for an unknown backend name.
    """
    expect_one_of("search_backend", backend, SEARCH_BACKENDS)
    return SEARCH_BACKENDS[backend](catalog, index=index, cache_bytes=cache_bytes, progress=progress)
