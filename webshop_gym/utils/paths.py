"""Where webshop-gym finds its embedded shop and keeps its caches."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from webshop_gym.error import CacheNotWritable

CACHE_ENV = "WEBSHOP_GYM_CACHE"
"""Environment variable that overrides the cache directory."""
TMP_INFIX = ".tmp-"
"""A build's temporary folder is ``<final folder name>.tmp-<random>``, beside the final folder."""


def cache_dir(create: bool = True) -> Path:
    """Return the cache directory.

    ``$WEBSHOP_GYM_CACHE`` when set, else ``$XDG_CACHE_HOME/webshop-gym``, else
    ``~/.cache/webshop-gym``.

    Args:
        create: create it when missing (``False``: leave that to the first build, so that a
            complete read-only cache is only ever read).
    """
    override = os.environ.get(CACHE_ENV)
    if override:
        path = Path(override).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base).expanduser() / "webshop-gym"
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise not_writable(path, "the cache folder", exc) from None
    return path


def not_writable(folder: Path, what: str, exc: OSError) -> CacheNotWritable:
    """The error for a cache that cannot receive ``what``: where it is and how to move it."""
    reason = exc.strerror or type(exc).__name__
    return CacheNotWritable(
        f"cannot write {what} into {folder} ({reason}): the cache folder is not writable. "
        f"Point {CACHE_ENV} at a writable folder (e.g. `export {CACHE_ENV}=$HOME/.cache/webshop-gym`), "
        "or compile the shop once where the cache is writable (`webshop-gym data compile DIR`, with "
        "--human-goals and each --price-seed your runs use) and use that cache read-only"
    )


