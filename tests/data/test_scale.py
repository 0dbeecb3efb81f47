"""Large-shop paths on a generated shop: stages cached and reused, nouns tagged on demand, equal results.

The shop is small enough for CI (a few thousand products), with the tagging threshold lowered so
that it takes the paths a 1M-product shop takes: no title tagged at compile time, each one on
first use (a goal's title at its first purchase).  Timing and memory at 100k and 1M products are checked by
``benchmarks/scale.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from webshop_gym import shop as shop_module
from webshop_gym.data import catalog as catalog_module
from webshop_gym.data.tagger import NOUN_TAGS, load_full_pipeline
from webshop_gym.utils.paths import is_built

ROOT = Path(__file__).resolve().parents[2]

_ROLLOUT = """
import json, sys
import numpy as np
from webshop_gym.engine import Engine
from webshop_gym.shop import load_shop
shop = load_shop(sys.argv[1], progress=False, seed=int(sys.argv[2]))
goals = shop.goals
digest = goals.digest()
engine = Engine(shop, 4)
ids = [0, 1, 2, len(goals) - 1]
engine.reset(range(4), ids)
observations = [engine.observe(s) for s in range(4)]
for action in ("search[{}]".format(goals.instruction[0][:40]), "click[next >]"):
    engine.step(range(4), [action] * 4)
    observations += [engine.observe(s) for s in range(4)]
rng = np.random.default_rng(3)
g = rng.integers(len(goals), size=400)
rows = rng.integers(len(shop.catalog), size=400)
totals, _ = shop.reward_batch(g.tolist(), [shop.catalog.asin[int(r)] for r in rows], [{}] * 400)
print(json.dumps({"report": shop.load_report, "digest": digest, "goals": [goals[i] for i in (0, 7, len(goals) - 1)],
                  "prices": float(np.asarray(shop.prices).sum()), "observations": observations,
                  "rewards": totals.tolist()}))
