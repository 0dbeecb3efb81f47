"""The Java-free index build (postings plus stem table), one code tree against another, in one sitting.

Each run is a fresh process that imports ``webshop_gym`` from ``--roots`` (e.g. a worktree of the
previous commit, then this checkout), loads a compiled catalog, and builds the postings and the
stem table in memory as that tree's ``bm25`` backend does: before the one-pass build, the stem
table from a pass over every document, then the postings; after it, the postings, handing their
words to the table.  Runs alternate between the trees ``--repeat`` times.

    git worktree add --detach /tmp/before HEAD~1
    python benchmarks/index_build.py --roots /tmp/before . --shops /path/to/shop-100k

Writes ``benchmarks/results/index_build.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

_CHILD = """
import json, os, sys, time
root, shop = sys.argv[1], sys.argv[2]
sys.path.insert(0, root)
os.chdir(root)
from webshop_gym.data.catalog import load_catalog
from webshop_gym.search import stems as S
from webshop_gym.search.indexing import analysed_postings
cat = load_catalog(shop, progress=False)
t = time.perf_counter()
if "words" in analysed_postings.__code__.co_varnames:
    words = {}
    p = analysed_postings(cat, words=words)
    table = S.StemTable.build(S.catalog_words(cat, documents=False) | words.keys(), words)
else:
    table = S.StemTable.build(S.catalog_words(cat))
    p = analysed_postings(cat, table)
print(json.dumps({"root": root, "shop": os.path.basename(shop.rstrip("/")), "products": len(cat),
                  "seconds": round(time.perf_counter() - t, 2), "terms": len(p.terms), "postings": int(p.term_ptr[-1]),
                  "stem_words": len(table), "load": round(os.getloadavg()[0], 2)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", nargs="+", required=True, help="code trees to import webshop_gym from")
    parser.add_argument("--shops", nargs="+", required=True, help="shop folders (their catalogs are compiled first)")
    parser.add_argument("--repeat", type=int, default=2, help="alternations (default 2)")
    args = parser.parse_args()
    rows = []
    for shop in args.shops:
        for _ in range(args.repeat):
            for root in args.roots:
                out = subprocess.run([sys.executable, "-c", _CHILD, str(Path(root).resolve()), shop],
                                     check=True, capture_output=True, text=True).stdout
                rows.append(json.loads(out.strip().splitlines()[-1]))
                print(rows[-1], flush=True)
    print(table(rows, ["shop", "products", "root", "seconds", "terms", "postings", "stem_words", "load"]))
    print("wrote", save("index_build", {"rows": rows, "conditions": "fresh process per run, catalog compiled before; "
                                        "seconds: postings plus stem table built in memory; load: 1-minute load average"}))


if __name__ == "__main__":
    main()
