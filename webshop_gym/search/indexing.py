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

from webshop_gym.search.analysis import StemLookup, analyze
from webshop_gym.search.lucene import document_text
from webshop_gym.search.postings import POSTINGS_VERSION, assemble, save_postings, tie_order
from webshop_gym.utils.paths import build_atomically

__all__ = ["ANALYSIS_VERSION", "SOURCE", "analysed_postings", "build_analysed_postings", "postings_folder_name"]

ANALYSIS_VERSION = "1"
"""The Python analysis the postings were built with (bumped when a term it gives can change)."""

SOURCE = "python-analysis"
"""``meta.json``'s ``source`` of postings built here (the Lucene export writes ``analysis``)."""


def postings_folder_name() -> str:
    """The name of a catalog's Java-free postings folder in its cache folder."""
    return f"postings-v{POSTINGS_VERSION}-analysis-v{ANALYSIS_VERSION}"


def analysed_postings(catalog, stems: StemLookup | None = None, progress=None):
    """The postings of ``catalog`` from the Python analysis of each document (see the module docstring).

    Args:
        catalog: the compiled catalog.
        stems: the catalog's stem table (words it holds are not stemmed again).
        progress: called with the number of documents done after each chunk.

    Returns:
        The :class:`~webshop_gym.search.postings.Postings` (in memory).
    """
    order = tie_order(list(catalog.asin))
    rows = order.tolist()

    def doc_terms(start: int, stop: int) -> list[list[str]]:
        return [analyze(document_text(catalog, r), stems) for r in rows[start:stop]]

    return assemble(doc_terms, len(rows), order.astype(np.int32), progress=progress)


def build_analysed_postings(catalog, folder: str | os.PathLike, stems: StemLookup | None = None,
                            progress: bool = True) -> Path:
    """Build the Java-free postings of a catalog into ``folder`` (atomically; a no-op when they are there)."""
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
            postings = analysed_postings(catalog, stems, progress=advance)
        finally:
            if bar is not None:
                bar.close()
        postings.meta.update(source=SOURCE, analysis_version=ANALYSIS_VERSION,
                             seconds=round(time.perf_counter() - started, 3))
        save_postings(tmp, postings)

    build_atomically(final, build, what="search postings")
    return final
