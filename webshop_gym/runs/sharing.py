"""What may leave this machine: a run's settings without its machine paths and server addresses.

A run file keeps where things were on the machine that wrote it (``arguments.out``, the shop's
folder, a goals file, a local model's folder) and the address of the model server it called
(``arguments.base_url``).  What a user shares (a bundle, a report, an export) shows them cut down:
an absolute path by its last part (``/home/me/shops/webshop-1k`` -> ``webshop-1k``), an address
by :data:`ADDRESS` (``http://10.0.0.5:8000/v1`` -> ``(server address)``).  Relative paths stay.
The user asks to keep them with ``report --keep-paths`` (bundles, reports and ``--csv`` /
``--jsonl``) or ``?paths=1`` on the viewer's exports.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ADDRESS", "shareable", "shareable_text"]

#: What a server address becomes.
ADDRESS = "(server address)"

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]*")
#: An absolute path: POSIX (``/a/b``), home (``~/a``), Windows (``C:\a``); not a part of a word or a relative path.
_PATH = re.compile(r"(?<![\w.~/\\-])(?:~|[A-Za-z]:)?[/\\](?=[^\s\"'<>/\\])[^\s\"'<>]*")


def _last_part(match: re.Match) -> str:
    parts = [p for p in re.split(r"[/\\]+", match[0]) if p and p != "~" and not re.fullmatch(r"[A-Za-z]:", p)]
    return parts[-1] if parts else match[0]


def shareable_text(text: str) -> str:
    """``text`` with every server address replaced and every absolute path cut to its last part."""
    return _PATH.sub(_last_part, _URL.sub(ADDRESS, text))


def shareable(value: Any) -> Any:
    """A JSON value (a run line, an episode record) with :func:`shareable_text` applied to every string in it."""
    if isinstance(value, str):
        return shareable_text(value)
    if isinstance(value, dict):
        return {k: shareable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shareable(v) for v in value]
    return value
