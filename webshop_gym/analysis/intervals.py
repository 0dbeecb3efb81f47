"""The one interval method of runs' figures, shared by ``eval``'s readers: the viewer and ``report``.

Every interval is a **Wilson-type score interval for a mean in [0, 1] over goals** (95%), a
closed form, so every page that shows a figure shows the same interval:

* **SR** of a run of one play per goal: the Wilson score interval of the successes
  (:func:`wilson`: SciPy's ``binomtest(k, n).proportion_ci(method="wilson")``).
* **Score**, and **SR, mean@K, pass@K** of a run of ``--samples K``: :func:`cluster_interval`:
  the Wilson interval of the mean ``m`` at the *effective number of trials*
  ``n_eff = m (1 - m) / v`` (``v``: the variance of ``m`` over goals, each goal one cluster with
  all its samples, with the small-sample factor ``G / (G - 1)``) and Student's ``t`` quantile on
  ``G - 1`` degrees of freedom in place of the normal one, because ``v`` is estimated from ``G``
  goals (the normal one when ``n_eff`` reaches its cap, the samples of a share of successes: the
  binomial variance of the samples, nothing estimated).  With several samples a goal the ``t`` is
  on Satterthwaite's degrees of freedom (:func:`degrees`), and the bound toward the nearer end of
  the scale (the lower one when the mean is under 1/2) takes ``NEAR * 1.96 + (1 - NEAR) * t``
  (:data:`NEAR`: 0.7): there the far bound can hardly miss, and ``t`` on both bounds covered
  97.5-98% at the ends of the scale on 10-30 goals.  Goals that are all successes or all failures
  with equal samples have a known variance:
  then it is the plain Wilson interval of the goals (of the episodes with one play per goal), so
  a Score of 0/1 rewards has SR's interval and a run that never succeeds gets SR's non-zero upper
  bound (``0.0 [0.0, 65.8]`` on 2 goals), never a zero-width interval.

SR of one play per goal on fewer than 14 episodes, and pass@K on fewer than 14 goals, are counts
at a size where no interval can cover 93-97% at a tenth of the truths or more: they get none, a
:class:`~webshop_gym.analysis.stats.NoInterval` with its reason (:mod:`webshop_gym.analysis.withheld`).

The method was chosen by simulation (``benchmarks/intervals.py``; docs/runs.md lists every cell
simulated and its coverage).  Both scale to percent (x100) and round the same way everywhere
(:func:`fmt`: one decimal).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import stats

from webshop_gym.analysis.stats import Goals, Interval, NoInterval, plain
from webshop_gym.analysis.withheld import withheld
from webshop_gym.protocols.scoring import pass_at_k

__all__ = ["METHOD", "NEAR", "RESAMPLES", "SAMPLED_METHOD", "SAMPLES_DEFINITION", "Interval", "NoInterval", "cluster_interval",
           "concentrated", "degrees", "effective_trials", "fmt", "goal_intervals", "goal_sr_interval", "method", "quantile", "sampled_intervals",
           "score_interval", "share_interval", "sr_interval", "wilson", "wilson_share"]

#: Resamples of the paired comparisons' bootstrap (the report's ``--bootstrap`` default too).
RESAMPLES = 10_000
#: How the intervals are computed, in words (shown beside them).
METHOD = ("95% intervals: SR by the Wilson score interval, Score by the Wilson-type interval of a mean in [0, 1] at "
          "the effective number of trials (its variance over the episodes, Student's t quantile); paired "
          "differences by the percentile bootstrap ({resamples:,} resamples, seed {seed})")
#: The same for a run that played each goal K times (``eval --samples K``): the goal is the unit.
SAMPLED_METHOD = ("95% intervals over goals (each goal with its {k} samples, not {k} independent episodes): Score, "
                  "SR, mean@{k} and pass@{k} by the Wilson-type interval at the effective number of trials (the "
                  "variance over goals, Student's t on Satterthwaite's degrees of freedom, the bound toward the nearer end of "
                  "the scale 0.7 of the normal quantile and 0.3 of t; the goals as the trials when "
                  "the rarer outcome sits in one or two goals); paired differences by the percentile bootstrap of "
                  "goals ({resamples:,} resamples, seed {seed})")
#: What mean@K and pass@K are, in words (shown beside them).
SAMPLES_DEFINITION = ("mean@K: the mean over goals of the share of a goal's K samples that succeeded; pass@K: the mean "
                      "over goals of the unbiased estimate 1 - C(n-c, K)/C(n, K) from a goal's n samples, c of them "
                      "successes (with n = K: whether any sample succeeded)")
Z95 = 1.959963984540054
#: Sampled runs: the bound toward the nearer end of the scale (the lower one when the mean is under 1/2) takes
#: ``NEAR * Z95 + (1 - NEAR) * t`` in place of Student's ``t``; chosen by simulation (docs/runs.md, round 5).
NEAR = 0.7


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The Wilson score interval (95%) of ``successes`` of ``n`` trials, as shares in [0, 1].

    SciPy's ``binomtest(successes, n).proportion_ci(method="wilson")`` (integer counts); a
    fractional count (effective trials) goes through :func:`wilson_share`, the same formula.

    Example:
        >>> [round(x, 4) for x in wilson(8, 10)]
        [0.4902, 0.9433]
    """
    if n <= 0:
        raise ValueError(f"the Wilson interval needs at least one trial, got n={n}")
    found = stats.binomtest(int(successes), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return max(0.0, float(found.low)), min(1.0, float(found.high))


def wilson_share(share: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share ``share`` observed on ``n`` (effective, maybe fractional) trials.

    ``z``: the quantile (the normal one by default; :func:`cluster_interval` passes Student's
    ``t``; ``inf``: the whole of [0, 1]).  With an integer count it is :func:`wilson` (to
    rounding: ``tests/runs/test_coverage.py`` checks it against SciPy).

    Example:
        >>> [round(x, 4) for x in wilson_share(0.8, 10)] == [round(x, 4) for x in wilson(8, 10)]
        True
    """
    if n <= 0:
        raise ValueError(f"the Wilson interval needs at least one trial, got n={n}")
    if math.isinf(z):
        return 0.0, 1.0
    denominator = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(share * (1 - share), 0.0) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def quantile(goals: int, degrees: float | None = None) -> float:
    """The two-sided 95% quantile of Student's ``t`` on ``degrees`` (default ``goals - 1``) degrees of freedom.

    ``inf`` for one goal.
    """
    if goals < 2:
        return math.inf
    return float(stats.t.ppf(0.975, goals - 1 if degrees is None else degrees))


def degrees(totals: np.ndarray, sizes: np.ndarray) -> float:
    """The degrees of freedom of the goals' variance: Satterthwaite's, each goal one chi-square term.

    ``2 (sum e_g**2)**2 / sum e_g**4`` with ``e_g = totals[g] - m sizes[g]`` (the goals'
    deviations), between 1 and ``G - 1``: ``G - 1`` when the goals deviate alike, near 1 when one
    or two goals carry the whole variance (a few goals with all the successes).  The factor 2 lies
    between the plug-in value (1) and the normal-theory one (3, since ``E e**4 = 3 sigma**4``); it
    was chosen by simulation (``benchmarks/intervals.py``, docs/runs.md).

    Example:
        >>> round(degrees(np.array([3.0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), np.full(10, 4.0)), 2)  # one goal carries it
        2.47
        >>> degrees(np.array([1.0, 3, 1, 3, 1, 3]), np.full(6, 4.0))  # the goals deviate alike: G - 1
        5.0
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    g = len(totals)
    m = math.fsum(totals.tolist()) / math.fsum(sizes.tolist())
    squares = np.square(totals - m * sizes)
    fourth = math.fsum(np.square(squares).tolist())
    if fourth <= 0.0:
        return float(g - 1)
    return min(float(g - 1), max(1.0, 2.0 * math.fsum(squares.tolist()) ** 2 / fourth))


def concentrated(totals: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether a share's rarer outcome sits in fewer than 3 goals that hold more than one of it.

    The rarer outcome: the successes, or the failures when they are rarer.  Then the goals' spread
    says little, and :func:`share_interval` counts the goals as the trials.

    Example:
        >>> concentrated(np.array([5, 0, 0, 0, 0, 0, 0, 0, 0, 0]), np.full(10, 16))  # 5 successes, all in one goal
        True
        >>> concentrated(np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0]), np.full(10, 16))  # one success in each of 2 goals
        False
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    rare = totals if math.fsum(totals.tolist()) * 2 <= math.fsum(sizes.tolist()) else sizes - totals
    holding = int((rare > 0).sum())
    return holding < 3 and math.fsum(rare.tolist()) > holding


def _known(totals: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the goals' variance is known: each goal all successes or all failures, every goal the same samples."""
    return bool(np.all((totals == 0) | (totals == sizes)) and np.all(sizes == sizes[0]))


def effective_trials(totals: np.ndarray, sizes: np.ndarray, units: float | None = None) -> float:
    """How many independent trials a mean observed in clusters is worth: ``m (1 - m) / v``.

    Cluster ``g`` had ``sizes[g]`` trials summing to ``totals[g]`` (successes, rewards in [0, 1],
    or one goal's estimated pass@k); ``m = sum(totals) / sum(sizes)`` and ``v`` is the
    cluster-robust (linearisation) variance of that ratio with the small-sample factor
    ``G / (G - 1)``: ``G / (G - 1) * sum((totals - m sizes)**2) / sum(sizes)**2``.  It is capped at
    ``units`` (default: none; a share of successes passes its trials: samples of a goal are not
    worth more than independent ones).  When each cluster is all successes or all failures with
    the same size (a deterministic policy's goals, or no success at all), or ``m`` is 0 or 1, the
    clusters count.  When ``v = 0`` otherwise (every cluster the same mean strictly inside (0, 1)):
    ``units``, else the trials.

    Example:
        >>> effective_trials(np.array([3.0, 0.0, 3.0, 0.0]), np.array([3, 3, 3, 3]))  # all or nothing: the goals
        4.0
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    g = len(totals)
    trials = math.fsum(sizes.tolist())
    cap = math.inf if units is None else float(units)
    m = math.fsum(totals.tolist()) / trials
    if m <= 0.0 or m >= 1.0 or _known(totals, sizes):
        return float(g)
    if g < 2:
        return min(cap, trials)
    variance = math.fsum(np.square(totals - m * sizes).tolist()) / trials**2 * g / (g - 1)
    if variance <= 0.0:
        return min(cap, trials)
    return min(cap, m * (1 - m) / variance)


def cluster_interval(totals: Sequence[float] | np.ndarray, sizes: Sequence[int] | np.ndarray | None = None,
                     units: float | None = None, floor: bool = False, sampled: bool | None = None) -> Interval | None:
    """A mean in [0, 1] over clusters (x100) with its Wilson-type 95% interval; ``None`` without clusters.

    ``totals[g]`` is the sum of cluster ``g``'s ``sizes[g]`` values (default 1 each): a goal's
    successes or reward total over its samples.  The interval is :func:`wilson_share` at
    :func:`effective_trials` with Student's ``t`` quantile on ``G - 1`` degrees of freedom
    (:func:`quantile`; the normal quantile when the effective trials reach ``units``: the binomial
    variance of the units, nothing estimated; ``sampled``: on :func:`degrees`, and the bound toward
    the nearer end of the scale with ``NEAR * 1.96 + (1 - NEAR) * t``, none at a mean of exactly 1/2), except when the variance is known (every goal all or nothing, the same
    samples each, or the mean 0 or 1): then the plain Wilson interval of the goals
    (:func:`wilson`).  With one goal whose mean lies strictly inside (0, 1) no interval can be
    estimated: [0, 100].

    Example:
        >>> cluster_interval([0.0, 0.0, 0.0]).format()
        '0.0 [0.0, 56.1]'
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.ones(len(totals)) if sizes is None else np.asarray(sizes, dtype=float)
    if totals.shape != sizes.shape:
        raise ValueError(f"one size per total, got {totals.shape} and {sizes.shape}")
    g = len(totals)
    if g == 0:
        return None
    if np.any(sizes <= 0):
        raise ValueError("every cluster needs at least one value")
    m = math.fsum(totals.tolist()) / math.fsum(sizes.tolist())
    if m <= 0.0 or m >= 1.0 or _known(totals, sizes):
        low, high = wilson(round(m * g), g)
    else:
        trials = effective_trials(totals, sizes, units)
        capped = units is not None and trials >= float(units)  # the binomial variance of the units: not estimated
        several = bool(np.any(sizes > 1)) if sampled is None else sampled
        z = Z95 if capped else quantile(g, degrees(totals, sizes) if several else None)
        if floor:
            trials, z = min(trials, float(g)), Z95
        low, high = wilson_share(m, trials, z)
        if several and m != 0.5 and Z95 < z < math.inf:  # the bound toward the nearer end of the scale: NEAR
            near = wilson_share(m, trials, NEAR * Z95 + (1 - NEAR) * z)
            low, high = (near[0], high) if m < 0.5 else (low, near[1])
    return Interval(100.0 * m, 100.0 * min(low, m), 100.0 * max(high, m))


def share_interval(totals: Sequence[float] | np.ndarray, sizes: Sequence[int] | np.ndarray | None = None,
                   units: float | None = None, counts: tuple[np.ndarray, np.ndarray] | None = None) -> Interval | None:
    """A share of successes over clusters (x100) with its 95% interval: :func:`cluster_interval`.

    ``totals[g]`` successes of ``sizes[g]`` trials (default 1) in cluster ``g`` (a goal and its
    samples); ``units``: the most trials the share can be worth (default: the trials).  When each
    cluster is all successes or all failures with the same trials (one trial per cluster: plain
    SR) it is exactly the Wilson interval of the clusters (:func:`sr_interval` on them); with
    unequal trials the share's own variance over clusters decides (the value is the share of
    trials, and so is the interval).  When the rarer outcome sits in one or two clusters that hold
    more than one of it (:func:`concentrated`), the clusters are the trials (``floor``).
    ``counts``: the clusters' successes and trials when ``totals`` are already their shares
    (mean@K): the rule and the degrees of freedom are read from them.

    Example:
        >>> share_interval([2, 2, 0, 0], [2, 2, 2, 2]).format() == sr_interval([1, 1, 0, 0]).format()
        True
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.ones(len(totals)) if sizes is None else np.asarray(sizes, dtype=float)
    if len(totals) == 0:
        return None
    solved, played = (totals, sizes) if counts is None else (np.asarray(counts[0], float), np.asarray(counts[1], float))
    return cluster_interval(totals, sizes, math.fsum(sizes.tolist()) if units is None else units,
                            floor=concentrated(solved, played), sampled=bool(np.any(played > 1)))


def sr_interval(successes: Sequence[bool] | np.ndarray) -> Interval | None:
    """SR (x100) with its Wilson 95% interval (``None`` without episodes)."""
    data = np.asarray(successes, dtype=bool)
    n = len(data)
    if n == 0:
        return None
    k = int(data.sum())
    low, high = wilson(k, n)
    return Interval(100.0 * k / n, 100.0 * low, 100.0 * high)


def score_interval(rewards: Sequence[float] | np.ndarray, resamples: int = RESAMPLES, seed: int = 0) -> Interval | None:
    """Score (100 x mean reward) of episodes with its 95% interval (``None`` without episodes).

    :func:`cluster_interval` with every episode its own cluster (rewards in [0, 1]); rewards of
    0 and 1 only give SR's Wilson interval.  ``resamples`` and ``seed`` are the readers' bootstrap
    settings (the paired comparisons'); this closed form uses neither.

    Example:
        >>> score_interval([1.0, 0.0, 1.0, 1.0]).format()
        '75.0 [30.1, 95.4]'
    """
    return cluster_interval(np.asarray(rewards, dtype=float))


def goal_intervals(goals: Goals, resamples: int = RESAMPLES,
                   seed: int = 0) -> dict[str, Interval | NoInterval | None]:
    """``{"score", "sr"}``: the 95% intervals of a run's Score and SR, its episodes grouped in goals.

    One sample per goal (every run without ``--samples``): the episode is the unit,
    :func:`score_interval` and :func:`sr_interval` on the episodes.  Several samples of a goal
    (``eval --samples K``): the goal is the unit, since its samples are not independent draws:
    both by :func:`cluster_interval` over goals (each goal one cluster with all its samples; SR's
    effective trials at most the samples).  When every goal's samples gave one reward each (a
    deterministic policy's), they hold what one play per goal holds, and Score's interval is one
    play's (``G - 1`` degrees of freedom, not Satterthwaite's).  The values are the means over the
    episodes, as every figure of the run.  ``resamples`` and ``seed`` are unused (see :func:`score_interval`).

    SR of one play per goal is a binomial count of the episodes whatever they scored: on fewer than
    14 of them it has no interval that can stand (:func:`~webshop_gym.analysis.withheld.withheld_size`)
    and is a :class:`NoInterval` with its reason.  Score, and SR of several samples a goal, keep
    their interval (a count only by the outcome, not by what they are: see docs/runs.md).
    """
    # a goal's samples that all gave one reward hold what one play holds: one play's degrees of freedom
    sampled = False if goals.repeated else None
    return {"score": cluster_interval(goals.reward, goals.played, sampled=sampled), "sr": goal_sr_interval(goals)}


def goal_sr_interval(goals: Goals) -> Interval | NoInterval | None:
    """SR (x100) with its 95% interval over goals (``None`` without goals; :class:`NoInterval`: withheld).

    :func:`sr_interval` with one sample per goal (withheld on fewer than 14 episodes:
    :func:`goal_intervals`), else :func:`share_interval` of the goals' successes.
    """
    if not goals.sampled:  # a count of the episodes: withheld on too few (webshop_gym.analysis.withheld)
        return withheld(sr_interval(goals.solved > 0), len(goals), "episodes")
    return share_interval(goals.solved, goals.played)


def sampled_intervals(goals: Goals, k: int) -> dict[str, Interval | NoInterval | None]:
    """``{"mean@K", "pass@K"}`` with their 95% intervals over goals (K = ``k``, the samples per goal asked).

    mean@K is the mean over goals of their share of successful samples, pass@K the mean over
    goals of :func:`~webshop_gym.protocols.scoring.pass_at_k` (the unbiased estimate; 1 or 0 for
    a goal played at most K times).  mean@K's interval is :func:`share_interval` on the per-goal
    shares (a goal is one cluster, the effective trials at most the samples played); pass@K's is
    the Wilson interval of the goals solved when no goal was played more than ``k`` times (what
    ``eval --samples K`` gives), and ``None`` when some goal was (pass@k estimated from more
    samples, k < K): no interval we simulated covers 93-97% there (docs/runs.md), so none is
    given; the value stands.  ``None`` without goals.  pass@K of K samples is a binomial count of
    the goals: on fewer than 14 goals a :class:`NoInterval` (:func:`goal_intervals`).
    """
    if not len(goals):
        return {f"mean@{k}": None, f"pass@{k}": None}
    passes = np.array([pass_at_k(c, n, k) for c, n in zip(goals.solved.tolist(), goals.played.tolist(), strict=True)])
    samples = float(goals.played.sum())
    pass_ci = withheld(share_interval(passes), len(goals), "goals") if int(goals.played.max()) <= k else None
    mean_ci = share_interval(goals.share, units=samples, counts=(goals.solved, goals.played))
    return {f"mean@{k}": mean_ci, f"pass@{k}": pass_ci}


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
    """A figure as every page prints it: ``digits`` decimals (never ``-0.0``), ``-`` for none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return plain(value, digits)
