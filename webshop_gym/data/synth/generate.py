"""Deterministic generator of synthetic WebShop shops.

A shop is written as the three files of the reference WebShop release (``items_shuffle.json``,
``items_ins_v2.json``, ``items_human_ins.json``; SPEC.md section 1).  Products come in *families*
of one product type: several targets (products with an instruction), each with a distinguishing
attribute that the other members lack, plus decoys and "twins" that copy a target but fail on price
or on an option.  Members that lack an attribute mention it only in a hyphenated, negated form
("not machine-washable"), which the search engine tokenises like the plain phrase while the reward's
substring test does not match it.  So the first search result is often a near miss, as in a real
shop, while the target stays reachable.

Generation is streamed: products are made and shuffled in blocks of ``BLOCK_SIZE`` and written as
they are made, so memory stays bounded whatever ``n_products`` is.  All randomness comes from
``numpy.random.default_rng``; the same ``(n_products, seed)`` gives byte-identical files.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from webshop_gym.data.synth import vocab as V
from webshop_gym.data.synth.families import (
    _make_family,
    _make_filler,
)
from webshop_gym.data.synth.products import (
    _FILES,
    _P_FILLER,
    _SEPARATORS,
    _TYPE_INFOS,
    MAX_TARGET_COMBOS,
    _combos,
    _Product,
    normalize_option_value,
)
from webshop_gym.data.synth.rand import Draw, asin_keys, make_asin
from webshop_gym.data.synth.texts import (
    _render,
)

__all__ = ["BLOCK_SIZE", "MAX_TARGET_COMBOS", "generate_shop", "normalize_option_value"]

#: Products made, shuffled and written together (memory stays bounded whatever the shop's size).
BLOCK_SIZE = 10_000

# ----------------------------------------------------------------------------------------------
# Blocks and files
# ----------------------------------------------------------------------------------------------
def _make_block(draw: Draw, n: int) -> list[_Product]:
    """Make exactly ``n`` products: families and fillers over a shuffled cycle of all types."""
    products: list[_Product] = []
    order: list[int] = []
    while len(products) < n:
        if not order:
            order = list(range(len(_TYPE_INFOS)))
            draw.shuffle(order)
        info = _TYPE_INFOS[order.pop()]
        room = n - len(products)
        if room < 3 or draw.chance(_P_FILLER):
            products.append(_make_filler(draw, info))
        else:
            products.extend(_make_family(draw, info, min(room, draw.randint(4, 8))))
    for p in products:
        if p.kind in ("decoy", "filler") and draw.chance(0.02):
            p.null_option = True
        if draw.chance(0.02):
            p.string_bullets = True
    return products


def _human_record(asin: str, attrs: list[str], h: dict[str, Any]) -> dict[str, Any]:
    return {
        "asin": asin,
        "instruction": h["instruction"],
        "attributes": attrs,
        "options": h["options"],
        "instruction_attributes": h["instruction_attributes"],
        "instruction_options": h["instruction_options"],
    }


class _JsonStream:
    """Write a JSON list or object one line per entry, to a temporary file renamed at the end."""

    def __init__(self, path: Path, is_object: bool) -> None:
        self.path = path
        self.tmp = path.with_name(path.name + ".tmp")
        self.is_object = is_object
        self.fh = open(self.tmp, "w", encoding="utf-8", newline="\n")
        self.fh.write("{" if is_object else "[")
        self.count = 0

    def add(self, value: Any, key: str | None = None) -> None:
        line = json.dumps(value, ensure_ascii=False, separators=_SEPARATORS)
        if key is not None:
            line = json.dumps(key, ensure_ascii=False) + ": " + line
        self.fh.write(("\n" if self.count == 0 else ",\n") + line)
        self.count += 1

    def close(self) -> int:
        self.fh.write(("\n" if self.count else "") + ("}" if self.is_object else "]") + "\n")
        self.fh.close()
        os.replace(self.tmp, self.path)
        return self.path.stat().st_size

    def abort(self) -> None:
        self.fh.close()
        if self.tmp.exists():
            self.tmp.unlink()


def generate_shop(
    out_dir: str | os.PathLike[str], n_products: int, seed: int = 0, progress: bool = True
) -> dict[str, Any]:
    """Generate a synthetic shop and write it in the reference WebShop file formats.

    Writes ``items_shuffle.json`` (product records), ``items_ins_v2.json`` (attributes and
    synthetic instructions) and ``items_human_ins.json`` (human-style instructions) into
    ``out_dir``.  The same ``(n_products, seed)`` always gives byte-identical files.  Products are
    generated and shuffled in blocks of :data:`BLOCK_SIZE`, so memory stays bounded for any
    ``n_products`` and the first N records of a large shop are a representative mix.

    Args:
        out_dir: Directory to write into (created if missing).
        n_products: Number of product records (>= 0).
        seed: Non-negative integer seed.
        progress: Show a tqdm progress bar for large shops (from 20,000 products).

    Returns:
        A summary: ``out_dir``, ``n_products``, ``seed``, ``products``, ``targets`` (products with a
        synthetic instruction), ``synthetic_goals`` (sum over targets of the option combinations),
        ``human_instructions``, ``human_targets``, ``categories`` (category -> product count),
        ``product_types`` (distinct queries), ``bytes`` (file name -> size), ``bytes_total`` and
        ``seconds``.

    Raises:
        ValueError: If ``n_products`` or ``seed`` is negative or not an integer.
    """
    if isinstance(n_products, bool) or not isinstance(n_products, (int, np.integer)) or n_products < 0:
        raise ValueError(f"n_products must be a non-negative integer, got {n_products!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    n_products, seed = int(n_products), int(seed)
    start = time.perf_counter()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"cannot write the shop into {str(out)!r}: it is a file, not a folder")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"cannot create {str(out)!r}: folder {str(out.parent)!r} does not exist")
    out.mkdir(exist_ok=True)
    keys = asin_keys(seed)
    streams = [
        _JsonStream(out / _FILES[0], is_object=False),
        _JsonStream(out / _FILES[1], is_object=True),
        _JsonStream(out / _FILES[2], is_object=True),
    ]
    products_out, ins_out, human_out = streams
    categories = {c: 0 for c in V.CATEGORIES}
    queries: dict[str, None] = {}
    targets = synthetic_goals = human_instructions = human_targets = 0
    bar = None
    if progress and n_products >= 20_000:
        from tqdm import tqdm

        from webshop_gym.utils import progress as _progress

        bar = tqdm(disable=_progress.disable(), total=n_products, unit="product", desc="generating shop")
    try:
        for block, first in enumerate(range(0, n_products, BLOCK_SIZE)):
            n = min(BLOCK_SIZE, n_products - first)
            draw = Draw(np.random.default_rng([seed, block + 1]))
            block_products = _make_block(draw, n)
            asins = [make_asin(first + i, keys) for i in range(n)]
            order = list(range(n))
            draw.shuffle(order)
            for i in order:
                p, asin = block_products[i], asins[i]
                products_out.add(_render(draw, p, asin))
                categories[p.info.group.category] += 1
                queries.setdefault(p.info.ptype.query, None)
                if not p.attrs_missing:
                    entry: dict[str, Any] = {"attributes": [a.text for a in p.attrs]}
                    if p.instruction is not None:
                        entry["instruction"] = p.instruction
                        entry["instruction_attributes"] = p.instruction_attrs
                        targets += 1
                        synthetic_goals += _combos(p.options)
                    ins_out.add(entry, key=asin)
                if p.human:
                    attrs = [a.text for a in p.attrs]
                    human_out.add([_human_record(asin, attrs, h) for h in p.human], key=asin)
                    human_instructions += len(p.human)
                    human_targets += 1
            del block_products
            if bar is not None:
                bar.update(n)
        sizes = {name: s.close() for name, s in zip(_FILES, streams, strict=True)}
    except BaseException:
        for s in streams:
            s.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
    return {
        "out_dir": str(out),
        "n_products": n_products,
        "seed": seed,
        "products": products_out.count,
        "targets": targets,
        "synthetic_goals": synthetic_goals,
        "human_instructions": human_instructions,
        "human_targets": human_targets,
        "categories": categories,
        "product_types": len(queries),
        "bytes": sizes,
        "bytes_total": sum(sizes.values()),
        "seconds": round(time.perf_counter() - start, 3),
    }
