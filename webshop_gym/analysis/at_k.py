"""Two sampled runs compared on the figures a paper prints for K samples: Δ mean@K and Δ pass@K.

Runs of ``eval --samples K`` are paired by goal (:func:`~webshop_gym.analysis.stats.paired_goals`):
each goal counts once, with all its samples.  Here the goal's two per-run values are

* its **mean@K** value, the share of its samples that succeeded: the difference over goals is
  the paired comparison's own Δ of success shares (the same paired-bootstrap interval and the
  same exact sign-flip test, :func:`~webshop_gym.analysis.stats.flip_test`);
* its **pass@K** value, :func:`~webshop_gym.protocols.scoring.pass_at_k` (1 or 0 for a goal
  played exactly K times: whether any sample succeeded): the difference's interval is the
  paired bootstrap of the per-goal differences
  (:func:`~webshop_gym.analysis.stats.resampled_mean`); the test is McNemar's exact test
  (:func:`~webshop_gym.analysis.stats.sign_test` on the goals only one run passed) when every
  value is 0 or 1, else the exact sign-flip test on the per-goal differences (exact fractions).

Each run's own value on the common goals comes with its interval over goals
(:func:`~webshop_gym.analysis.intervals.sampled_intervals`).  No statistic is computed here
that :mod:`webshop_gym.analysis.stats` does not define; this module only chooses which.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb

import numpy as np

from webshop_gym.analysis.intervals import RESAMPLES, sampled_intervals
from webshop_gym.analysis.stats import (
    Goals,
    Interval,
    PairedComparison,
    flip,
    p_text,
    paired_goals,
    resampled_mean,
    sign_test,
)

__all__ = ["AT_K_COLUMNS", "AtK", "at_k_cells", "paired_at_k"]

#: The columns of the mean@K / pass@K rows of a comparison (the report's and the viewer's).
AT_K_COLUMNS = ("figure", "first [95% CI]", "this [95% CI]", "Δ [95% CI]", "paired test", "p")

#: A denominator past this makes the exact fractions of pass@K too big for the sign-flip test's integers.
_LARGEST = 1 << 40


@dataclass(frozen=True)
class AtK:
    """One figure (``mean@4``, ``pass@4``) of two runs on their common goals, and B minus A.

    Attributes:
        figure: ``mean@K`` or ``pass@K``.
        a, b: each run's value (x100) with its 95% interval over the goals.
        diff: B minus A (x100) with its paired-bootstrap 95% interval (goals resampled together).
        test: the paired test's name (``sign-flip test``, ``McNemar's exact test``).
        p: its two-sided p-value.
        error: ``None`` when ``p`` is exact; else its Monte Carlo standard error (a sign-flip test
            past its exact limits: :func:`~webshop_gym.analysis.stats.flip`), printed ``≈p ± error``.
    """

    figure: str
    a: Interval | None
    b: Interval | None
    diff: Interval | None
    test: str
    p: float
    error: float | None = None


def _passes(goals: Goals, k: int) -> list[Fraction]:
    """Per goal, its pass@K estimate as an exact fraction."""
    out = []
    for c, n in zip(goals.solved.tolist(), goals.played.tolist(), strict=True):
        if n - c < k:
            out.append(Fraction(1))
        else:
            out.append(1 - Fraction(comb(n - c, k), comb(n, k)))
    return out


def paired_at_k(a: Goals, b: Goals, k: int, resamples: int = RESAMPLES, seed: int = 0,
                compared: PairedComparison | None = None) -> list[AtK]:
    """mean@K and pass@K of run ``b`` against run ``a``: goal ``i`` of each is the same goal (see the module).

    ``compared``: :func:`~webshop_gym.analysis.stats.paired_goals` of the same goals when already
    computed (its Δ of success shares is Δ mean@K).

    Example:
        >>> a = Goals.of([1, 0, 0, 0, 1, 1], ["x", "x", "y", "y", "z", "z"])
        >>> b = Goals.of([1, 1, 1, 0, 0, 0], ["x", "x", "y", "y", "z", "z"])
        >>> [(r.figure, r.diff.value, r.test) for r in paired_at_k(a, b, 2, resamples=100)]
        [('mean@2', 0.0, 'sign-flip test'), ('pass@2', 0.0, "McNemar's exact test")]
    """
    if len(a) != len(b):
        raise ValueError(f"paired runs need the same goals in each, got {len(a)} and {len(b)}")
    compared = compared or paired_goals(a, b, resamples, seed)
    own_a, own_b = sampled_intervals(a, k), sampled_intervals(b, k)
    mean = AtK(f"mean@{k}", own_a[f"mean@{k}"], own_b[f"mean@{k}"], compared.sr_diff, "sign-flip test",
               compared.mcnemar_p, compared.mcnemar_error)
    pa, pb = _passes(a, k), _passes(b, k)
    differences = [y - x for x, y in zip(pa, pb, strict=True)]
    diff = resampled_mean(np.array([float(d) for d in differences]), resamples, seed)
    error = None
    if all(v in (0, 1) for v in (*pa, *pb)):  # a goal played K times: passed or not, McNemar's exact test
        test = "McNemar's exact test"
        p = sign_test(sum(d > 0 for d in differences), sum(d < 0 for d in differences))
    elif all(d.denominator <= _LARGEST for d in differences):
        test = "sign-flip test"
        found = flip([d.numerator for d in differences], [d.denominator for d in differences], resamples, seed)
        p, error = found.p, found.error
    else:
        test, p = "-", float("nan")
    return [mean, AtK(f"pass@{k}", own_a[f"pass@{k}"], own_b[f"pass@{k}"], diff, test, p, error)]


def at_k_cells(row: AtK) -> list[str]:
    """``row`` as the cells of :data:`AT_K_COLUMNS` (one decimal, p as the paired table prints it)."""
    def ci(interval: Interval | None) -> str:
        return "-" if interval is None else interval.format(1)

    p = "-" if row.p != row.p else p_text(row.p, row.error)  # drawn: ≈p ± error
    return [row.figure, ci(row.a), ci(row.b), ci(row.diff), row.test, p]
