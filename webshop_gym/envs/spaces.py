"""A string space: observations and actions are free text.

Gymnasium's ``spaces.Text`` only accepts characters of a fixed charset (alphanumeric by
default), but pages hold spaces, punctuation and Unicode, and agents write actions like
``click[28" x 28"]``.  :class:`String` accepts any ``str`` up to a length.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["String"]

_WORDS = (
    "red", "soap", "gluten", "free", "size", "large", "pack", "of", "2", "wireless", "bacon", "x",
    "buy", "now", "back", "to", "search", "next", ">", "<", "prev", "description", "features",
)  # fmt: skip


class String(spaces.Space[str]):
    """Any Python string of at most ``max_length`` characters.

    Args:
        max_length: longest accepted string.
        seed: seed of :meth:`sample`.

    Example:
        >>> space = String(max_length=100)
        >>> space.contains("click[buy now]"), space.contains(3)
        (True, False)
    """

    def __init__(self, max_length: int = 1_000_000, seed: int | np.random.Generator | None = None):
        self.max_length = int(max_length)
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Strings cannot be flattened into arrays."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Return a random action-like string (mostly invalid for any page: tests of robustness).

        ``mask`` and ``probability`` are not supported (strings have no finite support).
        """
        if mask is not None or probability is not None:
            raise NotImplementedError("String.sample does not support masks or probabilities")
        rng = self.np_random
        words = " ".join(rng.choice(_WORDS, size=int(rng.integers(0, 5))).tolist())
        kind = int(rng.integers(0, 4))
        if kind == 0:
            return f"search[{words}]"[: self.max_length]
        if kind == 1:
            return f"click[{words}]"[: self.max_length]
        if kind == 2:
            return words[: self.max_length]
        return "".join(chr(int(c)) for c in rng.integers(32, 0x2FF, size=int(rng.integers(0, 20))))[: self.max_length]

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string no longer than ``max_length``."""
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"String(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, String) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("String", self.max_length))

    def to_jsonable(self, sample_n):
        """Strings are already JSON."""
        return list(sample_n)

    def from_jsonable(self, sample_n):
        """Strings are already JSON."""
        return list(sample_n)
