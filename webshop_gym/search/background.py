"""A large shop's search index built in another process while this one prepares the rest.

The first load of a large shop spends about as long building the search index (postings, stem
table, document ranges: Python on one core) as drawing the goals, listing the title tokens and
building the reward tables (also one core).  :class:`IndexBuild` starts the index build in a
fresh ``python`` as soon as the catalog is compiled, so the two run on two cores; ``load_shop``
waits for it before returning, then maps the result.  The worker is a plain subprocess (not
``multiprocessing``): a user's script is never re-imported, so no ``__main__`` guard is needed.

The worker writes the cache exactly as a first search would (atomically, see
:func:`webshop_gym.utils.paths.build_atomically`); if it fails, the caller logs why and builds
the index in its own process, as before.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import time

from webshop_gym.data.catalog import load_catalog
from webshop_gym.search.bm25 import BM25Search

__all__ = ["IndexBuild"]

log = logging.getLogger("webshop_gym")


class IndexBuild:
    """The search index of a shop folder's catalog, being built in a subprocess.

    Args:
        path: the shop folder (the catalog is compiled already: the worker maps it).
        num_products: the ``num_products`` the catalog was loaded with.
    """

    def __init__(self, path: str | os.PathLike, num_products: int | None):
        self.started = time.perf_counter()
        self._stderr = tempfile.TemporaryFile()
        payload = json.dumps({"path": os.fspath(path), "num_products": num_products})
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from webshop_gym.search.background import serve; serve()", payload],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
        )

    def wait(self, progress: bool = False) -> bool:
        """Wait for the worker; return whether it built the index (a failure is logged)."""
        bar = None
        if progress and self.proc.poll() is None:
            from tqdm import tqdm

            from webshop_gym.utils import progress as _progress

            bar = tqdm(disable=_progress.disable(), desc="building the search index (another process)",
                       unit="s", leave=False, dynamic_ncols=True, bar_format="{desc}: {elapsed}")
        try:
            while True:
                try:
                    code = self.proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    if bar is not None:
                        bar.refresh()
        finally:
            if bar is not None:
                bar.close()
        if code == 0:
            self._stderr.close()
            return True
        self._stderr.seek(0)
        lines = [x for x in self._stderr.read().decode("utf-8", "replace").splitlines() if x.strip()]
        self._stderr.close()
        log.warning("building the search index in another process failed (exit status %s: %s); "
                    "building it here", code, lines[-1] if lines else "no message")
        return False

    def stop(self) -> None:
        """Stop the worker (the caller gave up loading the shop); a half-built index is never kept."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()


def serve() -> None:
    """The worker: map the compiled catalog and build its search index (``python -c``)."""
    args = json.loads(sys.argv[1])
    catalog = load_catalog(args["path"], num_products=args["num_products"], progress=False)
    BM25Search(catalog, progress=False).prepare(build=True)
