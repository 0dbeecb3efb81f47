"""The embedded shop's postings ship with the package (issue 45, item 5): a plain install searches it without Java.

The shipped files must be exactly what Pyserini's export of the embedded shop gives today (a
change to the shop, the compiler or the postings' format makes this test fail until they are
written again, as docs/release.md says), and a fresh cache must take them without starting a JVM.
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
from webshop_gym.search import BM25Search
from webshop_gym.search.release import write_shipped
from webshop_gym.search.shipped import SOURCE, shipped_folder
from webshop_gym.utils.paths import default_shop_dir


def test_the_shipped_postings_are_today_s_export_of_the_embedded_shop(tmp_path):
    if importlib.util.find_spec("pyserini") is None:
        pytest.skip("Pyserini exports the postings to compare with: pip install --no-deps pyserini==1.6.0")
    shipped = shipped_folder()
    stamp = json.loads((shipped / SOURCE).read_text(encoding="utf-8"))
    catalog = load_catalog(default_shop_dir(), progress=False)
    assert stamp["catalog"] == catalog.key, "the embedded shop's catalog changed: write the shipped postings again"
    assert stamp["postings"] == BM25Search(catalog, progress=False).postings_path.name
    fresh = write_shipped(tmp_path / "fresh")
    assert sorted(p.name for p in fresh.iterdir()) == sorted(p.name for p in shipped.iterdir())
    for name in stamp["files"]:
        if name.endswith(".npy"):
            a, b = np.load(shipped / name), np.load(fresh / name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        elif name == "meta.json":
            assert _untimed(json.loads((shipped / name).read_text())) == _untimed(json.loads((fresh / name).read_text()))
        else:
            assert (shipped / name).read_bytes() == (fresh / name).read_bytes(), name


def _untimed(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k not in ("seconds", "verify_seconds")}


def test_a_fresh_cache_searches_the_embedded_shop_without_pyserini(tmp_path):
    script = textwrap.dedent("""
        import json, sys
        sys.modules["pyserini"] = None  # as after a plain `pip install webshop-gym`: no Pyserini
        import gymnasium as gym
        import webshop_gym
        from webshop_gym import load_shop
        from webshop_gym.search import java

        env = gym.make("webshop_gym:WebShop-v0")
        env.reset(seed=0, options={"goal_index": 0})
        obs, *_ = env.step("search[red dress]")
        out = {"results": obs.count("[SEP] B0")}
        # another shop (the first 500 products): its postings are built, without Java too
        out["other"] = len(load_shop(num_products=500, progress=False).engine.search("red dress"))
        out["jvm"] = java._started
        print(json.dumps(out))
    """)
    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["results"] == 10 and out["other"] == 41 and out["jvm"] is False
    catalogs = tmp_path / "cache" / "catalogs"
    shipped = [f for f in catalogs.glob("*/postings-v2-analysis-v1") if f.parent.name == json.loads(
        (shipped_folder() / SOURCE).read_text(encoding="utf-8"))["catalog"]]
    assert len(shipped) == 1 and (shipped[0] / "checksums.json").is_file()
    assert json.loads((shipped[0] / "meta.json").read_text())["verified"]  # the shipped files, not a new build
    assert not list(catalogs.glob("*/index-v1")) and len(list(catalogs.glob("*/postings-v2-analysis-v1"))) == 2
