"""Writing the embedded shop's shipped search postings and the pins of every shipped data file (release steps).

:mod:`webshop_gym.search.shipped` installs what :func:`write_shipped` writes; this module sits above
the search engine (it asks :class:`~webshop_gym.search.bm25.BM25Search` for the postings folder's
versioned name), so that the engine never imports its own writer.  :func:`write_pins` writes
:mod:`webshop_gym.utils.shipped_digests`, the sizes and SHA-256 of the shipped postings and of the
protocols' goal-id lists, which the package checks before it uses them.  docs/release.md, step 1.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from webshop_gym.data.catalog import load_catalog
from webshop_gym.search.bm25 import BM25Search
from webshop_gym.search.lucene import build_index
from webshop_gym.search.postings import build_postings
from webshop_gym.search.shipped import BOOKKEEPING, SOURCE, shipped_folder
from webshop_gym.utils.paths import default_shop_dir, written_whole

__all__ = ["ID_LISTS_DIR", "PINS_MODULE", "render_pins", "write_pins", "write_shipped"]

_PACKAGE = Path(__file__).resolve().parents[1]
PINS_MODULE = _PACKAGE / "utils" / "shipped_digests.py"
"""The generated module of pins (:mod:`webshop_gym.utils.shipped_digests`)."""
ID_LISTS_DIR = _PACKAGE / "protocols" / "data" / "ids"
"""The protocols' shipped goal-id lists (read by path: this module sits below the protocols)."""


def write_shipped(out: Path | None = None) -> Path:
    """Export the embedded shop's postings (through Pyserini) into ``out`` (default: :func:`shipped_folder`).

    Writing the package's own folder (``out`` omitted) writes the pins again too (:func:`write_pins`).
    """
    catalog = load_catalog(default_shop_dir(), progress=False)
    name = BM25Search(catalog, progress=False).postings_path.name
    own = out is None
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
    if own:
        write_pins()
    return out


def _pins(folder: Path, names) -> str:
    lines = []
    for name in sorted(names):
        data = (folder / name).read_bytes()
        lines.append(f"    {name!r}: ({len(data)}, {hashlib.sha256(data).hexdigest()!r}),")
    return "\n".join(lines)


def render_pins(postings: Path | None = None, ids: Path | None = None) -> str:
    """The text of :mod:`webshop_gym.utils.shipped_digests` for the shipped files as they are now."""
    postings = Path(postings) if postings is not None else shipped_folder()
    ids = Path(ids) if ids is not None else ID_LISTS_DIR
    stamp = json.loads((postings / SOURCE).read_text(encoding="utf-8"))
    posting_files = [*stamp["files"], SOURCE]
    id_files = [p.name for p in ids.glob("*.json")]
    return f'''"""The size and SHA-256 of every data file the package ships and checks before use.

Written by ``webshop_gym.search.release.write_pins()`` (docs/release.md, step 1): never edit by hand.
Checked by :mod:`webshop_gym.utils.shipped` (the search postings when they are installed, the goal-id
lists when they are read, both by ``webshop-gym data verify``).
"""

SEARCH_POSTINGS_FOR = ({stamp["catalog"]!r}, {stamp["postings"]!r})
"""The catalog key and the postings folder's name the shipped postings were exported for."""

SEARCH_POSTINGS = {{
{_pins(postings, posting_files)}
}}
"""``data/search-postings/`` (``webshop_gym/embedded/search-postings/`` in a wheel): file -> (bytes, SHA-256)."""

ID_LISTS = {{
{_pins(ids, id_files)}
}}
"""``webshop_gym/protocols/data/ids/``: file -> (bytes, SHA-256)."""
'''


def write_pins() -> Path:
    """Write :mod:`webshop_gym.utils.shipped_digests` from the shipped files as they are now (no Pyserini needed).

    Run it after the shipped postings or a goal-id list changed; ``tests/test_shipped_pins.py``
    fails until the pins are today's.
    """
    text = render_pins()
    with written_whole(PINS_MODULE, encoding="utf-8") as handle:
        handle.write(text)
    return PINS_MODULE
