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
from collections.abc import Iterable, Sequence

import numpy as np

from webshop_gym.analysis.stats import Goals, Interval, resampled_mean, resampled_ratio
from webshop_gym.protocols.scoring import pass_at_k

__all__ = ["METHOD", "RESAMPLES", "SAMPLED_METHOD", "SAMPLES_DEFINITION", "Interval", "effective_trials", "fmt",
           "goal_intervals", "goal_sr_interval", "method", "sampled_intervals", "score_interval", "share_interval", "sr_interval", "wilson",
           "wilson_share"]

#: Resamples of the Score's bootstrap (the report's ``--bootstrap`` default too).
RESAMPLES = 10_000
#: How the intervals are computed, in words (shown beside them).
METHOD = ("95% intervals: SR by the Wilson score interval, Score by the percentile bootstrap "
          "({resamples:,} resamples of the episodes, seed {seed})")
#: The same for a run that played each goal K times (``eval --samples K``): the goal is the unit.
SAMPLED_METHOD = ("95% intervals over goals (each goal with its {k} samples, not {k} independent episodes): Score by "
                  "the percentile bootstrap of goals ({resamples:,} resamples, seed {seed}); SR, mean@{k} and "
                  "pass@{k} by the Wilson interval at the effective number of trials (the design effect of the "
                  "goals' samples)")
#: What mean@K and pass@K are, in words (shown beside them).
SAMPLES_DEFINITION = ("mean@K: the mean over goals of the share of a goal's K samples that succeeded; pass@K: the mean "
                      "over goals of the unbiased estimate 1 - C(n-c, K)/C(n, K) from a goal's n samples, c of them "
                      "successes (with n = K: whether any sample succeeded)")
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


