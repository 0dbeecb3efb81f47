"""Whether this install has compiled its kernels yet, and the line that says so before it does.

The reward and search kernels are compiled by Numba on first use and kept in Numba's on-disk
cache (:mod:`webshop_gym.utils.jit`), so the first command of a new install (``webshop-gym
demo`` after ``pip install``) spends a minute or more compiling before it prints anything:
153 s in issue 56 on a busy 2-core machine; 98 s measured 2026-12-07 with a fresh
``NUMBA_CACHE_DIR`` on this project's shared 2-core machine at a load average of 15-19.  :func:`announce` prints
one line before that, on stderr, when no compiled kernel is cached.  The check looks for
Numba's cache index files (``*.nbi``) of the kernel modules where Numba puts them: under
``NUMBA_CACHE_DIR`` when set, else beside the modules (``__pycache__``), else in the user's cache
folder (``~/.cache/numba``).  It never imports Numba.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["KERNEL_MODULES", "MESSAGE", "announce", "kernels_cached"]

#: The modules whose functions Numba compiles (their file names, relative to the package).
KERNEL_MODULES = ("reward/_kernels.py", "search/_kernels.py")
#: What the line says.
MESSAGE = ("webshop-gym: first run of this install: compiling the reward and search kernels (Numba) into its "
           "cache, about 1-3 minutes, once; later runs start in seconds")


def _cached(module: str) -> bool:
    """Whether Numba's cache holds an index of ``module`` (``reward/_kernels.py``)."""
    folder, stem = Path(module).parent.name, Path(module).stem
    custom = os.environ.get("NUMBA_CACHE_DIR")
    if not custom:
        beside = Path(__file__).resolve().parents[1] / module
        if next((beside.parent / "__pycache__").glob(f"{stem}.*.nbi"), None) is not None:
            return True
    root = Path(custom) if custom else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"
    if not root.is_dir():
        return False
    for found in root.rglob(f"{stem}.*.nbi"):  # numba names the module's folder after it (``reward_<hash>``)
        if any(part == folder or part.startswith(folder + "_") for part in found.relative_to(root).parts[:-1]):
            return True
    return False


def kernels_cached() -> bool:
    """Whether Numba's cache holds an index for every kernel module (see the module docstring)."""
    return all(_cached(module) for module in KERNEL_MODULES)


def announce(stream=None) -> bool:
    """Print :data:`MESSAGE` on ``stream`` (stderr) when the kernels are not cached yet; return whether it did."""
    if kernels_cached():
        return False
    print(MESSAGE, file=sys.stderr if stream is None else stream, flush=True)
    return True
