"""Strings prepared once for the fuzzy matcher of the reward.

The reward compares strings with ``thefuzz.fuzz.token_set_ratio`` (SPEC section 6).  Its
processing step (``str(x)``, drop the code points 128-255, lowercase, every non-alphanumeric
character to a space, trim) only depends on each string alone, so it runs once, when a catalog
or goal set is compiled, with thefuzz's own function.  What remains per comparison is the
token-set arithmetic, which the Numba kernel does on the arrays of a :class:`FuzzTable`:

* ``tokens``: every distinct token as code points (``Ragged`` of ``int32``);
* ``strings``: every distinct processed string as its *set* of token ids, ordered by token
  text (the order ``sorted()`` gives the reference), as a ``Ragged`` of ``int32``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from thefuzz import utils as _thefuzz_utils

from webshop_gym.data.columns import Ragged

__all__ = ["FuzzTable", "FuzzTableBuilder", "fuzz_process"]


def fuzz_process(value) -> str:
    """Process one argument exactly as ``thefuzz.fuzz.token_set_ratio`` does."""
    return _thefuzz_utils.full_process(value, force_ascii=True)


class FuzzTable:
    """Processed strings as token-id sets, ready for the kernel."""

    __slots__ = ("tokens", "strings")

    def __init__(self, tokens: Ragged, strings: Ragged):
        self.tokens = tokens
        self.strings = strings

    def __len__(self) -> int:
        return len(self.strings)

    def token_text(self, token: int) -> str:
        """Return the text of token ``token``."""
        return "".join(map(chr, self.tokens[token]))

    def string_tokens(self, string: int) -> list[str]:
        """Return the sorted token texts of processed string ``string``."""
        return [self.token_text(t) for t in self.strings[string]]

    def save(self, folder: Path, name: str) -> None:
        """Write the table's arrays into ``folder``."""
        self.tokens.save(folder, f"{name}.tokens")
        self.strings.save(folder, f"{name}.strings")

    @classmethod
    def load(cls, folder: Path, name: str) -> FuzzTable:
        """Map a table written by :meth:`save`."""
        return cls(Ragged.load(folder, f"{name}.tokens"), Ragged.load(folder, f"{name}.strings"))


class FuzzTableBuilder:
    """Interns processed strings and their tokens.

    Args:
        base: an existing table to extend.  Its ids stay valid in the result; its tokens are
            reused so that equal tokens keep one id (the kernel compares tokens by id).
    """

    def __init__(self, base: FuzzTable | None = None):
        self._base = base
        self._n_base_tokens = len(base.tokens) if base is not None else 0
        self._n_base_strings = len(base.strings) if base is not None else 0
        self._token_ids: dict[str, int] = {}
        self._new_token_cps: list[list[int]] = []
        self._string_ids: dict[str, int] = {}
        self._new_string_tokens: list[list[int]] = []
        if base is not None:
            cps, offsets = base.tokens.values, base.tokens.offsets
            flat = "".join(map(chr, cps.tolist()))
            bounds = offsets.tolist()
            for t in range(len(bounds) - 1):
                self._token_ids[flat[bounds[t] : bounds[t + 1]]] = t

    def add(self, value) -> int:
        """Process ``value`` (a string, or a tuple for the synthetic-goal quirk); return its id."""
        processed = fuzz_process(value)
        tokens = sorted(set(processed.split()))
        key = " ".join(tokens)
        found = self._string_ids.get(key)
        if found is not None:
            return found
        ids = []
        for tok in tokens:
            tid = self._token_ids.get(tok)
            if tid is None:
                tid = self._n_base_tokens + len(self._new_token_cps)
                self._token_ids[tok] = tid
                self._new_token_cps.append([ord(c) for c in tok])
            ids.append(tid)
        sid = self._n_base_strings + len(self._new_string_tokens)
        self._string_ids[key] = sid
        self._new_string_tokens.append(ids)
        return sid

    def add_all(self, values: Iterable) -> list[int]:
        """Add many values; return their ids."""
        return [self.add(v) for v in values]

    def build(self) -> FuzzTable:
        """Return the table of everything added so far (the base first)."""
        new_tokens = Ragged.build(self._new_token_cps, dtype=np.int32)
        new_strings = Ragged.build(self._new_string_tokens, dtype=np.int32)
        if self._base is None:
            return FuzzTable(new_tokens, new_strings)
        return FuzzTable(
            _concat(self._base.tokens, new_tokens), _concat(self._base.strings, new_strings)
        )


def _concat(a: Ragged, b: Ragged) -> Ragged:
    """Concatenate two ragged arrays row-wise."""
    offsets = np.concatenate([np.asarray(a.offsets), np.asarray(b.offsets[1:]) + a.offsets[-1]])
    values = np.concatenate([np.asarray(a.values), np.asarray(b.values)])
    return Ragged(offsets.astype(np.int64), values)
