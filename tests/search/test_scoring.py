"""Lucene's BM25 arithmetic reproduced bit for bit: norms, length table, scores."""

from __future__ import annotations

import random

import numpy as np

from webshop_gym.search import BM25Search, build_index, scoring
from webshop_gym.search import java as _java
from webshop_gym.search._kernels import score_all_jit


def test_length_norms_match_lucenes_smallfloat():
    _java.start()
    from jnius import autoclass

    small_float = autoclass("org.apache.lucene.util.SmallFloat")
    rng = random.Random(0)
    lengths = list(range(3000)) + [rng.randint(0, 2**31 - 1) for _ in range(2000)]
    lengths += [2**k + d for k in range(31) for d in (-1, 0, 1) if 0 <= 2**k + d < 2**31]
    expected = [small_float.intToByte4(n) & 0xFF for n in lengths]
    assert [scoring.int_to_byte4(n) for n in lengths] == expected
    assert scoring.encode_lengths(np.array(lengths)).tolist() == expected
    signed = [i if i < 128 else i - 256 for i in range(256)]
    decoded = [small_float.byte4ToInt(b) for b in signed]
    assert [scoring.byte4_to_int(i) for i in range(256)] == decoded
    # Lucene's LENGTH_TABLE holds them as floats (rounded above 2**24), as ours does
    assert np.array_equal(scoring.length_table(), np.array(decoded, dtype=np.float32))


def test_scores_equal_lucenes_raw_scores_bit_for_bit(real_shop):
    """Our float32 score of every top-100 document of 300 queries equals Lucene's own."""
    engine = BM25Search(real_shop.catalog, cache_bytes=0, progress=False)
    postings = engine.postings()
    build_index(real_shop.catalog, engine.index_path, progress=False)  # Pyserini's (the bm25 backend builds none)
    _java.start()
    from jnius import autoclass, cast

    path = autoclass("java.io.File")(str(engine.index_path / "lucene")).toPath()
    reader = autoclass("org.apache.lucene.index.DirectoryReader").open(autoclass("org.apache.lucene.store.FSDirectory").open(path))
    searcher = autoclass("org.apache.lucene.search.IndexSearcher")(cast("org.apache.lucene.index.IndexReader", reader))
    searcher.setSimilarity(autoclass("org.apache.lucene.search.similarities.BM25Similarity")(0.9, 0.4))
    generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
    stored = reader.storedFields()
    rng = random.Random(1)
    words = " ".join(real_shop.catalog.title[:500]).lower().split()
    queries = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(250)]
    queries += [" ".join([rng.choice(words)] * rng.randint(2, 5) + [rng.choice(words)]) for _ in range(50)]  # boosts
    doc_of_row = np.empty(len(real_shop.catalog), np.int64)
    doc_of_row[np.asarray(postings.doc_rows)] = np.arange(postings.num_docs)
    compared = 0
    acc = np.zeros(postings.num_docs)
    try:
        for q in queries:
            clauses = engine.query_terms(q)
            acc[:] = 0
            score_all_jit(clauses[0], clauses[1], postings.term_ptr, postings.docs, postings.freqs, postings.norms,
                          postings.idf, postings.cache, acc)
            ours = acc.astype(np.float32)
            for hit in searcher.search(generator.buildQuery("contents", _java.analyzer(), q), 100).scoreDocs:
                row = real_shop.catalog.row_of(stored.document(hit.doc).get("id"))
                assert np.float32(hit.score) == ours[doc_of_row[row]], (q, row)
                compared += 1
    finally:
        reader.close()
    assert compared > 20_000
