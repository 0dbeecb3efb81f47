"""Scale benchmark: first load, later loads and worker start of 1k / 100k / 1M-product shops.

For each size, with an empty cache folder (cold: nothing compiled; the shop's JSON files may sit
in the OS page cache):

* **first load**: ``load_shop`` in a fresh process compiles everything (streamed catalog, title
  nouns: every title up to 50,000 products, else only the title-token vocabulary, goals, prices,
  reward tables); wall and CPU time (the process and its tagging subprocesses), peak RSS of the
  process tree, time per stage;
* **second load**: ``load_shop`` in another fresh process maps the cache; time and RSS;
* **worker start**: ``WebShopVectorEnv(num_envs=8, num_workers=2)`` plus ``reset``: time until
  the spawned worker is ready (this process steps the other shard), and the worker's RSS before
  the first step.

Shops come from ``--shop SIZE=DIR`` or are generated under ``--work`` (``webshop-gym data synth
--products SIZE --seed 0``).  Targets (issue 16): first load of 1M products <= 5 min and <= 4 GB
peak RSS; later loads and each worker start <= 2 s and <= 1 GB RSS before the first step.

    python benchmarks/scale.py --sizes 1000 100000 1000000 --shop 1000000=/work/big/shop-1m
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, save, table  # noqa: E402

_CHILD_LOAD = """
import json, sys, time
started = time.perf_counter()
from webshop_gym import load_shop
import psutil
shop = load_shop(sys.argv[1], progress=False)
print(json.dumps({"seconds": time.perf_counter() - started, "rss_mb": psutil.Process().memory_info().rss / 2**20,
                  "goals": len(shop.goals), "products": len(shop.catalog), "report": shop.load_report}))
"""

_CHILD_WORKERS = """
import json, sys, time
started = time.perf_counter()
import psutil
from webshop_gym import WebShopVectorEnv
env = WebShopVectorEnv(shop=sys.argv[1], num_envs=8, num_workers=2)
env.reset(seed=0)
seconds = time.perf_counter() - started
workers = [p.memory_info().rss / 2**20 for p in psutil.Process().children(recursive=True)
           if "resource_tracker" not in " ".join(p.cmdline())]
