"""A thread-safe LRU cache of search results, bounded in bytes (keys and values).

Agents repeat queries constantly (a GRPO group searches the same instruction G times), so
each backend answers repeated queries from here in about a microsecond.  The bound counts each
entry's key (the normalised query string), its result array and a fixed per-entry overhead, so
a flood of long unique queries cannot grow memory past ``max_bytes``; an entry larger than an
eighth of the budget is not kept at all.
"""

from __future__ import annotations

import sys

import numpy as np

from webshop_gym.utils.bytelru import ByteLRU

__all__ = ["QueryCache", "DEFAULT_CACHE_BYTES", "ENTRY_OVERHEAD"]

DEFAULT_CACHE_BYTES = 64 * 1024 * 1024
"""Default budget: about 100,000 typical queries (~650 bytes each: 80 of text, 200 of rows)."""

ENTRY_OVERHEAD = 352
"""Bytes per entry besides the key text and the rows' data: the key tuple, the array object,
the entry tuple and the LRU's dict slot (335 measured with ``tracemalloc``, rounded up)."""


def entry_bytes(key: tuple[str, int], rows: np.ndarray) -> int:
    """What one entry costs: its query text, its rows and the fixed overhead."""
    return sys.getsizeof(key[0]) + int(rows.nbytes) + ENTRY_OVERHEAD


class QueryCache(ByteLRU):
    """LRU map ``(normalised query, k) -> rows`` holding at most ``max_bytes``.

    Args:
        max_bytes: the budget (0 disables the cache).

    Attributes:
        hits, misses: lookups answered and not answered.
        nbytes: bytes held now.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES):
        if max_bytes < 0:
            raise ValueError(f"cache_bytes must be >= 0, got {max_bytes}")
        super().__init__(max_bytes)

    def put(self, key: tuple[str, int], rows: np.ndarray) -> None:  # type: ignore[override]
        """Keep ``rows`` under ``key``, evicting the least recently used entries to fit."""
        super().put(key, rows, entry_bytes(key, rows))
