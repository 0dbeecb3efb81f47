"""A thread-safe least-recently-used map bounded in bytes.

Every entry is stored with the number of bytes it is charged; inserting evicts the least recently
used entries until the total fits the budget, and an entry larger than an eighth of the budget is
not kept at all (so one huge value can never flush the cache).  Used by the search result
cache, the simulator's page caches (on every step) and the viewer's caches, so that no input (long unique queries, huge
titles) can grow a process's memory past its budgets.

Kept by hand rather than over ``cachetools.LRUCache(maxsize=<bytes>, getsizeof=...)``: with the
same rules, that was 1.6x slower per ``put`` and 1.1x per ``get`` on ``benchmarks/bytelru.py``
(docs/benchmarks.md), and the page caches are on the step path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

__all__ = ["ByteLRU"]


class ByteLRU:
    """LRU map holding at most ``max_bytes`` (as charged by :meth:`put`).

    Args:
        max_bytes: the budget (0 disables the cache: nothing is kept).

    Attributes:
        hits, misses: lookups answered and not answered.
        nbytes: bytes charged for the entries held now.
    """

    def __init__(self, max_bytes: int):
        if max_bytes < 0:
            raise ValueError(f"the cache budget must be >= 0 bytes, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.nbytes = 0
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (marked recently used), or ``default``."""
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                self.misses += 1
                return default
            self._data.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        """Keep ``value`` under ``key``, charged ``nbytes``; evict the least recently used to fit."""
        nbytes = int(nbytes)
        if nbytes * 8 > self.max_bytes:
            return
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._data[key] = (value, nbytes)
            self.nbytes += nbytes
            while self.nbytes > self.max_bytes:
                _, (_, freed) = self._data.popitem(last=False)
                self.nbytes -= freed

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()
            self.nbytes = 0
