"""Reward benchmark: the reference scorer vs the Numba kernel, and the kernel's JIT time.

Three scorers on the same random purchases (goal, product, selected options, price):

* ``reference-impl``: the reference implementation's way: our pure-Python scorer, but re-tagging
  both titles with spaCy's full English pipeline on every call, as the reference does;
* ``python``: our pure-Python reference scorer with title nouns tagged once at compile time;
* ``kernel``: the Numba batch kernel (``shop.rewards.score``).

Target: the kernel at batch 10,000 >= 100x the reference scorer.

    python benchmarks/reward.py --shop real --batches 1 100 10000 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "webshop-small"


def purchases(shop, n: int, seed: int = 0):
    """Random purchases: half of them the goal's own product; options drawn from the product."""
    rng = np.random.default_rng(seed)
    catalog, goals = shop.catalog, shop.goals
    g = rng.integers(len(goals), size=n)
    own = rng.random(n) < 0.5
    rows = np.where(own & (goals.target[g] >= 0), goals.target[g], rng.integers(len(catalog), size=n)).astype(np.int64)
    offsets = np.asarray(catalog.option_groups.offsets)
    group_values = catalog.group_values
    selected = []
    cache = {}
    for r in rows.tolist():
        groups = cache.get(r)
        if groups is None:
            groups = cache[r] = [np.asarray(group_values[gr]) for gr in range(offsets[r], offsets[r + 1])]
        selected.append([int(vals[rng.integers(len(vals))]) for vals in groups if rng.random() < 0.7])
    prices = np.asarray(shop.prices)[rows] * rng.choice([1.0, 2.5], size=n, p=[0.8, 0.2])
    return g.astype(np.int64), rows, selected, prices


def time_kernel(shop, batch: int, min_seconds: float = 1.0) -> float:
    """Median rate over repeated calls filling ``min_seconds`` (after as long a warm-up)."""
    g, rows, selected, prices = purchases(shop, batch, seed=batch)
    fz = [[int(x) for x in shop.rewards.value_ids(s)] for s in selected]
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < 2 * min_seconds or len(times) < 6:
        t = time.perf_counter()
        shop.rewards.score(g, rows, fz, prices)
        times.append(time.perf_counter() - t)
    measured = times[len(times) // 2 :]  # the second half: past the warm-up
    return batch / sorted(measured)[len(measured) // 2]


def time_python(shop, n: int, spacy_each_call: bool) -> float:
    from webshop_gym.reward import reference

    g, rows, selected, prices = purchases(shop, n, seed=7)
    catalog, goals = shop.catalog, shop.goals
    nlp = None
    if spacy_each_call:
        from webshop_gym.data.tagger import NOUN_TAGS, load_full_pipeline

        nlp = load_full_pipeline()

        def nouns(title):
            return [t.text.lower() for t in nlp(title) if t.pos_ in NOUN_TAGS]

    records = [catalog.product_record(int(r)) for r in rows]
    goal_dicts = [goals[int(i)] for i in g]
    options = [{f"o{k}": catalog.value_text[v] for k, v in enumerate(s)} for s in selected]
    t = time.perf_counter()
    for i in range(n):
        if spacy_each_call:
            pn, gn = nouns(records[i]["Title"]), nouns(goal_dicts[i]["name"])
        else:
            pn, gn = catalog.title_nouns(int(rows[i])), shop.rewards.goal_nouns(int(g[i]))
        reference.reward(records[i], goal_dicts[i], float(prices[i]), options[i], pn, gn)
    return n / (time.perf_counter() - t)


_JIT_SNIPPET = """
import time, webshop_gym
shop = webshop_gym.load_shop({shop!r}, progress=False)
shop.rewards.prepare()
t = time.perf_counter()
from webshop_gym.reward import _kernels
shop.rewards.warmup()
print(time.perf_counter() - t)
"""


def jit_seconds(shop_path) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        run = lambda: float(subprocess.run([sys.executable, "-c", _JIT_SNIPPET.format(shop=shop_path)],  # noqa: E731
                                           capture_output=True, text=True, env=env, check=True).stdout.split()[-1])
        cold = run()
        warm = run()
    return {"jit_cold_s": round(cold, 2), "jit_cached_s": round(warm, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shop", default="real", help="'real' (../shared/webshop-small) or 'default'")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 100, 10000, 1000000])
    parser.add_argument("--python-n", type=int, default=3000, help="purchases scored by the pure-Python scorer")
    parser.add_argument("--spacy-n", type=int, default=300, help="purchases scored the reference's way (spaCy per call)")
    args = parser.parse_args()
    import webshop_gym

    shop_path = str(REAL) if args.shop == "real" and REAL.is_dir() else None
    goals = str(REAL / "golden" / "goals.json") if shop_path else None
    shop = webshop_gym.load_shop(shop_path, goals=goals, progress=False)
    shop.rewards.warmup()
    ref_impl = time_python(shop, args.spacy_n, spacy_each_call=True)
    python = time_python(shop, args.python_n, spacy_each_call=False)
    rows = [{"scorer": "reference-impl (spaCy per call)", "batch": 1, "tuples_per_s": round(ref_impl, 1)},
            {"scorer": "python (nouns cached)", "batch": 1, "tuples_per_s": round(python, 1)}]
    for batch in args.batches:
        rate = time_kernel(shop, batch)
        rows.append({"scorer": "kernel", "batch": batch, "tuples_per_s": round(rate, 1),
                     "x_reference_impl": round(rate / ref_impl, 1), "x_python": round(rate / python, 1)})
    jit = jit_seconds(shop_path)
    print(table(rows, ["scorer", "batch", "tuples_per_s", "x_reference_impl", "x_python"]))
    print(json.dumps(jit))
    print("wrote", save("reward", {"shop": args.shop, "rows": rows, **jit}))


if __name__ == "__main__":
    main()
