"""When a binomial count gets no 95% interval: at sizes where none can cover 93-97% (issue 54, round 6).

A figure that is a count of ``n`` independent trials whatever the run scored (SR of one play per
goal: the episodes solved; pass@K of K samples: the goals solved) has the Wilson interval of its
count, and its coverage is a sum of binomial probabilities.  (Score, and SR or mean@K of several
samples a goal, are counts only by the outcome, every reward 0 or 1 or every goal all or nothing;
withholding their interval on that outcome leaves the intervals still printed covering less, so
they keep theirs: docs/runs.md.)  At some truths no interval of counts whatever can cover 93-97%: every run of counts has a
probability outside the band (10 trials, a truth of 5%: the counts 0-1 have 91.4%, 0-2 have
98.8%).  On few trials such truths are everywhere on the scale; the more trials, the fewer.

:func:`no_interval_share` computes exactly the share of the truths between 5% and 95% (a grid of
901) at which no run of counts of ``n`` trials has a probability inside 93-97%, and
:func:`withheld_size` says whether it is more than a tenth: **under 14 trials** (18% at 10 trials,
11% at 13, 9% at 14, 7% at 20, 3% at 30, under 2% from 34 trials up, none from 50).  Then the
figure is printed without an interval, with the reason (:func:`withheld`).  The ends of the scale are left out of the share: there, at every
size, a truth within about two rare outcomes of 0 or 100% has no interval that covers 93-97%
(the count's own lattice, the same at 30 trials as at 3,000), so they cannot tell sizes apart;
the interval printed there covers more than 97% or, at a few truths, 84-93% (docs/runs.md).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats

from webshop_gym.analysis.stats import Interval, NoInterval

__all__ = ["BAND", "LARGEST_SHARE", "TRUTHS", "no_interval_share", "withheld", "withheld_size"]

#: The coverage a 95% interval must reach at every truth (issue 54): 93-97%.
BAND = (0.93, 0.97)
#: The truths the share is taken over: 5% to 95% (by symmetry, 5% to 50%), 901 points.
TRUTHS = np.linspace(0.05, 0.5, 451)
#: A size whose share of truths without any interval in the band exceeds this gets no interval.
LARGEST_SHARE = 0.10
#: From this many trials up the share is not computed: it is 0 from 50 trials up (checked in the tests).
_COMPUTED = 100


@functools.lru_cache(maxsize=256)
def no_interval_share(n: int, band: tuple[float, float] = BAND) -> float:
    """The share of :data:`TRUTHS` at which no run of counts of ``n`` trials has a binomial probability in ``band``.

    A run of counts ``a..b`` covers a truth with ``P(a <= X <= b)``; an interval method covers it
    with the probability of the run of counts whose interval holds it, so where no run lands in
    the band, no interval does.

    Example:
        >>> round(no_interval_share(10), 2), round(no_interval_share(30), 2)
        (0.18, 0.03)
    """
    if n < 1:
        raise ValueError(f"a count needs at least one trial, got n={n}")
    low, high = band
    counts = np.arange(n + 1)
    pmf = stats.binom.pmf(counts[None, :], n, TRUTHS[:, None])
    cumulative = np.concatenate([np.zeros((len(TRUTHS), 1)), np.cumsum(pmf, axis=1)], axis=1)
    rows = np.arange(len(TRUTHS))
    attainable = np.zeros(len(TRUTHS), bool)
    for start in range(n + 1):  # from each start, the shortest run reaching the band's lower end: inside it?
        mass = cumulative - cumulative[:, start : start + 1]
        reach = mass >= low - 1e-12
        end = np.argmax(reach, axis=1)
        attainable |= reach.any(axis=1) & (mass[rows, end] <= high + 1e-12)
        if np.all(cumulative[:, start] > 1 - low):
            break  # no run from here on holds the band's lower end
    # the grid is symmetric about 1/2 but for its midpoint: count 5%-50% twice, 50% once
    weights = np.where(TRUTHS < 0.5, 2.0, 1.0)
    return float((weights * ~attainable).sum() / weights.sum())


def withheld_size(n: int) -> bool:
    """Whether a binomial count of ``n`` trials gets no interval: :func:`no_interval_share` over :data:`LARGEST_SHARE`.

    Example:
        >>> [n for n in range(1, 40) if withheld_size(n)] == list(range(1, 14))
        True
    """
    return n < _COMPUTED and no_interval_share(int(n)) > LARGEST_SHARE


def withheld(found: Interval | NoInterval | None, n: int, unit: str) -> Interval | NoInterval | None:
    """``found`` (the Wilson interval of a count of ``n`` trials, x100), or a :class:`NoInterval` if it is withheld.

    ``unit``: what the trials are, for the reason (``episodes``, ``goals``).

    Example:
        >>> withheld(Interval(20.0, 5.7, 51.0), 10, "episodes").format()
        '20.0 (no 95% interval at 10 episodes)'
        >>> withheld(Interval(50.0, 31.3, 68.7), 30, "episodes")
        Interval(value=50.0, low=31.3, high=68.7)
    """
    if not isinstance(found, Interval) or not withheld_size(int(n)):
        return found
    share = no_interval_share(int(n))
    return NoInterval(found.value, f"no 95% interval at {n} {unit}; at {share:.0%} of the truths between 5% and 95% "
                                   f"no interval of a count of {n} covers 93-97% (docs/runs.md, Intervals)")
