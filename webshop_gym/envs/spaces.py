"""The env's text spaces: Gymnasium's own :class:`gymnasium.spaces.Text`, over every Unicode character.

Pages hold spaces, punctuation and any Unicode, and agents write actions like ``click[28" x 28"]``,
so the charset is every code point (``chr(0)`` to ``chr(0x10FFFF)``).  Gymnasium keeps a charset as
a set, a tuple and a dict; for 1,114,112 characters that would be ~150 MB per process, so
:class:`UnicodeText` gives the same views computed from ``ord``/``chr`` instead: a character's
index is its code point, and the padding index (``len(character_set)``) is 0x110000.
Everything Gymnasium does with a ``Text`` then works unchanged: ``check_env``, ``batch_space``,
``flatten``/``unflatten``, and ``AsyncVectorEnv``'s shared memory (``shared_memory=True``, the
default of ``gym.make_vec(..., vectorization_mode="async")``).  Flattening and the shared memory
are registered for :class:`UnicodeText` with NumPy (a UTF-32 view of the string) rather than
Gymnasium's per-character Python loops over ``max_length`` slots; a slot of shared memory holds
the string's length and then its code points, so a step costs what the string's length costs,
not the bound's; and the parent reads it through :class:`SharedTexts`, which follows the buffer
(Gymnasium's own read of a ``Text`` buffer is a snapshot taken once, when ``AsyncVectorEnv``
starts, so its observations would stay empty).
"""

from __future__ import annotations

import functools
import multiprocessing
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.spaces.utils import flatten, unflatten
from gymnasium.vector.utils.shared_memory import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

__all__ = ["CODE_POINTS", "SharedTexts", "String", "UnicodeText"]

CODE_POINTS = 0x110000
"""How many characters Unicode has (``chr(0)`` .. ``chr(0x10FFFF)``): the charset's size and the padding index."""

_WORDS = (
    "red", "soap", "gluten", "free", "size", "large", "pack", "of", "2", "wireless", "bacon", "x",
    "buy", "now", "back", "to", "search", "next", ">", "<", "prev", "description", "features",
)  # fmt: skip


class _EveryCharacter(frozenset):
    """The set of every one-character string, answering ``in`` and ``len`` without holding them."""

    def __contains__(self, char: object) -> bool:
        return isinstance(char, str) and len(char) == 1

    def __len__(self) -> int:
        return CODE_POINTS

    def __iter__(self):
        return map(chr, range(CODE_POINTS))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _EveryCharacter)

    def __hash__(self) -> int:
        return hash(("_EveryCharacter", CODE_POINTS))

    def __repr__(self) -> str:
        return "<every Unicode character>"

    def __reduce__(self):
        return (_EveryCharacter, ())


class _CodePointList(tuple):
    """The characters in code-point order: ``list[i] == chr(i)``, without holding them."""

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(map(chr, range(CODE_POINTS)[index]))
        return chr(int(index))

    def __len__(self) -> int:
        return CODE_POINTS

    def __iter__(self):
        return map(chr, range(CODE_POINTS))

    def __reduce__(self):
        return (_CodePointList, ())


@functools.cache
def _every_character_string() -> str:
    return "".join(map(chr, range(CODE_POINTS)))


_EVERY_CHARACTER = _EveryCharacter()
_CODE_POINT_LIST = _CodePointList()


