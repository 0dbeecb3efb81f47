"""Checking the data files the package ships against digests pinned in its code.

The embedded shop's search postings (``data/search-postings/``) and the protocols' goal-id lists
(``webshop_gym/protocols/data/ids/``) are read from the installed package.  Each file's size and
SHA-256 are pinned in :mod:`webshop_gym.utils.shipped_digests` (written by the release step,
:func:`webshop_gym.search.release.write_pins`), never in the file itself: an altered or truncated
copy in an installation is caught before it is used, whatever digests it carries.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["Pin", "bytes_problem", "file_problem", "folder_damage"]

Pin = tuple[int, str]
"""A pinned file: its size in bytes and its SHA-256 (hex)."""

UNPINNED = "is not among the files this version pinned (write the pins again: docs/release.md)"


def bytes_problem(data: bytes, pin: Pin | None) -> str | None:
    """Why ``data`` is not the pinned file (``None`` when it is)."""
    if pin is None:
        return UNPINNED
    size, sha = pin
    if len(data) != size:
        return f"has {len(data):,} bytes instead of the pinned {size:,}"
    got = hashlib.sha256(data).hexdigest()
    if got != sha:
        return f"has SHA-256 {got[:16]}... instead of the pinned {sha[:16]}..."
    return None


def file_problem(path: Path, pin: Pin | None) -> str | None:
    """Why the file ``path`` is not the pinned file (``None`` when it is): missing, another size, other bytes."""
    if pin is None:
        return UNPINNED
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "is missing"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if size != pin[0]:
        return f"has {size:,} bytes instead of the pinned {pin[0]:,}"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    got = digest.hexdigest()
    if got != pin[1]:
        return f"has SHA-256 {got[:16]}... instead of the pinned {pin[1][:16]}..."
    return None


def folder_damage(folder: Path, pins: dict[str, Pin], pattern: str | None = None) -> list[tuple[Path, str]]:
    """The files of ``folder`` that are not as pinned: ``(path, problem)``, in name order.

    Args:
        folder: the shipped folder.
        pins: file name -> pin.
        pattern: a glob of the files that must all be pinned (a shipped file nobody pinned is
            listed too); ``None``: only the pinned files are checked.
    """
    folder = Path(folder)
    names = set(pins)
    if pattern is not None and folder.is_dir():
        names |= {p.name for p in folder.glob(pattern) if p.is_file()}
    found = []
    for name in sorted(names):
        problem = file_problem(folder / name, pins.get(name))
        if problem is not None:
            found.append((folder / name, problem))
    return found
