"""Writing the embedded shop's shipped search postings (a release step; it needs Pyserini and a JVM).

:mod:`webshop_gym.search.shipped` installs what this writes; this module sits above the search
engine (it asks :class:`~webshop_gym.search.bm25.BM25Search` for the postings folder's versioned
name), so that the engine never imports its own writer.  Run it after a change to the embedded shop,
the catalog compiler or the postings' format: docs/release.md, step 1.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from webshop_gym.data.catalog import load_catalog
from webshop_gym.search.bm25 import BM25Search
from webshop_gym.search.lucene import build_index
from webshop_gym.search.postings import build_postings
from webshop_gym.search.shipped import BOOKKEEPING, SOURCE, shipped_folder
from webshop_gym.utils.paths import default_shop_dir

__all__ = ["write_shipped"]


def write_shipped(out: Path | None = None) -> Path:
    """Export the embedded shop's postings (through Pyserini) into ``out`` (default: :func:`shipped_folder`)."""
    catalog = load_catalog(default_shop_dir(), progress=False)
    name = BM25Search(catalog, progress=False).postings_path.name
    out = Path(out) if out is not None else shipped_folder()
    with tempfile.TemporaryDirectory(prefix="webshop-gym-postings-") as tmp:
        exported = Path(tmp) / name
        build_index(catalog, Path(tmp) / "index", progress=False)
        build_postings(catalog, Path(tmp) / "index", exported, progress=False)
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        files = sorted(p.name for p in exported.iterdir() if p.is_file() and p.name not in BOOKKEEPING)
        for file in files:
            shutil.copyfile(exported / file, out / file)
    stamp = {"catalog": catalog.key, "postings": name, "files": files}
    (out / SOURCE).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    return out

