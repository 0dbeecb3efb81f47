"""The embedded shop's search postings, shipped in the package: a plain install searches it without Java.

A shop's postings are exported from Anserini's analysis of its documents and checked against a
Lucene index (:func:`~webshop_gym.search.postings.build_postings`), which takes Pyserini and a JVM.
Pyserini cannot be a dependency of the wheel (it requires torch, 6.6 GB that its Lucene path never
uses), so the postings of the embedded shop (``data/`` in a checkout, ``webshop_gym/embedded`` in
a wheel) ship beside it, in ``search-postings/``, with the cache key of the catalog they were
exported from.  :func:`install_shipped` copies them into the cache where a catalog's key is that
one; any other shop (and this one once its files or the compiler change: the key changes) is
exported as before.  Searches of ASCII text are then analysed in Python; a search with other
characters still asks Anserini's analyser, so it needs Pyserini (the error says how to install it).

After a change to the embedded shop, the catalog compiler or the postings' format, write them
again (with Pyserini installed):
``python -c "from webshop_gym.search.release import write_shipped; write_shipped()"`` (docs/release.md;
:mod:`webshop_gym.search.release` sits above the search engine, which installs what it writes).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from webshop_gym.utils.paths import build_atomically, default_shop_dir

__all__ = ["FOLDER", "SOURCE", "install_shipped", "shipped_folder"]

FOLDER = "search-postings"
"""The folder of the shipped postings, in the embedded shop's folder."""

SOURCE = "source.json"
"""What they were exported from: the catalog's cache key and the postings folder's versioned name."""

BOOKKEEPING = ("checksums.json", ".verified.json")
"""Files of a built postings folder not shipped: :func:`build_atomically` writes them again where they are installed."""


def shipped_folder() -> Path:
    """The shipped postings' folder (it may be missing: a checkout before they were written)."""
    return default_shop_dir() / FOLDER


def install_shipped(catalog, final: Path) -> bool:
    """Install the shipped postings as ``final`` when they were exported from this catalog; whether they were."""
    source = shipped_folder()
    try:
        stamp = json.loads((source / SOURCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict) or stamp.get("catalog") != catalog.key or stamp.get("postings") != final.name:
        return False
    files = sorted(stamp.get("files") or [])
    if "meta.json" not in files or not all((source / name).is_file() for name in files):
        return False

    def copy(tmp: Path) -> None:
        for name in [f for f in files if f != "meta.json"] + ["meta.json"]:  # the marker last
            shutil.copyfile(source / name, tmp / name)

    build_atomically(final, copy, what="search postings")
    return True
