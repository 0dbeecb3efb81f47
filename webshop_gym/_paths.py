"""Where webshop-gym finds its embedded shop and keeps its caches."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

CACHE_ENV = "WEBSHOP_GYM_CACHE"
"""Environment variable that overrides the cache directory."""


def cache_dir() -> Path:
    """Return the cache directory (created on demand).

    ``$WEBSHOP_GYM_CACHE`` when set, else ``$XDG_CACHE_HOME/webshop-gym``, else
    ``~/.cache/webshop-gym``.
    """
    override = os.environ.get(CACHE_ENV)
    if override:
        path = Path(override).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base).expanduser() / "webshop-gym"
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_shop_dir() -> Path:
    """Return the directory of the embedded default shop (``data/`` of the project).

    A wheel installs it as ``webshop_gym/data``; a source checkout (or an editable install)
    keeps it beside the package.
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "data", here.parent / "data"):
        if (candidate / "items_shuffle.json").is_file():
            return candidate
    raise FileNotFoundError(
        "the embedded default shop (data/items_shuffle.json) is missing from this installation; "
        "regenerate it with `webshop-gym data synth --products 1000 --seed 0 --out data` "
        "or pass shop=DIR"
    )


def build_atomically(final: Path, build: Callable[[Path], None], marker: str = "meta.json") -> None:
    """Create the folder ``final`` by running ``build`` on a temporary sibling, then renaming it.

    ``build`` must write ``marker`` last.  A file lock (``final + ".lock"``) makes concurrent
    processes build once; an interrupted build leaves only a temporary folder behind, and a
    ``final`` folder without its marker (damaged by hand, say) is removed and built again.
    """
    from filelock import FileLock

    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(final) + ".lock"):
        if (final / marker).exists():
            return
        if final.exists():
            shutil.rmtree(final)
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=final.name + ".tmp-"))
        try:
            build(tmp)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
