"""The inverted index of a catalog as numpy arrays: what BM25 needs, without Lucene.

:func:`assemble` builds it from each document's analysed terms.  The ``bm25`` backend builds a
catalog's own from our analysis, without Java (:mod:`webshop_gym.search.indexing`).  The oracle's
paths, which need Pyserini and a JVM: :func:`build_postings` exports it from a catalog's Lucene
index with Anserini's analyser run in the JVM on every document, and checks it against the Lucene
index's own statistics (document count, token count, every term's document frequency, the
histogram of length norms); :func:`postings_from_lucene` reads an existing Lucene index (e.g. the
reference's) term by term.  Every process then memory-maps the arrays (:func:`load_postings`).

Documents are numbered in the order Pyserini breaks score ties: by their ``id`` field as a
string (the asin), so "lower document number first" is the tie order.  The arrays:

* ``terms.txt``: the term dictionary, one term per line (tokens never hold line breaks);
* ``term_ptr.npy`` (int64, terms + 1): term ``t``'s postings are ``[term_ptr[t], term_ptr[t+1])``;
* ``docs.npy`` (int32) and ``freqs.npy`` (the smallest unsigned type that fits): each posting's
  document number (ascending within a term) and term frequency;
* ``norms.npy`` (uint8, documents): Lucene's one-byte length norm of each document;
* ``doc_rows.npy`` (int32, documents): the catalog row of each document (-1: not in the catalog);
* ``idf.npy`` (float32, terms): Lucene's idf of each term;
* ``tf.npy`` (float32, postings): each posting's ``1 + freq * cache[norm]`` as Lucene computes
  it (the kernel scores ``weight - weight / tf``), and ``max_tf.npy`` (float32, terms): each
  term's largest, which bounds its score (for the kernel's safe shortcut);
* ``meta.json``: document count, total tokens, average length, what was verified, timings.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from webshop_gym.error import SearchEngineError
from webshop_gym.search import scoring
from webshop_gym.utils.paths import build_atomically, is_built

__all__ = ["Postings", "assemble", "assemble_ids", "tie_order", "build_postings", "load_postings", "save_postings",
           "postings_from_lucene", "lucene_statistics", "check_against_lucene", "POSTINGS_VERSION"]

POSTINGS_VERSION = "2"
_ARRAYS = ("term_ptr", "docs", "freqs", "norms", "doc_rows", "idf", "tf", "max_tf")


@dataclass
class Postings:
    """A read-only inverted index with Lucene's BM25 statistics.

    Attributes:
        terms: the term dictionary (term id -> term).
        term_ptr, docs, freqs, norms, doc_rows, idf, tf, max_tf: see the module docstring.
        doc_count: documents with at least one token (Lucene's ``docCount``).
        total_tokens: tokens over all documents (Lucene's ``sumTotalTermFreq``).
        avgdl: Lucene's average document length (float32).
        cache: the BM25 norm cache (float32, 256 entries).
        meta: what was recorded when the arrays were exported.
    """

    terms: list[str]
    term_ptr: np.ndarray
    docs: np.ndarray
    freqs: np.ndarray
    norms: np.ndarray
    doc_rows: np.ndarray
    idf: np.ndarray
    doc_count: int
    total_tokens: int
    meta: dict = field(default_factory=dict)
    tf: np.ndarray | None = None
    max_tf: np.ndarray | None = None
    avgdl: np.float32 = field(init=False)
    cache: np.ndarray = field(init=False)
    _ids: dict[str, int] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self):
        self.avgdl = scoring.average_length(self.total_tokens, self.doc_count)
        self.cache = scoring.norm_cache(self.avgdl)
        if self.tf is None or self.max_tf is None:
            from webshop_gym.search._kernels import tf_factors_jit

            self.tf = np.empty(len(self.docs), dtype=np.float32)
            self.max_tf = np.empty(len(self.terms), dtype=np.float32)
            tf_factors_jit(self.term_ptr, self.docs, self.freqs, self.norms, self.cache, self.tf, self.max_tf)

    @property
    def num_docs(self) -> int:
        """Documents numbered (including those without tokens)."""
        return len(self.norms)

    @property
    def term_ids(self) -> dict[str, int]:
        """Term -> term id (built on first use)."""
        if self._ids is None:
            with self._lock:
                if self._ids is None:
                    self._ids = {t: i for i, t in enumerate(self.terms)}
        return self._ids

    def doc_freq(self, term_id: int) -> int:
        """Documents that hold a term."""
        return int(self.term_ptr[term_id + 1] - self.term_ptr[term_id])

    def nbytes(self) -> int:
        """Bytes of the arrays (mapped from disk, so mostly shared between processes)."""
        return sum(int(getattr(self, name).nbytes) for name in _ARRAYS)


def save_postings(folder: Path, postings: Postings) -> None:
    """Write postings into ``folder`` (the files :func:`load_postings` maps)."""
    for name in _ARRAYS:
        np.save(folder / f"{name}.npy", np.ascontiguousarray(getattr(postings, name)))
    (folder / "terms.txt").write_text("\n".join(postings.terms), encoding="utf-8", errors="surrogatepass")
    (folder / "meta.json").write_text(json.dumps(postings.meta, indent=1))


def load_postings(folder: str | os.PathLike) -> Postings:
    """Memory-map exported postings (read-only)."""
    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text())
    # plain ndarray views of the maps: numpy.memmap indexes and wraps ufunc results in Python code,
    # and numba types a subclass on its slow path; every search touches these arrays
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray) for name in _ARRAYS}
    text = (folder / "terms.txt").read_text(encoding="utf-8", errors="surrogatepass")
    terms = text.split("\n") if text else []
    if len(terms) + 1 != len(arrays["term_ptr"]):
        raise SearchEngineError(f"damaged postings at {folder}: {len(terms)} terms for {len(arrays['term_ptr']) - 1}")
    return Postings(terms=terms, doc_count=int(meta["doc_count"]), total_tokens=int(meta["total_tokens"]),
                    meta=meta, **arrays)


def _freq_dtype(max_freq: int):
    for dtype in (np.uint8, np.uint16, np.uint32):
        if max_freq <= np.iinfo(dtype).max:
            return dtype
    raise SearchEngineError(f"a term frequency of {max_freq} does not fit 32 bits")


def assemble(
    doc_terms: Callable[[int, int], list[list[str]]],
    num_docs: int,
    doc_rows: np.ndarray,
    chunk: int = 4096,
    progress: Callable[[int], None] | None = None,
) -> Postings:
    """Build postings from each document's analysed terms.

    Args:
        doc_terms: ``(start, stop)`` -> the terms of documents ``start..stop-1`` (numbered in tie
            order), in token order.
        num_docs: how many documents.
        doc_rows: catalog row of each document.
        chunk: documents per call of ``doc_terms``.
        progress: called with the number of documents done after each chunk.
    """
    ids: dict[str, int] = {}
    terms: list[str] = []

    def doc_ids(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        flat: list[int] = []
        counts = []
        for term_list in doc_terms(start, stop):
            counts.append(len(term_list))
            for t in term_list:
                i = ids.get(t)
                if i is None:
                    i = ids[t] = len(terms)
                    terms.append(t)
                flat.append(i)
        return np.asarray(flat, dtype=np.int64), np.asarray(counts, dtype=np.int64)

    return assemble_ids(doc_ids, terms, num_docs, doc_rows, chunk, progress)


def assemble_ids(
    doc_ids: Callable[[int, int], tuple[np.ndarray, np.ndarray]],
    terms: list[str],
    num_docs: int,
    doc_rows: np.ndarray,
    chunk: int = 4096,
    progress: Callable[[int], None] | None = None,
) -> Postings:
    """:func:`assemble` from term ids.

    ``doc_ids(start, stop)`` gives documents ``start..stop-1``'s term ids, all in one array in token
    order, and each document's count of them; ``terms`` is the term dictionary, which ``doc_ids``
    extends as it meets new terms (ids in order of first use).
    """
    lengths = np.zeros(num_docs, dtype=np.int64)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    df = np.zeros(1024, dtype=np.int64)
    for start in range(0, num_docs, chunk):
        stop = min(num_docs, start + chunk)
        tid, counts = doc_ids(start, stop)
        lengths[start:stop] = counts
        doc = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
        keys, freq = np.unique(tid * num_docs + doc, return_counts=True)  # by term, then document
        t_part = (keys // num_docs).astype(np.int32)
        parts.append((t_part, (keys % num_docs).astype(np.int32), freq.astype(np.int32)))
        if len(terms) > len(df):
            df = np.concatenate([df, np.zeros(max(len(terms), 2 * len(df)) - len(df), dtype=np.int64)])
        df += np.bincount(t_part, minlength=len(df))[: len(df)]
        if progress is not None:
            progress(stop)
    df = df[: len(terms)]
    term_ptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(df, out=term_ptr[1:])
    nnz = int(term_ptr[-1])
    max_freq = max((int(p[2].max()) for p in parts if len(p[2])), default=1)
    docs = np.empty(nnz, dtype=np.int32)
    freqs = np.empty(nnz, dtype=_freq_dtype(max_freq))
    filled = np.zeros(len(terms), dtype=np.int64)
    for t_part, d_part, f_part in parts:  # chunks in document order: each term's documents ascend
        if not len(t_part):
            continue
        starts = np.flatnonzero(np.r_[True, t_part[1:] != t_part[:-1]])
        group_len = np.diff(np.r_[starts, len(t_part)])
        rank = np.arange(len(t_part)) - np.repeat(starts, group_len)
        pos = term_ptr[t_part] + filled[t_part] + rank
        docs[pos] = d_part
        freqs[pos] = f_part
        filled[t_part[starts]] += group_len
    doc_count = int((lengths > 0).sum())
    total = int(lengths.sum())
    return Postings(
        terms=terms, term_ptr=term_ptr, docs=docs, freqs=freqs, norms=scoring.encode_lengths(lengths),
        doc_rows=np.asarray(doc_rows, dtype=np.int32), idf=scoring.idf(df, doc_count), doc_count=doc_count,
        total_tokens=total, meta={"version": POSTINGS_VERSION, "doc_count": doc_count, "total_tokens": total,
                                  "documents": num_docs, "terms": len(terms), "postings": nnz},
    )


def tie_order(ids: Sequence[str]) -> np.ndarray:
    """Indices of ``ids`` sorted as Lucene sorts the ``id`` field (UTF-8 bytes, i.e. code points)."""
    return np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)


def build_postings(catalog, index_folder: Path, folder: str | os.PathLike, progress: bool = True) -> Path:
    """Export the postings of a catalog's own Lucene index into ``folder`` (atomically, once).

    The documents are analysed by Anserini's analyzer in the JVM, so the terms are Lucene's own;
    the result is checked against the Lucene index's statistics before it is kept.

    Raises:
        SearchEngineError: when the export disagrees with the Lucene index.
    """
    from webshop_gym.search import java as _java
    from webshop_gym.search.lucene import document_text

    final = Path(folder)

    def build(tmp: Path) -> None:
        started = time.perf_counter()
        order = tie_order(list(catalog.asin))
        bar = None
        if progress:
            from tqdm import tqdm

            from webshop_gym.utils import progress as _progress

            bar = tqdm(disable=_progress.disable(), total=len(order), desc="exporting postings", unit="doc")
        done = [0]

        def doc_terms(start: int, stop: int) -> list[list[str]]:
            return _java.analyze([document_text(catalog, int(r)) for r in order[start:stop]])

        def advance(n: int) -> None:
            if bar is not None:
                bar.update(n - done[0])
            done[0] = n

        try:
            postings = assemble(doc_terms, len(order), order.astype(np.int32), progress=advance)
        finally:
            if bar is not None:
                bar.close()
        exported = time.perf_counter() - started
        checked = check_against_lucene(postings, index_folder / "lucene")
        postings.meta.update(seconds=round(exported, 3), verify_seconds=round(time.perf_counter() - started - exported, 3),
                             verified=checked, source="analysis")
        save_postings(tmp, postings)

    if not is_built(final):
        _java.start()
        build_atomically(final, build)
    return final


def _open_reader(path: Path):
    from webshop_gym.search import java as _java

    _java.start()  # before jnius is imported: the JVM needs Pyserini's class path
    from jnius import autoclass

    directory = autoclass("org.apache.lucene.store.FSDirectory").open(autoclass("java.io.File")(str(path)).toPath())
    return autoclass("org.apache.lucene.index.DirectoryReader").open(directory)


def _multi_terms(reader):
    """The ``contents`` terms of a whole index (its segments merged)."""
    from jnius import autoclass, cast

    multi = autoclass("org.apache.lucene.index.MultiTerms")
    return multi.getTerms(cast("org.apache.lucene.index.IndexReader", reader), "contents")


def lucene_statistics(index: str | os.PathLike) -> dict:
    """The ``contents`` field's statistics in a Lucene index, read through the JVM.

    Returns:
        ``doc_count``, ``total_tokens``, ``postings`` (sum of document frequencies), ``terms``
        (term -> document frequency), ``norm_histogram`` (256 counts) and ``lucene9`` (whether
        the index was written by Lucene 9, which Anserini needs for its asin tie order).
    """
    reader = _open_reader(Path(index))
    try:
        terms = _multi_terms(reader)
        dfs: dict[str, int] = {}
        if terms is not None:
            it = terms.iterator()
            while True:
                ref = it.next()
                if ref is None:
                    break
                dfs[ref.utf8ToString()] = it.docFreq()
        histogram = np.zeros(256, dtype=np.int64)
        for leaf in reader.leaves().toArray():
            norms = leaf.reader().getNormValues("contents")
            if norms is None:
                continue
            while norms.nextDoc() != 2147483647:
                histogram[norms.longValue() & 0xFF] += 1
        return {
            "doc_count": int(terms.getDocCount()) if terms is not None else 0,
            "total_tokens": int(terms.getSumTotalTermFreq()) if terms is not None else 0,
            "postings": int(terms.getSumDocFreq()) if terms is not None else 0,
            "terms": dfs,
            "norm_histogram": histogram,
            "lucene9": "lucene.version=9" in reader.toString(),
        }
    finally:
        reader.close()


def check_against_lucene(postings: Postings, index: Path) -> dict:
    """Compare exported postings with a Lucene index's statistics; raise on any difference."""
    stats = lucene_statistics(index)
    ours_hist = np.bincount(np.asarray(postings.norms)[_has_tokens(postings)], minlength=256)
    ours_hist[0] = stats["norm_histogram"][0]  # documents without tokens: Lucene may store norm 0
    ours_df = {t: postings.doc_freq(i) for i, t in enumerate(postings.terms)}
    problems = []
    for name, got in (("doc_count", postings.doc_count), ("total_tokens", postings.total_tokens),
                      ("postings", int(postings.term_ptr[-1]))):
        if stats[name] != got:
            problems.append(f"{name}: Lucene {stats[name]}, exported {got}")
    if stats["terms"] != ours_df:
        differ = sorted(set(stats["terms"].items()) ^ set(ours_df.items()))[:5]
        problems.append(f"document frequencies differ (e.g. {differ})")
    if not np.array_equal(stats["norm_histogram"], ours_hist):
        problems.append("length norms differ")
    if problems:
        raise SearchEngineError(f"the exported postings disagree with the Lucene index at {index}: " + "; ".join(problems))
    return {"doc_count": True, "total_tokens": True, "postings": True, "document_frequencies": len(ours_df),
            "norm_histogram": True}


def _has_tokens(postings: Postings) -> np.ndarray:
    has = np.zeros(postings.num_docs, dtype=bool)
    has[np.asarray(postings.docs)] = True
    return has


def postings_from_lucene(index: str | os.PathLike, catalog) -> Postings:
    """Read the postings of an existing Lucene index (e.g. the reference's) through the JVM.

    Documents whose id the catalog lacks keep their place in the ranking (they take part in
    Lucene's statistics and top 50) with catalog row -1.  Meant for small indexes: it walks every
    posting through JNI (the reference's 1,000-product index: about a second).
    """
    reader = _open_reader(Path(index))
    from jnius import autoclass

    try:
        n = reader.maxDoc()
        stored = reader.storedFields()
        ids = [stored.document(i).get("id") for i in range(n)]
        lucene9 = "lucene.version=9" in reader.toString()
        # Anserini sorts ties by the id string on Lucene 9 indexes and by Lucene's doc id otherwise.
        order = tie_order(ids) if lucene9 else np.arange(n, dtype=np.int64)
        number = np.empty(n, dtype=np.int64)
        number[order] = np.arange(n)
        lengths = np.zeros(n, dtype=np.int64)
        postings_lists: dict[str, list[tuple[int, int]]] = {}
        terms = _multi_terms(reader)
        if terms is not None:
            it = terms.iterator()
            freqs_flag = autoclass("org.apache.lucene.index.PostingsEnum").FREQS
            while True:
                ref = it.next()
                if ref is None:
                    break
                docs = it.postings(None, freqs_flag)
                entries = []
                while True:
                    d = docs.nextDoc()
                    if d == 2147483647:
                        break
                    f = docs.freq()
                    entries.append((int(number[d]), f))
                    lengths[number[d]] += f
                postings_lists[ref.utf8ToString()] = sorted(entries)
        norms = np.zeros(n, dtype=np.uint8)
        for leaf in reader.leaves().toArray():
            values = leaf.reader().getNormValues("contents")
            if values is None:
                continue
            while True:
                d = values.nextDoc()
                if d == 2147483647:
                    break
                norms[number[leaf.docBase + d]] = values.longValue() & 0xFF
    finally:
        reader.close()
    term_list = list(postings_lists)
    df = np.array([len(postings_lists[t]) for t in term_list], dtype=np.int64)
    term_ptr = np.zeros(len(term_list) + 1, dtype=np.int64)
    np.cumsum(df, out=term_ptr[1:])
    flat = [e for t in term_list for e in postings_lists[t]]
    docs_arr = np.array([d for d, _ in flat], dtype=np.int32)
    freq_arr = np.array([f for _, f in flat], dtype=np.int64)
    rows = catalog.rows_of([ids[i] for i in order.tolist()]) if n else np.zeros(0, dtype=np.int64)
    doc_count = int((lengths > 0).sum())
    total = int(lengths.sum())
    return Postings(
        terms=term_list, term_ptr=term_ptr, docs=docs_arr,
        freqs=freq_arr.astype(_freq_dtype(int(freq_arr.max()) if len(freq_arr) else 1)), norms=norms,
        doc_rows=np.asarray(rows, dtype=np.int32), idf=scoring.idf(df, doc_count), doc_count=doc_count,
        total_tokens=total, meta={"version": POSTINGS_VERSION, "doc_count": doc_count, "total_tokens": total,
                                  "documents": n, "terms": len(term_list), "postings": len(flat),
                                  "source": str(index), "lucene9": lucene9},
    )
