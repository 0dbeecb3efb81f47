"""Checksums of compiled cache folders: damage is found at load, and repaired or reported.

Every folder that :func:`webshop_gym.utils.paths.build_atomically` builds (a compiled catalog, its
title nouns, goal sets, prices, reward tables, the Lucene index, the exported postings) gets a
manifest, ``checksums.json``, written after its contents and before the folder is renamed into
place: the size and CRC-32 of every file the build wrote.  Loading checks it:

* **sizes, on every load**: every listed file exists with its recorded size (a ``stat`` per
  file: microseconds).  Truncated, extended and missing files fail here, and so does a ``.npy``
  file whose shape no longer matches its bytes (the header is part of the file).
* **contents, on the first load of a folder in a process**: the CRC-32 of every file, read in
  4 MiB blocks (costs in ``docs/data.md``).  Overwritten bytes and files swapped with one
  another fail here.  Processes started by a process that already checked a folder (the vector
  env's workers, any subprocess) inherit the result through :data:`VERIFIED_ENV` and check
  sizes only.  A successful check also leaves a stamp, :data:`STAMP`, in a writable folder: the
  inode, size and modification time of every file.  A later process whose files still match
  the stamp exactly skips the content check (any write changes a file's modification time, a
  swapped or replaced file its inode), so a large shop is read in full once per change, not
  once per process.  The builder of a folder leaves the same stamp (and counts the folder as
  checked): it has just read every file to write the manifest, so a freshly compiled cache is
  not read in full once more by the next process.  ``WEBSHOP_GYM_VERIFY=sizes`` skips the content check at load altogether (a huge
  shop on a cache you trust; ``data verify`` still checks everything).

A damaged folder is removed and built again, with one warning line naming it; where it cannot
be removed (a read-only cache), loading stops with :class:`~webshop_gym.error.CacheDamaged`,
one line that names the folder to delete.  A folder without a manifest (compiled by a version
before checksums) counts as damaged: it cannot be checked.  ``webshop-gym data verify`` checks
every folder's contents on demand; ``webshop-gym data compile`` removes the damaged ones
(:func:`remove_damaged`) before it builds, so it repairs folders a load never reads (the Lucene
index, under the default search backend) and ones it does not compile itself (a later run
rebuilds those).

Files added to a folder after it was built (nested stages, memo files) are not listed here:
nested stages have their own manifest, and memo files carry their own checksum
(:mod:`webshop_gym.utils.memo`).
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from pathlib import Path

from webshop_gym.error import CacheDamaged

__all__ = ["MANIFEST", "STAMP", "VERIFIED_ENV", "VERIFY_ENV", "damage", "ensure_intact", "remove_damaged", "stamp_fresh", "verify_tree",
           "write_manifest"]

log = logging.getLogger("webshop_gym")

MANIFEST = "checksums.json"
"""The manifest's file name inside each built folder."""
STAMP = ".verified.json"
"""What a successful content check saw: ``{name: [inode, size, mtime_ns]}`` of the manifest's files."""
VERIFIED_ENV = "WEBSHOP_GYM_VERIFIED"
"""Folders whose contents this process (or its parent) checked: ``;``-separated tokens."""
VERIFY_ENV = "WEBSHOP_GYM_VERIFY"
"""``sizes``: loads check sizes only (contents only with ``webshop-gym data verify``)."""
_BLOCK = 4 << 20
_FORMAT = "webshop-gym/checksums-v1"

_checked: set[str] = set()  # tokens of folders whose contents were checked in this process
_warned: set[str] = set()  # folders reported damaged in this process


def _crc(path: Path, buffer: bytearray) -> int:
    crc = 0
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        while True:
            n = handle.readinto(buffer)
            if not n:
                return crc
            crc = zlib.crc32(view[:n], crc)


