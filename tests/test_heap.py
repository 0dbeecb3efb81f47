"""utils.heap.freeze_loaded: what a server has loaded leaves the garbage collector's generations.

The check runs in a fresh interpreter: the freeze count falls whenever a frozen object is freed,
so threads left running in the test process by earlier tests (servers, pools) would make the
counts race.  The child has only what a server has: the loaded shop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import gc, json, threading
from webshop_gym import load_shop
from webshop_gym.utils.heap import freeze_loaded

shop = load_shop(progress=False)
before = gc.get_freeze_count()
frozen = freeze_loaded()
after = gc.get_freeze_count()
pending = sum(gc.get_count())
cycle = [None]
cycle[0] = cycle  # a cycle made later is still found and freed by a collection
del cycle
collected = gc.collect()
print(json.dumps({"before": before, "frozen": frozen, "after": after, "pending": pending,
                  "collected": collected, "threads": threading.active_count()}))
"""


def test_freeze_loaded_moves_every_live_object_out_of_the_collected_generations(default_shop):
    # default_shop: the shop's cache is compiled once for the session, the child only loads it
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result["threads"] == 1  # nothing else runs in the child: the counts cannot race
    assert result["frozen"] == result["after"] and result["frozen"] > result["before"]
    assert result["frozen"] > 100_000  # a loaded shop's objects (about 300,000)
    assert result["pending"] < 1_000  # nothing left for the next full collection to walk
    assert result["collected"] >= 1
