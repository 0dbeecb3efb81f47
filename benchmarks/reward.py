"""Reward benchmark: the reference scorer vs the Numba kernel, and the kernel's JIT time.

Scorers on the same random purchases (goal, product, selected options, price):

* ``python, spaCy per call``: the reference implementation's way: our pure-Python scorer, but
  re-tagging both titles with spaCy's full English pipeline on every call, as the reference does;
* ``python``: our pure-Python reference scorer with title nouns tagged once at compile time;
* ``kernel``: the Numba batch kernel (``shop.rewards.score``);
* with ``--reference DIR`` (a checkout of princeton-nlp/WebShop, docs/benchmarks.md): the
  reference implementation itself, ``web_agent_site.engine.goal.get_reward`` imported from DIR,
  in a fresh process (``--reference-python``) right before ours, on the same purchases (its
  rewards checked against the kernel's).  Only then does the JSON hold ``x_reference_impl``: a
  ratio to a figure from another run is not one a user can reproduce.

Target: the kernel at batch 10,000 >= 100x the reference scorer.

    python benchmarks/reward.py --shop real --batches 1 100 10000 1000000
    python benchmarks/reward.py --reference ~/WebShop --reference-python ~/WebShop/.venv/bin/python
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
from _reference import ReferenceSetupError, locate  # noqa: E402
from _reference import run as run_reference  # noqa: E402

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


def fail(message: str) -> None:
    """A bad argument or setup: one line on stderr, exit status 2."""
    print(f"reward.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def reference_rewards(shop, args, goals_path: str) -> dict:
    """The reference's ``get_reward`` on ``args.reference_n`` purchases, in a fresh process."""
    g, rows, selected, prices = purchases(shop, args.reference_n, seed=7)
    catalog = shop.catalog
    items = [{"goal": int(g[i]), "asin": catalog.asin[int(rows[i])],
              "options": {f"o{k}": catalog.value_text[v] for k, v in enumerate(selected[i])},
              "price": float(prices[i])} for i in range(len(rows))]
    with tempfile.TemporaryDirectory() as tmp:
        bought = Path(tmp) / "purchases.json"
        bought.write_text(json.dumps(items))
        result = run_reference(args.reference_python, "reward", ["--reference", args.reference, "--shop", str(REAL),
                               "--goals", goals_path, "--purchases", str(bought)], tmp, "scorer", fail)
    ours = shop.rewards.score(g, rows, [[int(x) for x in shop.rewards.value_ids(s)] for s in selected], prices).total
    theirs = np.asarray(result.pop("rewards"))
    result["mismatches"] = int(np.sum(np.abs(np.asarray(ours, dtype=float) - theirs) > 1e-9))
    result["python"] = args.reference_python
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shop", default="real", help="'real' (../shared/webshop-small) or 'default'")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 100, 10000, 1000000])
    parser.add_argument("--python-n", type=int, default=3000, help="purchases scored by the pure-Python scorer")
    parser.add_argument("--spacy-n", type=int, default=300, help="purchases scored the reference's way (spaCy per call)")
    parser.add_argument("--reference", metavar="DIR",
                        help="a checkout of princeton-nlp/WebShop: time its get_reward first and report the ratio")
    parser.add_argument("--reference-python", metavar="PYTHON", default=sys.executable,
                        help="the interpreter with the reference's requirements (default: this one)")
    parser.add_argument("--reference-n", type=int, default=300, help="purchases scored by the reference")
    parser.add_argument("--json", metavar="FILE", help="write the JSON here (default benchmarks/results/reward.json)")
    args = parser.parse_args()
    if args.reference is not None:
        if args.shop != "real" or not (REAL / "golden" / "goals.json").is_file():
            fail(f"--reference needs the real shop with its golden goals ({REAL})")
        try:
            locate(args.reference, REAL)
        except ReferenceSetupError as exc:
            fail(str(exc))
        if not (os.path.isfile(args.reference_python) and os.access(args.reference_python, os.X_OK)):
            fail(f"--reference-python {args.reference_python}: not an executable file")
        if args.reference_n < 1:
            fail("--reference-n must be at least 1")
    import webshop_gym

    shop_path = str(REAL) if args.shop == "real" and REAL.is_dir() else None
    goals = str(REAL / "golden" / "goals.json") if shop_path else None
    shop = webshop_gym.load_shop(shop_path, goals=goals, progress=False)
    shop.rewards.warmup()
    ref = reference_rewards(shop, args, goals) if args.reference is not None else None
    spacy_each = time_python(shop, args.spacy_n, spacy_each_call=True)
    python = time_python(shop, args.python_n, spacy_each_call=False)
    rows = [{"scorer": "python, spaCy per call (the reference's way)", "batch": 1, "tuples_per_s": round(spacy_each, 1),
             "x_spacy_per_call": 1.0},
            {"scorer": "python (nouns cached)", "batch": 1, "tuples_per_s": round(python, 1),
             "x_spacy_per_call": round(python / spacy_each, 1)}]
    for batch in args.batches:
        rate = time_kernel(shop, batch)
        rows.append({"scorer": "kernel", "batch": batch, "tuples_per_s": round(rate, 1),
                     "x_spacy_per_call": round(rate / spacy_each, 1), "x_python": round(rate / python, 1)})
    columns = ["scorer", "batch", "tuples_per_s", "x_spacy_per_call", "x_python"]
    if ref is not None:
        rows.insert(0, {"scorer": "reference implementation (web_agent_site.engine.goal.get_reward)", "batch": 1,
                        "tuples_per_s": ref["tuples_per_s"]})
        for row in rows:
            row["x_reference_impl"] = round(row["tuples_per_s"] / ref["tuples_per_s"], 1)
        columns.insert(3, "x_reference_impl")
    jit = jit_seconds(shop_path)
    print(table(rows, columns))
    print(json.dumps(jit))
    payload = {"shop": args.shop, "rows": rows, **jit}
    if ref is not None:
        payload["reference"] = ref
        payload["reference_conditions"] = (
            f"the reference's get_reward (princeton-nlp/WebShop from {args.reference}) scored {args.reference_n} of "
            f"the same random purchases in a fresh process right before ours (spaCy model and products loaded "
            f"outside the timing); x_reference_impl = our purchases/s / the reference's, both from this run")
    print("wrote", save("reward", payload, Path(args.json) if args.json else None))
    if ref is not None and ref["mismatches"]:
        sys.exit(f"the reference's rewards differ from ours on {ref['mismatches']} purchases")


if __name__ == "__main__":
    main()
