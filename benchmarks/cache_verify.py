"""Cost of the cache checksums (issue 20, G3): full check of every compiled folder, and a later load.

For each shop given as ``--shop NAME=DIR`` (compiled beforehand in ``--cache NAME=CACHE``; the
folder is the ``WEBSHOP_GYM_CACHE`` of that shop):

* **bytes** and **files** under checksum (every folder with a manifest: catalog, nouns, goals,
  prices, reward tables, index, postings);
* **check s**: reading every file and computing its CRC-32 (what the first load of a process
  does), best of ``--repeat`` runs (files in the OS page cache, as on a machine that loads the
  shop often);
* **load s, checked / sizes only**: ``load_shop`` + the search engine in a fresh process, with
  the content check and with it skipped (as in a worker whose parent checked), median of
  ``--repeat``.

    python benchmarks/cache_verify.py --shop 1k=data --cache 1k=.cache/webshop-gym \\
        --shop 100k=/tmp/shop-100k --cache 100k=/tmp/cache-100k
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

_CHILD = """
import json, sys, time
started = time.perf_counter()
from webshop_gym import load_shop
shop = load_shop(sys.argv[1], progress=False)
shop.engine.prepare(build=False)
print(json.dumps({"seconds": time.perf_counter() - started}))
"""


def _pairs(values: list[str]) -> dict[str, str]:
    return dict(v.split("=", 1) for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shop", action="append", required=True, metavar="NAME=DIR")
    parser.add_argument("--cache", action="append", required=True, metavar="NAME=CACHE")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from webshop_gym.utils.integrity import MANIFEST, VERIFIED_ENV, damage

    shops, caches = _pairs(args.shop), _pairs(args.cache)
    rows = []
    for name, shop in shops.items():
        cache = Path(caches[name])
        folders = sorted(p.parent for p in (cache / "catalogs").rglob(MANIFEST))
        manifests = [json.loads((f / MANIFEST).read_text())["files"] for f in folders]
        nbytes = sum(size for m in manifests for size, _ in m.values())
        files = sum(len(m) for m in manifests)
        checks = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            assert all(damage(f, contents=True) is None for f in folders)
            checks.append(time.perf_counter() - started)
        sizes_only = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            assert all(damage(f, contents=False) is None for f in folders)
            sizes_only.append(time.perf_counter() - started)
        loads = {}
        for label, inherit in (("checked", False), ("sizes only", True)):
            env = {k: v for k, v in os.environ.items() if k != VERIFIED_ENV}
            env["WEBSHOP_GYM_CACHE"] = str(cache)
            if inherit:
                tokens = []
                for f in folders:
                    stat = (f / MANIFEST).stat()
                    tokens.append(f"{f}@{stat.st_ino}.{stat.st_mtime_ns}")
                env[VERIFIED_ENV] = ";".join(tokens)
            times = []
            for _ in range(args.repeat):
                out = subprocess.run([sys.executable, "-c", _CHILD, shop], env=env, capture_output=True, text=True,
                                     check=True).stdout
                times.append(json.loads(out.strip().splitlines()[-1])["seconds"])
            loads[label] = statistics.median(times)
        rows.append({"shop": name, "folders": len(folders), "files": files, "MB": round(nbytes / 1e6, 1),
                     "check s": round(min(checks), 3), "MB/s": round(nbytes / 1e6 / min(checks)),
                     "sizes-only s": round(min(sizes_only), 4),
                     "load s, checked": round(loads["checked"], 3),
                     "load s, sizes only": round(loads["sizes only"], 3),
                     "load average": round(os.getloadavg()[0], 1)})
    columns = list(rows[0])
    print(table(rows, columns))
    print("(this machine is shared with other jobs while measuring: see the load average column)")
    path = save("cache_verify", {"rows": rows, "conditions": "files in the OS page cache; machine shared "
                                 "with other jobs (load average per row)"})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
