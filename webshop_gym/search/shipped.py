"""The embedded shop's search postings, shipped in the package: a plain install searches it without Java.

A shop's postings are exported from Anserini's analysis of its documents and checked against a
Lucene index (:func:`~webshop_gym.search.postings.build_postings`), which takes Pyserini and a JVM.
Pyserini cannot be a dependency of the wheel (it requires torch, 6.6 GB that its Lucene path never
uses), so the postings of the embedded shop (``data/`` in a checkout, ``webshop_gym/embedded`` in
a wheel) ship beside it, in ``search-postings/``.  The cache key of the catalog they were exported
for and each file's size and SHA-256 are pinned in the package's code
(:mod:`webshop_gym.utils.shipped_digests`), not in the files: :func:`install_shipped` checks every
file against its pin and copies them into the cache where a catalog's key is that one (a damaged
file is named; with Pyserini the postings are exported from Lucene instead); any other shop (and this one once its files or the compiler change: the key changes) is
exported as before.  Searches of ASCII text are then analysed in Python; a search with other
characters still asks Anserini's analyser, so it needs Pyserini (the error says how to install it).

After a change to the embedded shop, the catalog compiler or the postings' format, write them
again (with Pyserini installed):
``python -c "from webshop_gym.search.release import write_shipped; write_shipped()"``, which writes
the pins too (docs/release.md; :mod:`webshop_gym.search.release` sits above the search engine, which
installs what it writes).
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
from pathlib import Path

from webshop_gym.error import ShippedFileDamaged
from webshop_gym.utils.paths import build_atomically, default_shop_dir
from webshop_gym.utils.shipped import folder_damage
from webshop_gym.utils.shipped_digests import SEARCH_POSTINGS, SEARCH_POSTINGS_FOR

__all__ = ["FOLDER", "SOURCE", "install_shipped", "lucene_available", "shipped_damage", "shipped_folder"]

log = logging.getLogger("webshop_gym")

FOLDER = "search-postings"
"""The folder of the shipped postings, in the embedded shop's folder."""

SOURCE = "source.json"
"""What they were exported from: the catalog's cache key and the postings folder's versioned name."""

BOOKKEEPING = ("checksums.json", ".verified.json")
"""Files of a built postings folder not shipped: :func:`build_atomically` writes them again where they are installed."""

REINSTALL = "pip install --force-reinstall --no-deps webshop-gym"
"""How a user replaces the package's damaged files."""


def shipped_folder() -> Path:
    """The shipped postings' folder (it may be missing: a checkout before they were written)."""
    return default_shop_dir() / FOLDER


def shipped_damage() -> list[tuple[Path, str]]:
    """The shipped postings' files that are not as pinned in the package's code: ``(path, problem)``."""
    return folder_damage(shipped_folder(), SEARCH_POSTINGS)


def lucene_available() -> bool:
    """Whether Pyserini is installed, so that postings can be exported from a Lucene index instead."""
    return importlib.util.find_spec("pyserini") is not None


def install_shipped(catalog, final: Path) -> bool:
    """Install the shipped postings as ``final`` when they were exported for this catalog; whether they were.

    Every file is checked against its size and SHA-256 pinned in the package's code
    (:mod:`webshop_gym.utils.shipped_digests`) before it is copied.  A damaged one is named in one
    warning line and, where Pyserini is installed, ``False`` is returned so that the postings are
    exported from a Lucene index instead.

    Raises:
        ShippedFileDamaged: a shipped file is damaged and Pyserini is not installed.
    """
    if (catalog.key, final.name) != SEARCH_POSTINGS_FOR:
        return False
    damage = shipped_damage()
    if damage:
        path, problem = damage[0]
        what = f"the package file {path} {problem}" + (f" (and {len(damage) - 1} more)" if len(damage) > 1 else "")
        if lucene_available():
            log.warning("webshop-gym: warning: %s: exporting the embedded shop's search postings from a Lucene "
                        "index instead (reinstall webshop-gym to repair it: `%s`)", what, REINSTALL)
            return False
        raise ShippedFileDamaged(f"{what}: the embedded shop's shipped search postings are damaged; reinstall "
                                 f"webshop-gym (`{REINSTALL}`), or install Pyserini to export them from Lucene "
                                 "(`pip install --no-deps pyserini==1.6.0`)")
    source = shipped_folder()
    files = sorted(name for name in SEARCH_POSTINGS if name != SOURCE)

    def copy(tmp: Path) -> None:
        for name in [f for f in files if f != "meta.json"] + ["meta.json"]:  # the marker last
            shutil.copyfile(source / name, tmp / name)

    build_atomically(final, copy, what="search postings")
    return True