def write_manifest(folder: str | os.PathLike) -> dict:
    """Record the size and CRC-32 of every file under ``folder`` in its manifest.

    Returns:
        The manifest written (``{"format": ..., "files": {relative path: [size, crc32]}}``).
    """
    folder = Path(folder)
    buffer = bytearray(_BLOCK)
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST):
        files[path.relative_to(folder).as_posix()] = [path.stat().st_size, _crc(path, buffer)]
    manifest = {"format": _FORMAT, "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=0, sort_keys=True))
    return manifest


def _read_manifest(folder: Path) -> tuple[dict | None, str | None]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except FileNotFoundError:
        return None, f"it has no {MANIFEST} (compiled by an older webshop-gym, or damaged)"
    except (OSError, ValueError) as exc:
        return None, f"its {MANIFEST} is unreadable ({type(exc).__name__})"
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or manifest.get("format") != _FORMAT or not all(
        isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v) for v in files.values()
    ):
        return None, f"its {MANIFEST} is malformed"
    return files, None


def _token(folder: Path) -> str:
    stat = (folder / MANIFEST).stat()
    return f"{folder}@{stat.st_ino}.{stat.st_mtime_ns}"


def _inherited() -> set[str]:
    return set(filter(None, os.environ.get(VERIFIED_ENV, "").split(";")))


def damage(folder: str | os.PathLike, contents: bool | None = None) -> str | None:
    """What is wrong with a built folder, or ``None`` when it is intact.

    Args:
        folder: a folder written by :func:`~webshop_gym.utils.paths.build_atomically`.
        contents: check every file's CRC-32 (``None``: only when neither this process nor its
            parent has checked this folder yet; ``True``: always; ``False``: sizes only).
    """
    folder = Path(folder)
    files, problem = _read_manifest(folder)
    if problem is not None:
        return problem
    for name, (size, _) in files.items():
        try:
            got = (folder / name).stat().st_size
        except OSError:
            return f"{name} is missing"
        if got != size:
            return f"{name} has {got:,} bytes instead of {size:,}"
    token = _token(folder)
    if contents is None:
        contents = (token not in _checked and token not in _inherited()
                    and os.environ.get(VERIFY_ENV, "").strip().lower() != "sizes"
                    and not _stamp_matches(folder, files))
    if contents:
        buffer = bytearray(_BLOCK)
        for name, (_, crc) in files.items():
            try:
                got = _crc(folder / name, buffer)
            except OSError as exc:
                return f"{name} cannot be read ({exc.strerror or type(exc).__name__})"
            if got != crc:
                return f"{name} does not match its checksum"
        _record_checked(folder, files)
    return None


def _record_checked(folder: Path, files: dict) -> None:
    """Remember that ``folder``'s contents match its manifest: in this process, its children and the stamp."""
    token = _token(folder)
    _checked.add(token)
    _write_stamp(folder, files)
    inherited = _inherited()
    if token not in inherited:  # child processes (workers) need not read it all again
        os.environ[VERIFIED_ENV] = ";".join(sorted(inherited | {token}))


def stamp_fresh(folder: str | os.PathLike, manifest: dict) -> None:
    """Mark a folder just built as checked: its builder read every file to write ``manifest``.

    :func:`~webshop_gym.utils.paths.build_atomically` calls this after renaming the folder into
    place, so neither the builder nor the next process reads a freshly compiled cache in full
    once more (the stamp holds as long as no file is touched, exactly as after a content check).
    """
    _record_checked(Path(folder), manifest["files"])


def _stats(folder: Path, files: dict) -> dict[str, list[int]] | None:
    out = {}
    for name in [MANIFEST, *files]:
        try:
            st = (folder / name).stat()
        except OSError:
            return None
        out[name] = [st.st_ino, st.st_size, st.st_mtime_ns]
    return out


def _stamp_matches(folder: Path, files: dict) -> bool:
    """Whether the files are exactly as a successful content check saw them (inode, size, mtime)."""
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return False
    return stamp is not None and stamp == _stats(folder, files)


