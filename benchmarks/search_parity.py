"""Ranking parity: the ``bm25`` backend against Pyserini on >= 20,000 queries per shop.

For each shop, draws queries from :func:`webshop_gym.search.parity.parity_queries` (goal
instructions and their price-less heads, word subsets, word soups, repeated words, numbers,
apostrophes, hyphens, Lucene syntax, punctuation, case and white space, Unicode, very long
queries, queries around Lucene's 1,024-clause limit) and compares the top 50 (ids and order) of
``BM25Search`` with Pyserini's ``LuceneSearcher`` over the same index (``ranges``: whether
``BM25Search`` searched document ranges grouped by product type, as it does from
``webshop_gym.search.ranges.MIN_DOCS`` documents on).  On the real shop it also
compares both with the reference implementation's own index (``reference_index_1k``).  Writes
``benchmarks/results/search_parity.json``; any mismatch is listed there and fails the run.

    python benchmarks/search_parity.py --queries 20000
    python benchmarks/search_parity.py --shops data /path/to/shop --queries 2000
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "webshop-small"


def instructions_of(catalog, folder: Path) -> list[str]:
    golden = folder / "golden" / "goals.json"
    if golden.is_file():
        import json

        return [g["instruction_text"] for g in json.loads(golden.read_text())]
    texts = [t for t in catalog.instruction if t]
    return texts or list(catalog.title)


def run_pair(name: str, ours, oracle, queries: list[tuple[str, str]]) -> dict:
    from webshop_gym.search.parity import compare

    texts = [q for _, q in queries]
    for engine in (ours, oracle):
        engine.search_batch(texts[:20])  # start the JVM, load postings and kernel
        engine.cache.clear()
    t = time.perf_counter()
    ours.search_batch(texts)
    ours_s = time.perf_counter() - t
    t = time.perf_counter()
    oracle.search_batch(texts)
    oracle_s = time.perf_counter() - t
    ours.cache.clear()
    oracle.cache.clear()
    bad = compare(ours, oracle, texts)
    kinds = collections.Counter(kind for kind, _ in queries)
    row = {
        "comparison": name,
        "queries": len(queries),
        "mismatches": len(bad),
        "non_ascii": sum(not q.isascii() for q in texts),
        "full_top50": sum(len(r) == 50 for r in oracle.search_batch(texts)),
        "ours_qps": round(len(texts) / ours_s),
        "pyserini_qps": round(len(texts) / oracle_s),
        "kinds": dict(kinds),
        "examples": [queries[i] for i in bad[:10]],
    }
    print({k: v for k, v in row.items() if k != "kinds"}, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shops", nargs="+", default=None,
                        help="shop folders (default: the embedded shop, the real 1k shop and /work/big/shop-100k when present)")
    parser.add_argument("--queries", type=int, default=20000, help="queries per shop (default 20,000)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the query draws")
    args = parser.parse_args()

    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.search import BM25Search, LuceneSearch
    from webshop_gym.search.parity import parity_queries
    from webshop_gym.utils.paths import default_shop_dir

    shops = [Path(s) for s in args.shops] if args.shops else [
        p for p in (default_shop_dir(), REAL, Path("/work/big/shop-100k")) if p.is_dir()]
    rows = []
    for folder in shops:
        catalog = load_catalog(folder, progress=True)
        queries = parity_queries(list(catalog.title), instructions_of(catalog, folder), args.queries, seed=args.seed)
        ours = BM25Search(catalog, progress=True)
        oracle = LuceneSearch(catalog, progress=True)
        rows.append({"shop": folder.name, "products": len(catalog), **run_pair("bm25 vs pyserini", ours, oracle, queries),
                     "ranges": ours.ranges() is not None})
        reference = folder / "reference_index_1k"
        if reference.is_dir():
            ref_oracle = LuceneSearch(catalog, index=reference, progress=False)
            rows.append({"shop": folder.name, "products": len(catalog),
                         **run_pair("bm25 (our index) vs pyserini (reference index)", ours, ref_oracle, queries)})
            ref_ours = BM25Search(catalog, index=reference, progress=False)
            rows.append({"shop": folder.name, "products": len(catalog),
                         **run_pair("bm25 (reference index) vs pyserini (reference index)", ref_ours, ref_oracle, queries)})
    columns = ["shop", "products", "comparison", "ranges", "queries", "mismatches", "non_ascii", "full_top50", "ours_qps",
               "pyserini_qps"]
    print(table(rows, columns))
    print("wrote", save("search_parity", {"rows": rows, "seed": args.seed,
                                          "conditions": "each backend with a cold query cache; queries/s of one "
                                                        "search_batch over all queries (Pyserini: Java batches of 64, 2 threads)"}))
    if any(r["mismatches"] for r in rows):
        sys.exit("MISMATCHES: see the JSON")


if __name__ == "__main__":
    main()
