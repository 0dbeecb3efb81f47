"""Deterministic generator of synthetic shops in the reference WebShop file formats.

Example:
    >>> from webshop_gym.data.synth import generate_shop
    >>> summary = generate_shop("/tmp/shop", 1000, seed=0, progress=False)  # doctest: +SKIP

:mod:`.products` holds the product model (types, attributes, options, prices), :mod:`.families`
makes the families (targets and their instructions, decoys, twins, fillers), :mod:`.texts` renders
a product's texts, :mod:`.generate` makes the blocks and writes the files; :mod:`.vocab` is the
vocabulary and :mod:`.rand` the seeded draws.

The package needs only numpy (and tqdm for the progress bar of large shops); it imports no other
webshop_gym module but ``webshop_gym.utils.progress`` (when bars are drawn).
"""

from __future__ import annotations

from webshop_gym.data.synth.generate import (
    BLOCK_SIZE,
    MAX_TARGET_COMBOS,
    generate_shop,
    normalize_option_value,
)

__all__ = ["BLOCK_SIZE", "MAX_TARGET_COMBOS", "generate_shop", "normalize_option_value"]
