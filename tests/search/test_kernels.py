"""The BM25 top-k kernel: compiled, pure-Python twin and a brute-force ranking agree."""

from __future__ import annotations

import numpy as np
import pytest

from webshop_gym.search import _kernels as K
from webshop_gym.search import scoring
from webshop_gym.search.postings import assemble


def _corpus(seed: int, n_docs: int = 300, vocab: int = 40):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    p = 1 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    docs = [list(rng.choice(words, size=int(rng.integers(0, 40)), p=p)) for _ in range(n_docs)]
    for i in range(0, n_docs, 7):  # exact duplicates: equal scores, ties broken by document number
        docs[(i * 13) % n_docs] = list(docs[i])
    postings = assemble(lambda a, b: docs[a:b], n_docs, np.arange(n_docs, dtype=np.int32), chunk=64)
    return postings, rng


def _brute(postings, term_ids, boosts, k):
    acc = np.zeros(postings.num_docs)
    K.score_all(term_ids, boosts, postings.term_ptr, postings.docs, postings.freqs, postings.norms, postings.idf,
                postings.cache, acc)
    hit = np.zeros(postings.num_docs, bool)
    for t in term_ids:
        hit[postings.docs[postings.term_ptr[t] : postings.term_ptr[t + 1]]] = True
    docs = np.flatnonzero(hit)
    scores = acc[docs].astype(np.float32)
    order = np.lexsort((docs, -scores))
    return docs[order][:k]


ALWAYS_BOUND, NEVER_BOUND = 0, 10**12  # the ``exhaustive`` postings limit: bound every query, or none


def _run(fn, postings, term_ids, boosts, k, exhaustive=ALWAYS_BOUND):
    n = postings.num_docs
    slot, touched, vals = np.full(n, -1, np.int32), np.zeros(n, np.int32), np.zeros(n)
    out = np.empty(max(k, 1), np.int32)
    count = fn(term_ids, boosts, postings.term_ptr, postings.docs, postings.tf, postings.idf, postings.max_tf, k,
               exhaustive, slot, touched, vals, np.empty(max(k, 1), np.float32), np.empty(max(k, 1), np.int32), out)
    assert (slot == -1).all()  # scratch left clean for the next query
    return out[:count]


@pytest.mark.parametrize("exhaustive", [ALWAYS_BOUND, NEVER_BOUND, 600])
@pytest.mark.parametrize("seed", range(4))
def test_kernel_twin_and_brute_force_agree(seed, exhaustive):
    """Bounded (the shortcut), exhaustive (every list whole) and mixed (by each query's postings) alike."""
    postings, rng = _corpus(seed)
    v = len(postings.terms)
    for trial in range(60):
        nq = int(rng.integers(1, 9))
        term_ids = rng.choice(v, size=min(nq, v), replace=False).astype(np.int32)
        boosts = rng.integers(1, 4, size=len(term_ids)).astype(np.float32)
        k = int(rng.choice([1, 3, 10, 50, 400]))
        expected = _brute(postings, term_ids, boosts, k)
        compiled = _run(K.search_one_jit, postings, term_ids, boosts, k, exhaustive)
        assert np.array_equal(compiled, expected), (seed, trial)
        if trial % 6 == 0:  # the twin is slow: a tenth of the cases
            assert np.array_equal(_run(K.search_one, postings, term_ids, boosts, k, exhaustive), expected)


def test_batch_equals_single_and_handles_empty_queries():
    postings, rng = _corpus(9)
    queries = [rng.choice(len(postings.terms), size=int(rng.integers(0, 5)), replace=False).astype(np.int32)
               for _ in range(30)]
    boosts = [np.ones(len(q), np.float32) for q in queries]
    q_ptr = np.zeros(len(queries) + 1, np.int64)
    q_ptr[1:] = np.cumsum([len(q) for q in queries])
    n = postings.num_docs
    out = np.empty((len(queries), 20), np.int32)
    counts = np.zeros(len(queries), np.int64)
    K.search_batch_jit(q_ptr, np.concatenate(queries), np.concatenate(boosts), postings.term_ptr, postings.docs,
                       postings.tf, postings.idf, postings.max_tf, 20, 600, np.full(n, -1, np.int32), np.zeros(n, np.int32),
                       np.zeros(n), out, counts)
    for i, (q, b) in enumerate(zip(queries, boosts)):
        assert np.array_equal(out[i, : counts[i]], _brute(postings, q, b, 20))
    assert counts[[i for i, q in enumerate(queries) if len(q) == 0]].sum() == 0


def test_term_bounds_are_each_terms_best_score():
    postings, _ = _corpus(3)
    ids = np.arange(len(postings.terms), dtype=np.int32)
    weights = np.empty(len(ids), np.float32)
    bounds = np.empty(len(ids), np.float32)
    K.term_bounds(ids, np.full(len(ids), 2, np.float32), postings.idf, postings.max_tf, weights, bounds)
    for t in ids:
        lo, hi = postings.term_ptr[t], postings.term_ptr[t + 1]
        best = max(scoring.term_score(weights[t], int(postings.freqs[p]), postings.cache[postings.norms[postings.docs[p]]])
                   for p in range(lo, hi))
        assert bounds[t] == best


def test_tf_factors_are_lucenes_expression():
    postings, _ = _corpus(4)
    cache = postings.cache
    expected = [np.float32(1.0) + np.float32(f) * cache[postings.norms[d]] for f, d in zip(postings.freqs, postings.docs)]
    assert np.array_equal(postings.tf, np.array(expected, dtype=np.float32))
    twin_tf, twin_max = np.empty_like(postings.tf), np.empty_like(postings.max_tf)
    K.tf_factors(postings.term_ptr, postings.docs, postings.freqs, postings.norms, cache, twin_tf, twin_max)
    assert np.array_equal(twin_tf, postings.tf) and np.array_equal(twin_max, postings.max_tf)


def test_gallop_finds_the_first_document_not_below():
    docs = np.array([2, 3, 5, 8, 13, 21, 34, 55], np.int32)
    for lo in range(len(docs)):
        for d in range(60):
            expected = lo + int(np.searchsorted(docs[lo:], d))
            assert K.gallop(docs, lo, len(docs), d) == expected == K.gallop_jit(docs, lo, len(docs), d)
