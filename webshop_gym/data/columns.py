"""Immutable columnar storage: string tables and ragged arrays backed by numpy.

A compiled catalog is a folder of ``.npy`` files.  Loading maps them read-only into memory
(``np.load(mmap_mode="r")``), so every process that opens the same catalog shares the pages.
"""

from __future__ import annotations

import mmap
import operator
from array import array
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


def release_pages(*arrays) -> None:
    """Drop memory-mapped arrays' pages from this process's resident memory (a no-op for others).

    The pages stay in the operating system's page cache and the mapping stays valid: the next
    read maps a page back (a minor fault).  A pass over a large column in scattered order (the
    search index reads every product's text in the index's order) then holds the pages it reads
    next, not the whole column.
    """
    for item in arrays:
        base = item
        while base is not None:
            mapped = getattr(base, "_mmap", None)  # np.memmap's mmap object
            if mapped is not None:
                if hasattr(mapped, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
                    mapped.madvise(mmap.MADV_DONTNEED)
                break
            base = getattr(base, "base", None)


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

    __slots__ = ("data", "offsets", "_view", "_bounds", "_n")

    def __init__(self, data: np.ndarray, offsets: np.ndarray):
        self.data = data
        self.offsets = offsets
        self._view = memoryview(np.ascontiguousarray(data)).cast("B") if len(data) else memoryview(b"")
        # offsets read through a memoryview: an item is a Python int at once (a numpy scalar
        # plus int() costs about three times as much; a string is read on every page render)
        self._bounds = memoryview(np.ascontiguousarray(offsets, dtype=np.int64))
        self._n = len(offsets) - 1

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
        try:  # the common case first: an index in range (a string is read on every page render)
            if 0 <= index < self._n:
                bounds = self._bounds
                return str(self._view[bounds[index] : bounds[index + 1]], ENCODING, ERRORS)  # decode(), inlined
        except TypeError:
            if isinstance(index, slice):
                return [self[i] for i in range(*index.indices(len(self)))]
            raise
        n = self._n
        if -n <= index < 0:
            return self[index + n]
        raise IndexError(f"string index {index} is out of range for {n} strings")

    def release(self) -> None:
        """Drop the column's mapped pages from this process's resident memory (:func:`release_pages`)."""
        release_pages(self.data, self.offsets)

    def text_bytes(self, rows: Iterable[int]) -> int:
        """The encoded length of strings ``rows`` together (valid, non-negative indices)."""
        bounds = self._bounds
        return sum([bounds[r + 1] - bounds[r] for r in rows])

    def __iter__(self):
        view, offsets = self._view, self.offsets.tolist()
        for i in range(len(offsets) - 1):
            yield decode(view[offsets[i] : offsets[i + 1]])

    def tolist(self) -> list[str]:
        """Decode every string (use on small tables only)."""
        return list(self)

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

    __slots__ = ("offsets", "values", "_offsets", "_values")

    def __init__(self, offsets: np.ndarray, values: np.ndarray):
        self.offsets = offsets
        self.values = values
        self._offsets = self._values = None  # memoryviews for row_list (made on first use)

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

    def row_list(self, index: int) -> list[int]:
        """Row ``index`` (in range, non-negative) as a list of Python ints, read through memoryviews."""
        offsets = self._offsets
        if offsets is None:
            offsets = self._offsets = memoryview(np.ascontiguousarray(self.offsets, dtype=np.int64))
            values = np.ascontiguousarray(self.values)
            self._values = memoryview(values) if len(values) else None
        values = self._values
        start, stop = offsets[index], offsets[index + 1]
        return values[start:stop].tolist() if values is not None and stop > start else []

    def release(self) -> None:
        """Drop the rows' mapped pages from this process's resident memory (:func:`release_pages`)."""
        release_pages(self.offsets, self.values)

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


def gather_rows(rows: Ragged, index: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, values)`` of the rows ``rows[index[i]]``, back to back (all rows when ``index`` is None)."""
    offsets = np.asarray(rows.offsets)
    values = np.asarray(rows.values)
    if index is None:
        return offsets, values
    index = np.asarray(index, dtype=np.int64)
    starts = offsets[index]
    lengths = offsets[index + 1] - starts
    out = np.zeros(len(index) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    positions = np.arange(int(out[-1]), dtype=np.int64) - np.repeat(out[:-1] - starts, lengths)
    return out, values[positions]


# --------------------------------------------------------------------------------------------
# Writing columns piece by piece (compiling big shops without holding them in memory)


_NPY_HEADER_BYTES = 128  # a multiple of numpy's 64-byte alignment, room for any 1-d shape


def _npy_header(dtype: np.dtype, length: int) -> bytes:
    """A version-1.0 ``.npy`` header of exactly :data:`_NPY_HEADER_BYTES` bytes."""
    text = repr({"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (length,)})
    text = text.ljust(_NPY_HEADER_BYTES - 10 - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


class NpyWriter:
    """Appends items to a one-dimensional ``.npy`` file; the header is written by :meth:`close`.

    Args:
        path: the file to create.
        dtype: the item type.
        buffer_bytes: bytes collected in memory between two writes.
    """

    def __init__(self, path: Path, dtype, buffer_bytes: int = 1 << 20):
        self.path = Path(path)
        self.dtype = np.dtype(dtype)
        self._handle = open(self.path, "wb")
        self._handle.write(b"\0" * _NPY_HEADER_BYTES)
        self._buffer = bytearray()
        self._limit = buffer_bytes
        self.nbytes = 0

    def write(self, data: bytes | np.ndarray) -> None:
        """Append raw item bytes (or an array of the writer's dtype)."""
        raw = data.tobytes() if isinstance(data, np.ndarray) else data
        self._buffer += raw
        self.nbytes += len(raw)
        if len(self._buffer) >= self._limit:
            self._handle.write(self._buffer)
            self._buffer.clear()

    def abort(self) -> None:
        """Close the file without finishing it (the caller discards it)."""
        self._buffer.clear()
        self._handle.close()

    def close(self) -> int:
        """Flush, write the header and return the number of items."""
        self._handle.write(self._buffer)
        self._buffer.clear()
        if self.nbytes % self.dtype.itemsize:
            raise ValueError(f"{self.path}: {self.nbytes} bytes is not a whole number of {self.dtype} items")
        count = self.nbytes // self.dtype.itemsize
        self._handle.seek(0)
        self._handle.write(_npy_header(self.dtype, count))
        self._handle.close()
        return count


class StringColumnWriter:
    """Writes a :class:`StringColumn` string by string (the text goes to disk as it comes)."""

    _FLUSH = 1 << 20

    def __init__(self, folder: Path, name: str):
        self.folder = Path(folder)
        self.name = name
        self._data = NpyWriter(self.folder / f"{name}.data.npy", np.uint8)
        self._buffer = bytearray()
        self._size = 0
        self._offsets = array("q", [0])

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def append(self, text: str) -> None:
        """Add one string."""
        raw = text.encode(ENCODING, ERRORS)
        self._buffer += raw
        self._size += len(raw)
        self._offsets.append(self._size)
        if len(self._buffer) >= self._FLUSH:
            self._data.write(bytes(self._buffer))
            self._buffer.clear()

    def abort(self) -> None:
        """Close the data file without finishing it (the caller discards the folder)."""
        self._data.abort()

    def close(self) -> None:
        """Finish both files."""
        self._data.write(bytes(self._buffer))
        self._buffer.clear()
        self._data.close()
        np.save(self.folder / f"{self.name}.offsets.npy", np.frombuffer(self._offsets, dtype=np.int64))
        self._offsets = array("q")


class RaggedWriter:
    """Collects the rows of a :class:`Ragged` compactly (no Python list per row)."""

    def __init__(self, typecode: str = "i"):
        self._offsets = array("q", [0])
        self._values = array(typecode)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def append(self, row: Iterable[int]) -> None:
        """Add one row."""
        self._values.extend(row)
        self._offsets.append(len(self._values))

    def build(self) -> Ragged:
        """Return the rows as a :class:`Ragged`."""
        dtype = np.int32 if self._values.typecode == "i" else np.dtype(self._values.typecode)
        return Ragged(readonly(np.frombuffer(self._offsets, dtype=np.int64)),
                      readonly(np.frombuffer(self._values, dtype=dtype)))

    def save(self, folder: Path, name: str) -> None:
        """Write the rows as :meth:`Ragged.save` does."""
        self.build().save(folder, name)


def gather_strings(names: StringColumn, ids: np.ndarray, folder: Path | None = None,
                   name: str = "", chunk: int = 1 << 18) -> StringColumn:
    """The column ``[names[i] for i in ids]``, copied ``chunk`` strings at a time.

    Args:
        names: the source column.
        ids: which strings, in order.
        folder: write the result as ``<name>`` into this folder (and map it) instead of memory.
        name: the column's file name in ``folder``.
        chunk: strings copied per numpy operation (bounds the temporary memory).
    """
    data = np.asarray(names.data)
    offsets = np.asarray(names.offsets)
    ids = np.asarray(ids, dtype=np.int64)
    lengths = offsets[ids + 1] - offsets[ids]
    out_offsets = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    pieces = []
    writer = NpyWriter(folder / f"{name}.data.npy", np.uint8) if folder is not None else None
    for a in range(0, len(ids), chunk):
        b = min(a + chunk, len(ids))
        n = int(out_offsets[b] - out_offsets[a])
        shift = out_offsets[a:b] - out_offsets[a] - offsets[ids[a:b]]
        piece = data[np.arange(n, dtype=np.int64) - np.repeat(shift, lengths[a:b])]
        if writer is not None:
            writer.write(piece)
        else:
            pieces.append(piece)
    if writer is not None:
        writer.close()
        np.save(folder / f"{name}.offsets.npy", out_offsets)
        return StringColumn.load(folder, name)
    joined = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
    return StringColumn(readonly(joined), readonly(out_offsets))


# --------------------------------------------------------------------------------------------
# Read-only views that look like lists (goal sets use them instead of per-goal Python objects)


class RowView(Sequence):
    """A read-only list whose rows are made on access by :meth:`row`.

    Subclasses give ``__len__`` and ``row(i)`` (``0 <= i < len``); slices, negative indices,
    bounds checks and iteration come from here.
    """

    __slots__ = ()

    def row(self, i: int):
        """Return row ``i`` (``i`` already checked and non-negative)."""
        raise NotImplementedError

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self.row(i) for i in range(*index.indices(len(self)))]
        index = operator.index(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.row(index)

    def __iter__(self):
        for i in range(len(self)):
            yield self.row(i)


class Lookup(RowView):
    """``names[ids[i]]`` for each ``i``: a column of repeated strings stored as ids.

    Args:
        ids: integer array, one id per item.
        names: the distinct strings.
    """

    __slots__ = ("ids", "names")

    def __init__(self, ids: np.ndarray, names: Sequence[str]):
        self.ids = ids
        self.names = names

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, i: int) -> str:
        """Return the name of row ``i``."""
        return self.names[int(self.ids[i])]

    def __iter__(self):
        names = self.names
        for i in self.ids.tolist():
            yield names[i]


class RaggedStrings(RowView):
    """Row ``i`` is ``[names[j] for j in rows[i]]``: lists of strings stored as ids.

    Args:
        rows: a :class:`Ragged` of ids.
        names: the distinct strings.
    """

    __slots__ = ("rows", "names")

    def __init__(self, rows: Ragged, names: Sequence[str]):
        self.rows = rows
        self.names = names

    def __len__(self) -> int:
        return len(self.rows)

    def row(self, i: int) -> list[str]:
        """Return the names of row ``i``."""
        names = self.names
        return [names[j] for j in self.rows[i].tolist()]