"""


@pytest.fixture(scope="module")
def big_shop(tmp_path_factory):
    """A 1,500-product generated shop compiled like a large one (titles tagged on first use)."""
    from webshop_gym.data.synth import generate_shop
    from webshop_gym.shop import _load, load_shop

    base = tmp_path_factory.mktemp("scale")
    generate_shop(base / "shop", 1500, seed=5, progress=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(catalog_module, "TAG_ALL_UP_TO", 100)
        patch.setenv("WEBSHOP_GYM_CACHE", str(base / "cache"))
        _load.cache_clear()
        shop = load_shop(base / "shop", progress=False)
        _load.cache_clear()
    return base / "shop", base / "cache", shop


def _run(shop: Path, cache: Path, seed: int) -> dict:
    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _ROLLOUT, str(shop), str(seed)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_maps_everything_and_agrees(big_shop):
    shop_dir, cache, shop = big_shop
    report = shop.load_report
    assert not any(report[k]["cached"] for k in ("catalog", "goals", "prices", "nouns", "reward_tables"))
    store = shop.catalog.title_noun_store
    tagged = np.asarray(store.tagged)
    assert not store.complete and tagged.sum() == 0  # no title was tagged at compile time
    assert not store._extra  # nor while loading (the kernel was compiled without tagging one)

    first = _run(shop_dir, cache, 0)
    second = _run(shop_dir, cache, 0)
    for result in (first, second):
        stages = {k: v for k, v in result["report"].items() if isinstance(v, dict)}
        assert all(v["cached"] for v in stages.values()), stages
    for key in ("digest", "goals", "prices", "observations", "rewards"):
        assert first[key] == second[key], key
    assert first["digest"] == shop.goals.digest()
    assert first["goals"] == [shop.goals[i] for i in (0, 7, len(shop.goals) - 1)]
    # the first run tagged the purchased and goal titles it lacked and left them for the second
    assert (shop.catalog.folder / (catalog_module.NOUNS_FOLDER + ".extra")).stat().st_size > 0


def test_changed_price_seed_reuses_everything_but_prices(big_shop):
    shop_dir, cache, shop = big_shop
    other = _run(shop_dir, cache, 11)
    stages = {k: v["cached"] for k, v in other["report"].items() if isinstance(v, dict)}
    assert stages == {"catalog": True, "goals": True, "prices": False, "nouns": True, "reward_tables": True}
    assert other["prices"] != float(np.asarray(shop.prices).sum()) and other["digest"] != shop.goals.digest()
    strip = lambda goal: {**goal, "instruction_text": goal["instruction_text"].split(", and price lower than")[0],  # noqa: E731
                          "price_upper": None}
    base = [shop.goals[i] for i in (0, 7, len(shop.goals) - 1)]
    assert [strip(g) for g in other["goals"]] == [strip(g) for g in base]
    assert (shop.goals.folder / "seed-11" / "meta.json").is_file()  # the next load maps it


def test_nouns_tagged_on_demand_equal_the_full_pipeline(big_shop, tmp_path, monkeypatch):
    shop_dir, cache, _ = big_shop
    shutil.copytree(cache, tmp_path / "cache")  # this test completes the nouns: work on a copy
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    catalog = catalog_module.load_catalog(shop_dir, progress=False)
    store = catalog.title_noun_store
    untagged = [r for r in np.flatnonzero(~np.asarray(store.tagged)).tolist() if r not in store._extra][:40]
    assert len(untagged) == 40
    full = load_full_pipeline()
    for row in untagged:
        expected = [t.text.lower() for t in full(catalog.title[row]) if t.pos_ in NOUN_TAGS]
        assert catalog.title_nouns(row) == expected
    offsets, values = catalog.product_nouns(untagged)
    for k, row in enumerate(untagged):
        assert values[offsets[k] : offsets[k + 1]].tolist() == sorted(set(store.sequence(row).tolist()))

    # Tagging every title (`webshop-gym data compile`) keeps the ids of what was tagged before.
    report = {}
    catalog.ensure_nouns(complete=True, report=report)
    assert report["nouns"]["cached"] is False and report["nouns"]["complete"] is True
    complete = catalog.title_noun_store
    assert complete.complete and np.asarray(complete.tagged).all()
    for row in range(len(catalog)):
        assert complete.sequence(row).tolist() == store.sequence(row).tolist()


def test_goal_titles_tagged_at_their_first_purchase_score_as_spacy_tags_them(big_shop, tmp_path, monkeypatch):
    """A large shop tags a goal's title at its first purchase; the rewards equal the reference's
    with nouns from spaCy's full pipeline, in a batch and one purchase at a time."""
    from webshop_gym.reward import reference
    from webshop_gym.shop import _load, load_shop

    shop_dir, cache, _ = big_shop
    shutil.copytree(cache, tmp_path / "cache")  # this test tags titles: work on a copy
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    _load.cache_clear()
    shop = load_shop(shop_dir, progress=False)
    _load.cache_clear()
    catalog, goals = shop.catalog, shop.goals
    store = catalog.title_noun_store
    done = lambda row: bool(store.tagged[row]) or row in store._extra  # noqa: E731
    rng = np.random.default_rng(8)
    by_target = {int(goals.target[g]): g for g in rng.permutation(len(goals)).tolist()}  # one goal a title
    picked = [g for t, g in by_target.items() if not done(t)][:60]
    assert len(picked) == 60
    # half buy the goal's own product (nouns in common), half another product
    rows = [int(goals.target[g]) if k % 2 else int(rng.integers(len(catalog))) for k, g in enumerate(picked)]
    full = load_full_pipeline()

    def nouns(text):
        return [t.text.lower() for t in full(text) if t.pos_ in NOUN_TAGS]

    def expected(g, row):
        return reference.reward(catalog.product_record(row), goals[g], float(shop.prices[row]), {},
                                nouns(catalog.title[row]), nouns(goals.name[g]))

    batch = shop.score_batch(picked[:40], [catalog.asin[r] for r in rows[:40]], [{}] * 40)
    assert all(done(int(goals.target[g])) for g in picked[:40])  # tagged by the purchase, kept for later
    assert not any(done(int(goals.target[g])) for g in picked[40:] if int(goals.target[g]) not in rows[:40])
    assert any(not done(int(goals.target[g])) for g in picked[40:])
    scores = [float(x) for x in batch.title_score]
    assert any(s > 0 for s in scores) and any(s == 0 for s in scores)  # both sides of the type factor
    for k, (g, row) in enumerate(zip(picked[:40], rows[:40])):
        total, info = expected(g, row)
        assert (float(batch.total[k]), batch.info(k)) == (total, info), (g, row)
    for g, row in zip(picked[40:], rows[40:]):  # the single env's path: one purchase a call
        assert shop.rewards.score_one(g, row, [], float(shop.prices[row])) == expected(g, row), (g, row)


