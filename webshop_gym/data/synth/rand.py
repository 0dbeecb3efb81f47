"""Deterministic random helpers for the shop generator.

Only ``numpy.random.Generator`` produces randomness.  Uniform doubles are drawn in blocks and turned
into choices with integer arithmetic on IEEE doubles, so a given seed gives the same shop on every
platform and Python >= 3.10.  Nothing here depends on ``hash()``, set order or the ``random`` module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")

_BUFFER = 4096


class Draw:
    """A fast stream of deterministic choices backed by a ``numpy.random.Generator``.

    Args:
        rng: The generator to pull uniform doubles from (in blocks of 4096).
    """

    __slots__ = ("_buf", "_i", "_rng")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buf: list[float] = []
        self._i = 0

    def u(self) -> float:
        """Return a uniform double in [0, 1)."""
        if self._i >= len(self._buf):
            self._buf = self._rng.random(_BUFFER).tolist()
            self._i = 0
        x = self._buf[self._i]
        self._i += 1
        return x

    def below(self, n: int) -> int:
        """Return an integer uniform in [0, n)."""
        i = self._i
        if i >= len(self._buf):
            self._buf = self._rng.random(_BUFFER).tolist()
            i = 0
        self._i = i + 1
        k = int(self._buf[i] * n)
        return k if k < n else n - 1

    def randint(self, lo: int, hi: int) -> int:
        """Return an integer uniform in [lo, hi] (both inclusive)."""
        return lo + self.below(hi - lo + 1)

    def chance(self, p: float) -> bool:
        """Return True with probability p."""
        return self.u() < p

    def choice(self, seq: Sequence[T]) -> T:
        """Return one element of a non-empty sequence."""
        n = len(seq)
        i = self._i
        if i >= len(self._buf):
            self._buf = self._rng.random(_BUFFER).tolist()
            i = 0
        self._i = i + 1
        k = int(self._buf[i] * n)
        return seq[k if k < n else n - 1]

    def weighted(self, weights: Sequence[float]) -> int:
        """Return an index drawn with probability proportional to ``weights``."""
        total = 0.0
        for w in weights:
            total += w
        x = self.u() * total
        acc = 0.0
        for i, w in enumerate(weights):
            acc += w
            if x < acc:
                return i
        return len(weights) - 1

    def sample(self, seq: Sequence[T], k: int) -> list[T]:
        """Return ``k`` distinct elements of ``seq`` in random order (partial Fisher-Yates)."""
        items = list(seq)
        n = len(items)
        k = min(k, n)
        for i in range(k):
            j = i + self.below(n - i)
            items[i], items[j] = items[j], items[i]
        return items[:k]

    def sample_sorted(self, seq: Sequence[T], k: int) -> list[T]:
        """Return ``k`` distinct elements of ``seq`` keeping their original order."""
        idx = sorted(self.sample(range(len(seq)), k))
        return [seq[i] for i in idx]

    def shuffle(self, items: list[T]) -> None:
        """Shuffle a list in place (Fisher-Yates)."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def skewed(self, lo: float, hi: float) -> float:
        """Return a value in [lo, hi) skewed towards ``lo`` (density falling like 1/sqrt).

        Uses only multiplication and addition, which IEEE 754 makes identical on every platform
        (unlike ``exp``/``log``, whose last bit may differ between C libraries).
        """
        x = self.u()
        return lo + (hi - lo) * x * x


# ----------------------------------------------------------------------------------------------
# ASINs: "B0" + 8 base-36 digits, a keyed permutation of the product index (so they are unique
# without remembering the ones already handed out).
# ----------------------------------------------------------------------------------------------
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SPACE = 36**8  # number of 8-digit base-36 strings
_HALF_BITS = 21  # 2**42 > 36**8: a 42-bit Feistel permutation, cycle-walked into [0, 36**8)
_MASK = (1 << _HALF_BITS) - 1


def asin_keys(seed: int) -> tuple[int, ...]:
    """Derive the four Feistel round keys for a shop seed.

    Args:
        seed: The shop seed (a non-negative integer).

    Returns:
        Four 32-bit integers.
    """
    rng = np.random.default_rng([seed, 0x5A51])
    return tuple(int(x) for x in rng.integers(0, 2**32, size=4, dtype=np.uint64))


def _round(x: int, key: int) -> int:
    x = (x * 0x9E3779B1 + key) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x85EBCA6B) & 0xFFFFFFFF
    x ^= x >> 13
    return x & _MASK


def _feistel(x: int, keys: tuple[int, ...]) -> int:
    left, right = x >> _HALF_BITS, x & _MASK
    for key in keys:
        left, right = right, left ^ _round(right, key)
    return (left << _HALF_BITS) | right


def make_asin(index: int, keys: tuple[int, ...]) -> str:
    """Return the ASIN of the product with global index ``index``.

    Distinct indices below 36**8 always give distinct ASINs.

    Args:
        index: The product's position in generation order (0-based).
        keys: Round keys from :func:`asin_keys`.

    Returns:
        A 10-character id: "B0" followed by 8 characters of [0-9A-Z].
    """
    if not 0 <= index < _SPACE:
        raise ValueError(f"product index out of range: {index}")
    y = _feistel(index, keys)
    while y >= _SPACE:
        y = _feistel(y, keys)
    chars = []
    for _ in range(8):
        y, r = divmod(y, 36)
        chars.append(_DIGITS[r])
    return "B0" + "".join(reversed(chars))
