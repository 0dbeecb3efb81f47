"""Search benchmark: index build and export, uncached query latency, batch throughput, cache hits.

For each shop (generated with our generator at the given sizes, or folders given with
``--shops``) builds the Lucene index (timed) and exports its postings (timed), then measures
both backends on two sets of unique queries, no query cache (every query a miss):

* ``heads+soups``: product instructions without their price clause and word soups from
  product titles (2-8 words), the rows measured since issue 15;
* ``instructions``: what agents send, the goal instructions themselves without their price
  clause (``--instructions``, default 500 unique ones; 16 words on average), the case of
  issue 33, whose rows also count the queries on which a backend's top 50 differs from Pyserini's.

``bm25`` is the default backend (Pyserini's ranking from exported postings, a Numba kernel; on
shops of at least ``webshop_gym.search.ranges.MIN_DOCS`` documents it searches document ranges
grouped by product type, and ``bm25-plain``, the same backend on the plain postings, is timed
beside it); ``pyserini`` queries Lucene through the JVM.  Targets (issue 15): uncached p50 <=
0.2 ms at 1k products and <= 1 ms at 1M, batch >= 5,000 uncached queries/s at 1k; (issue 33) on
instruction queries at 1M p50 <= 0.5 ms and p99 <= 3 ms.  Every row records the load average when it was measured (the figures
are only comparable from one quiet sitting).

    python benchmarks/search.py --sizes 1000 100000
    python benchmarks/search.py --shops /work/big/shop-100k /work/big/shop-1m --skip-build

``--replicate R`` adds a stand-in for a shop R times larger when that one cannot be compiled:
the exported postings of the last shop, each document copied R times (same vocabulary and
document lengths, R times the documents and postings, every score tied R ways).  It times the
``bm25`` kernel only (over document ranges, built in memory, when the copy has at least MIN_DOCS
documents), on the same queries, and is labelled ``replicated`` in the results.
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


def _queries(catalog, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    instructions = [t for t in catalog.instruction if t]
    heads = list(dict.fromkeys(t.split(", and price")[0] for t in rng.sample(instructions, min(len(instructions), 4 * n))))
    titles = [catalog.title[rng.randrange(len(catalog))] for _ in range(2 * n)]
    words = " ".join(titles).lower().split()
    soups = [" ".join(rng.choice(words) for _ in range(rng.randint(2, 8))) for _ in range(n)]
    queries = list(dict.fromkeys(heads[: n // 2] + soups))[:n]  # unique: every query is a cache miss
    rng.shuffle(queries)
    return queries


def _instructions(shop, n: int, seed: int) -> list[str]:
    """``n`` unique goal instructions without their price clause, in a seeded random order."""
    rng = random.Random(seed)
    texts = shop.goals.instruction
    out: dict[str, None] = {}
    for i in rng.sample(range(len(texts)), len(texts)):
        out.setdefault(texts[i].split(", and price")[0], None)
        if len(out) == n:
            break
    return list(out)


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else ""


def _latencies(engine, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        t = time.perf_counter()
        engine.search(q)
        out.append(time.perf_counter() - t)
    out.sort()
    return out


def measure(folder: Path, queries_n: int, instructions_n: int, seed: int, skip_build: bool) -> list[dict]:
    from webshop_gym import load_shop
    from webshop_gym.search import BM25Search, LuceneSearch

    shop = load_shop(folder, progress=True)
    catalog = shop.catalog
    bm25 = BM25Search(catalog, cache_bytes=0, progress=True)
    build_s = export_s = ranges_s = None
    if not skip_build:
        shutil.rmtree(bm25.index_path, ignore_errors=True)
        shutil.rmtree(bm25.postings_path, ignore_errors=True)
        shutil.rmtree(bm25.ranges_path, ignore_errors=True)
        from webshop_gym.search.indexing import build_analysed_postings
        from webshop_gym.search.lucene import build_index

        t = time.perf_counter()
        build_index(catalog, bm25.index_path, progress=True)  # Pyserini's, for the pyserini rows
        build_s = time.perf_counter() - t
        t = time.perf_counter()  # the bm25 backend's postings, built without Java
        build_analysed_postings(catalog, bm25.postings_path, progress=True)
        export_s = time.perf_counter() - t
        if bm25.ranges() is not None:
            ranges_s = bm25.ranges().meta["seconds"]
            bm25 = BM25Search(catalog, cache_bytes=0, progress=True)  # a fresh engine: load_s is a load, not a build
    t = time.perf_counter()
    bm25.prepare()
    load_s = time.perf_counter() - t
    sets = {"heads+soups": _queries(catalog, queries_n, seed)}
    if instructions_n:
        sets["instructions"] = _instructions(shop, instructions_n, seed)
    rows = []
    engines = [("bm25", bm25), ("pyserini", LuceneSearch(catalog, cache_bytes=0, progress=False))]
    if bm25.ranges() is not None:  # the default kernel searches document ranges here: time the plain one beside it
        engines.insert(1, ("bm25-plain", BM25Search(catalog, cache_bytes=0, progress=False, ranges=False)))
    ready = {}
    for name, engine in engines:
        t = time.perf_counter()
        engine.prepare()
        ready[name] = time.perf_counter() - t
        for q in sets["heads+soups"][:20]:
            engine.search(q + " warm up")
    differ = {}
    if "instructions" in sets:
        from webshop_gym.search.parity import compare

        for name, engine in engines[:-1]:
            differ[("instructions", name)] = len(compare(engine, engines[-1][1], sets["instructions"]))
    for (kind, queries), (name, engine) in ((s, e) for s in sets.items() for e in engines):
        ready_s = ready[name]
        engine.cache = type(engine.cache)(0)
        lat = _latencies(engine, queries)
        t = time.perf_counter()
        engine.search_batch(queries)
        batch_qps = len(queries) / (time.perf_counter() - t)
        engine.cache = type(engine.cache)(64 * 1024 * 1024)
        engine.search_batch(queries[:200])
        hits = []
        for _ in range(10):
            for q in queries[:200]:
                t = time.perf_counter()
                engine.search(q)
                hits.append(time.perf_counter() - t)
        gc.collect()
        meta = bm25.postings().meta
        rows.append({
            "products": len(catalog),
            "shop": folder.name,
            "queries_kind": kind,
            "words": round(statistics.mean(len(q.split()) for q in queries), 1),
            "backend": name,
            "ranges": name == "bm25" and bm25.ranges() is not None,
            "index_build_s": round(build_s, 2) if build_s is not None else None,
            "postings_export_s": round(export_s, 2) if export_s is not None and name == "bm25" else None,
            "ranges_build_s": ranges_s if name == "bm25" else None,
            "ready_s": round(load_s if name == "bm25" else ready_s, 3),
            "queries": len(queries),
            "p50_ms": round(1e3 * statistics.median(lat), 3),
            "p90_ms": round(1e3 * lat[int(0.9 * (len(lat) - 1))], 3),
            "p99_ms": round(1e3 * lat[int(0.99 * (len(lat) - 1))], 3),
            "batch_qps": round(batch_qps),
            "cached_hit_us": round(1e6 * statistics.median(hits), 2),
            "postings": meta["postings"],
            "postings_mb": round((bm25.postings().nbytes() + (bm25.ranges().nbytes() if bm25.ranges() else 0)) / 2**20, 1)
            if name == "bm25" else None,
            "rss_mb": round(rss_mb(), 1),
            "top50_differ": differ.get((kind, name)),
            "loadavg": _loadavg(),
        })
        print(rows[-1], flush=True)
    return rows


def replicated(folder: Path, times: int, queries_n: int, seed: int) -> dict:
    """The bm25 backend over a shop's postings copied ``times`` times (see the module docstring)."""
    import numpy as np

    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.search import BM25Search, scoring
    from webshop_gym.search.postings import Postings
    from webshop_gym.search.ranges import MIN_DOCS, build_ranges, document_order

    catalog = load_catalog(folder, progress=False)
    engine = BM25Search(catalog, cache_bytes=0, progress=False)
    small = engine.postings()
    n = small.num_docs
    df = np.diff(np.asarray(small.term_ptr))
    ptr = np.zeros(len(df) + 1, np.int64)
    ptr[1:] = np.cumsum(df * times)
    docs = np.empty(ptr[-1], np.int32)
    freqs = np.empty(ptr[-1], small.freqs.dtype)
    for t in range(len(df)):
        lo, hi = small.term_ptr[t], small.term_ptr[t + 1]
        docs[ptr[t] : ptr[t + 1]] = (np.asarray(small.docs[lo:hi])[None, :] + (np.arange(times) * n)[:, None]).ravel()
        freqs[ptr[t] : ptr[t + 1]] = np.tile(np.asarray(small.freqs[lo:hi]), times)
    engine._postings = Postings(
        terms=small.terms, term_ptr=ptr, docs=docs, freqs=freqs, norms=np.tile(np.asarray(small.norms), times),
        doc_rows=np.tile(np.asarray(small.doc_rows), times), idf=scoring.idf(df * times, small.doc_count * times),
        doc_count=small.doc_count * times, total_tokens=small.total_tokens * times)
    # never the catalog's cached ranges (they belong to the small shop): built here, in memory
    engine._ranges = build_ranges(engine._postings, document_order(engine._postings, catalog.query)) \
        if n * times >= MIN_DOCS else None
    engine._ranges_checked = True
    queries = _queries(catalog, queries_n, seed)
    engine.search_batch(queries[:20])
    lat = _latencies(engine, queries)
    t = time.perf_counter()
    engine.search_batch(queries)
    row = {"products": n * times, "shop": f"{folder.name} x{times} (replicated)", "backend": "bm25",
           "queries": len(queries), "p50_ms": round(1e3 * statistics.median(lat), 3),
           "p90_ms": round(1e3 * lat[int(0.9 * (len(lat) - 1))], 3), "p99_ms": round(1e3 * lat[int(0.99 * (len(lat) - 1))], 3),
           "batch_qps": round(len(queries) / (time.perf_counter() - t)), "postings": int(ptr[-1]),
           "postings_mb": round((docs.nbytes + freqs.nbytes) / 2**20, 1), "rss_mb": round(rss_mb(), 1)}
    print(row, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100000], help="generated shop sizes (products)")
    parser.add_argument("--shops", nargs="+", default=None, help="existing shop folders instead of generated ones")
    parser.add_argument("--queries", type=int, default=2000, help="unique heads+soups queries (default 2,000)")
    parser.add_argument("--instructions", type=int, default=500,
                        help="unique goal instructions without their price clause (default 500; 0: none)")
    parser.add_argument("--work", default="/tmp/webshop-gym-bench", help="where generated shops are kept")
    parser.add_argument("--seed", type=int, default=0, help="generator and query seed")
    parser.add_argument("--skip-build", action="store_true", help="reuse cached indexes (no build/export timing)")
    parser.add_argument("--replicate", type=int, default=0, metavar="R",
                        help="also time bm25 on the last shop's postings copied R times (a stand-in, labelled)")
    args = parser.parse_args()
    if args.shops:
        folders = [Path(s) for s in args.shops]
    else:
        from webshop_gym.data.synth import generate_shop

        folders = []
        for size in args.sizes:
            folder = Path(args.work) / f"shop-{size}"
            if not (folder / "items_shuffle.json").is_file():
                folder.parent.mkdir(parents=True, exist_ok=True)
                generate_shop(folder, size, seed=args.seed, progress=True)
            folders.append(folder)
    rows = [row for folder in folders
            for row in measure(folder, args.queries, args.instructions, args.seed, args.skip_build)]
    if args.replicate > 1:
        rows.append(replicated(folders[-1], args.replicate, args.queries, args.seed))
    columns = ["products", "queries_kind", "words", "backend", "ranges", "index_build_s", "postings_export_s", "ranges_build_s",
               "ready_s", "p50_ms", "p90_ms", "p99_ms",
               "batch_qps", "cached_hit_us", "postings_mb", "rss_mb", "top50_differ", "loadavg"]
    print(table(rows, columns))
    print("wrote", save("search", {
        "rows": rows,
        "conditions": "unique queries (heads+soups: product instruction heads and title-word soups; "
                      "instructions: goal instructions without their price clause), k = 50, query cache off, one "
                      "process, warm OS file cache; bm25 = the default backend (ranges: whether it searches "
                      "document ranges, shops of at least MIN_DOCS documents), bm25-plain = the same backend on the "
                      "plain postings, timed beside it where they differ; batch = one search_batch over all "
                      "queries; cached hit = LRU lookup; top50_differ = queries whose top 50 differ from "
                      "pyserini's; postings_mb = postings plus ranges; loadavg = /proc/loadavg when the row was "
                      "measured",
    }))


if __name__ == "__main__":
    main()
