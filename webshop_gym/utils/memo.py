"""Memo files: answers kept in the cache beside a built folder, each carrying its own checksum.

A memo holds something computed from a built folder and kept to save the work next time: a goal
set's digest, which goals can score 1.0 (:mod:`webshop_gym.reward.reachability`), the SHA-256 of
a shop's source files.  It is written after its folder was built, so the folder's manifest
(:mod:`webshop_gym.utils.integrity`) does not list it; instead the file checks itself::

    {"format": "webshop-gym/memo-v1", "crc32": <CRC-32 of the canonical JSON of data>, "data": ...}

Reading a memo checks that CRC-32.  A damaged memo (unreadable, not a memo, or edited so that
its data no longer matches its checksum) is named in one warning line, removed and computed
again by its reader, exactly as a damaged folder is rebuilt; ``webshop-gym data verify`` lists
every memo with the folders (``ok`` or ``DAMAGED``), and ``data compile`` removes damaged ones.
Memo files end in :data:`SUFFIX`, which is how they are found.  Writes are atomic (a temporary
file renamed into place); where the cache is read-only nothing is written and the answer is
computed again each time.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any

from webshop_gym.utils.paths import umask

__all__ = ["FORMAT", "SUFFIX", "find_memos", "memo_damage", "read_memo", "remove_damaged_memos", "write_memo"]

log = logging.getLogger("webshop_gym")

FORMAT = "webshop-gym/memo-v1"
"""The ``format`` field of every memo file."""
SUFFIX = ".memo.json"
"""How a memo file's name ends."""

_warned: set[str] = set()  # memos reported damaged in this process


def _crc(data: Any) -> int:
    return zlib.crc32(json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii"))


def _load(path: Path) -> tuple[Any, str | None]:
    """``(data, None)`` of an intact memo, else ``(None, what is wrong)``; ``FileNotFoundError`` when absent."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:
        return None, f"it cannot be read as JSON ({type(exc).__name__})"
    if not isinstance(record, dict) or record.get("format") != FORMAT or "data" not in record:
        return None, f"it is not a {FORMAT} file"
    if not isinstance(record.get("crc32"), int) or record["crc32"] != _crc(record["data"]):
        return None, "its data does not match its checksum"
    return record["data"], None


def memo_damage(path: str | os.PathLike) -> str | None:
    """What is wrong with a memo file, or ``None`` when it is intact (or absent)."""
    try:
        return _load(Path(path))[1]
    except FileNotFoundError:
        return None


def read_memo(path: str | os.PathLike) -> Any | None:
    """The data of the memo at ``path``; ``None`` when there is none or it was damaged.

    A damaged memo is reported once per process in a warning line that names it, and removed
    (where the cache is writable) so that its reader computes and writes it again.
    """
    path = Path(path)
    try:
        data, problem = _load(path)
    except FileNotFoundError:
        return None
    if problem is None:
        return data
    if str(path) not in _warned:
        _warned.add(str(path))
        log.warning("webshop-gym: warning: recomputing the damaged memo %s (%s)", path, problem)
    try:
        path.unlink()
    except OSError as exc:  # a read-only cache: computed again in every process
        log.debug("cannot remove the damaged memo %s: %s", path, exc)
    return None


def write_memo(path: str | os.PathLike, data: Any) -> bool:
    """Write ``data`` (JSON-serialisable) as the memo at ``path``, atomically.

    Returns:
        Whether it was written (``False`` where the cache is read-only: nothing is kept).
    """
    path = Path(path)
    if not path.name.endswith(SUFFIX):
        raise ValueError(f"a memo file's name ends in {SUFFIX!r}, got {path.name!r}")
    text = json.dumps({"format": FORMAT, "crc32": _crc(data), "data": data}, ensure_ascii=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        log.debug("cannot write the memo %s: %s", path, exc)
        return False
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o666 & ~umask())  # as any cache file (mkstemp makes it private)
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("cannot write the memo %s: %s", path, exc)
        Path(tmp).unlink(missing_ok=True)
        return False
    return True


def find_memos(root: str | os.PathLike) -> list[Path]:
    """Every memo file under ``root``, in path order (temporary files of a write in progress left out)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob(f"*{SUFFIX}") if p.is_file() and not p.name.startswith("."))


def remove_damaged_memos(paths: list[Path]) -> list[tuple[Path, str]]:
    """Remove the damaged memos among ``paths``: ``(memo, problem)`` per memo removed."""
    removed = []
    for path in paths:
        problem = memo_damage(path)
        if problem is None:
            continue
        try:
            path.unlink()
        except OSError as exc:
            log.debug("cannot remove the damaged memo %s: %s", path, exc)
            continue
        removed.append((path, problem))
    return removed
