"""Statistics of runs: bootstrap confidence intervals and paired comparisons (numpy only).

* :func:`bootstrap_ci`: percentile bootstrap of a mean over episodes (resampled with
  replacement, ``resamples`` times, from a seeded generator: the same seed gives the same
  interval).
* :func:`resampled_mean`: the same percentile bootstrap drawn as a multinomial over the
  distinct values (resampling ``n`` values is drawing how often each distinct value comes up),
  so its cost grows with the distinct values, not with ``n``.
* :func:`resampled_ratio`: the percentile bootstrap of a mean over **goals** (clusters): each
  goal is drawn with all its samples (its reward total and its count of samples), the ratio of
  the drawn totals is the resample's mean; with one sample per goal it is :func:`resampled_mean`.
* :class:`Goals`: a run's scored episodes as goals (per goal: samples, reward total, successes).
* :func:`paired`: two runs on the same goals: goals won / lost / tied by reward and by success,
  paired-bootstrap intervals of the differences in Score and SR (goals resampled together: the
  per-goal differences are resampled by :func:`resampled_mean`), a two-sided exact sign test on
  the reward wins and losses, and McNemar's exact test on the successes (the sign test on the
  goals only one run solved).  :func:`paired_goals` is the same for runs that played each goal
  several times: the goal is the unit (per-goal mean reward and share of successes), and the
  test on successes is the exact sign-flip test on the per-goal differences in success share
  (:func:`flip_test`; with one sample per goal it is McNemar's exact test).
  :func:`paired_columns` and :func:`paired_cells` are how every reader (the report's paired
  table, the viewer's comparison page) prints it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["PAIRED_COLUMNS", "SAMPLED_PAIRED_COLUMNS", "Goals", "Interval", "NoInterval", "PairedComparison", "bootstrap_ci",
           "FlipTest", "flip", "flip_test", "paired", "paired_cells", "paired_columns", "paired_goals", "p_text", "plain", "resampled_mean", "resampled_ratio",
           "sign_test"]

#: Resamples drawn at once (bounds the memory of a bootstrap: CHUNK x episodes int64).
CHUNK = 1000


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% confidence interval."""

    value: float
    low: float
    high: float

    def format(self, digits: int = 1) -> str:
        """``"81.9 [72.3, 90.1]"`` (never ``-0.0``: a figure that rounds to zero prints ``0.0``)."""
        return f"{plain(self.value, digits)} [{plain(self.low, digits)}, {plain(self.high, digits)}]"


@dataclass(frozen=True)
class NoInterval:
    """A figure whose 95% interval is withheld: no interval can stand behind it (``reason``, one line).

    It has a ``value`` and no bounds (``low`` and ``high`` are ``None``), and it is false in a
    test, as a missing interval is, so a reader that prints ``[low, high]`` only for an interval
    prints none; :meth:`format` gives the figure with the short note every table prints.

    Example:
        >>> NoInterval(20.0, "no 95% interval: 2 of 10 episodes; ...").format()
        '20.0 (no 95% interval: 2 of 10 episodes)'
    """

    value: float
    reason: str
    low = None
    high = None

    def __bool__(self) -> bool:
        return False

    @property
    def note(self) -> str:
        """The reason's first clause (``no 95% interval: 2 of 10 episodes``): what a table cell prints."""
        return self.reason.split(";")[0]

    def format(self, digits: int = 1) -> str:
        """``"20.0 (no 95% interval: 2 of 10 episodes)"``."""
        return f"{plain(self.value, digits)} ({self.note})"


def plain(value: float, digits: int = 1) -> str:
    """``value`` with ``digits`` decimals, a negative figure that rounds to zero printed without its sign.

    Example:
        >>> plain(-0.04), plain(-0.0), plain(-0.06)
        ('0.0', '0.0', '-0.1')
    """
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _bootstrap_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    n = len(values)
    means = np.empty(resamples)
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        picks = rng.integers(0, n, size=(size, n))
        means[start : start + size] = values[picks].mean(axis=1)
    return means


def bootstrap_ci(values: Sequence[float], resamples: int = 10_000, seed: int = 0, scale: float = 100.0,
                 level: float = 0.95) -> Interval | None:
    """Mean of ``values`` x ``scale`` with a percentile bootstrap interval (``None`` when empty).

    Example:
        >>> bootstrap_ci([1.0, 0.0, 1.0, 1.0], resamples=2000).format()
        '75.0 [25.0, 100.0]'
    """
    data = np.asarray(values, dtype=float)
    if len(data) == 0:
        return None
    means = _bootstrap_means(data, int(resamples), np.random.default_rng(seed))
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(scale * float(data.mean()), scale * float(low), scale * float(high))


