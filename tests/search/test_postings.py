"""The postings: equal to what the Lucene index holds (ours built without Java; the oracle's export checked at build), robust to damage."""

from __future__ import annotations

import numpy as np
import pytest

from webshop_gym.error import SearchEngineError
from webshop_gym.search import BM25Search, LuceneSearch, build_index
from webshop_gym.search.postings import (
    build_postings,
    load_postings,
    lucene_statistics,
    postings_from_lucene,
)


def _by_term(postings) -> dict:
    rows = np.asarray(postings.doc_rows)
    out = {}
    for i, t in enumerate(postings.terms):
        lo, hi = postings.term_ptr[i], postings.term_ptr[i + 1]
        out[t] = (rows[postings.docs[lo:hi]].tolist(), np.asarray(postings.freqs[lo:hi]).tolist())
    return out


def test_the_postings_equal_the_lucene_index_posting_for_posting(real_shop):
    """Built without Java: every term, document, frequency and norm as Pyserini's Lucene index stores it."""
    engine = BM25Search(real_shop.catalog, progress=False)
    ours = engine.postings()
    assert ours.meta["source"] == "python-analysis"
    build_index(real_shop.catalog, engine.index_path, progress=False)
    theirs = postings_from_lucene(engine.index_path / "lucene", real_shop.catalog)
    assert (ours.doc_count, ours.total_tokens, ours.avgdl) == (theirs.doc_count, theirs.total_tokens, theirs.avgdl)
    assert _by_term(ours) == _by_term(theirs)
    norm_of_row = np.zeros(len(real_shop.catalog), np.uint8)
    norm_of_row[np.asarray(ours.doc_rows)] = ours.norms
    norm_of_row_lucene = np.zeros(len(real_shop.catalog), np.uint8)
    norm_of_row_lucene[np.asarray(theirs.doc_rows)] = theirs.norms
    assert np.array_equal(norm_of_row, norm_of_row_lucene)
    assert np.array_equal(np.asarray(ours.doc_rows), real_shop.catalog.asin_order)  # numbered in asin order
    assert not ours.docs.flags.writeable  # memory-mapped, read-only


def test_the_lucene_export_refuses_postings_that_disagree_with_lucene(tmp_path, monkeypatch):
    """The oracle's export (Anserini's analysis in the JVM) is checked against the index before it is kept."""
    from tests.helpers import product, write_shop
    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.search import java as _java

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    folder = write_shop(tmp_path / "shop", [product(f"B00000000{i}", name=f"red apple {i}") for i in range(5)], {})
    catalog = load_catalog(folder, progress=False)
    index = build_index(catalog, tmp_path / "index", progress=False)
    real = _java.analyze
    monkeypatch.setattr(_java, "analyze", lambda texts: [terms[1:] for terms in real(texts)])  # loses a token
    with pytest.raises(SearchEngineError, match="disagree with the Lucene index"):
        build_postings(catalog, index, tmp_path / "exported", progress=False)
    assert not (tmp_path / "exported").exists()
    monkeypatch.setattr(_java, "analyze", real)
    exported = load_postings(build_postings(catalog, index, tmp_path / "exported", progress=False))
    assert exported.meta["verified"]["document_frequencies"] == len(exported.terms)
    assert _by_term(exported) == _by_term(BM25Search(catalog, progress=False).postings())


def test_damaged_postings_are_a_clear_error(tmp_path, monkeypatch):
    from tests.helpers import product, write_shop
    from webshop_gym.data.catalog import load_catalog

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    folder = write_shop(tmp_path / "shop", [product(f"B00000000{i}", name=f"blue pear {i}") for i in range(3)], {})
    catalog = load_catalog(folder, progress=False)
    engine = BM25Search(catalog, progress=False)
    engine.prepare()
    (engine.postings_path / "terms.txt").write_text("just one term")
    with pytest.raises(SearchEngineError, match="damaged postings"):
        load_postings(engine.postings_path)


def test_documents_without_tokens_and_stop_word_products(tmp_path, monkeypatch):
    """Lucene's docCount skips documents without tokens; rankings still match Pyserini's."""
    from tests.helpers import product, write_shop
    from webshop_gym.data.catalog import load_catalog

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    records = [product("B000000001", name="the", full_description="of", small_description=["and"]),
               product("B000000002", name="red red apple", full_description="", small_description=[]),
               product("B000000003", name="apple", full_description="a", small_description=["the an"]),
               product("B000000004", name="Apple's apples", full_description="", small_description=[""])]
    catalog = load_catalog(write_shop(tmp_path / "shop", records, {}), progress=False)
    ours = BM25Search(catalog, progress=False)
    oracle = LuceneSearch(catalog, progress=False)
    oracle.prepare()  # builds the Lucene index
    doc_count = ours.postings().doc_count
    assert doc_count == lucene_statistics(ours.index_path / "lucene")["doc_count"] == 3
    for q in ["apple", "red apple", "apples red", "the", "of and", "product", "b000000001"]:
        assert np.array_equal(ours.search(q), oracle.search(q)), q


def test_external_index_whose_documents_the_catalog_lacks(real_dir, golden_dir):
    """The reference's index over a 600-product catalog: missing products still compete, then drop."""
    from webshop_gym.data.catalog import load_catalog

    catalog = load_catalog(real_dir, num_products=600, progress=False)
    reference = real_dir / "reference_index_1k"
    ours = BM25Search(catalog, index=reference, progress=False)
    oracle = LuceneSearch(catalog, index=reference, progress=False)
    assert (ours.postings().doc_rows < 0).sum() == 400
    assert ours.postings_path.parent.name == "external-postings"
    words = " ".join(catalog.title[:200]).lower().split()
    queries = [" ".join(words[i : i + 1 + i % 5]) for i in range(0, 1500, 5)]
    assert all(np.array_equal(a, b) for a, b in zip(ours.search_batch(queries), oracle.search_batch(queries)))
    assert any(0 < len(r) < 50 for r in ours.search_batch(queries))


def test_loaded_postings_are_plain_read_only_arrays_over_the_map(real_shop):
    """numpy.memmap indexes in Python and numba types it on a slow path: the loader hands out ndarray views."""
    engine = BM25Search(real_shop.catalog, progress=False)
    postings = load_postings(engine.postings_path)
    for name in ("term_ptr", "docs", "freqs", "norms", "doc_rows", "idf", "tf", "max_tf"):
        array = getattr(postings, name)
        assert type(array) is np.ndarray, name
        assert not array.flags.writeable, name
        assert isinstance(array.base, np.memmap), name  # still the file's pages, not a copy
    rows = engine.search("gluten free bacon")
    assert type(rows) is np.ndarray and len(rows) and not rows.flags.writeable