class UnicodeText(spaces.Text):
    """Gymnasium's ``Text`` of 0 to ``max_length`` characters, any Unicode character.

    Args:
        max_length: longest accepted string.
        seed: seed of :meth:`sample`.

    Example:
        >>> space = UnicodeText(max_length=100)
        >>> space.contains('click[28" x 28"]'), space.contains(""), space.contains(3)
        (True, True, False)
        >>> isinstance(space, spaces.Text)
        True
    """

    def __init__(self, max_length: int = 1_000_000, seed: int | np.random.Generator | None = None):
        super().__init__(max_length=int(max_length), min_length=0, charset="a", seed=seed)
        self._char_set = _EVERY_CHARACTER
        self._char_list = _CODE_POINT_LIST
        self._char_index = None  # character_index computes it
        self._char_str = None  # see characters

    def character_index(self, char: str) -> np.int32:
        """A character's index in the charset: its code point."""
        return np.int32(ord(char))

    @property
    def characters(self) -> str:
        """Every character in code-point order (a 4.4 MB string, built on first use and shared)."""
        return _every_character_string()

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string of at most ``max_length`` characters (every character belongs)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Return a random action-like string (mostly invalid for any page: tests of robustness).

        ``mask`` and ``probability`` are not supported (a mask over 1,114,112 characters is not useful here).
        """
        if mask is not None or probability is not None:
            raise NotImplementedError("UnicodeText.sample does not support masks or probabilities")
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

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length}, charset=<every Unicode character>)"

    def __eq__(self, other: object, /) -> bool:
        return isinstance(other, UnicodeText) and (other.min_length, other.max_length) == (self.min_length, self.max_length)

    def __hash__(self) -> int:
        return hash(("UnicodeText", self.min_length, self.max_length))


String = UnicodeText
"""The former name of :class:`UnicodeText` (a custom space before it was Gymnasium's ``Text``)."""


def _code_points(space: UnicodeText, x: str) -> np.ndarray:
    points = np.frombuffer(x.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int32)
    if len(points) > space.max_length:
        raise ValueError(f"a string of {len(points):,} characters is longer than the space's {space.max_length:,}")
    return points


def _text(points: np.ndarray) -> str:
    return points.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


@flatten.register(UnicodeText)
def _flatten_unicode_text(space: UnicodeText, x: str) -> np.ndarray:
    out = np.full(space.max_length, CODE_POINTS, dtype=np.int32)
    points = _code_points(space, x)
    out[: len(points)] = points
    return out


@unflatten.register(UnicodeText)
def _unflatten_unicode_text(space: UnicodeText, x: np.ndarray) -> str:
    x = np.asarray(x)
    return _text(x[x < CODE_POINTS])


@create_shared_memory.register(UnicodeText)
def _create_unicode_text(space: UnicodeText, n: int = 1, ctx: Any = multiprocessing):
    # per slot: the string's length, then its code points (reads and writes cost the string, not the bound)
    return ctx.Array(np.dtype(np.int32).char, n * (space.max_length + 1))


@write_to_shared_memory.register(UnicodeText)
def _write_unicode_text(space: UnicodeText, index: int, values: str, shared_memory) -> None:
    size = space.max_length + 1
    slot = np.frombuffer(shared_memory.get_obj(), dtype=np.int32)[index * size:(index + 1) * size]
    points = _code_points(space, values)
    slot[0] = len(points)
    slot[1:1 + len(points)] = points


class SharedTexts(Sequence):
    """The strings in a block of shared memory, decoded on each access (what ``AsyncVectorEnv`` holds).

    Gymnasium's ``AsyncVectorEnv`` reads its shared observation buffer once, when it starts, and
    then hands out that object (a deep copy of it with ``copy=True``, the default): NumPy views
    for ``Box`` spaces, which follow the buffer; for ``Text`` Gymnasium's own read would be a tuple
    of the strings as they were then (empty).  This view follows the buffer, and its deep copy is a
    plain tuple of the strings now, so ``step`` and ``reset`` give what the workers wrote.
    """

    def __init__(self, space: UnicodeText, rows: np.ndarray):
        self._space = space
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self)[index]
        row = self._rows[index]
        return _text(row[1:1 + int(row[0])])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __deepcopy__(self, memo) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, SharedTexts) else other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@read_from_shared_memory.register(UnicodeText)
def _read_unicode_text(space: UnicodeText, shared_memory, n: int = 1) -> SharedTexts:
    return SharedTexts(space, np.frombuffer(shared_memory.get_obj(), dtype=np.int32).reshape((n, space.max_length + 1)))
