"""Where Lucene's Unicode 9.0 / emoji 11.0 character classes differ from the ``regex`` module's.

Filled from the comparison of every code point with Lucene (``benchmarks/analysis_parity.py``).
"""

from __future__ import annotations

CORRECTIONS: dict[str, tuple[str, str]] = {}
"""Per class of :mod:`webshop_gym.search.tokenizer`: (code points to add, code points to remove), as set text."""