print(json.dumps({"seconds": seconds, "worker_rss_mb": workers, "rss_mb": psutil.Process().memory_info().rss / 2**20}))
env.close()
"""


def _run(code: str, shop: Path, cache: Path, *extra: str) -> dict:
    """Run a child; return its JSON plus wall and CPU seconds and the peak RSS of its process tree."""
    import psutil

    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, str(shop), *extra], env=env, stdout=subprocess.PIPE, text=True)
    peak = [0.0]
    done = threading.Event()

    def sample():
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                total = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
                peak[0] = max(peak[0], total / 2**30)
            except psutil.Error:
                pass
            done.wait(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"child failed with status {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {**result, "wall_s": wall, "cpu_s": cpu, "peak_tree_gb": peak[0]}


def _shop_folder(size: int, work: Path, given: dict[int, Path]) -> Path:
    if size in given:
        return given[size]
    folder = work / f"shop-{size}"
    if not (folder / "items_shuffle.json").is_file():
        from webshop_gym.data.synth import generate_shop

        started = time.perf_counter()
        generate_shop(folder, size, seed=0, progress=True)
        print(f"generated {size:,} products in {time.perf_counter() - started:.0f} s", flush=True)
    return folder


def measure(size: int, shop: Path, work: Path, workers: bool) -> dict:
    cache = work / f"cache-{size}"
    shutil.rmtree(cache, ignore_errors=True)
    load_average = os.getloadavg()[0]
    first = _run(_CHILD_LOAD, shop, cache)
    print(f"{size:,}: first load {first['wall_s']:.1f} s", flush=True)
    second = _run(_CHILD_LOAD, shop, cache)
    stages = {k: v["seconds"] for k, v in first["report"].items() if isinstance(v, dict)}
    row = {
        "products": first["products"], "goals": first["goals"],
        "first load s": round(first["wall_s"], 1), "first load CPU s": round(first["cpu_s"], 1),
        "first load peak GB": round(first["peak_tree_gb"], 2),
        "stages s": stages,
        "second load s": round(second["seconds"], 3), "second load process s": round(second["wall_s"], 2),
        "second load RSS MB": round(second["rss_mb"]),
        "load average": round(load_average, 1),
    }
    if workers:
        start = _run(_CHILD_WORKERS, shop, cache)
        row["worker start s"] = round(start["seconds"], 2)
        row["worker RSS MB"] = round(max(start["worker_rss_mb"], default=0))
    return row


def remeasure_workers(sizes: list[int], work: Path, given: dict[int, Path]) -> None:
    """Measure the worker start again on compiled caches and update those rows of ``scale.json``."""
    path = RESULTS / "scale.json"
    previous = json.loads(path.read_text())
    by_size = {row["products"]: row for row in previous["rows"]}
    for size in sizes:
        cache = work / f"cache-{size}"
        if size not in by_size or not cache.is_dir():
            sys.exit(f"no earlier row or no cache for {size:,} products (run without --workers-only first)")
        start = _run(_CHILD_WORKERS, _shop_folder(size, work, given), cache)
        by_size[size]["worker start s"] = round(start["seconds"], 2)
        by_size[size]["worker RSS MB"] = round(max(start["worker_rss_mb"], default=0))
        by_size[size]["worker start measured"] = time.strftime("%Y-%m-%d")
        print({"products": size, "worker start s": by_size[size]["worker start s"],
               "worker RSS MB": by_size[size]["worker RSS MB"], "parent RSS MB": round(start["rss_mb"])}, flush=True)
    note = ("; worker start re-measured on the compiled caches after num_workers=2 came to mean this process "
            "plus one spawned worker")
    conditions = previous["conditions"] + ("" if note in previous["conditions"] else note)
    print(f"wrote {save('scale', {'rows': previous['rows'], 'conditions': conditions})}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000], help="shop sizes (products)")
    parser.add_argument("--shop", action="append", default=[], metavar="SIZE=DIR",
                        help="use an existing shop folder for a size (else generated under --work)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/webshop-gym-bench"),
                        help="folder for generated shops and the caches (emptied per size)")
    parser.add_argument("--no-workers", action="store_true", help="skip the worker-start measurement")
    parser.add_argument("--workers-only", action="store_true",
                        help="only re-measure the worker start, on the caches the last run left under --work; "
                             "the other figures are kept from benchmarks/results/scale.json")
    args = parser.parse_args()
    given = {}
    for item in args.shop:
        size, _, folder = item.partition("=")
        given[int(size)] = Path(folder)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.workers_only:
        remeasure_workers(args.sizes, args.work, given)
        return
    rows = []
    for size in args.sizes:
        rows.append(measure(size, _shop_folder(size, args.work, given), args.work, not args.no_workers))
    columns = ["products", "goals", "first load s", "first load CPU s", "first load peak GB", "second load s",
               "second load RSS MB", "worker start s", "worker RSS MB", "load average"]
    print(table(rows, columns))
    for row in rows:
        print(f"{row['products']:,} products, first-load stages (s): {json.dumps(row['stages s'])}")
    conditions = ("cold cache folder (nothing compiled), shop files possibly in the OS page cache; first load: "
                  "wall time of a fresh process, CPU time of it and its tagging subprocesses, peak RSS of the "
                  "process tree sampled every 0.25 s; second load: load_shop in another fresh process; worker "
                  "start: WebShopVectorEnv(num_envs=8, num_workers=2) + reset, RSS of each spawned worker")
    print(f"\nwrote {save('scale', {'rows': rows, 'conditions': conditions})}")


if __name__ == "__main__":
    main()