def resampled_mean(values: Sequence[float] | np.ndarray, resamples: int = 10_000, seed: int = 0, scale: float = 100.0,
                   level: float = 0.95) -> Interval | None:
    """Mean of ``values`` x ``scale`` with its percentile-bootstrap interval, drawn as a multinomial.

    The same distribution as :func:`bootstrap_ci`; memory and time grow with the distinct values
    (``CHUNK`` resamples at a time), so 50,000 values cost milliseconds.

    Example:
        >>> resampled_mean([1.0, 0.0, 1.0, 1.0]).format()
        '75.0 [25.0, 100.0]'
    """
    data = np.asarray(values, dtype=float)
    n = len(data)
    if n == 0:
        return None
    distinct, counts = np.unique(data, return_counts=True)
    rng = np.random.default_rng(seed)
    means = np.empty(int(resamples))
    for start in range(0, len(means), CHUNK):  # the rows are drawn in order: chunks change no number
        size = min(CHUNK, len(means) - start)
        means[start : start + size] = rng.multinomial(n, counts / n, size=size) @ distinct / n
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(scale * float(data.mean()), scale * float(low), scale * float(high))


#: Indices drawn at once by the goals' bootstrap when it draws goals one by one (bounds its memory: 4-8 bytes each).
INDEX_CHUNK = 1 << 22
#: The goals' bootstrap draws a multinomial over the distinct (total, size) pairs when there are at most
#: ``MULTINOMIAL_MOST`` of them or at most this share of the goals (numpy's multinomial costs about 80 ns a category
#: and resample, drawing a goal about 10 ns), else it draws the goals one by one.
MULTINOMIAL_SHARE, MULTINOMIAL_MOST = 1 / 8, 256


