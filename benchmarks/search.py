"""Search benchmark: index build, single-query latency, batch throughput, cache hits, RSS.

Generates shops of the given sizes with our generator (cached under --work), compiles them,
builds their Lucene indexes (timed) and measures queries.  Targets: a 1M-product index in
under 5 minutes on 2 cores, p50 < 5 ms at 1M products, a cached hit < 20 us.

    python benchmarks/search.py --sizes 1000 100000 1000000
"""

from __future__ import annotations

import argparse
import gc
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import rss_mb, save, table  # noqa: E402


def measure(size: int, work: Path, queries: int, seed: int) -> dict:
    from webshop_gym.catalog import load_catalog
    from webshop_gym.search import LuceneSearch
    from webshop_gym.synth import generate_shop

    folder = work / f"shop-{size}"
    if not (folder / "items_shuffle.json").is_file():
        t = time.perf_counter()
        generate_shop(folder, size, seed=seed, progress=True)
        print(f"generated {size} products in {time.perf_counter() - t:.1f} s", flush=True)
    catalog = load_catalog(folder, progress=True)
    compile_s = catalog.meta["compile_seconds"]  # measured when the catalog was first compiled
    engine = LuceneSearch(catalog, cache_size=0, progress=True)
    shutil.rmtree(engine.index_path, ignore_errors=True)
    t = time.perf_counter()
    engine.searcher()  # builds the index, starts the JVM
    build_s = time.perf_counter() - t
    rng = random.Random(seed)
    titles = [catalog.title[rng.randrange(len(catalog))] for _ in range(queries * 2)]
    words = " ".join(titles).lower().split()
    qs = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 8))) for _ in range(queries)]
    for q in qs[:50]:  # JIT warm-up
        engine.search(q + " warm")
    lat = []
    for q in qs:
        t = time.perf_counter()
        engine.search(q)
        lat.append(time.perf_counter() - t)
    lat.sort()
    t = time.perf_counter()
    engine.search_batch(qs)  # the same queries (the engine has no cache), in Java batches of 64
    batch_qps = len(qs) / (time.perf_counter() - t)
    cached = LuceneSearch(catalog, cache_size=10000, progress=False)
    cached._searcher = engine.searcher()
    for q in qs[:100]:
        cached.search(q)
    hits = []
    for _ in range(20):
        for q in qs[:100]:
            t = time.perf_counter()
            cached.search(q)
            hits.append(time.perf_counter() - t)
    gc.collect()
    row = {
        "products": size,
        "compile_s": round(compile_s, 2),
        "index_build_s": round(build_s, 2),
        "p50_ms": round(1e3 * statistics.median(lat), 3),
        "p99_ms": round(1e3 * lat[int(0.99 * (len(lat) - 1))], 3),
        "batch_qps": round(batch_qps, 1),
        "cached_hit_us": round(1e6 * statistics.median(hits), 2),
        "rss_mb": round(rss_mb(), 1),
    }
    print(row, flush=True)
    engine.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000], help="shop sizes (products)")
    parser.add_argument("--queries", type=int, default=500, help="queries per measurement")
    parser.add_argument("--work", default="/tmp/webshop-gym-bench", help="where generated shops are kept")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    args = parser.parse_args()
    rows = [measure(size, Path(args.work), args.queries, args.seed) for size in args.sizes]
    columns = ["products", "compile_s", "index_build_s", "p50_ms", "p99_ms", "batch_qps", "cached_hit_us", "rss_mb"]
    print(table(rows, columns))
    print("wrote", save("search", {"rows": rows}))


if __name__ == "__main__":
    main()
