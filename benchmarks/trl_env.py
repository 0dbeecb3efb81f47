"""Cost of TRL's environment pool: N ``WebShopToolEnv`` instances in one process.

TRL's ``GRPOTrainer(environment_factory=WebShopToolEnv)`` keeps one instance per rollout of a
generation batch (hundreds to thousands on a large run).  Every instance shares the process's one
loaded shop, so an instance is a one-slot engine.  This measures, in a fresh process:

* **shop load**: the first instance (loads the shop from the cache; compiles it on a cold cache);
* **construct**: ``WebShopToolEnv()`` N times: wall time and RSS growth;
* **reset**: ``reset(goal_index=...)`` on every instance (a train goal each): time and RSS growth;
* **search**: one ``search(instruction)`` on every instance (results pages held): time and RSS growth.

    python benchmarks/trl_env.py --instances 1000
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import rss_mb, save, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=1000, help="instances to build (default 1000)")
    parser.add_argument("--shop", default=None, help="a shop directory (default: the embedded shop)")
    args = parser.parse_args()
    if args.instances < 1:
        parser.error("--instances must be >= 1")

    start_rss = rss_mb()
    started = time.perf_counter()
    from webshop_gym.integrations.trl import WebShopToolEnv, webshop_dataset

    first = WebShopToolEnv(shop=args.shop)
    load_s = time.perf_counter() - started
    rows = webshop_dataset("train", shop=args.shop, as_dataset=False)
    gc.collect()
    rss_before = rss_mb()

    started = time.perf_counter()
    envs = [first] + [WebShopToolEnv(shop=args.shop) for _ in range(args.instances - 1)]
    construct_s = time.perf_counter() - started
    gc.collect()
    rss_built = rss_mb()
    assert all(env.shop is first.shop for env in envs)

    started = time.perf_counter()
    for i, env in enumerate(envs):
        env.reset(**rows[i % len(rows)])
    reset_s = time.perf_counter() - started
    gc.collect()
    rss_reset = rss_mb()

    started = time.perf_counter()
    for env in envs:
        env.search(env.instruction)
    search_s = time.perf_counter() - started
    gc.collect()
    rss_search = rss_mb()

    n = args.instances
    stages = [
        {"stage": "shop load (first instance)", "seconds": round(load_s, 3), "rss_mb": round(rss_before - start_rss, 1)},
        {"stage": f"construct {n}", "seconds": round(construct_s, 4), "us_each": round(construct_s / n * 1e6, 1),
         "rss_mb": round(rss_built - rss_before, 2), "kb_each": round((rss_built - rss_before) * 1024 / n, 2)},
        {"stage": f"reset {n}", "seconds": round(reset_s, 4), "us_each": round(reset_s / n * 1e6, 1),
         "rss_mb": round(rss_reset - rss_built, 2), "kb_each": round((rss_reset - rss_built) * 1024 / n, 2)},
        {"stage": f"search on {n}", "seconds": round(search_s, 4), "us_each": round(search_s / n * 1e6, 1),
         "rss_mb": round(rss_search - rss_reset, 2), "kb_each": round((rss_search - rss_reset) * 1024 / n, 2)},
    ]
    load = os.getloadavg()
    conditions = (f"one process, {os.cpu_count()} CPUs shared with other jobs (load average {load[0]:.1f} at the end): "
                  "times are wall clock on a busy machine; RSS growth is per stage after gc.collect()")
    print(table(stages, ["stage", "seconds", "us_each", "rss_mb", "kb_each"]))
    print(f"total RSS {rss_search:.0f} MB; {conditions}")
    print("wrote", save("trl_env", {"instances": n, "shop": args.shop or "embedded", "stages": stages,
                                     "rss_total_mb": round(rss_search, 1), "load_average": [round(x, 2) for x in load],
                                     "conditions": conditions}))


if __name__ == "__main__":
    main()
