r"""Lone surrogates out of decoded JSON: the strings that Python holds but cannot write as UTF-8.

JSON may carry a broken ``\ud800`` escape, and Python's :mod:`json` also decodes a body in
UTF-8 with ``surrogatepass`` (raw ``ED A0 80`` bytes) or in UTF-16 and UTF-32: each gives a
``str`` with a lone surrogate, which every later write (a request, a run file, a page, a CSV)
refuses with ``UnicodeEncodeError``.  :func:`clean_value` replaces each by U+FFFD, in keys and
values at any depth; :func:`loads` reads JSON and does so when the text may hold one.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["REPLACEMENT", "clean_text", "clean_value", "loads", "may_hold_surrogates"]

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
# A surrogate's escape in JSON text (any case), or its UTF-8 bytes as ``surrogatepass`` writes them.
_ESCAPED = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_ESCAPED_TEXT = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (a decoded pair is one character, never two)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def clean_value(value: Any) -> Any:
    """A decoded JSON value with every string (dict keys too) cleaned by :func:`clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


def may_hold_surrogates(raw: str | bytes) -> bool:
    """Whether JSON ``raw`` may decode to a lone surrogate: a surrogate's escape or bytes in it, or bytes not UTF-8.

    Bytes are read as :func:`json.loads` reads them: their encoding told by their first bytes.
    """
    if isinstance(raw, str):
        return _ESCAPED_TEXT.search(raw) is not None
    return json.detect_encoding(raw) != "utf-8" or _ESCAPED.search(raw) is not None


def loads(raw: str | bytes) -> Any:
    """``json.loads(raw)`` with lone surrogates replaced (looked for only where :func:`may_hold_surrogates`)."""
    value = json.loads(raw)
    return clean_value(value) if may_hold_surrogates(raw) else value