def test_progress_false_silences_every_bar(tmp_path, monkeypatch, capfd):
    from webshop_gym.data.synth import generate_shop
    from webshop_gym.shop import _load, load_shop

    generate_shop(tmp_path / "shop", 400, seed=2, progress=False)
    monkeypatch.setattr(catalog_module, "TAG_ALL_UP_TO", 100)  # the large-shop paths
    monkeypatch.setenv("WEBSHOP_GYM_PROGRESS", "1")  # bars although stderr is not a terminal here
    capfd.readouterr()
    for progress, cache in ((False, "quiet"), (True, "loud")):
        # quietly: as a large shop, with the search index built in another process during the load
        monkeypatch.setattr(shop_module, "INDEX_AT_LOAD_FROM", 10**9 if progress else 100)
        monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / cache))
        _load.cache_clear()
        shop = load_shop(tmp_path / "shop", progress=progress)
        assert not any(v["cached"] for v in shop.load_report.values() if isinstance(v, dict))
        # a large shop's index is built during the load; a small one's waits for the first search
        assert ("search" in shop.load_report) is (not progress)
        assert is_built(shop.engine.postings_path) is (not progress)
        err = capfd.readouterr().err
        if progress:
            for bar in ("reading attributes", "reading human instructions", "reading products", "listing title tokens"):
                assert bar in err
        else:
            assert err == ""
    _load.cache_clear()


@pytest.mark.slow
def test_a_100k_product_shop_second_process_agrees(tmp_path):
    """At 100,000 products (the large-shop path unpatched): a second process maps every stage and agrees.

    The first process compiles (every title tagged on demand, none at compile time); the
    second maps it all and gives the same goals, prices, observations and rewards; a third with
    another price seed rebuilds only prices and caps.  Time and memory: ``benchmarks/scale.py``.
    """
    try:
        _check_a_100k_shop(tmp_path)
    finally:  # 650 MB of shop and cache: pytest keeps three runs' tmp_path, so it goes now
        shutil.rmtree(tmp_path / "shop", ignore_errors=True)
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)


def _check_a_100k_shop(tmp_path):
    from webshop_gym.data.synth import generate_shop

    generate_shop(tmp_path / "shop", 100_000, seed=1, progress=False)
    cache = tmp_path / "cache"
    first = _run(tmp_path / "shop", cache, 0)
    built = {k: v["cached"] for k, v in first["report"].items() if isinstance(v, dict)}
    # the search index is built in another process while the goals and reward tables are
    assert built == {"catalog": False, "goals": False, "prices": False, "search": False, "nouns": False,
                     "reward_tables": False}
    second = _run(tmp_path / "shop", cache, 0)
    stages = {k: v["cached"] for k, v in second["report"].items() if isinstance(v, dict)}
    assert all(stages.values()), stages
    for key in ("digest", "goals", "prices", "observations", "rewards"):
        assert first[key] == second[key], key
    other = _run(tmp_path / "shop", cache, 11)
    stages = {k: v["cached"] for k, v in other["report"].items() if isinstance(v, dict)}
    assert stages == {"catalog": True, "goals": True, "prices": False, "nouns": True, "reward_tables": True}
    assert other["prices"] != first["prices"] and other["digest"] != first["digest"]
