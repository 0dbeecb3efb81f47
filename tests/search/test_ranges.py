"""Document ranges (issue 33): the same top k as the plain kernel, from a fraction of the postings."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from tests.search.test_kernels import _brute
from webshop_gym.error import SearchEngineError
from webshop_gym.search import BM25Search, LuceneSearch
from webshop_gym.search import _kernels as K
from webshop_gym.search.parity import compare, parity_queries
from webshop_gym.search.postings import assemble
from webshop_gym.search.ranges import (
    MIN_DOCS,
    build_ranges,
    document_order,
    ensure_ranges,
    load_ranges,
    save_ranges,
)


def _corpus(seed: int, n_docs: int = 600, types: int = 9):
    """Documents of ``types`` product types, each with words of its own and words all types share."""
    rng = np.random.default_rng(seed)
    shared = [f"s{i}" for i in range(12)]
    own = [[f"t{t}w{i}" for i in range(10)] for t in range(types)]
    doc_type = rng.integers(0, types, size=n_docs)
    docs = []
    for d in range(n_docs):
        words = list(rng.choice(shared, size=int(rng.integers(0, 12))))
        words += list(rng.choice(own[doc_type[d]], size=int(rng.integers(0, 14))))
        if rng.random() < 0.05:
            words += list(rng.choice(own[(doc_type[d] + 1) % types], size=3))  # a few strays
        docs.append(words)
    for i in range(0, n_docs, 11):  # exact duplicates: equal scores, ties broken by document number
        docs[(i * 17) % n_docs] = list(docs[i])
    postings = assemble(lambda a, b: docs[a:b], n_docs, np.arange(n_docs, dtype=np.int32), chunk=128)
    return postings, doc_type, rng


def _one(fn, postings, ranges, term_ids, boosts, k):
    """One query through ``fn`` (the compiled kernel or its twin); checks the scratch is left clean."""
    ub = np.zeros(ranges.num_ranges)
    acc = np.zeros(ranges.range_size)
    sub_ub = np.zeros(ranges.sub_end.shape[1])
    out = np.empty(max(k, 1), np.int32)
    scored = np.zeros(1, np.int64)
    count = fn(term_ids, boosts, postings.idf, postings.max_tf, postings.norms, postings.cache, ranges.old_of_new,
               ranges.local, ranges.score1, ranges.freqs, ranges.ent_ptr, ranges.ent_range, ranges.ent_start,
               ranges.ent_max_tf, ranges.sub_end, ranges.sub_max_tf, ranges.range_size, k, ub, acc, sub_ub,
               np.empty(max(k, 1), np.float32), np.empty(max(k, 1), np.int32), out, scored)
    assert not ub.any() and not acc.any()  # scratch left clean for the next query
    assert 0 <= scored[0] <= ranges.num_ranges
    return out[:count]


@pytest.mark.parametrize(("seed", "range_size", "block_size"), [(0, 8, 4), (1, 16, 16), (2, 32, 8), (3, 64, 64), (4, 1, 1)])
def test_kernel_twin_and_brute_force_agree(seed, range_size, block_size):
    postings, doc_type, rng = _corpus(seed)
    ranges = build_ranges(postings, document_order(postings, doc_type), range_size=range_size, block_size=block_size)
    v = len(postings.terms)
    for trial in range(60):
        term_ids = rng.choice(v, size=min(int(rng.integers(1, 12)), v), replace=False).astype(np.int32)
        boosts = rng.integers(1, 4, size=len(term_ids)).astype(np.float32)  # boosts 2 and 3: the tf path
        if trial % 3 == 0:
            boosts[:] = 1  # the stored scores only
        k = int(rng.choice([1, 3, 10, 50, 700]))
        expected = _brute(postings, term_ids, boosts, k)
        assert np.array_equal(_one(K.search_ranges_one_jit, postings, ranges, term_ids, boosts, k), expected), trial
        if trial % 10 == 0:  # the twin is slow: a tenth of the cases
            assert np.array_equal(_one(K.search_ranges_one, postings, ranges, term_ids, boosts, k), expected), trial


def test_batch_equals_plain_kernel_and_skips_ranges_of_other_product_types():
    postings, doc_type, rng = _corpus(5, n_docs=2000, types=20)
    ranges = build_ranges(postings, document_order(postings, doc_type), range_size=16, block_size=4)
    ids = postings.term_ids
    queries = []
    for _ in range(40):  # a product type's own words with a few shared ones, as an instruction reads
        t = int(rng.integers(0, 20))
        words = [f"t{t}w{i}" for i in rng.choice(10, 4, replace=False)] + [f"s{i}" for i in rng.choice(12, 5, replace=False)]
        queries.append(np.array([ids[w] for w in words if w in ids], np.int32))
    queries.append(np.zeros(0, np.int32))
    q_ptr = np.zeros(len(queries) + 1, np.int64)
    q_ptr[1:] = np.cumsum([len(q) for q in queries])
    term_ids = np.concatenate(queries)
    boosts = np.ones(len(term_ids), np.float32)
    out = np.empty((len(queries), 50), np.int32)
    counts = np.zeros(len(queries), np.int64)
    scored = ranges.search(postings, q_ptr, term_ids, boosts, 50, out, counts)
    n = postings.num_docs
    plain = np.empty_like(out)
    plain_counts = np.zeros_like(counts)
    K.search_batch_jit(q_ptr, term_ids, boosts, postings.term_ptr, postings.docs, postings.tf, postings.idf,
                       postings.max_tf, 50, 0, np.full(n, -1, np.int32), np.zeros(n, np.int32), np.zeros(n), plain,
                       plain_counts)
    for i in range(len(queries)):
        assert np.array_equal(out[i, : counts[i]], plain[i, : plain_counts[i]]), i
    assert counts[-1] == 0 and scored[-1] == 0
    # a type holds 1/20 of the documents: most ranges are never scored
    assert np.median(scored[:-1]) < ranges.num_ranges / 3, (np.median(scored[:-1]), ranges.num_ranges)


def _engine_over_small_ranges(catalog, range_size=16, block_size=4, **kwargs):
    """The bm25 backend searching ranges far smaller than the default, so that a 1k shop has many."""
    engine = BM25Search(catalog, cache_bytes=0, progress=False, ranges=False, **kwargs)
    postings = engine.postings()
    engine._ranges = build_ranges(postings, document_order(postings, catalog.query), range_size, block_size)
    return engine


def test_ranges_rank_as_pyserini_on_the_real_shop(real_shop, golden_dir):
    """Every golden goal instruction and 1,500 parity queries: the plain kernel's top 50; 500 against Pyserini."""
    catalog = real_shop.catalog
    goals = [g["instruction_text"] for g in json.loads((golden_dir / "goals.json").read_text())]
    queries = list(dict.fromkeys(goals)) + [q for _, q in parity_queries(list(catalog.title), goals, 1500, seed=4)]
    plain = BM25Search(catalog, cache_bytes=0, progress=False, ranges=False)
    for range_size, block_size in ((16, 4), (64, 64), (512, 64)):
        assert compare(_engine_over_small_ranges(catalog, range_size, block_size), plain, queries) == []
    oracle = LuceneSearch(catalog, cache_bytes=0, progress=False)
    sample = queries[:: len(queries) // 500]
    assert compare(_engine_over_small_ranges(catalog), oracle, sample) == []


def test_ranges_rank_as_pyserini_on_the_reference_index(real_shop, real_dir):
    """An external index: its documents missing from the catalog are grouped last and still rank."""
    reference = real_dir / "reference_index_1k"
    queries = [q for _, q in parity_queries(list(real_shop.catalog.title), list(real_shop.goals.instruction), 400, seed=5)]
    oracle = LuceneSearch(real_shop.catalog, index=reference, cache_bytes=0, progress=False)
    assert compare(_engine_over_small_ranges(real_shop.catalog, index=reference), oracle, queries) == []


def test_the_engine_builds_its_ranges_once_and_only_where_asked(default_shop):
    catalog = default_shop.catalog
    assert len(catalog) < MIN_DOCS
    automatic = BM25Search(catalog, progress=False)
    shutil.rmtree(automatic.ranges_path, ignore_errors=True)  # only this test asks the default shop for ranges
    automatic.prepare()
    assert automatic.ranges() is None and not automatic.ranges_path.exists()  # a small shop: the plain postings
    forced = BM25Search(catalog, progress=False, ranges=True)
    forced.prepare()
    ranges = forced.ranges()
    assert ranges is not None and forced.ranges_path.is_dir()
    assert ranges.meta["documents"] == len(catalog) and ranges.range_size == 512
    built = (forced.ranges_path / "meta.json").stat().st_mtime_ns
    again = BM25Search(catalog, progress=False, ranges=True)
    assert again.ranges().meta == ranges.meta  # loaded, not rebuilt
    assert (again.ranges_path / "meta.json").stat().st_mtime_ns == built
    queries = list(default_shop.goals.instruction[:300])
    plain = BM25Search(catalog, cache_bytes=0, progress=False, ranges=False)
    assert plain.ranges() is None
    assert all(np.array_equal(a, b) for a, b in zip(again.search_batch(queries), plain.search_batch(queries)))
    with pytest.raises(ValueError, match="ranges must be None, True or False"):
        BM25Search(catalog, ranges="yes")


def test_document_order_groups_by_type_keeps_tie_order_and_puts_strangers_last():
    postings, _, _ = _corpus(6, n_docs=40)
    postings.doc_rows = np.array([*range(30), *[-1] * 10], dtype=np.int32)[::-1].copy()
    types = np.array([i % 3 for i in range(30)])
    order = document_order(postings, types)
    rows = postings.doc_rows[order]
    assert (rows[-10:] == -1).all()
    kinds = types[rows[:30]]
    assert (np.diff(kinds) >= 0).all()  # grouped by type
    for t in range(3):
        same = order[:30][kinds == t]
        assert (np.diff(same) > 0).all()  # each group in document (tie) order


def test_bad_ranges_are_refused_in_one_line(tmp_path):
    postings, doc_type, _ = _corpus(7, n_docs=50)
    order = document_order(postings, doc_type)
    with pytest.raises(SearchEngineError, match="permutation"):
        build_ranges(postings, order[:-1])
    with pytest.raises(SearchEngineError, match="permutation"):
        build_ranges(postings, np.zeros(50, np.int32))
    with pytest.raises(SearchEngineError, match="block_size must divide"):
        build_ranges(postings, order, range_size=16, block_size=5)
    with pytest.raises(SearchEngineError, match="range_size must be between"):
        build_ranges(postings, order, range_size=0)
    # saved and loaded as they were; a folder of other postings is refused, not searched
    ranges = build_ranges(postings, order, range_size=8, block_size=2)
    folder = tmp_path / "ranges"
    folder.mkdir()
    save_ranges(folder, ranges)
    loaded = load_ranges(folder)
    assert loaded.range_size == 8 and all(np.array_equal(getattr(loaded, a), getattr(ranges, a))
                                          for a in ("old_of_new", "local", "score1", "ent_ptr", "sub_end", "sub_max_tf"))
    other, _, _ = _corpus(8, n_docs=60)
    built = tmp_path / "built"
    ensure_ranges(built, postings, doc_type, progress=False)
    with pytest.raises(SearchEngineError, match="do not match the postings: delete the folder"):
        ensure_ranges(built, other, np.zeros(60, np.int64), progress=False)


def test_damaged_ranges_are_found_and_rebuilt(tmp_path, caplog):
    postings, doc_type, _ = _corpus(9, n_docs=80)
    folder = tmp_path / "ranges"
    ensure_ranges(folder, postings, doc_type, progress=False)
    expected = build_ranges(postings, document_order(postings, doc_type))
    with open(folder / "score1.npy", "r+b") as handle:
        handle.truncate((folder / "score1.npy").stat().st_size // 2)
    caplog.clear()
    again = ensure_ranges(folder, postings, doc_type, progress=False)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "rebuilding the damaged cache folder" in warned[0] and "score1.npy has" in warned[0], warned
    assert np.array_equal(again.score1, expected.score1) and np.array_equal(again.local, expected.local)


def test_data_index_command_builds_the_ranges_of_a_large_shop(tmp_path, monkeypatch, capsys):
    """`webshop-gym data index` prepares what a first search would build; here 'large' is lowered to 2."""
    from tests.helpers import product, write_shop
    from webshop_gym.cli.app import main
    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.search import bm25

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(bm25, "MIN_DOCS", 2)
    folder = write_shop(tmp_path / "shop", [product(f"B00000000{i}", name=f"green tea {i}") for i in range(4)], {})
    assert main(["data", "index", str(folder)]) == 0
    out = capsys.readouterr().out
    engine = BM25Search(load_catalog(folder, progress=False), progress=False)
    assert out.rstrip().endswith(f"ranges by product type: {engine.ranges_path}")
    assert engine.ranges() is not None and engine.ranges().meta["documents"] == 4
    assert len(engine.search("green tea")) == 4
