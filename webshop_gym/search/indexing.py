"""A catalog's postings built without Java: our own analysis of every document (the default index).

:class:`~webshop_gym.search.bm25.BM25Search` needs only the inverted index (:mod:`webshop_gym.search.postings`).
This module builds it from :func:`~webshop_gym.search.lucene.document_text` of each product, analysed
by :func:`~webshop_gym.search.analysis.analyze` (Anserini's English analysis reproduced in Python),
numbered in Lucene's tie order (the asin), and assembled by :func:`~webshop_gym.search.postings.assemble`:
no Lucene index, no JVM.  Since the analysis gives Lucene's terms exactly, the arrays are those that
:func:`~webshop_gym.search.postings.build_postings` exports from Pyserini's index (the oracle, which
needs Pyserini and Java): ``tests/search/test_javafree_index.py`` compares them array for array and
``benchmarks/javafree_parity.py`` compares both backends' top 50 on the golden and fuzzed queries.

The folder is ``postings-v<POSTINGS_VERSION>-analysis-v<ANALYSIS_VERSION>``: a change to the
analysis that can change a term bumps :data:`ANALYSIS_VERSION`, so that no cache built by an
older one is read.  The Lucene export keeps its own name (``postings-v2-index-v1``): the two are
never confused.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from webshop_gym.search.analysis import StemLookup, raw_tokens, stem_of, word_of
from webshop_gym.search.lucene import document_text
from webshop_gym.search.postings import POSTINGS_VERSION, assemble_ids, save_postings, tie_order
from webshop_gym.utils.paths import build_atomically

__all__ = ["ANALYSIS_VERSION", "SOURCE", "analysed_postings", "build_analysed_postings", "postings_folder_name"]

ANALYSIS_VERSION = "1"
"""The Python analysis the postings were built with (bumped when a term it gives can change)."""

TOKEN_MEMO_BYTES = 256 * 2**20
"""What an index build's memo of raw tokens may hold, counted as :data:`_ENTRY_BYTES` plus the token's length each."""
_ENTRY_BYTES = 120  # a dict slot, a str object's header and an int

SOURCE = "python-analysis"
"""``meta.json``'s ``source`` of postings built here (the Lucene export writes ``analysis``)."""


RELEASE_DOCS = 4_096
"""Documents read between two releases of the catalog columns' mapped pages (:func:`analysed_postings`)."""


def postings_folder_name() -> str:
    """The name of a catalog's Java-free postings folder in its cache folder."""
    return f"postings-v{POSTINGS_VERSION}-analysis-v{ANALYSIS_VERSION}"


class _Vocabulary:
    """Raw token -> term id for one build (``-1``: a stop word), and the ASCII words it stemmed.

    A token is analysed once per build: lower-cased, its possessive dropped, looked up in the
    catalog's stem table when one is given, else stemmed (exactly :func:`~webshop_gym.search.analysis.term`);
    the words it stems are kept for the catalog's stem table, so that no second pass over the
    documents finds them.  The memo of raw tokens is bounded by :data:`TOKEN_MEMO_BYTES` (it
    starts afresh when full); the terms and the stemmed words are the catalog's vocabulary, which
    the postings and the stem table hold anyway.
    """

    __slots__ = ("ids", "terms", "term_ids", "words", "stems", "_bytes")

    def __init__(self, stems: StemLookup | None):
        self.ids: dict[str, int] = {}
        self.terms: list[str] = []
        self.term_ids: dict[str, int] = {}
        self.words: dict[str, str] = {}
        self.stems = stems
        self._bytes = 0

    def add(self, token: str) -> int:
        """Analyse a raw token the memo lacks; its term id (``-1``: a stop word)."""
        self._bytes += _ENTRY_BYTES + len(token)
        if self._bytes > TOKEN_MEMO_BYTES:
            self.ids.clear()
            self._bytes = _ENTRY_BYTES + len(token)
        word = word_of(token)
        if word is None:
            i = -1
        else:
            got = self.words.get(word)
            if got is None:
                got = stem_of(word, self.stems)
                if word.isascii():
                    self.words[word] = got
            i = self.term_ids.get(got)
            if i is None:
                i = self.term_ids[got] = len(self.terms)
                self.terms.append(got)
        self.ids[token] = i
        return i

    def doc_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The term ids of ``texts`` (one array, in token order) and each text's count of them."""
        found = [raw_tokens(text) for text in texts]
        flat = [t for tokens in found for t in tokens]
        get, add = self.ids.get, self.add
        ids = np.fromiter((i if (i := get(t)) is not None else add(t) for t in flat), dtype=np.int64, count=len(flat))
        kept = ids >= 0
        bounds = np.zeros(len(found) + 1, dtype=np.int64)
        np.cumsum([len(tokens) for tokens in found], out=bounds[1:])
        kept_before = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum(kept, out=kept_before[1:])
        return ids[kept], kept_before[bounds[1:]] - kept_before[bounds[:-1]]


def analysed_postings(catalog, stems: StemLookup | None = None, progress=None, words: dict | None = None):
    """The postings of ``catalog`` from the Python analysis of each document (see the module docstring).

    Args:
        catalog: the compiled catalog.
        stems: the catalog's stem table (words it holds are not stemmed again).
        progress: called with the number of documents done after each chunk.
        words: filled with the ASCII words the documents use and their stems (for the stem table).

    Returns:
        The :class:`~webshop_gym.search.postings.Postings` (in memory).
    """
    order = tie_order(list(catalog.asin))
    rows = order.tolist()
    vocabulary = _Vocabulary(stems)

    read = (catalog.title, catalog.description, catalog.bullets, catalog.bullet_text, catalog.option_groups,
            catalog.group_name, catalog.group_values, catalog.value_text)  # what document_text reads
    released = [0]

    def doc_ids(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        found = vocabulary.doc_ids([document_text(catalog, r) for r in rows[start:stop]])
        # The index reads the products in its own order, scattered over the columns' pages (and the
        # kernel maps about 30 KB around each byte read): every RELEASE_DOCS documents those pages
        # leave this process's resident memory.  At 1M products the build's peak RSS fell from
        # 2.95 to 2.06 GB, for about 1 s per 100,000 documents of minor faults.
        if stop - released[0] >= RELEASE_DOCS:
            for column in read:
                column.release()
            released[0] = stop
        return found

    postings = assemble_ids(doc_ids, vocabulary.terms, len(rows), order.astype(np.int32), progress=progress)
    if words is not None:
        words.update(vocabulary.words)
    return postings


def build_analysed_postings(catalog, folder: str | os.PathLike, stems: StemLookup | None = None,
                            progress: bool = True, words: dict[str, str] | None = None) -> Path:
    """Build the Java-free postings of a catalog into ``folder`` (atomically; a no-op when they are there).

    ``words``: filled with the documents' ASCII words and their stems when they are built here.
    """
    final = Path(folder)

    def build(tmp: Path) -> None:
        started = time.perf_counter()
        bar = None
        if progress:
            from tqdm import tqdm

            from webshop_gym.utils import progress as _progress

            bar = tqdm(disable=_progress.disable(), total=len(catalog), desc="indexing products", unit="doc")
        done = [0]

        def advance(n: int) -> None:
            if bar is not None:
                bar.update(n - done[0])
            done[0] = n

        try:
            postings = analysed_postings(catalog, stems, progress=advance, words=words)
        finally:
            if bar is not None:
                bar.close()
        postings.meta.update(source=SOURCE, analysis_version=ANALYSIS_VERSION,
                             seconds=round(time.perf_counter() - started, 3))
        save_postings(tmp, postings)

    build_atomically(final, build, what="search postings")
    return final
