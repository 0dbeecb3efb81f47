r"""Strict JSON out of anything a request may echo: no ``NaN``/``Infinity`` tokens, no invalid UTF-8.

Python's :mod:`json` reads ``NaN``, ``Infinity`` and numbers such as ``1e400`` (which overflow to
``inf``) and, by default, writes them back as the bare tokens ``NaN`` and ``Infinity``, which are
not JSON; with ``allow_nan=False`` it raises instead, and a web framework that renders an error
echoing such a number then answers 500.  :func:`dumps` writes every non-finite float as the
string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` and escapes a lone surrogate (a ``"\ud800"``
sent escaped) rather than failing to encode it.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["dumps", "finite"]


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float (in dicts, lists and tuples) written as a string."""
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)  # the token Python's json reads and writes, as a string
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any) -> bytes:
    """``value`` as strict JSON in UTF-8 (compact; non-ASCII kept unless a lone surrogate needs escaping)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        value = finite(value)
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
