"""The paired statistics of a huge comparison are fast and give exactly what they gave before (issue 31).

The sign test summed ``math.comb(n, i)`` anew for every ``i``: 0.7 s for 2,592 lost goals, 200 s for
two similar runs of 50,000 goals.  It now sums the terms by their recurrence; the twin below is
the old code, kept here only to check that every p-value is the same float.  The intervals'
bootstrap did not change: the comparison's intervals must still be exactly ``resampled_mean`` with
the same resamples and seed (a run's Score interval is no longer a bootstrap: issue 54).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from webshop_gym.analysis.stats import paired, resampled_mean, sign_test


def sign_test_before(wins: int, losses: int) -> float:
    """The sign test as it was (the reference twin)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def test_sign_test_equals_the_old_sum_exactly():
    for wins in range(0, 61):
        for losses in range(0, 61):
            assert sign_test(wins, losses) == sign_test_before(wins, losses), (wins, losses)
    for wins, losses in [(1200, 1300), (333, 4000), (2000, 2001), (2000, 2000), (999, 1000), (0, 3000), (1500, 700)]:
        assert sign_test(wins, losses) == sign_test_before(wins, losses), (wins, losses)


def _runs(goals: int, seed: int, distinct: int) -> tuple[np.ndarray, np.ndarray]:
    """Two runs' rewards on ``goals`` goals: 0 and 1 often, else one of ``distinct`` fractions."""
    rng = np.random.default_rng(seed)
    fractions = np.round(np.linspace(0.05, 0.95, distinct), 4)
    def run():
        r = rng.choice([0.0, 1.0, -1.0], size=goals, p=[0.3, 0.3, 0.4])
        return np.where(r < 0, rng.choice(fractions, goals), r)
    return run(), run()


@pytest.mark.parametrize(("goals", "seed", "distinct", "resamples"),
                         [(7, 0, 3, 500), (200, 1, 20, 2000), (3000, 2, 60, 10_000), (20_000, 3, 40, 1500)])
def test_paired_comparison_is_the_same_as_before(goals, seed, distinct, resamples):
    a, b = _runs(goals, seed, distinct)
    p = paired(a, b, resamples, seed)
    sa, sb = a == 1.0, b == 1.0
    assert p.score_diff == resampled_mean(b - a, resamples, seed)
    assert p.sr_diff == resampled_mean(sb.astype(float) - sa.astype(float), resamples, seed)
    assert p.sign_p == sign_test_before(int((b > a).sum()), int((b < a).sum()))
    assert p.mcnemar_p == sign_test_before(int((sb & ~sa).sum()), int((sa & ~sb).sum()))


def test_two_similar_runs_of_50000_goals_compare_in_under_a_second():
    """The worst case of the sign test: about as many goals won as lost (before: 200 s)."""
    rng = np.random.default_rng(5)
    fractions = np.round(np.linspace(0.1, 0.9, 9), 2)
    a = np.where(rng.random(50_000) < 0.5, 1.0, rng.choice(fractions, 50_000))
    b = np.where(rng.random(50_000) < 0.5, 1.0, rng.choice(fractions, 50_000))
    started = time.process_time()
    p = paired(a, b)
    spent = time.process_time() - started
    assert p.won + p.lost > 35_000 and abs(p.won - p.lost) < 1000
    assert 0.0 < p.sign_p <= 1.0
    assert spent < 1.0, f"{spent:.2f} s of CPU"