def wilson_share(share: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share ``share`` observed on ``n`` (effective, maybe fractional) trials.

    Example:
        >>> wilson_share(0.8, 10) == wilson(8, 10)
        True
    """
    if n <= 0:
        raise ValueError(f"the Wilson interval needs at least one trial, got n={n}")
    denominator = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(share * (1 - share), 0.0) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def effective_trials(totals: np.ndarray, sizes: np.ndarray, units: float | None = None) -> float:
    """How many independent trials a share observed in clusters is worth: ``p (1 - p) / v``.

    Cluster ``g`` had ``sizes[g]`` trials and ``totals[g]`` successes (possibly a fraction: a
    goal's estimated pass@k); ``p = sum(totals) / sum(sizes)`` and ``v`` is the cluster-robust
    (linearisation) variance of that ratio, ``sum((totals - p sizes)**2) / sum(sizes)**2``.  It is
    the trials divided by the design effect, at most ``units`` (default: the trials: the samples
    of a goal cannot be worth more than independent ones).  When each cluster is all successes or
    all failures (a deterministic policy's goals, or no success at all) the clusters count: a goal
    whose K samples agree is one observation, not K.  When every cluster has the same share
    strictly between 0 and 1 (``v = 0``): ``units``.

    Example:
        >>> effective_trials(np.array([3.0, 0.0, 3.0, 0.0]), np.array([3, 3, 3, 3]))  # all or nothing: the goals
        4.0
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    trials = float(sizes.sum())
    units = trials if units is None else float(units)
    p = float(totals.sum()) / trials
    if p <= 0.0 or p >= 1.0 or np.all((totals == 0) | (totals == sizes)):  # each goal all or nothing: the goals
        return float(len(totals))
    variance = float(np.square(totals - p * sizes).sum()) / trials**2
    if variance <= 0.0:
        return units
    return min(units, p * (1 - p) / variance)


def share_interval(totals: Sequence[float] | np.ndarray, sizes: Sequence[int] | np.ndarray | None = None,
                   units: float | None = None) -> Interval | None:
    """A share of successes over clusters (x100) with its Wilson 95% interval at the effective trials.

    ``totals[g]`` successes of ``sizes[g]`` trials (default 1) in cluster ``g`` (a goal and its
    samples); the interval is :func:`wilson_share` at :func:`effective_trials`.  When each cluster
    is all successes or all failures (one trial per cluster: plain SR) it is exactly the Wilson
    interval of the clusters (:func:`sr_interval` on them).

    Example:
        >>> share_interval([2, 2, 0, 0], [2, 2, 2, 2]).format() == sr_interval([1, 1, 0, 0]).format()
        True
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.ones(len(totals)) if sizes is None else np.asarray(sizes, dtype=float)
    if len(totals) == 0:
        return None
    trials = float(sizes.sum())
    p = float(totals.sum()) / trials
    whole = (totals == 0) | (totals == sizes)  # each cluster all or nothing: Wilson on the clusters, in integers
    if np.all(whole) and (units is None or units >= len(totals)):
        low, high = wilson(int((totals > 0).sum()), len(totals))
    else:
        low, high = wilson_share(p, effective_trials(totals, sizes, units))
    return Interval(100.0 * p, 100.0 * low, 100.0 * high)


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


def goal_intervals(goals: Goals, resamples: int = RESAMPLES, seed: int = 0) -> dict[str, Interval | None]:
    """``{"score", "sr"}``: the 95% intervals of a run's Score and SR, its episodes grouped in goals.

    One sample per goal (every run without ``--samples``): the episode is the unit,
    :func:`score_interval` and :func:`sr_interval` on the episodes.  Several samples of a goal
    (``eval --samples K``): the goal is the unit, since its samples are not independent draws:
    Score by the percentile bootstrap over goals (:func:`~webshop_gym.analysis.stats.resampled_ratio`,
    each goal drawn with all its samples), SR by :func:`share_interval` (Wilson at the effective
    number of trials, which is the goals' count when every goal's samples agree).  The values are
    the means over the episodes, as every figure of the run.
    """
    score = resampled_ratio(goals.reward, goals.played, resamples, seed)  # one sample per goal: score_interval
    return {"score": score, "sr": goal_sr_interval(goals)}


def goal_sr_interval(goals: Goals) -> Interval | None:
    """SR (x100) with its 95% interval over goals (``None`` without goals).

    :func:`sr_interval` with one sample per goal, else :func:`share_interval` of the goals' successes.
    """
    if not goals.sampled:
        return sr_interval(goals.solved > 0)
    return share_interval(goals.solved, goals.played)


def sampled_intervals(goals: Goals, k: int) -> dict[str, Interval | None]:
    """``{"mean@K", "pass@K"}`` with their 95% intervals over goals (K = ``k``, the samples per goal asked).

    mean@K is the mean over goals of their share of successful samples, pass@K the mean over
    goals of :func:`~webshop_gym.protocols.scoring.pass_at_k` (the unbiased estimate; 1 or 0 for
    a goal played K times).  Both intervals are :func:`share_interval` on the per-goal values (a
    goal is one cluster), the effective trials at most the samples played.  ``None`` without goals.
    """
    if not len(goals):
        return {f"mean@{k}": None, f"pass@{k}": None}
    passes = np.array([pass_at_k(c, n, k) for c, n in zip(goals.solved.tolist(), goals.played.tolist(), strict=True)])
    samples = float(goals.played.sum())
    return {f"mean@{k}": share_interval(goals.share, units=samples), f"pass@{k}": share_interval(passes, units=samples)}


def method(resamples: int = RESAMPLES, seed: int = 0, samples: int | Iterable[int] = 1) -> str:
    """How runs' intervals are computed, in words (shown beside them): by episodes, or by goals for K > 1 samples.

    ``samples``: the runs' samples per goal (one number, or one per run shown: each distinct K is named).

    Example:
        >>> method(samples=[1, 1]) == METHOD.format(resamples=RESAMPLES, seed=0)
        True
    """
    ks = sorted({int(k) for k in ([samples] if isinstance(samples, int) else samples)} or {1})
    texts = [METHOD.format(resamples=resamples, seed=seed) if k <= 1 else
             SAMPLED_METHOD.format(resamples=resamples, seed=seed, k=k) for k in ks]
    if len(ks) > 1:
        texts = [("runs of one play per goal: " if k <= 1 else f"runs of {k} samples per goal: ") + t
                 for k, t in zip(ks, texts, strict=True)]
    return "; ".join(texts)


def fmt(value: float | None, digits: int = 1) -> str:
    """A figure as every page prints it: ``digits`` decimals, ``-`` for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"
