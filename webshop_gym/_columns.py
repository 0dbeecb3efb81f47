"""Immutable columnar storage: string tables and ragged arrays backed by numpy.

A compiled catalog is a folder of ``.npy`` files.  Loading maps them read-only into memory
(``np.load(mmap_mode="r")``), so every process that opens the same catalog shares the pages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

ENCODING = "utf-8"
ERRORS = "surrogatepass"  # JSON may hold lone surrogates; keep them round-trippable.


def encode(text: str) -> bytes:
    """Encode text the way every string column stores it."""
    return text.encode(ENCODING, ERRORS)


def decode(raw: bytes | memoryview) -> str:
    """Decode bytes written by :func:`encode`."""
    return str(raw, ENCODING, ERRORS)


def readonly(array: np.ndarray) -> np.ndarray:
    """Return ``array`` marked read-only (a view, no copy)."""
    view = array.view(np.ndarray)  # a plain ndarray: memmap's Python-level __getitem__ is slow
    view.flags.writeable = False
    return view


class StringColumn(Sequence[str]):
    """A read-only table of strings: one UTF-8 buffer plus ``n + 1`` offsets.

    Args:
        data: ``uint8`` buffer holding every string back to back.
        offsets: ``int64`` array; string ``i`` is ``data[offsets[i]:offsets[i + 1]]``.
    """

    __slots__ = ("data", "offsets", "_view")

    def __init__(self, data: np.ndarray, offsets: np.ndarray):
        self.data = data
        self.offsets = offsets
        self._view = memoryview(np.ascontiguousarray(data)).cast("B") if len(data) else memoryview(b"")

    @classmethod
    def build(cls, strings: Iterable[str]) -> StringColumn:
        """Build a column from Python strings."""
        chunks = [encode(s) for s in strings]
        offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
        if chunks:
            np.cumsum([len(c) for c in chunks], out=offsets[1:])
        data = np.frombuffer(b"".join(chunks), dtype=np.uint8).copy()
        return cls(readonly(data), readonly(offsets))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        start, stop = int(self.offsets[index]), int(self.offsets[index + 1])
        return decode(self._view[start:stop])

    def tolist(self) -> list[str]:
        """Decode every string (use on small tables only)."""
        return [self[i] for i in range(len(self))]

    def save(self, folder: Path, name: str) -> None:
        """Write ``<name>.data.npy`` and ``<name>.offsets.npy`` into ``folder``."""
        np.save(folder / f"{name}.data.npy", np.asarray(self.data))
        np.save(folder / f"{name}.offsets.npy", np.asarray(self.offsets))

    @classmethod
    def load(cls, folder: Path, name: str, mmap: bool = True) -> StringColumn:
        """Map a column written by :meth:`save`."""
        data = _np_load(folder / f"{name}.data.npy", mmap)
        offsets = _np_load(folder / f"{name}.offsets.npy", mmap)
        return cls(readonly(data), readonly(offsets))


class Ragged:
    """A read-only list of variable-length rows over a flat ``values`` array.

    Row ``i`` is ``values[offsets[i]:offsets[i + 1]]``.
    """

    __slots__ = ("offsets", "values")

    def __init__(self, offsets: np.ndarray, values: np.ndarray):
        self.offsets = offsets
        self.values = values

    @classmethod
    def build(cls, rows: Iterable[Sequence[int]], dtype=np.int32) -> Ragged:
        """Build from an iterable of integer sequences."""
        lengths = []
        flat: list[int] = []
        for row in rows:
            lengths.append(len(row))
            flat.extend(row)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        if lengths:
            np.cumsum(lengths, out=offsets[1:])
        return cls(readonly(offsets), readonly(np.asarray(flat, dtype=dtype)))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index: int) -> np.ndarray:
        return self.values[int(self.offsets[index]) : int(self.offsets[index + 1])]

    def bounds(self, index: int) -> tuple[int, int]:
        """Return ``(start, stop)`` of row ``index`` in ``values``."""
        return int(self.offsets[index]), int(self.offsets[index + 1])

    def length(self, index: int) -> int:
        """Return the length of row ``index``."""
        return int(self.offsets[index + 1] - self.offsets[index])

    def save(self, folder: Path, name: str) -> None:
        """Write ``<name>.offsets.npy`` and ``<name>.values.npy``."""
        np.save(folder / f"{name}.offsets.npy", np.asarray(self.offsets))
        np.save(folder / f"{name}.values.npy", np.asarray(self.values))

    @classmethod
    def load(cls, folder: Path, name: str, mmap: bool = True) -> Ragged:
        """Map a ragged array written by :meth:`save`."""
        offsets = _np_load(folder / f"{name}.offsets.npy", mmap)
        values = _np_load(folder / f"{name}.values.npy", mmap)
        return cls(readonly(offsets), readonly(values))


class Interner:
    """Assigns dense integer ids to strings in first-seen order."""

    def __init__(self, initial: Iterable[str] = ()):
        self.ids: dict[str, int] = {}
        self.strings: list[str] = []
        for s in initial:
            self.add(s)

    def add(self, s: str) -> int:
        """Return the id of ``s``, adding it if new."""
        found = self.ids.get(s)
        if found is None:
            found = len(self.strings)
            self.ids[s] = found
            self.strings.append(s)
        return found

    def __len__(self) -> int:
        return len(self.strings)

    def column(self) -> StringColumn:
        """Return the strings as a column (id order)."""
        return StringColumn.build(self.strings)


def _np_load(path: Path, mmap: bool) -> np.ndarray:
    """Load an ``.npy`` file, memory-mapped when possible (numpy cannot map empty arrays)."""
    if mmap:
        try:
            return np.load(path, mmap_mode="r")
        except ValueError:
            pass
    return np.load(path)


def save_array(folder: Path, name: str, array: np.ndarray) -> None:
    """Save one array as ``<name>.npy``."""
    np.save(folder / f"{name}.npy", np.asarray(array))


def load_array(folder: Path, name: str, mmap: bool = True) -> np.ndarray:
    """Map one array saved by :func:`save_array` read-only."""
    return readonly(_np_load(folder / f"{name}.npy", mmap))


def write_json(path: Path, obj) -> None:
    """Write JSON with stable formatting."""
    path.write_text(json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8")
