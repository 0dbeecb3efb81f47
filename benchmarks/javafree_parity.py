"""The index built without Java against Pyserini's: build time, arrays and top-50 parity (issue 52, item 2).

For each shop: builds the ``bm25`` backend's postings from our own analysis of every document
(:func:`webshop_gym.search.indexing.analysed_postings`, no JVM) and, as the oracle, Pyserini's
Lucene index of the shop with its postings exported through Anserini's analyser (the previous
default, :func:`webshop_gym.search.postings.build_postings`, which checks them against the index);
times both; checks that the two sets of arrays are identical; then compares the top 50 of
``BM25Search`` over the Java-free postings with Pyserini's ``LuceneSearcher`` over its own index on
the golden queries (the searches of the golden trajectories, then goal instructions: 600; a shop
without a ``golden/`` folder is searched with ``--golden``'s, by default the real 1k shop's), and on ``--queries`` fuzzed queries (half
:func:`~webshop_gym.search.parity.parity_queries`, every kind; half
:func:`~webshop_gym.search.parity.typed_queries`, as models and shoppers type, beyond ASCII).
Everything is built into a temporary folder (the catalog itself comes from the cache).  Writes
``benchmarks/results/javafree_parity.json``; any difference fails the run.

    python benchmarks/javafree_parity.py                                   # the embedded and the real 1k shop
    python benchmarks/javafree_parity.py --shops /path/to/shop-100k --queries 10000 --out javafree_parity_100k
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "webshop-small"
ARRAYS = ("term_ptr", "docs", "freqs", "norms", "doc_rows", "idf", "tf", "max_tf")


def instructions_of(catalog, folder: Path) -> list[str]:
    golden = folder / "golden" / "goals.json"
    if golden.is_file():
        import json

        return [g["instruction_text"] for g in json.loads(golden.read_text())]
    return [t for t in catalog.instruction if t] or list(catalog.title)


def same_arrays(ours, theirs) -> bool:
    import numpy as np

    return ours.terms == theirs.terms and all(
        np.asarray(getattr(ours, n)).dtype == np.asarray(getattr(theirs, n)).dtype
        and np.array_equal(getattr(ours, n), getattr(theirs, n)) for n in ARRAYS)


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def run_shop(folder: Path, queries: int, seed: int, work: Path, golden: Path | None = None) -> dict:
    import numpy as np

    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.search import BM25Search, LuceneSearch, build_index
    from webshop_gym.search import java as _java
    from webshop_gym.search.indexing import analysed_postings
    from webshop_gym.search.parity import compare, golden_queries, parity_queries, typed_queries
    from webshop_gym.search.postings import assemble, build_postings, load_postings, save_postings
    from webshop_gym.search.stems import StemTable, catalog_words

    catalog = load_catalog(folder, progress=True)
    assemble(lambda start, stop: [["warm"]], 1, np.zeros(1, np.int32))  # compile the kernels before timing
    row: dict = {"shop": folder.name, "products": len(catalog), "load_before": load1()}
    t = time.perf_counter()
    words: dict[str, str] = {}
    ours_p = analysed_postings(catalog, words=words)  # as the bm25 backend builds it: the stems found on the way
    row["javafree_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    stems = StemTable.build(catalog_words(catalog, documents=False) | words.keys(), words)
    row["stems_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    _java.start()
    row["jvm_start_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    index = build_index(catalog, work / "index", progress=False)
    row["lucene_index_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    theirs_p = load_postings(build_postings(catalog, index, work / "export", progress=False))
    row["lucene_export_s"] = round(time.perf_counter() - t, 2)
    row["arrays_equal"] = same_arrays(ours_p, theirs_p)
    row["terms"], row["postings"] = len(ours_p.terms), int(ours_p.term_ptr[-1])
    # BM25Search over the Java-free postings (saved as the catalog's folder in a scratch cache)
    javafree = work / "javafree"
    javafree.mkdir()
    save_postings(javafree, ours_p)
    ours = BM25Search(catalog, cache_bytes=0, progress=False)
    ours._postings, ours._stems = load_postings(javafree), stems  # this run's arrays, not the cache's
    oracle = LuceneSearch(catalog, index=index / "lucene", cache_bytes=0, progress=False)
    titles, instructions = list(catalog.title), instructions_of(catalog, folder)
    sets = {"fuzzed": [q for _, q in parity_queries(titles, instructions, queries // 2, seed=seed)]
            + typed_queries(titles, instructions, queries - queries // 2, seed=seed)}
    golden = folder / "golden" if (folder / "golden").is_dir() else golden
    if golden is not None:
        sets = {"golden": golden_queries(golden, 600), **sets}
        row["golden_from"] = golden.parent.name
    for name, texts in sets.items():
        t = time.perf_counter()
        bad = compare(ours, oracle, texts)
        row[f"{name}_queries"] = len(texts)
        row[f"{name}_non_ascii"] = sum(not q.isascii() for q in texts)
        row[f"{name}_mismatches"] = len(bad)
        row[f"{name}_examples"] = [texts[i] for i in bad[:10]]
        row[f"{name}_compare_s"] = round(time.perf_counter() - t, 1)
    row["load_after"] = load1()
    print({k: v for k, v in row.items() if not k.endswith("_examples")}, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shops", nargs="+", default=None,
                        help="shop folders (default: the embedded shop and the real 1k shop when present)")
    parser.add_argument("--queries", type=int, default=10000, help="fuzzed queries per shop (default 10,000)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the query draws")
    parser.add_argument("--out", default="javafree_parity", help="name of the JSON in benchmarks/results")
    parser.add_argument("--golden", type=Path, default=REAL / "golden" if (REAL / "golden").is_dir() else None,
                        help="golden/ folder whose 600 queries a shop without its own is searched with "
                             "(default: the real 1k shop's, when present)")
    args = parser.parse_args()

    from webshop_gym.utils.paths import default_shop_dir

    shops = [Path(s) for s in args.shops] if args.shops else [p for p in (default_shop_dir(), REAL) if p.is_dir()]
    rows = []
    for folder in shops:
        with tempfile.TemporaryDirectory(prefix="webshop-gym-javafree-") as tmp:
            rows.append(run_shop(folder, args.queries, args.seed, Path(tmp), args.golden))
    columns = ["shop", "products", "javafree_s", "stems_s", "jvm_start_s", "lucene_index_s", "lucene_export_s",
               "arrays_equal", "golden_queries", "golden_mismatches", "fuzzed_queries",
               "fuzzed_non_ascii", "fuzzed_mismatches", "load_before", "load_after"]
    print(table(rows, columns))
    print("wrote", save(args.out, {
        "rows": rows, "seed": args.seed,
        "conditions": "one process per run; javafree_s: our analysis of every document and the assembly of the "
                      "postings (the stem table, built first, is stems_s); the Java path: the JVM's start, "
                      "Pyserini's index (4 indexing threads) and the export of its postings through Anserini's "
                      "analyser with the check against the index; both backends with the query cache off; "
                      "load: the 1-minute load average before and after"}))
    if any(not r["arrays_equal"] or r.get("golden_mismatches") or r["fuzzed_mismatches"] for r in rows):
        sys.exit("DIFFERENCES: see the JSON")


if __name__ == "__main__":
    main()
