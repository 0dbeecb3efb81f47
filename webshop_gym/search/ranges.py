"""Document ranges: the postings regrouped by product type, so that a full-size search skips most of them.

A query of a long goal instruction (16 words, about 11 terms, many of them frequent: "size",
"color", "pack") matches most of a large shop, and its 50 best documents are nearly always of the
product type it names.  :func:`build_ranges` renumbers the documents so that those of one product
type (the catalog's ``query`` column, e.g. "women's pajama sets") are neighbours, keeping the tie
order (the original document number, i.e. the asin) within a type, and cuts the new numbering into
ranges of :data:`RANGE_SIZE` documents.  Each term's postings are stored again in the new order
with, for every range the term occurs in, its first posting and its largest ``tf`` factor, which
bounds what the term can add to any document of that range, and the same per block of
:data:`BLOCK_SIZE` documents within the range.

The kernel (:func:`~webshop_gym.search._kernels.search_ranges_one`) adds up those bounds per range,
scores the most promising ranges in full, and skips every range (and, within a range, every block)
whose bound falls below the current 50th best score: the same top k, in the same order, as the kernel over the plain postings
(tests compare them with it and with Pyserini).  Built once per catalog beside the
postings (``ranges-v1-...``, about 8 bytes a posting: 406 MB at 1,000,000 products) and used only
by shops of at least :data:`MIN_DOCS` documents, where it pays: below that the plain kernel is as
fast.

Files: ``old_of_new.npy`` (int32, documents: the original number of each new one), ``local.npy``
(uint16, postings: the document's place in its range), ``score1.npy`` (float32: the posting's
score at boost 1), ``freqs.npy`` (the posting's term frequency, for other boosts), ``ent_ptr.npy``
(int64, terms + 1), ``ent_range.npy`` (int32), ``ent_start.npy`` (int64) and ``ent_max_tf.npy``
(float32): term ``t``'s ranges are entries ``ent_ptr[t]:ent_ptr[t+1]``;
``sub_end.npy`` (uint16, entries x blocks: where each block's postings end, relative to the entry's
first) and ``sub_max_tf.npy`` (float32, entries x blocks: their largest ``tf`` factor, 1 for none);
``meta.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from webshop_gym.error import SearchEngineError
from webshop_gym.search.postings import Postings
from webshop_gym.utils.paths import build_atomically, is_built

__all__ = ["RangePostings", "RANGE_SIZE", "MIN_DOCS", "RANGES_VERSION", "document_order", "build_ranges",
           "save_ranges", "load_ranges", "ensure_ranges"]

RANGES_VERSION = "1"
RANGE_SIZE = 512
"""Documents per range (a range's postings of a term fit uint16 places)."""
BLOCK_SIZE = 64
"""Documents per block of a range: each (term, range) also keeps its best factor per block."""
MIN_DOCS = 20_000
"""Shops with fewer documents search the plain postings (measured as fast; see docs/search.md)."""
_ARRAYS = ("old_of_new", "local", "score1", "freqs", "ent_ptr", "ent_range", "ent_start", "ent_max_tf", "sub_end", "sub_max_tf")


@dataclass
class RangePostings:
    """The postings in product-type order, cut into ranges (see the module docstring for the arrays)."""

    old_of_new: np.ndarray
    local: np.ndarray
    score1: np.ndarray
    freqs: np.ndarray
    ent_ptr: np.ndarray
    ent_range: np.ndarray
    ent_start: np.ndarray
    ent_max_tf: np.ndarray
    sub_end: np.ndarray
    sub_max_tf: np.ndarray
    range_size: int = RANGE_SIZE
    meta: dict = field(default_factory=dict)

    @property
    def num_ranges(self) -> int:
        """How many ranges the documents are cut into."""
        return (len(self.old_of_new) + self.range_size - 1) // self.range_size

    def nbytes(self) -> int:
        """Bytes of the arrays (mapped from disk)."""
        return sum(int(getattr(self, name).nbytes) for name in _ARRAYS)

    def search(self, postings: Postings, q_ptr: np.ndarray, term_ids: np.ndarray, boosts: np.ndarray, k: int,
               out: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The kernel over these ranges: the same arguments and results as the plain postings' kernel.

        Query ``i``'s clauses are ``term_ids[q_ptr[i]:q_ptr[i+1]]`` (boosted by ``boosts``); its top
        ``k`` original document numbers go to ``out[i, :counts[i]]``.  Returns how many ranges each
        query scored in full (of :attr:`num_ranges`).
        """
        from webshop_gym.search._kernels import search_ranges_batch_jit

        scored = np.zeros(len(q_ptr) - 1, dtype=np.int64)
        search_ranges_batch_jit(q_ptr, term_ids, boosts, postings.idf, postings.max_tf, postings.norms, postings.cache,
                                self.old_of_new, self.local, self.score1, self.freqs, self.ent_ptr, self.ent_range,
                                self.ent_start, self.ent_max_tf, self.sub_end, self.sub_max_tf, self.range_size, k, out,
                                counts, scored)
        return scored


def document_order(postings: Postings, product_type: np.ndarray) -> np.ndarray:
    """The documents grouped by product type, each group in document (tie) order: new -> old number.

    Args:
        postings: the plain postings (``doc_rows`` gives each document's catalog row).
        product_type: an integer per catalog row (the catalog's ``query`` column).  Documents
            without a catalog row (an external index's extras) come last.
    """
    rows = np.asarray(postings.doc_rows)
    types = np.asarray(product_type, dtype=np.int64)
    key = np.full(len(rows), np.iinfo(np.int64).max, dtype=np.int64)
    known = rows >= 0
    key[known] = types[rows[known]]
    return np.argsort(key, kind="stable").astype(np.int32)


def build_ranges(postings: Postings, old_of_new: np.ndarray, range_size: int = RANGE_SIZE, block_size: int = BLOCK_SIZE,
                 advance: Callable[[int], None] | None = None) -> RangePostings:
    """Regroup ``postings`` in the document order ``old_of_new`` (new -> old) and cut it into ranges.

    ``advance`` is called with the number of postings done after each chunk of terms.
    """
    from webshop_gym.search._kernels import range_entries_jit, regroup_jit

    if not 1 <= range_size <= 65536:
        raise SearchEngineError(f"range_size must be between 1 and 65536, got {range_size}")
    if not 1 <= block_size <= range_size or range_size % block_size:
        raise SearchEngineError(f"block_size must divide range_size ({range_size}), got {block_size}")
    n = postings.num_docs
    old_of_new = np.ascontiguousarray(old_of_new, dtype=np.int32)
    if len(old_of_new) != n or (n and not np.array_equal(np.sort(old_of_new), np.arange(n, dtype=np.int32))):
        raise SearchEngineError(f"old_of_new must be a permutation of the {n} documents")
    new_of_old = np.empty(n, dtype=np.int32)
    new_of_old[old_of_new] = np.arange(n, dtype=np.int32)
    size = len(postings.docs)
    term_ptr = np.ascontiguousarray(postings.term_ptr, dtype=np.int64)
    new_docs = np.empty(size, dtype=np.int32)
    new_tf = np.empty(size, dtype=np.float32)
    score1 = np.empty(size, dtype=np.float32)
    freqs = np.empty(size, dtype=postings.freqs.dtype)
    arrays = (np.asarray(postings.docs), np.asarray(postings.freqs), np.asarray(postings.tf), np.asarray(postings.idf))
    entries = 0
    # terms in chunks of about 1/64 of the postings, so that a progress bar can follow
    cuts = np.unique(np.searchsorted(term_ptr, np.linspace(0, size, 65)[1:-1]))
    bounds = [0, *(int(c) for c in cuts if 0 < c < len(term_ptr) - 1), len(term_ptr) - 1]
    for t0, t1 in zip(bounds[:-1], bounds[1:], strict=True):
        if t1 > t0:
            entries += int(regroup_jit(term_ptr[t0 : t1 + 1], *arrays[:3], arrays[3][t0:t1], new_of_old, range_size,
                                       new_docs, new_tf, score1, freqs))
        if advance is not None:
            advance(int(term_ptr[t1]))
    ent_ptr = np.zeros(len(term_ptr), dtype=np.int64)
    ent_range = np.empty(entries, dtype=np.int32)
    ent_start = np.empty(entries, dtype=np.int64)
    ent_max_tf = np.empty(entries, dtype=np.float32)
    subs = range_size // block_size
    sub_end = np.empty((entries, subs), dtype=np.uint16 if range_size <= 65535 else np.uint32)
    sub_max_tf = np.empty((entries, subs), dtype=np.float32)
    local = np.empty(size, dtype=np.uint16)  # places 0 .. range_size - 1 <= 65535
    range_entries_jit(term_ptr, new_docs, new_tf, range_size, ent_ptr, ent_range, ent_start, ent_max_tf, sub_end, sub_max_tf,
                      local)
    return RangePostings(old_of_new=old_of_new, local=local, score1=score1, freqs=freqs, ent_ptr=ent_ptr,
                         ent_range=ent_range, ent_start=ent_start, ent_max_tf=ent_max_tf, sub_end=sub_end,
                         sub_max_tf=sub_max_tf, range_size=range_size,
                         meta={"documents": n, "postings": size, "entries": int(entries), "block_size": block_size})


def save_ranges(folder: Path, ranges: RangePostings) -> None:
    """Write ``ranges`` into ``folder`` (the files :func:`load_ranges` maps)."""
    for name in _ARRAYS:
        np.save(folder / f"{name}.npy", np.ascontiguousarray(getattr(ranges, name)))
    (folder / "meta.json").write_text(json.dumps({**ranges.meta, "range_size": ranges.range_size}, indent=1))


def load_ranges(folder: str | os.PathLike) -> RangePostings:
    """Memory-map saved ranges (read-only, plain ndarray views as :func:`~webshop_gym.search.postings.load_postings`)."""
    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text())
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray) for name in _ARRAYS}
    return RangePostings(range_size=int(meta["range_size"]), meta=meta, **arrays)


def ensure_ranges(folder: Path, postings: Postings, product_type: np.ndarray, progress: bool = True) -> RangePostings:
    """Load the ranges from ``folder``, building them first (atomically, once) when missing."""
    if not is_built(folder):

        def build(tmp: Path) -> None:
            started = time.perf_counter()
            bar = None
            if progress:
                from tqdm import tqdm

                from webshop_gym.utils import progress as _progress

                bar = tqdm(disable=_progress.disable(), total=len(postings.docs), desc="grouping postings by product type",
                           unit="posting", unit_scale=True)

            def advance(done: int) -> None:
                if bar is not None:
                    bar.update(done - bar.n)

            try:
                ranges = build_ranges(postings, document_order(postings, product_type), advance=advance)
            finally:
                if bar is not None:
                    bar.close()
            ranges.meta["seconds"] = round(time.perf_counter() - started, 3)
            save_ranges(tmp, ranges)

        build_atomically(folder, build)
    ranges = load_ranges(folder)
    if ranges.meta.get("documents") != postings.num_docs or ranges.meta.get("postings") != len(postings.docs):
        raise SearchEngineError(f"the ranges at {folder} do not match the postings: delete the folder to rebuild")
    return ranges
