"""The default ``bm25`` backend: Pyserini's rankings, selectable backends, JVM-free, quiet."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

from webshop_gym.search import BM25Search, LuceneSearch, QueryCache, make_search
from webshop_gym.search.cache import entry_bytes
from webshop_gym.search.parity import KINDS, compare, parity_queries


def _parity(catalog, instructions, n, seed, index=None):
    queries = parity_queries(list(catalog.title), instructions, n, seed=seed)
    ours = BM25Search(catalog, index=index, cache_bytes=0, progress=False)
    oracle = LuceneSearch(catalog, index=index, cache_bytes=0, progress=False)
    bad = compare(ours, oracle, [q for _, q in queries])
    assert [queries[i] for i in bad] == []
    assert {kind for kind, _ in queries} == set(KINDS)
    return queries


def test_parity_with_pyserini_on_the_default_shop(default_shop):
    queries = _parity(default_shop.catalog, list(default_shop.goals.instruction[:3000]), 1500, seed=1)
    assert sum(not q.isascii() for _, q in queries) > 80  # the JVM analyser's share is covered too


def test_parity_with_pyserini_on_the_real_shop(real_shop, golden_dir):
    goals = json.loads((golden_dir / "goals.json").read_text())
    _parity(real_shop.catalog, [g["instruction_text"] for g in goals], 1500, seed=2)


def test_parity_on_the_reference_index(real_shop, real_dir):
    """Read from the reference's own Lucene index, and our index, both rank as Pyserini over it."""
    reference = real_dir / "reference_index_1k"
    queries = [q for _, q in parity_queries(list(real_shop.catalog.title), list(real_shop.goals.instruction), 400, seed=3)]
    oracle = LuceneSearch(real_shop.catalog, index=reference, cache_bytes=0, progress=False)
    assert compare(BM25Search(real_shop.catalog, index=reference, progress=False), oracle, queries) == []
    assert compare(BM25Search(real_shop.catalog, progress=False), oracle, queries) == []


def test_batch_equals_single_and_cache(default_shop):
    engine = BM25Search(default_shop.catalog, progress=False)
    queries = ["red dress", "Red   Dress", "wireless earbuds", "", "coffee beans", "wireless earbuds", "café au lait"]
    batch = engine.search_batch(queries)
    single = [BM25Search(default_shop.catalog, cache_bytes=0, progress=False).search(q) for q in queries]
    assert all(np.array_equal(a, b) for a, b in zip(batch, single))
    assert batch[0] is batch[1] and len(batch[3]) == 0
    assert all(r.dtype == np.int32 and not r.flags.writeable for r in batch)
    assert engine.search("RED dress") is batch[0] and engine.cache.hits >= 1
    assert len(engine.search("shoes", k=7)) <= 7 and len(engine.search("shoes", k=0)) == 0


def test_one_query_path_equals_the_batch_kernel(real_shop, real_dir):
    """A lone query (per-thread arrays, the kernel's entry point) ranks as the batch kernel call does."""
    queries = [q for _, q in parity_queries(list(real_shop.catalog.title), list(real_shop.goals.instruction), 150, seed=4)]
    queries += ["the of and", "zzqx unknownword", "red dress zzqx"]  # stop words only, unknown terms
    for index in (None, real_dir / "reference_index_1k"):
        engine = BM25Search(real_shop.catalog, index=index, cache_bytes=0, progress=False, ranges=False)
        for k in (50, 3):
            batch = engine._search_many(queries, k)
            alone = [engine._search_many([q], k)[0] for q in queries]
            assert all(np.array_equal(a, b) for a, b in zip(alone, batch))
            assert all(r.dtype == np.int32 and not r.flags.writeable for r in alone)
            assert sum(len(r) > 0 for r in alone) > 100


def test_one_query_batch_keeps_the_cache_accounting(default_shop):
    engine = BM25Search(default_shop.catalog, progress=False)
    assert len(engine.search_batch(["  "])[0]) == 0 and len(engine.cache) == 0 and engine.cache.misses == 1
    first = engine.search_batch(["Red  Dress"])[0]
    assert engine.search_batch(["red dress"])[0] is first and engine.cache.hits == 1 and len(engine.cache) == 1
    assert len(engine.search_batch(["red dress"], k=0)[0]) == 0


def test_query_cache_is_bounded_in_bytes():
    cache = QueryCache(max_bytes=200_000)
    rows = np.arange(50, dtype=np.int32)
    for i in range(2000):
        cache.put((f"query {i}", 50), rows)
        assert cache.nbytes <= 200_000
    assert 0 < len(cache) < 2000 and cache.get(("query 1999", 50)) is rows and cache.get(("query 0", 50)) is None
    cache.put(("x" * 30_000, 50), rows)  # more than an eighth of the budget: not kept
    assert cache.get(("x" * 30_000, 50)) is None
    off = QueryCache(0)
    off.put(("a", 50), rows)
    assert len(off) == 0
    with pytest.raises(ValueError, match="cache_bytes"):
        QueryCache(-1)


