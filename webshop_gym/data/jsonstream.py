"""Reading big JSON files one value at a time.

A 1M-product shop is a 2 GB JSON list: ``json.load`` would hold the whole text and every parsed
record at once (several times the file's size).  :class:`JsonStream` walks the outer list or
object itself and hands each member to the C decoder (``json.JSONDecoder.raw_decode``) over a
sliding text window, so memory holds one window plus what the caller keeps.  Bad input becomes a
:class:`~webshop_gym.error.DataError` naming the file, the position and, for values nested too
deeply for Python's decoder, the record and field.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from webshop_gym.error import DataError

__all__ = ["JsonStream", "top_level_type"]

_WHITESPACE = " \t\n\r"
_TYPE_OF_FIRST = {"{": "dict", "[": "list", '"': "str", "t": "bool", "f": "bool", "n": "NoneType"}
_NEAR_END = 16  # an error this close to the end of the window may just be a value cut in two
_DEEP = 256  # nesting beyond this is reported as the culprit of a RecursionError


def top_level_type(first: str) -> str:
    """Name the Python type of a JSON value from its first character."""
    if first in _TYPE_OF_FIRST:
        return _TYPE_OF_FIRST[first]
    return "number" if first in "-0123456789" else "unknown value"


class JsonStream:
    """A forward-only reader of one JSON file.

    Args:
        path: the file (UTF-8; a byte-order mark is skipped).
        chunk_bytes: bytes read at a time.
        on_read: called with the number of bytes read so far after each read (progress bars).
    """

    def __init__(self, path: str | os.PathLike, chunk_bytes: int = 1 << 22,
                 on_read: Callable[[int], None] | None = None):
        self.path = Path(path)
        self.size = self.path.stat().st_size
        self._handle = open(self.path, "rb")
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._json = json.JSONDecoder()
        self._chunk = chunk_bytes
        self._on_read = on_read
        self._buf = ""
        self._pos = 0
        self._eof = False
        self._bytes = 0
        self._lines_before = 0  # newlines in text dropped from the window
        self._column_before = 0  # characters after the last dropped newline
        try:
            self._read()
        except BaseException:
            self._handle.close()
            raise
        if self._buf.startswith("\ufeff"):
            self._pos = 1

    def close(self) -> None:
        """Close the file."""
        self._handle.close()

    def __enter__(self) -> JsonStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the window ---------------------------------------------------------------------------

    def _read(self, at_least: int = 0) -> bool:
        """Append the next chunk (or more) to the window; return False at the end of the file."""
        if self._eof:
            return False
        raw = self._handle.read(max(self._chunk, at_least))
        pending = len(self._decoder.getstate()[0])
        try:
            text = self._decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            at = self._bytes - pending + exc.start
            raise DataError(self.path, f"not UTF-8 text ({exc.reason} at byte {at})") from None
        self._bytes += len(raw)
        if not raw:
            self._eof = True
        if self._pos > self._chunk:
            dropped = self._buf[: self._pos]
            newlines = dropped.count("\n")
            if newlines:
                self._lines_before += newlines
                self._column_before = len(dropped) - dropped.rfind("\n") - 1
            else:
                self._column_before += len(dropped)
            self._buf = self._buf[self._pos :]
            self._pos = 0
        self._buf += text
        if self._on_read is not None:
            self._on_read(self._bytes)
        return bool(raw)

    def _where(self, pos: int) -> str:
        """``line L, column C`` of a window position, counted from the start of the file."""
        newlines = self._buf.count("\n", 0, pos)
        if newlines:
            column = pos - self._buf.rfind("\n", 0, pos)
        else:
            column = self._column_before + pos + 1
        return f"line {self._lines_before + newlines + 1}, column {column}"

    def _invalid(self, message: str, pos: int) -> DataError:
        return DataError(self.path, f"not valid JSON ({message} at {self._where(pos)})")

    def _peek(self) -> str:
        """Skip white space; return the next character ('' at the end of the file)."""
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._read():
                return ""

    def _expect(self, chars: str, what: str) -> str:
        char = self._peek()
        if char == "" or char not in chars:
            message = f"Expecting {what}" if char else f"Expecting {what}, found the end of the file"
            raise self._invalid(message, self._pos)
        self._pos += 1
        return char

    # -- values -------------------------------------------------------------------------------

    def value(self, record=None):
        """Decode the next value whole.

        Args:
            record: the record it belongs to (for the message of a too-deeply nested value).
        """
        self._peek()
        grow = self._chunk
        while True:
            start = self._pos
            try:
                value, end = self._json.raw_decode(self._buf, start)
            except json.JSONDecodeError as exc:
                cut = exc.msg.startswith("Unterminated string") or exc.pos >= len(self._buf) - _NEAR_END
                if cut and self._read(grow):
                    grow *= 2
                    continue
                raise self._invalid(exc.msg, exc.pos) from None
            except RecursionError:
                field = _deep_field(self._buf, start)
                where = "a value" if field is None else "this field's value"
                raise DataError(self.path, f"{where} is nested too deeply to read (over Python's recursion limit)",
                                record, field) from None
            if end >= len(self._buf) and not self._eof and self._read(grow):
                continue  # a number at the very end of the window may continue in the next chunk
            self._pos = end
            return value

    def items(self, what: str) -> Iterator[tuple[int, object]]:
        """Yield ``(index, value)`` for each element of a JSON list at the current position.

        Args:
            what: how to describe the expected list in an error, e.g. "a list of product records".
        """
        first = self._peek()
        if first != "[":
            raise DataError(self.path, f"expected {what} at the top level, got {top_level_type(first)}"
                            if first else f"expected {what}, found an empty file")
        self._pos += 1
        if self._peek() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            yield index, self.value(index)
            index += 1
            if self._expect(",]", "',' delimiter") == "]":
                return

    def members(self, what: str) -> Iterator[tuple[str, object | None]]:
        """Yield ``(key, value)`` for each member of a JSON object at the current position.

        Args:
            what: how to describe the expected object in an error.
        """
        for key in self.keys(what):
            yield key, self.value(key)

    def keys(self, what: str) -> Iterator[str]:
        """Yield each key of a JSON object; the caller must consume its value before the next key.

        Use :meth:`value` to read a value whole or :meth:`items` to stream a list value.
        """
        first = self._peek()
        if first != "{":
            raise DataError(self.path, f"expected {what} at the top level, got {top_level_type(first)}"
                            if first else f"expected {what}, found an empty file")
        self._pos += 1
        if self._peek() == "}":
            self._pos += 1
            return
        while True:
            if self._peek() != '"':
                raise self._invalid("Expecting property name enclosed in double quotes", self._pos)
            key = self.value()
            self._expect(":", "':' delimiter")
            yield key
            if self._expect(",}", "',' delimiter") == "}":
                return

    def end(self) -> None:
        """Check that nothing but white space follows the value just read."""
        if self._peek() != "":
            raise self._invalid("Extra data", self._pos)


def _deep_field(text: str, start: int) -> str | None:
    """The key, at the top level of the object starting at ``start``, whose value nests deepest.

    Scans characters (strings skipped) until the nesting passes :data:`_DEEP`; returns the last
    key seen at depth 1, or None when the value is not an object or nothing nests that deep.
    """
    depth = 0
    key = None
    pos = start
    n = len(text)
    while pos < n:
        char = text[pos]
        if char == '"':
            end = pos + 1
            while True:
                end = text.find('"', end)
                if end < 0:
                    return key
                backslashes = 0
                while text[end - 1 - backslashes] == "\\":
                    backslashes += 1
                if backslashes % 2 == 0:
                    break
                end += 1
            if depth == 1 and text[start] == "{":
                rest = text[end + 1 : end + 64].lstrip()
                if rest.startswith(":"):
                    try:
                        key = json.loads(text[pos : end + 1])
                    except ValueError:
                        key = text[pos + 1 : end]
            pos = end + 1
            continue
        if char in "[{":
            depth += 1
            if depth > _DEEP:
                return key if text[start] == "{" else None
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return None
        pos += 1
    return key if text[start] == "{" else None