def resampled_ratio(totals: Sequence[float] | np.ndarray, sizes: Sequence[int] | np.ndarray, resamples: int = 10_000,
                    seed: int = 0, scale: float = 100.0, level: float = 0.95) -> Interval | None:
    """``sum(totals) / sum(sizes)`` x ``scale`` with the percentile bootstrap over clusters (goals).

    Cluster ``g`` holds ``sizes[g]`` values summing to ``totals[g]`` (a goal's samples and their
    reward total); a resample draws the clusters with replacement, each with all its values, and
    takes the ratio of the drawn totals (the mean of the values drawn).  With one value per cluster
    it *is* :func:`resampled_mean` (the same draws, the same interval).  Otherwise the clusters
    are drawn as a multinomial over the distinct ``(total, size)`` pairs when these are few
    (:data:`MULTINOMIAL_MOST`, or an eighth of the clusters: a deterministic policy's goals played
    K times then get the very draws of one play each), else one by one (the same distribution,
    faster when most goals differ), :data:`INDEX_CHUNK` indices at a time.

    Example:
        >>> resampled_ratio([2.0, 0.0, 1.0], [2, 2, 2], resamples=2000).format()
        '50.0 [0.0, 100.0]'
    """
    totals = np.asarray(totals, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    if totals.shape != sizes.shape:
        raise ValueError(f"one size per total, got {totals.shape} and {sizes.shape}")
    g = len(totals)
    if g == 0:
        return None
    if np.all(sizes == 1):
        return resampled_mean(totals, resamples, seed, scale, level)
    if np.any(sizes <= 0):
        raise ValueError("every cluster needs at least one value")
    return _percentile_interval(_cluster_means(totals, sizes, resamples, seed), float(totals.sum() / sizes.sum()),
                                scale, level)


def _cluster_means(totals: np.ndarray, sizes: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """``resamples`` bootstrap means over clusters (see :func:`resampled_ratio`: a multinomial or one by one)."""
    g = len(totals)
    distinct, counts = np.unique(np.column_stack([totals, sizes]), axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    means = np.empty(int(resamples))
    if len(distinct) <= max(MULTINOMIAL_SHARE * g, MULTINOMIAL_MOST):
        for start in range(0, len(means), CHUNK):
            size = min(CHUNK, len(means) - start)
            drawn = rng.multinomial(g, counts / g, size=size)
            means[start : start + size] = (drawn @ distinct[:, 0]) / (drawn @ distinct[:, 1])
    else:
        rows = max(1, INDEX_CHUNK // g)
        same = bool(np.all(sizes == sizes[0]))  # every goal the same samples: the drawn samples are known
        for start in range(0, len(means), rows):
            size = min(rows, len(means) - start)
            picks = rng.integers(0, g, size=(size, g), dtype=np.int32 if g < 2**31 else np.int64)
            drawn = g * sizes[0] if same else sizes[picks].sum(axis=1)
            means[start : start + size] = totals[picks].sum(axis=1) / drawn
    return means


def _percentile_interval(means: np.ndarray, value: float, scale: float, level: float) -> Interval:
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(scale * value, scale * float(low), scale * float(high))


def _lower_tail(n: int, k: int) -> int:
    """``sum(math.comb(n, i) for i in range(k + 1))``, exactly, in O(k) small-factor steps.

    Each term follows from the previous one (``C(n, i + 1) = C(n, i) (n - i) / (i + 1)``, an exact
    integer division), where computing every ``math.comb`` anew cost O(k) big products each: 0.7 s
    for k = 2,592, 200 s for two similar runs of 50,000 goals (k = 20,643); this takes 0.2 s there.
    """
    term = total = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        total += term
    return total


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: P(a split at least this uneven | both sides equally likely); ties dropped.

    The tail is summed in exact integers and divided once (Python's correctly rounded ``int / int``).

    Example:
        >>> sign_test(2, 8)
        0.109375
    """
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    if 2 * k + 1 >= n:  # the lower tail holds at least half of all 2**n splits: p = 1 (what the sum gives too)
        return 1.0
    tail = _lower_tail(n, k) / 2**n
    return min(1.0, 2 * tail)


#: The exact null distribution of :func:`flip_test`: the goals whose differences share a lattice (the most common
#: denominators) are summed on it while it has at most this many points ...
EXACT_FLIPS = 1 << 22
#: ... and the other goals' sums on their own lattice while it has at most this many points (32 MiB of
#: probabilities; 2,000 goals of K = 16 with a tenth of them short of samples need a few million) ...
EXACT_POINTS = 1 << 22
#: ... each dynamic program doing at most this many additions (goals x points: about a second);
EXACT_WORK = 1 << 28
#: ... where the common lattice's program would do more (thousands of goals at their K samples), its sum's
#: distribution comes from its characteristic function (one FFT) while FFT points x distinct magnitudes stay under this;
EXACT_FFT = 1 << 24
#: ... else the other goals' sums are enumerated one by one while they take at most this many distinct values; beyond,
#: the test is drawn (``resamples`` seeded draws) and says so (:class:`FlipTest`).
EXACT_REST = 1 << 16


@dataclass(frozen=True)
class FlipTest:
    """A sign-flip test's two-sided p-value; ``error``: its Monte Carlo standard error when drawn, ``None`` when exact."""

    p: float
    error: float | None = None


def flip_test(numerators: Sequence[int] | np.ndarray, denominators: Sequence[int] | np.ndarray | int = 1,
              resamples: int = 10_000, seed: int = 0, exact_limit: int = EXACT_FLIPS) -> float:
    """Two-sided exact sign-flip (paired permutation) test that per-goal differences are centred on 0: the p-value.

    :func:`flip` with the same arguments, its ``p`` (exact unless its ``error`` says it was drawn).

    Example:
        >>> round(flip_test([4, -1, 2, 3, 1], 4), 4)
        0.1875
    """
    return flip(numerators, denominators, resamples, seed, exact_limit).p


def flip(numerators: Sequence[int] | np.ndarray, denominators: Sequence[int] | np.ndarray | int = 1,
         resamples: int = 10_000, seed: int = 0, exact_limit: int = EXACT_FLIPS,
         rest_limit: int = EXACT_REST, points_limit: int = EXACT_POINTS, work_limit: int = EXACT_WORK) -> FlipTest:
    """Two-sided exact sign-flip (paired permutation) test that per-goal differences are centred on 0.

    ``numerators[g] / denominators[g]`` is goal ``g``'s difference between two runs (integers: a
    difference of success shares ``c_b / n_b - c_a / n_a`` is ``(c_b n_a - c_a n_b) / (n_a n_b)``),
    kept as exact fractions.  Under the null hypothesis (both runs are the same policy) each goal's
    difference is as likely to have either sign, independently of the others; the p-value is the
    probability, over the ``2**goals`` sign flips, of a sum at least as far from 0 as the observed
    one.  Goals with a zero difference drop out.  With one distinct magnitude (one sample per goal:
    differences of -1, 0, 1) this is the sign test (:func:`sign_test`), i.e. McNemar's exact test.

    Otherwise the goals are split by the (reduced) denominator of their difference: the most
    common denominators form a lattice (their least common multiple) on which those goals' flipped
    sums are integers, while it has at most ``exact_limit`` points; the remaining goals (unequal
    sample counts: some samples errored) are summed on their own integer lattice (while it has at
    most ``points_limit`` points).  Each sum's distribution is a dynamic program, one goal at a
    time (:func:`_flip_pmf`), at most ``work_limit`` additions each; past that, the remaining
    goals' sums are enumerated one by one while they take at most ``rest_limit`` distinct values.
    Every comparison of a sum with the observed one is in exact integers.  The probabilities are
    floats that are only halved and added (no subtraction), so each carries a relative rounding
    error below ``(goals + 2) * 2**-53``: the p-value is exact to that (about 1e-13 at 2,000
    goals).  Only a common lattice whose program would exceed ``work_limit`` (thousands of goals)
    is summed through its characteristic function instead (one FFT, while FFT points x distinct
    magnitudes stay under ``EXACT_FFT``), exact to about 1e-9 absolute.  Only past these limits is the test drawn: ``resamples`` seeded draws of the
    flips, ``p = (1 + hits) / (1 + draws)`` with its Monte Carlo standard error in
    :attr:`FlipTest.error` (printed as ``≈p ± error``).

    Example:
        >>> found = flip([4, -1, 2, 3, 1], 4)
        >>> round(found.p, 4), found.error
        (0.1875, None)
    """
    num = np.asarray(numerators, dtype=np.int64)
    den = np.broadcast_to(np.asarray(denominators, dtype=np.int64), num.shape)
    keep = num != 0
    num, den = num[keep], den[keep]
    if np.any(den <= 0):
        raise ValueError("the denominators of the differences must be positive")
    if len(num) == 0:
        return FlipTest(1.0)
    common = np.gcd(np.abs(num), den)
    num, den = num // common, den // common
    if len(np.unique(np.column_stack([np.abs(num), den]), axis=0)) == 1:  # one magnitude: the sign test
        return FlipTest(sign_test(int((num > 0).sum()), int((num < 0).sum())))
    diffs = [Fraction(int(n), int(d)) for n, d in zip(num.tolist(), den.tolist(), strict=True)]
    observed = abs(sum(diffs))
    if observed == 0:
        return FlipTest(1.0)
    main, rest = _split_lattice(diffs, exact_limit, work_limit)
    lattice = 1
    for d in main:
        lattice = math.lcm(lattice, d.denominator)
    magnitudes = [int(abs(d) * lattice) for d in main]
    if (sum(magnitudes) + 1) * len(magnitudes) <= work_limit:  # X: the sum of the magnitudes drawn +
        pmf = _flip_pmf(magnitudes)  # the main sum S = (2 X - span) / lattice
        span = len(pmf) - 1
        upper_tail, lower_tail = np.cumsum(pmf[::-1])[::-1], np.cumsum(pmf)  # each tail summed from its own end
    else:
        upper_tail, lower_tail, span = _lattice_tails(magnitudes)
    dense = _rest_distribution(rest, points_limit, work_limit)
    if dense is not None:
        return FlipTest(min(1.0, _dense_hits(dense, observed, lattice, span, upper_tail, lower_tail)))
    rest_sums = _enumerate_sums(rest, rest_limit)
    if rest_sums is None:
        return _drawn_flips(diffs, observed, resamples, seed)
    total = 0.0
    for value, weight in rest_sums.items():  # main sum S = (2 X - span) / lattice; |S + value| >= observed
        high = math.ceil(((observed - value) * lattice + span) / 2)  # S >= observed - value
        low = math.floor(((-observed - value) * lattice + span) / 2)  # S <= -observed - value
        hits = (upper_tail[high] if 0 <= high <= span else float(high < 0))
        hits += (lower_tail[low] if 0 <= low <= span else float(low > span))
        total += weight * hits
    return FlipTest(min(1.0, float(total) / 2 ** len(rest)))


def _flip_pmf(steps: list[int]) -> np.ndarray:
    """``pmf[x] = P(X = x)``, ``X`` the sum of each of ``steps`` with probability 1/2 (``x = 0 .. sum(steps)``).

    One step at a time (smallest first): half the mass stays, half moves up by the step.  Only
    halvings and additions of non-negative floats: every entry is exact to a relative ``len(steps) * 2**-53``.
    """
    pmf = np.zeros(sum(steps) + 1)
    pmf[0] = 1.0
    top = 0
    for step in sorted(steps):
        moved = pmf[: top + 1] * 0.5
        pmf[: top + 1] = moved
        pmf[step: step + top + 1] += moved
        top += step
    return pmf


def _split_lattice(diffs: list[Fraction], limit: int, work: int) -> tuple[list[Fraction], list[Fraction]]:
    """The differences summed on one lattice, and the rest.

    The most common denominators first, while the lattice has at most ``limit`` points and its
    dynamic program at most ``work`` additions (or its FFT at most ``EXACT_FFT`` points x distinct magnitudes).
    """
    by_denominator: dict[int, list[Fraction]] = {}
    for d in diffs:
        by_denominator.setdefault(d.denominator, []).append(d)
    main: list[Fraction] = []
    rest: list[Fraction] = []
    lattice, total, magnitudes = 1, Fraction(0), set()
    for denominator in sorted(by_denominator, key=lambda k: (-len(by_denominator[k]), k)):
        group = by_denominator[denominator]
        wider = math.lcm(lattice, denominator)
        grown = total + sum((abs(d) for d in group), Fraction(0))
        distinct = magnitudes | {abs(d) for d in group}
        points = int(grown * wider) + 1
        if points <= limit and (points * (len(main) + len(group)) <= work
                                or (1 << points.bit_length()) * len(distinct) <= EXACT_FFT):
            main += group
            lattice, total, magnitudes = wider, grown, distinct
        else:
            rest += group
    return main, rest


def _rest_distribution(diffs: list[Fraction], limit: int, work: int) -> tuple[np.ndarray, Fraction] | None:
    """The flipped sum of ``diffs`` on its integer lattice: ``(pmf, scale)``, or ``None`` past ``limit`` points or ``work``.

    With ``span = len(pmf) - 1``, ``pmf[i]`` is the probability that the sum is ``(2 i - span) / scale``;
    ``scale`` is the least common multiple of the denominators over the magnitudes' greatest common divisor.
    """
    scale = 1
    for d in diffs:
        scale = math.lcm(scale, d.denominator)
    steps = [int(abs(d) * scale) for d in diffs]
    common = 0
    for step in steps:
        common = math.gcd(common, step)
    common = max(common, 1)
    steps = [step // common for step in steps]
    points = sum(steps) + 1
    if points > limit or points * len(steps) > work:
        return None
    return _flip_pmf(steps), Fraction(scale, common)


def _dense_hits(dense: tuple[np.ndarray, Fraction], observed: Fraction, lattice: int, span: int,
                upper_tail: np.ndarray, lower_tail: np.ndarray) -> float:
    """``P(|S + R| >= observed)``: ``S = (2 X - span) / lattice`` the main sum (``X``'s tails), ``R`` the rest's (``dense``).

    For each point of the rest's lattice the main sum's tail index is computed in exact integers
    (NumPy ``int64`` where every product fits, else Python integers), so no comparison with the
    observed sum is rounded.
    """
    pmf, scale = dense
    width = len(pmf) - 1
    nonzero = np.flatnonzero(pmf)
    # R = (2 i - width) / scale.  |S + R| >= observed reads X >= ceil(((observed - R) lattice + span) / 2) or
    # X <= floor(((-observed - R) lattice + span) / 2).  Times W (observed W and R W integers), the numerators
    # are up0 - i step and down0 - i step.
    w = math.lcm(observed.denominator, scale.numerator)
    step = 2 * scale.denominator * (w // scale.numerator) * lattice
    shift = width * scale.denominator * (w // scale.numerator) * lattice + span * w
    up0 = int(observed * w) * lattice + shift
    down0 = -int(observed * w) * lattice + shift
    if max(abs(up0), abs(down0)) + step * len(pmf) < 1 << 62 and 2 * w < 1 << 62:
        i = nonzero.astype(np.int64)
        high = -((i * step - up0) // (2 * w))  # ceil((up0 - i step) / (2 W))
        low = (down0 - i * step) // (2 * w)  # floor((down0 - i step) / (2 W))
    else:
        values = nonzero.tolist()
        high = np.array([min(max(-((v * step - up0) // (2 * w)), -1), span + 1) for v in values], dtype=np.int64)
        low = np.array([min(max((down0 - v * step) // (2 * w), -1), span + 1) for v in values], dtype=np.int64)
    upper = np.concatenate([[1.0], upper_tail, [0.0]])  # index x + 1: x = -1 (everything) .. span + 1 (nothing)
    lower = np.concatenate([[0.0], lower_tail, [1.0]])
    hits = upper[np.clip(high, -1, span + 1) + 1] + lower[np.clip(low, -1, span + 1) + 1]
    return float(np.dot(pmf[nonzero], hits))


def _enumerate_sums(diffs: list[Fraction], limit: int) -> dict[Fraction, int] | None:
    """The flipped sums of ``diffs``: ``{sum: sign patterns giving it}`` (exact); ``None`` past ``limit`` distinct sums.

    The sums are kept as integers over the differences' common denominator (exact and fast).
    """
    scale = 1
    for d in diffs:
        scale = math.lcm(scale, d.denominator)
    steps = [int(abs(d) * scale) for d in diffs]
    if min(2 ** len(steps), 2 * sum(steps) + 1) > 64 * limit:  # far past the limit: no need to try
        return None
    sums: dict[int, int] = {0: 1}
    for step in steps:
        grown: dict[int, int] = {}
        for value, count in sums.items():
            grown[value + step] = grown.get(value + step, 0) + count
            grown[value - step] = grown.get(value - step, 0) + count
        if len(grown) > limit:
            return None
        sums = grown
    return {Fraction(value, scale): count for value, count in sums.items()}


def _lattice_tails(magnitudes: list[int]) -> tuple[np.ndarray, np.ndarray, int]:
    """``P(X >= x)`` and ``P(X <= x)`` for ``x = 0..span``, ``X`` the sum of each magnitude with probability 1/2.

    The distribution is one binomial per distinct magnitude, computed through its characteristic
    function (one inverse FFT); the tails are summed from their own ends (small tails keep their digits).
    """
    span = sum(magnitudes)
    if span == 0:
        return np.ones(1), np.ones(1), 0
    distinct: dict[int, int] = {}
    for m in magnitudes:
        distinct[m] = distinct.get(m, 0) + 1
    points = 1 << int(span).bit_length()
    angle = np.pi * np.arange(points) / points
    modulus = np.zeros(points)  # the log-modulus of the characteristic function of S = sum of m B(c, 1/2)
    phase = np.zeros(points)
    negative = np.zeros(points, dtype=bool)
    for m, c in distinct.items():
        cosine = np.cos(angle * m)
        with np.errstate(divide="ignore"):
            modulus += c * np.log(np.abs(cosine))
        negative ^= (cosine < 0) & bool(c % 2)
        phase -= c * m * angle
    spectrum = np.exp(modulus + 1j * phase) * np.where(negative, -1.0, 1.0)
    pmf = np.clip(np.fft.ifft(spectrum).real[: span + 1], 0.0, None)
    return np.cumsum(pmf[::-1])[::-1], np.cumsum(pmf), span


def _drawn_flips(diffs: list[Fraction], observed: Fraction, resamples: int, seed: int) -> FlipTest:
    """The sign-flip test drawn: ``resamples`` seeded sign flips, ``p = (1 + hits) / (1 + draws)`` and its error."""
    distinct: dict[Fraction, int] = {}
    for d in diffs:
        distinct[abs(d)] = distinct.get(abs(d), 0) + 1
    rng = np.random.default_rng(seed)
    values = np.array([float(m) for m in distinct])
    counts = np.array(list(distinct.values()))
    positive = np.column_stack([rng.binomial(c, 0.5, size=int(resamples)) for c in counts.tolist()])
    sums = (2 * positive - counts) @ values
    target = float(observed)
    hits = int((np.abs(sums) >= target * (1 - 1e-12)).sum())
    p = (1 + hits) / (1 + int(resamples))
    return FlipTest(min(1.0, p), math.sqrt(p * (1 - p) / int(resamples)))


@dataclass(frozen=True)
class Goals:
    """A run's scored episodes as goals (the unit of a run that played each goal several times).

    Attributes:
        keys: each goal's key, in order of first appearance.
        played: per goal, its scored samples.
        reward: per goal, the sum of its samples' rewards (``math.fsum``: correctly rounded, so the
            same samples in any order give the same totals, means and comparisons).
        solved: per goal, its samples that succeeded.
        alike: per goal, whether all its samples gave the same reward (a deterministic policy's
            goals; ``None``: not known).
    """

    keys: list
    played: np.ndarray
    reward: np.ndarray
    solved: np.ndarray
    alike: np.ndarray | None = None

    @classmethod
    def of(cls, rewards: Sequence[float] | np.ndarray, keys: Sequence[Hashable] | None = None,
           success: Sequence[bool] | np.ndarray | None = None) -> Goals:
        """Goals from episodes.

        ``rewards``: the scored episodes' rewards; ``keys``: each one's goal (``None``: each episode
        is a goal of its own, keyed by its position); ``success``: default reward exactly 1.0.

        Example:
            >>> g = Goals.of([1.0, 0.0, 0.5], ["a", "a", "b"])
            >>> g.keys, g.played.tolist(), g.reward.tolist(), g.solved.tolist()
            (['a', 'b'], [2, 1], [1.0, 0.5], [1, 0])
        """
        rewards = np.asarray(rewards, dtype=float)
        success = rewards == 1.0 if success is None else np.asarray(success, dtype=bool)
        if keys is None:
            return cls(list(range(len(rewards))), np.ones(len(rewards), np.int64), rewards, success.astype(np.int64),
                       np.ones(len(rewards), dtype=bool))
        index: dict = {}
        codes = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
        if len(codes) != len(rewards):
            raise ValueError(f"one goal key per episode, got {len(codes)} keys for {len(rewards)} episodes")
        g = len(index)
        played = np.bincount(codes, minlength=g).astype(np.int64)
        ordered = rewards[np.argsort(codes, kind="stable")].tolist()
        ends = np.cumsum(played).tolist()
        totals = [math.fsum(ordered[end - n : end]) for end, n in zip(ends, played.tolist(), strict=True)]
        alike = [min(ordered[end - n : end]) == max(ordered[end - n : end]) for end, n in zip(ends, played.tolist(), strict=True)]
        return cls(list(index), played, np.array(totals, dtype=float),  # exact sums: the same in any order
                   np.bincount(codes, weights=success.astype(float), minlength=g).astype(np.int64),
                   np.array(alike, dtype=bool))

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, keys: Sequence[Hashable]) -> Goals:
        """These goals only, in the order given (each key must be one of :attr:`keys`)."""
        where = {k: i for i, k in enumerate(self.keys)}
        picked = np.array([where[k] for k in keys], dtype=np.int64)
        return Goals(list(keys), self.played[picked], self.reward[picked], self.solved[picked],
                     None if self.alike is None else self.alike[picked])

    @property
    def mean_reward(self) -> np.ndarray:
        """Per goal, the mean reward of its samples."""
        return self.reward / self.played

    @property
    def share(self) -> np.ndarray:
        """Per goal, the share of its samples that succeeded."""
        return self.solved / self.played

    @property
    def sampled(self) -> bool:
        """Whether some goal has more than one scored sample."""
        return bool(len(self.played)) and int(self.played.max()) > 1

    @property
    def repeated(self) -> bool:
        """Whether every goal's samples gave one reward each (known; e.g. a deterministic policy's).

        Such samples hold what one play per goal holds: the intervals are those of one play.
        """
        return self.alike is not None and bool(np.all(self.alike))


@dataclass(frozen=True)
class PairedComparison:
    """Run B against run A on their common goals.

    Attributes:
        goals: goals both runs played.
        won, lost, tied: goals where B's reward (its mean over the goal's samples) is higher, lower, equal.
        solved_both, solved_a_only, solved_b_only, solved_neither: success pattern per goal (one
            sample per goal).  With several: ``solved_a_only`` / ``solved_b_only`` are the goals
            where A's / B's share of successful samples is higher, ``solved_both`` the goals with
            the same share above 0, ``solved_neither`` the goals neither run ever solved.
        score_diff, sr_diff: B minus A (x100) with paired-bootstrap 95% intervals (of the per-goal
            differences in mean reward and in share of successes).
        sign_p: two-sided sign test on ``won`` vs ``lost``.
        mcnemar_p: McNemar's exact test on ``solved_b_only`` vs ``solved_a_only``; with several
            samples per goal, the exact sign-flip test on the per-goal differences in share of
            successes (:func:`flip_test`).
        samples: the runs' samples per goal (1: one play per goal; :func:`paired_columns`).
        mcnemar_error: ``None`` when ``mcnemar_p`` is exact (always, unless the sign-flip test's
            lattice was too large: :func:`flip`); else its Monte Carlo standard error, and every
            form prints ``≈p ± error``.
    """

    goals: int
    won: int
    lost: int
    tied: int
    solved_both: int
    solved_a_only: int
    solved_b_only: int
    solved_neither: int
    score_diff: Interval | None
    sr_diff: Interval | None
    sign_p: float
    mcnemar_p: float
    samples: int = 1
    mcnemar_error: float | None = None


def _mean_of_goals(values: np.ndarray, resamples: int, seed: int, sampled: bool) -> Interval | None:
    """The paired bootstrap of per-goal differences x100.

    :func:`resampled_mean` with one sample per goal (as always); for sampled runs the goals'
    bootstrap of :func:`resampled_ratio` (each goal one value).
    """
    if not sampled or not len(values):
        return resampled_mean(values, resamples, seed)
    means = _cluster_means(values, np.ones(len(values)), resamples, seed)
    return _percentile_interval(means, float(values.mean()), 100.0, 0.95)


def paired(rewards_a: Sequence[float], rewards_b: Sequence[float], resamples: int = 10_000,
           seed: int = 0) -> PairedComparison:
    """Compare two runs goal by goal (``rewards_a[i]`` and ``rewards_b[i]`` are the same goal's)."""
    a = np.asarray(rewards_a, dtype=float)
    b = np.asarray(rewards_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired runs need one reward per common goal in each, got {a.shape} and {b.shape}")
    return paired_goals(Goals.of(a), Goals.of(b), resamples, seed)


def paired_goals(a: Goals, b: Goals, resamples: int = 10_000, seed: int = 0,
                 samples: int | None = None) -> PairedComparison:
    """Compare two runs goal by goal: goal ``i`` of ``a`` and of ``b`` are the same goal (each with its samples).

    Each goal counts once, whatever its samples: won / lost / tied and the sign test by its mean
    reward, the intervals by the paired bootstrap of the per-goal differences (mean reward, share
    of successes), the test on successes by :func:`flip_test` on the differences in share.  With
    one sample per goal everywhere this is exactly :func:`paired` as it always was.  ``samples``:
    the runs' samples per goal (how :func:`paired_cells` names the columns); default: the most
    scored samples of a goal.
    """
    if len(a) != len(b):
        raise ValueError(f"paired runs need the same goals in each, got {len(a)} and {len(b)}")
    ma, mb = a.mean_reward, b.mean_reward
    sa, sb = a.share, b.share
    sampled = a.sampled or b.sampled
    won, lost = int((mb > ma).sum()), int((mb < ma).sum())  # per-goal means of exact (fsum) totals: order-free
    higher = b.solved * a.played - a.solved * b.played  # B's share minus A's, over a.played * b.played
    only_a, only_b = int((higher < 0).sum()), int((higher > 0).sum())
    neither = int(((a.solved == 0) & (b.solved == 0)).sum())
    test = flip(higher, a.played * b.played, resamples, seed)
    return PairedComparison(
        goals=len(a), won=won, lost=lost, tied=len(a) - won - lost,
        solved_both=len(a) - only_a - only_b - neither, solved_a_only=only_a, solved_b_only=only_b,
        solved_neither=neither,
        score_diff=_mean_of_goals(mb - ma, resamples, seed, sampled),
        sr_diff=_mean_of_goals(sb - sa, resamples, seed, sampled),
        sign_p=sign_test(won, lost), mcnemar_p=test.p, mcnemar_error=test.error,
        samples=int(samples or max(a.played.max(initial=1), b.played.max(initial=1))),
    )  # fmt: skip


#: The columns of a paired comparison, as the report's paired table and the viewer's comparison name them.
PAIRED_COLUMNS = ("goals", "won / lost / tied", "Δ Score [95% CI]", "sign test p",
                  "solved: only first / only this / both", "Δ SR [95% CI]", "McNemar p")
#: The same columns for runs that played each goal several times (every figure per goal: see :func:`paired_goals`).
SAMPLED_PAIRED_COLUMNS = ("goals", "won / lost / tied", "Δ Score [95% CI]", "sign test p",
                          "higher success share: first / this / same (some solved)", "Δ SR [95% CI]",
                          "sign-flip test p")


def paired_columns(samples: int = 1) -> tuple[str, ...]:
    """The columns of a comparison of runs with ``samples`` plays per goal (:attr:`PairedComparison.samples`)."""
    return PAIRED_COLUMNS if samples <= 1 else SAMPLED_PAIRED_COLUMNS


def p_text(value: float, error: float | None = None) -> str:
    """A p-value as every form prints it: ``0.043``, ``<0.001``; drawn (``error``): ``≈0.040 ± 0.002``.

    A drawn p under 0.001 (no draw or a few as far out) keeps its digits: ``≈0.0001 ± 0.0001``, not ``≈0.000 ± 0.000``.
    """
    if error is None:
        return "<0.001" if value < 0.001 else f"{value:.3f}"
    if value < 0.001:
        return f"≈{value:.1g} ± {error:.1g}"
    return f"≈{value:.3f} ± {error:.3f}"


def paired_cells(p: PairedComparison) -> list[str]:
    """``p`` as the cells of :func:`paired_columns` (differences: the later run minus the first, x100).

    Example:
        >>> paired_cells(paired([0.0, 1.0], [1.0, 1.0], resamples=100))[:2]
        ['2', '1 / 0 / 1']
    """
    def ci(interval: Interval | None) -> str:
        return "-" if interval is None else interval.format(1)

    return [str(p.goals), f"{p.won} / {p.lost} / {p.tied}", ci(p.score_diff), p_text(p.sign_p),
            f"{p.solved_a_only} / {p.solved_b_only} / {p.solved_both}", ci(p.sr_diff),
            p_text(p.mcnemar_p, p.mcnemar_error)]