def test_entry_bytes_cover_what_an_entry_really_costs():
    cache = QueryCache(max_bytes=10**9)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(5000):
            rows = np.arange(i % 60, dtype=np.int32)
            rows.flags.writeable = False
            cache.put((f"some typical query number {i}", 50), rows)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used <= cache.nbytes <= 1.3 * used


def test_long_unique_searches_stay_within_the_budget(default_shop):
    engine = BM25Search(default_shop.catalog, cache_bytes=2_000_000, progress=False)
    for i in range(60):
        engine.search(f"{i} " + "red dress shoes " * 6000)  # ~100 KB each, 6 MB in all
        assert engine.cache.nbytes <= 2_000_000
    assert entry_bytes(("x" * 100, 50), np.zeros(50, np.int32)) > 300


def test_backend_selection(default_shop):
    from webshop_gym import load_shop

    assert isinstance(default_shop.engine, BM25Search) and default_shop.engine.backend == "bm25"
    pyserini = load_shop(progress=False, search_backend="pyserini")
    assert isinstance(pyserini.engine, LuceneSearch)
    assert np.array_equal(pyserini.search("gluten free snack"), default_shop.search("gluten free snack"))
    with pytest.raises(ValueError, match="search_backend='lucene' is not supported.*'bm25'"):
        load_shop(progress=False, search_backend="lucene")
    with pytest.raises(ValueError, match="did you mean 'pyserini'"):
        make_search(default_shop.catalog, backend="pyserin")


def test_gym_make_with_either_backend_plays_identically():
    import gymnasium as gym

    import webshop_gym  # noqa: F401

    actions = ["search[gluten free snack bars]", "click[next >]", "search[wireless earbuds with case]",
               "click[back to search]", "search[Red dress, size 8]"]
    runs = []
    for backend in ("bm25", "pyserini"):
        env = gym.make("webshop_gym:WebShop-v0", search_backend=backend)
        obs, _ = env.reset(seed=0, options={"goal_index": 3})
        trace = [obs]
        for a in actions:
            trace.append(env.step(a)[0])
        runs.append(trace)
        env.close()
    assert runs[0] == runs[1]


_JVM_FREE = textwrap.dedent("""
    import json, sys
    import numpy as np
    from webshop_gym import WebShopVectorEnv, load_shop
    from webshop_gym.search import java as _java
    shop = load_shop(progress=False)
    ascii_rows = shop.search("gluten free snack bars, 12 count")
    envs = WebShopVectorEnv(4, shop=shop, num_workers=2)
    envs.reset(seed=0)
    envs.step(["search[red dress]", "search[wireless earbuds]", "search[coffee 2 pack]", "click[nothing]"])
    import psutil
    children = [p for p in psutil.Process().children(recursive=True)]
    workers_with_jvm = sum(any("libjvm" in m.path for m in p.memory_maps()) for p in children)
    state = {"jvm": _java.is_started(), "jnius": "jnius" in sys.modules, "workers": len(children) >= 2,
             "workers_with_jvm": workers_with_jvm}
    envs.close()
    unicode_rows = shop.search("café crème, 12 count")
    state["jvm_after_unicode"] = _java.is_started()
    oracle = load_shop(progress=False, search_backend="pyserini")
    state["unicode_equal"] = bool(np.array_equal(unicode_rows, oracle.search("café crème, 12 count")))
    state["ascii_equal"] = bool(np.array_equal(ascii_rows, oracle.search("gluten free snack bars, 12 count")))
    print(json.dumps(state))
""")


def test_processes_and_workers_stay_jvm_free_and_quiet(default_shop):
    """No search starts a JVM, non-ASCII ones included (nor do workers); stderr stays empty."""
    result = subprocess.run([sys.executable, "-c", _JVM_FREE], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # no JVM or Lucene warnings, no progress bars
    state = json.loads(result.stdout)
    assert state == {"jvm": False, "jnius": False, "workers": True, "workers_with_jvm": 0, "unicode_equal": True,
                     "ascii_equal": True, "jvm_after_unicode": False}


def test_data_index_command_builds_index_and_postings(tmp_path, monkeypatch, capsys):
    from tests.helpers import product, write_shop
    from webshop_gym.cli.app import main
    from webshop_gym.data.catalog import load_catalog

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    folder = write_shop(tmp_path / "shop", [product(f"B00000000{i}", name=f"green tea {i}") for i in range(4)], {})
    assert main(["data", "index", str(folder)]) == 0
    out = capsys.readouterr().out
    engine = BM25Search(load_catalog(folder, progress=False), progress=False)
    assert str(engine.postings_path) in out and (engine.postings_path / "meta.json").is_file()
    assert len(engine.search("green tea")) == 4
