"""What spaCy's exact tagging of the goals' titles costs: CPU per title, and the floor it set.

Until 2026-12-08 the first compile of a large shop tagged the titles its goals point at with spaCy (``en_core_web_sm``:
tokenizer, tok2vec, tagger and parser; the reward's type factor needs the coarse tags the
attribute ruler derives from the tags and dependency labels).  This script takes an evenly
spaced sample of those titles from a compiled shop, tags it in this one process exactly as the
compile does (:func:`webshop_gym.data.tagger.tag_here`, after a warm-up batch), and reports the
CPU seconds per title, with the parser and without it (the parser is needed: without it some
titles get other nouns; the count is printed).  From the shop's number of goal-target titles it
gives the floor the tagging alone put under a first compile on this machine's cores:
titles x CPU per title / cores (perfect sharing, nothing else running).  Large shops now tag
each title at its first purchase instead (docs/benchmarks.md, *Titles tagged on first use*);
``webshop-gym data compile`` still tags them all ahead, at this cost.

    python benchmarks/tagging.py /work/big/shop-1m --work /work/big/fullsize --sample 6000

``--work`` is the folder holding the compiled cache (``benchmarks/fullsize.py``'s); writes
``benchmarks/results/tagging.json``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shop", type=Path, help="shop folder (compiled into --work/cache first if needed)")
    parser.add_argument("--work", type=Path, required=True, help="folder whose cache/ holds the compiled shop")
    parser.add_argument("--sample", type=int, default=6000, help="titles to tag (default 6,000)")
    parser.add_argument("--out", default="tagging", help="name of the JSON in benchmarks/results")
    args = parser.parse_args()
    if args.sample < 100:
        parser.error("--sample must be at least 100")
    os.environ["WEBSHOP_GYM_CACHE"] = str(args.work / "cache")

    import numpy as np

    from webshop_gym.data import tagger
    from webshop_gym.data.catalog import load_catalog

    catalog = load_catalog(args.shop, progress=False)
    targets = catalog.goal_target_rows()
    rows = targets[np.linspace(0, len(targets) - 1, min(args.sample, len(targets))).astype(int)]
    titles = [catalog.title[int(r)] for r in rows]
    nlp = tagger.load_tagger()
    tagger.tag_here(titles[:200])  # warm-up: the model's first batch allocates
    load = os.getloadavg()[0]
    started = time.process_time()
    full = tagger.tag_here(titles)
    with_parser = (time.process_time() - started) / len(titles)
    with nlp.select_pipes(disable=["parser"]):
        started = time.process_time()
        bare = tagger.tag_here(titles)
        without_parser = (time.process_time() - started) / len(titles)
    cores = len(os.sched_getaffinity(0))
    row = {
        "shop": args.shop.name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes"),
        "load_before": round(load, 2), "cores": cores, "goal-target titles": int(len(targets)),
        "sample": len(titles), "ms per title": round(with_parser * 1e3, 3),
        "ms per title without parser": round(without_parser * 1e3, 3),
        "titles with other nouns without parser": sum(a != b for a, b in zip(full, bare, strict=True)),
        "tagging CPU s (all targets)": round(with_parser * len(targets), 1),
        "floor s on these cores": round(with_parser * len(targets) / cores, 1),
        "floor s without parser": round(without_parser * len(targets) / cores, 1),
    }  # fmt: skip
    print(table([row], [k for k in row if k not in ("shop", "date")]))
    conditions = ("an evenly spaced sample of the titles goals point at, tagged in one process as the compile "
                  "tags them (tag_here: batches of at most 500 titles / 50,000 characters), after a 200-title "
                  "warm-up; CPU time of this process; floor = CPU per title x goal-target titles / cores")
    print("wrote", save(args.out, {"rows": [row], "conditions": conditions}))


if __name__ == "__main__":
    main()
