"""Get and put speed of the byte-bounded LRU: ours (``webshop_gym.utils.bytelru.ByteLRU``) and one over ``cachetools``.

The candidate is the same class over ``cachetools.LRUCache(maxsize=<bytes>, getsizeof=...)`` (the
budget in bytes, the eighth-of-the-budget rule and the lock kept).  A fixed random workload:
``--ops`` puts of keys drawn from ``--keys`` (values charged 100 to 2,000 bytes, a 1 MB budget,
so entries are evicted all the time), then as many gets from the same key space (hits and
misses); both implementations run in turn, the median of ``--repeats`` runs in ns per call.

    PYTHONPATH=. python benchmarks/bytelru.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table  # noqa: E402

from webshop_gym.utils.bytelru import ByteLRU  # noqa: E402


class CachetoolsByteLRU:
    """ByteLRU's interface and rules over ``cachetools.LRUCache`` (the replacement issue 55 proposed)."""

    def __init__(self, max_bytes: int):
        from cachetools import LRUCache

        self.max_bytes = int(max_bytes)
        self._data = LRUCache(maxsize=max(self.max_bytes, 1), getsizeof=lambda entry: entry[1])
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @property
    def nbytes(self) -> int:
        return int(self._data.currsize)

    def get(self, key, default=None):
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                self.misses += 1
                return default
            self.hits += 1
            return entry[0]

    def put(self, key, value, nbytes: int) -> None:
        nbytes = int(nbytes)
        if nbytes * 8 > self.max_bytes:
            return
        with self._lock:
            self._data[key] = (value, nbytes)


def run(kind, ops: int, keys: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    put_keys = [f"q{k}" for k in rng.integers(0, keys, ops)]
    sizes = rng.integers(100, 2000, ops).tolist()
    get_keys = [f"q{k}" for k in rng.integers(0, keys, ops)]
    cache = kind(1 << 20)
    t = time.perf_counter()
    for key, size in zip(put_keys, sizes):
        cache.put(key, key, size)
    put = time.perf_counter() - t
    t = time.perf_counter()
    for key in get_keys:
        cache.get(key)
    get = time.perf_counter() - t
    assert cache.nbytes <= 1 << 20
    return {"put_ns": 1e9 * put / ops, "get_ns": 1e9 * get / ops, "hit_rate": cache.hits / ops}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    runs: dict[str, list[dict]] = {"ByteLRU (ours)": [], "over cachetools.LRUCache": []}
    for seed in range(args.repeats):  # in turn, so both see the same load
        runs["ByteLRU (ours)"].append(run(ByteLRU, args.ops, args.keys, seed))
        runs["over cachetools.LRUCache"].append(run(CachetoolsByteLRU, args.ops, args.keys, seed))
    rows = [{"cache": name, **{k: statistics.median(r[k] for r in got) for k in got[0]}} for name, got in runs.items()]
    print(table(rows, ["cache", "put_ns", "get_ns", "hit_rate"]))
    save("bytelru", {"args": vars(args), "rows": rows, "runs": runs})


if __name__ == "__main__":
    main()
