"""utils.heap.freeze_loaded: what a server has loaded leaves the garbage collector's generations."""

from __future__ import annotations

import gc

from webshop_gym.utils.heap import freeze_loaded


def test_freeze_loaded_moves_every_live_object_out_of_the_collected_generations(default_shop):
    before = gc.get_freeze_count()
    try:
        frozen = freeze_loaded()
        assert frozen == gc.get_freeze_count() and frozen > before
        assert frozen > 100_000  # a loaded shop's objects (about 300,000)
        assert sum(gc.get_count()) < 1_000  # nothing left for the next full collection to walk
        cycle = [None]
        cycle[0] = cycle  # a cycle made later is still found and freed by a collection
        del cycle
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
