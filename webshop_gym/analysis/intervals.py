"""The one interval method of runs' figures, shared by ``eval``'s readers: the viewer and ``report``.

* **SR** (a share of successes): the **Wilson score interval** (95%), a closed form, so every
  page that shows a run's SR shows the same interval.
* **Score** (a mean reward): the **percentile bootstrap** (95%, ``resamples`` resamples of the
  episodes with replacement, seeded): resampling ``n`` episodes is drawing how often each
  distinct reward value comes up from a multinomial, which is what :func:`score_interval`
  does, so its cost and memory grow with the number of distinct rewards, not with ``n``
  (a 50,000-episode run costs milliseconds).

Both scale to percent (x100) and round the same way everywhere (:func:`fmt`: one decimal).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from webshop_gym.analysis.stats import Interval, resampled_mean

__all__ = ["METHOD", "RESAMPLES", "Interval", "fmt", "score_interval", "sr_interval", "wilson"]

#: Resamples of the Score's bootstrap (the report's ``--bootstrap`` default too).
RESAMPLES = 10_000
#: How the intervals are computed, in words (shown beside them).
METHOD = ("95% intervals: SR by the Wilson score interval, Score by the percentile bootstrap "
          "({resamples:,} resamples of the episodes, seed {seed})")
Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (as shares in [0, 1]).

    Example:
        >>> [round(x, 4) for x in wilson(8, 10)]
        [0.4902, 0.9433]
    """
    if n <= 0:
        raise ValueError(f"the Wilson interval needs at least one trial, got n={n}")
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def sr_interval(successes: Sequence[bool] | np.ndarray) -> Interval | None:
    """SR (x100) with its Wilson 95% interval (``None`` without episodes)."""
    data = np.asarray(successes, dtype=bool)
    n = len(data)
    if n == 0:
        return None
    k = int(data.sum())
    low, high = wilson(k, n)
    return Interval(100.0 * k / n, 100.0 * low, 100.0 * high)


def score_interval(rewards: Sequence[float] | np.ndarray, resamples: int = RESAMPLES, seed: int = 0,
                   level: float = 0.95) -> Interval | None:
    """Score (100 x mean reward) with its percentile-bootstrap interval (``None`` without episodes).

    Example:
        >>> score_interval([1.0, 0.0, 1.0, 1.0]).format()
        '75.0 [25.0, 100.0]'
    """
    return resampled_mean(rewards, resamples, seed, 100.0, level)


def fmt(value: float | None, digits: int = 1) -> str:
    """A figure as every page prints it: ``digits`` decimals, ``-`` for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"