def umask() -> int:
    """This process's file-creation mask (read without changing it; 0o022 when unknown)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def is_built(folder: Path, marker: str = "meta.json") -> bool:
    """Whether a folder made by :func:`build_atomically` is complete and intact.

    Its checksums are verified (:mod:`webshop_gym.utils.integrity`: sizes always, contents on the
    first check in a process): a damaged folder is reported in one warning line and counts as
    not built, so :func:`build_atomically` builds it again.

    Raises:
        CacheDamaged: the folder is damaged and the cache is read-only.
    """
    from webshop_gym.utils.integrity import ensure_intact

    return (Path(folder) / marker).exists() and ensure_intact(folder)


def default_shop_dir() -> Path:
    """Return the directory of the embedded default shop (``data/`` of the project).

    A wheel installs it as ``webshop_gym/embedded``; a source checkout (or an editable install)
    keeps it beside the package.
    """
    here = Path(__file__).resolve().parents[1]  # the package folder (this is utils/paths.py)
    for candidate in (here / "embedded", here.parent / "data"):
        if (candidate / "items_shuffle.json").is_file():
            return candidate
    raise FileNotFoundError(
        "the embedded default shop (data/items_shuffle.json) is missing from this installation; "
        "regenerate it with `webshop-gym data synth --products 1000 --seed 0 --out data` "
        "or pass shop=DIR"
    )


def build_atomically(final: Path, build: Callable[[Path], None], marker: str = "meta.json",
                     what: str | None = None) -> None:
    """Create the folder ``final`` by running ``build`` on a temporary sibling, then renaming it.

    ``build`` must write ``marker`` last; the checksums of every file it wrote are recorded
    next (:func:`webshop_gym.utils.integrity.write_manifest`), and the folder is stamped as checked
    (:func:`~webshop_gym.utils.integrity.stamp_fresh`), so the next process does not read it all
    again.  A file lock (``final + ".lock"``) makes concurrent
    processes build once; an interrupted build leaves only a temporary folder behind (a killed
    process's, ``final.tmp-*``, is removed by the next build of ``final``, which holds the lock,
    or by :func:`remove_interrupted_builds`), and a ``final`` folder without its marker (damaged
    by hand, say) is removed and built again.  A complete folder is never locked or written, so
    a finished cache works read-only.

    Raises:
        CacheNotWritable: the folder must be built but its parent cannot be written.
    """
    from filelock import FileLock

    from webshop_gym.utils.integrity import stamp_fresh, write_manifest

    final = Path(final)
    if is_built(final, marker):
        return
    what = what or final.name
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(final) + ".lock")
        lock.acquire()
    except OSError as exc:
        raise not_writable(final.parent, what, exc) from None
    try:
        if is_built(final, marker):
            return
        try:
            if final.exists():
                shutil.rmtree(final)
            for old in _temporaries_of(final):  # left by a build that died (kill -9): we hold the lock
                shutil.rmtree(old, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=final.name + TMP_INFIX))
        except OSError as exc:
            raise not_writable(final.parent, what, exc) from None
        try:
            build(tmp)
            manifest = write_manifest(tmp)  # checksums of everything the build wrote: checked at every load
            os.chmod(tmp, 0o777 & ~umask())  # mkdtemp made it private; a cache is shared like any folder
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        stamp_fresh(final, manifest)  # the manifest was just computed from these very files: no second full read
    finally:
        lock.release()


def _temporaries_of(final: Path) -> list[Path]:
    return [p for p in final.parent.glob(glob.escape(final.name) + TMP_INFIX + "*") if p.is_dir()]


def _final_of(tmp: Path) -> Path:
    return tmp.with_name(tmp.name[: tmp.name.index(TMP_INFIX)])


def _lock_of(final: Path) -> Path:
    return Path(str(final) + ".lock")


def build_running(tmp: str | os.PathLike) -> bool:
    """Whether the build that made the temporary folder ``tmp`` is still running (its lock is held).

    A builder holds the lock of its final folder for as long as its temporary folder exists, so
    a temporary folder whose lock nobody holds was left by a build that died.  Only reads: the
    lock file is opened read-only and probed with a shared lock that is released at once.
    """
    lock = _lock_of(_final_of(Path(tmp)))
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: count it as running, never remove it
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except (ImportError, OSError):
        return True
    finally:
        os.close(fd)


def interrupted_builds(root: str | os.PathLike) -> list[tuple[Path, bool]]:
    """The temporary folders of builds under ``root`` and beside it: ``(folder, build still running)``.

    ``root`` is a cache folder (a compiled catalog, or ``catalogs/`` itself); temporary folders
    inside a temporary folder are not listed (they go with it).
    """
    root = Path(root)
    found = _temporaries_of(root) if root.name else []
    if root.is_dir() and TMP_INFIX not in root.name:
        for folder, dirs, _ in os.walk(root):
            temporary = [d for d in dirs if TMP_INFIX in d]
            found += [Path(folder) / d for d in temporary]
            dirs[:] = [d for d in dirs if TMP_INFIX not in d]
    return [(tmp, build_running(tmp)) for tmp in sorted(found)]


def remove_interrupted_builds(root: str | os.PathLike) -> list[Path]:
    """Remove the temporary folders that dead builds left under ``root`` and beside it.

    Safe while other processes build: each folder is removed under its final folder's lock,
    taken without waiting, so a running build's folder (its lock held) is left alone.  Folders
    that cannot be removed (a read-only cache) are skipped.

    Returns:
        The folders removed.
    """
    from filelock import FileLock, Timeout

    removed = []
    for tmp, running in interrupted_builds(root):
        if running:
            continue
        lock = FileLock(str(_lock_of(_final_of(tmp))))
        try:
            lock.acquire(timeout=0)
        except (Timeout, OSError):
            continue
        try:
            if tmp.is_dir():
                shutil.rmtree(tmp)
                removed.append(tmp)
        except OSError:
            pass
        finally:
            lock.release()
    return removed


@contextlib.contextmanager
def written_whole(path: str | os.PathLike, **open_kw) -> Iterator:
    """Open a text file to write that appears at ``path`` only when the block ends without an error.

    The text goes to a temporary sibling, renamed over ``path`` at the end (a link of that name is
    replaced, not written through); an error removes it and leaves ``path`` as it was.  A path that
    is no file (``/dev/stdout``, a pipe) is written directly.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        with open(path, "w", **open_kw) as handle:
            yield handle
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with open(fd, "w", **open_kw) as handle:
            yield handle
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