def _write_stamp(folder: Path, files: dict) -> None:
    stats = _stats(folder, files)
    if stats is None or not os.access(folder, os.W_OK | os.X_OK):
        return  # a read-only cache: every process checks contents once
    tmp = folder / f"{STAMP}.{os.getpid()}.tmp"
    try:
        tmp.write_text(json.dumps(stats))
        os.replace(tmp, folder / STAMP)
    except OSError as exc:  # not writable after all: nothing is lost but the shortcut
        log.debug("cannot write %s in %s: %s", STAMP, folder, exc)
        tmp.unlink(missing_ok=True)


def _removable(folder: Path) -> bool:
    return os.access(folder.parent, os.W_OK | os.X_OK) and os.access(folder, os.W_OK | os.X_OK)


def ensure_intact(folder: str | os.PathLike) -> bool:
    """Whether a built folder is intact; a damaged one is reported once (to be rebuilt).

    Returns:
        ``True`` when intact; ``False`` when damaged and removable (one warning line is logged
        the first time: the caller builds it again).

    Raises:
        CacheDamaged: the folder is damaged and cannot be removed (a read-only cache).
    """
    folder = Path(folder)
    problem = damage(folder)
    if problem is None:
        return True
    if not _removable(folder):
        raise CacheDamaged(
            f"the cache folder {folder} is damaged ({problem}) and cannot be rebuilt because the cache is "
            f"read-only: delete {folder} where the cache is writable and run `webshop-gym data compile` there"
        )
    if str(folder) not in _warned:
        _warned.add(str(folder))
        log.warning("webshop-gym: warning: rebuilding the damaged cache folder %s (%s)", folder, problem)
    return False


def verify_tree(root: str | os.PathLike) -> list[tuple[Path, str | None]]:
    """Check the contents of every built folder under ``root`` (``root`` included).

    Returns:
        ``(folder, problem or None)`` per folder that has a manifest or a ``meta.json`` marker,
        in path order (interrupted builds, ``*.tmp-*``, are left out: the next build removes them).
    """
    root = Path(root)
    found: list[tuple[Path, str | None]] = []
    if not root.is_dir():
        return found
    manifests = {p.parent: _read_manifest(p.parent)[0] or {} for p in root.rglob(MANIFEST)}
    folders = set(manifests) | {p.parent for p in root.rglob("meta.json")}
    for folder in sorted(folders):
        if any(".tmp-" in part for part in folder.relative_to(root.parent).parts):
            continue
        if folder not in manifests and any(
            folder.is_relative_to(m) and (folder / "meta.json").relative_to(m).as_posix() in listed
            for m, listed in manifests.items()
        ):
            continue  # a file of a checked folder that happens to be called meta.json
        found.append((folder, damage(folder, contents=True)))
    return found


def remove_damaged(root: str | os.PathLike) -> list[tuple[Path, str]]:
    """Remove every damaged built folder under ``root`` (contents checked), to be built again.

    Each folder is checked again and removed under its build lock, taken without waiting: a
    folder being rebuilt right now (its lock held) is left to that build.  Folders that cannot be
    removed (a read-only cache) are left too; loading them then raises
    :class:`~webshop_gym.error.CacheDamaged`.

    Returns:
        ``(folder, problem)`` per folder removed.
    """
    import shutil

    from filelock import FileLock, Timeout

    removed = []
    for folder, problem in verify_tree(root):
        if problem is None or not folder.is_dir() or not _removable(folder):
            continue
        lock = FileLock(str(folder) + ".lock")
        try:
            lock.acquire(timeout=0)
        except (Timeout, OSError):
            continue
        try:
            problem = damage(folder, contents=True) if folder.is_dir() else None
            if problem is not None:
                shutil.rmtree(folder)
                removed.append((folder, problem))
        except OSError as exc:
            log.debug("cannot remove the damaged folder %s: %s", folder, exc)
        finally:
            lock.release()
    return removed
