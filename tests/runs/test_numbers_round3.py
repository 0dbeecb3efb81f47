"""Issue 54 (numbers, round 3), issue 56 item 4 and issue 55 item 5: intervals that cover at the ends of the
scale and on few goals, p-values that are exact or say they are not, order-free comparisons.

Each interval is checked against an independent implementation (the formula written apart here with
SciPy's quantiles; SciPy's Wilson interval) and, in a small version of ``benchmarks/intervals.py``,
by simulated runs with known truth.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchmarks.intervals import Scenario, coverage
from webshop_gym.analysis.at_k import at_k_cells, paired_at_k
from webshop_gym.analysis.figures import intervals
from webshop_gym.analysis.intervals import (
    Z95,
    cluster_interval,
    degrees,
    effective_trials,
    fmt,
    goal_intervals,
    quantile,
    sampled_intervals,
    score_interval,
    share_interval,
    sr_interval,
    wilson,
    wilson_share,
)
from webshop_gym.analysis.stats import (
    Goals,
    Interval,
    PairedComparison,
    flip,
    flip_test,
    paired_cells,
    paired_goals,
)
from webshop_gym.reporting.report import _tex, build_report, tables
from webshop_gym.runs.index import RunIndex
from webshop_gym.runs.run import load_run

# -- the interval, against a formula written apart -------------------------------------------------------


def _theirs(totals, sizes, cap=math.inf, floor=False) -> tuple[float, float]:
    """Wilson at n_eff = m (1 - m) / v, v the CR1 cluster variance, t on G - 1 df (normal when capped), x100.

    With several samples a goal, t on Satterthwaite's df 2 (sum e^2)^2 / sum e^4 (within 1 .. G - 1), and
    the bound toward the nearer end of the scale (the lower one for m < 1/2, the upper one for m > 1/2) with
    0.7 z + 0.3 t in place of t; ``floor``: n_eff at most G, normal quantile.
    """
    t, n = np.asarray(totals, float), np.asarray(sizes, float)
    g, m = len(t), t.sum() / n.sum()
    e = t - m * n
    v = g / (g - 1) * (e ** 2).sum() / n.sum() ** 2
    trials = min(cap, m * (1 - m) / v)
    df = min(g - 1, max(1, 2 * (e ** 2).sum() ** 2 / (e ** 4).sum())) if np.any(n > 1) else g - 1
    z = stats.norm.ppf(0.975) if trials >= cap else stats.t.ppf(0.975, df)
    if floor:
        trials, z = min(trials, g), stats.norm.ppf(0.975)

    def bounds(q: float) -> tuple[float, float]:
        centre = (m + q * q / (2 * trials)) / (1 + q * q / trials)
        half = q / (1 + q * q / trials) * math.sqrt(m * (1 - m) / trials + q * q / (4 * trials * trials))
        return 100 * (centre - half), 100 * (centre + half)

    low, high = bounds(z)
    normal = stats.norm.ppf(0.975)
    if np.any(n > 1) and z > normal + 1e-12 and m != 0.5:  # Student's t: the near bound takes 0.7 z + 0.3 t
        near = bounds(0.7 * normal + 0.3 * z)
        low, high = (near[0], high) if m < 0.5 else (low, near[1])
    return low, high


def test_the_score_interval_is_the_formula_written_apart():
    rng = np.random.default_rng(4)
    for _ in range(20):
        goals, k = int(rng.integers(10, 200)), int(rng.integers(1, 17))
        rewards = np.where(rng.random((goals, k)) < rng.beta(1, 2, (goals, 1)), 1.0, rng.choice([0, 0.25, 0.6], (goals, k)))
        found = goal_intervals(Goals.of(rewards.ravel(), np.repeat(np.arange(goals), k).tolist()))
        low, high = _theirs(rewards.sum(1), np.full(goals, k))
        assert found["score"].low == pytest.approx(low, abs=1e-9) and found["score"].high == pytest.approx(high, abs=1e-9)
        assert found["score"].value == pytest.approx(100 * rewards.mean())
        if k > 1:  # SR: the same formula on the successes, the effective trials at most the samples
            solved = (rewards == 1.0).sum(1)
            if 0 < solved.sum() < goals * k and not np.all((solved == 0) | (solved == k)):
                rare = solved if 2 * solved.sum() <= goals * k else k - solved
                floor = (rare > 0).sum() < 3 and rare.sum() > (rare > 0).sum()
                low, high = _theirs(solved, np.full(goals, k), cap=goals * k, floor=floor)
                assert (found["sr"].low, found["sr"].high) == (pytest.approx(low, abs=1e-9),
                                                               pytest.approx(high, abs=1e-9))


def test_wilson_of_integer_counts_is_scipys():
    """Issue 55 item 5: integer counts go through SciPy's binomtest; the fractional formula agrees with it."""
    for n in (1, 2, 7, 10, 28, 500):
        for k in sorted({0, 1, n // 3, n - 1, n}):
            theirs = stats.binomtest(k, n).proportion_ci(method="wilson")
            assert wilson(k, n) == (max(0.0, theirs.low), min(1.0, theirs.high))
            assert wilson_share(k / n, n) == (pytest.approx(theirs.low, abs=1e-12), pytest.approx(theirs.high, abs=1e-12))
    assert sr_interval([False] * 2).format() == "0.0 [0.0, 65.8]"


def test_no_interval_is_zero_width_at_the_ends_of_the_scale():
    """A model that never buys: Score's interval is SR's (0.0 [0.0, 65.8] on 2 goals), never 0.0 [0.0, 0.0]."""
    assert score_interval([0.0, 0.0]).format() == sr_interval([False, False]).format() == "0.0 [0.0, 65.8]"
    assert score_interval([1.0] * 20).format() == sr_interval([True] * 20).format() == "100.0 [83.9, 100.0]"
    for rewards in ([0.5] * 10, [0.0] * 29 + [0.3], [1.0] * 29 + [0.9]):
        found = score_interval(rewards)
        assert found.low < found.value < found.high or found.low < found.high
        assert found.high - found.low > 1.0
    keys = np.repeat(np.arange(30), 4).tolist()
    sampled = goal_intervals(Goals.of(np.zeros(120), keys))
    assert sampled["score"].format() == sampled["sr"].format() == sr_interval([False] * 30).format()  # the goals count
    assert cluster_interval([0.4], [1]).format() == "40.0 [0.0, 100.0]"  # one goal: nothing to estimate a spread from


def test_sr_interval_of_unequal_samples_is_computed_from_srs_own_data():
    """Issue 56 item 4: every goal's samples agree but their counts differ: not Wilson of the goals solved."""
    solved = np.array([1] + [0] * 27)
    played = np.array([1] + [2] * 24 + [1] * 3)  # one goal of one sample solved; 52 samples in all
    found = share_interval(solved, played)
    assert found.value == pytest.approx(100 / 52)
    assert found.format() != Interval(100 / 52, *(100 * x for x in wilson(1, 28))).format()  # SR 1.9 [0.6, 17.7]
    low, high = _theirs(solved, played, cap=52)
    assert (found.low, found.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert found.low <= found.value <= found.high
    rewards = np.concatenate([[1.0], np.zeros(51)])
    keys = [0] + [g for g in range(1, 25) for _ in range(2)] + [25, 26, 27]
    assert goal_intervals(Goals.of(rewards, keys))["sr"] == found
    equal = share_interval(np.array([2, 0, 0, 2]), np.array([2, 2, 2, 2]))  # equal counts: Wilson of the goals
    assert equal == Interval(50.0, *(100 * x for x in wilson(2, 4)))


def test_pass_at_k_from_more_samples_is_refused():
    """Issue 54 item 5: pass@k from K > k samples has no interval (its value stands); pass@K keeps Wilson on goals."""
    rng = np.random.default_rng(2)
    rewards = (rng.random((20, 16)) < 0.6).astype(float)
    goals = Goals.of(rewards.ravel(), np.repeat(np.arange(20), 16).tolist())
    assert sampled_intervals(goals, 4)["pass@4"] is None and sampled_intervals(goals, 4)["mean@4"] is not None
    solved = int((rewards.sum(1) > 0).sum())
    assert sampled_intervals(goals, 16)["pass@16"] == Interval(100 * solved / 20, *(100 * x for x in wilson(solved, 20)))


# -- coverage by simulation (a small version of benchmarks/intervals.py) ---------------------------------

RUNS = 300  # standard error 1.3 points


@pytest.mark.parametrize(("scenario", "goals", "k"), [
    (Scenario("buys", 0.05), 30, 1),  # issue 54: 73.2% before, 21.6% of the intervals zero-width
    (Scenario("near", 0.05), 30, 1),
    (Scenario("beta", 0.2, 0.5, partial=False), 10, 8),  # 86.6% (SR 89.3%) before
])
def test_score_and_sr_cover_at_the_ends_and_on_few_goals(scenario, goals, k):
    found = coverage(scenario, goals, k, RUNS, resamples=200)
    assert 91.5 <= found["coverage"]["score"] <= 98.5, found["coverage"]
    assert found["zero_width"]["score"] == 0.0
    assert found["coverage"]["score (before)"] < 90.0  # the percentile bootstrap, as before
    if scenario.kind == "beta":
        assert 91.5 <= found["coverage"]["sr"] <= 98.5 and 91.5 <= found["coverage"]["mean@K"] <= 98.5


@pytest.mark.parametrize(("scenario", "goals", "k"), [
    (Scenario("beta", 0.05, 0.5), 10, 16),  # successes on a few goals: SR and mean@K covered 86.6-88% in round 3
    (Scenario("beta", 0.05, 0.5), 30, 16),
])
def test_sr_covers_when_the_successes_sit_on_few_goals(scenario, goals, k):
    found = coverage(scenario, goals, k, RUNS, resamples=0, before=False)
    assert 91.5 <= found["coverage"]["sr"] <= 99.0 and found["coverage"]["mean@K"] == found["coverage"]["sr"], found


@pytest.mark.parametrize(("scenario", "goals", "k", "name", "round4"), [
    (Scenario("near", 0.05), 10, 4, "score", 97.5),  # round 4 at these 400 runs (97.5 at 4,000)
    (Scenario("beta", 0.05, 0.5), 10, 4, "sr", 97.25),  # round 4: 97.2 (97.8 at 4,000)
])
def test_the_bound_toward_the_near_end_is_not_wider_than_needed(scenario, goals, k, name, round4):
    """Round 5: at the ends of the scale Student's t on both bounds covered 97.5-98%; the near bound's quantile is cut."""
    found = coverage(scenario, goals, k, RUNS + 100, resamples=0, before=False)
    assert 93.0 <= found["coverage"][name] <= 97.0 < round4, found["coverage"]
    assert found["coverage"]["mean@K"] == found["coverage"]["sr"]


def test_the_near_bound_rule_is_symmetric_and_only_for_students_t():
    """The bound toward the nearer end takes 0.7 z + 0.3 t: mirrored for failures; nothing changes on the normal quantile."""
    solved, played = np.array([3, 1, 0, 2, 0, 0, 4, 0, 1, 0]), np.full(10, 4)
    found = share_interval(solved, played)
    low, high = _theirs(solved, played, cap=40)
    assert (found.low, found.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    m, trials, t = 11 / 40, effective_trials(solved, played, 40), quantile(10, degrees(solved, played))
    assert trials < 40 and t > Z95  # neither capped nor concentrated: Student's t on Satterthwaite's df
    t_low, t_high = wilson_share(m, trials, t)  # round 4: t on both bounds
    assert found.high == pytest.approx(100 * t_high) and found.low > 100 * t_low + 1.0  # the far bound keeps t
    assert found.low == pytest.approx(100 * wilson_share(m, trials, 0.7 * Z95 + 0.3 * t)[0])
    mirror = share_interval(4 - solved, played)
    assert (mirror.low, mirror.high) == (pytest.approx(100 - found.high), pytest.approx(100 - found.low))
    half = share_interval(np.array([4, 0, 3, 1, 2, 2, 0, 4, 1, 3]), played)  # mean 1/2: no nearer end, t on both
    assert half.value == 50.0 and half.high - 50.0 == pytest.approx(50.0 - half.low)


def test_successes_on_one_or_two_goals_count_the_goals():
    """The rarer outcome in one or two goals holding more than one of it: at most G effective trials, the normal quantile."""
    solved, played = np.array([5] + [0] * 9), np.full(10, 16)
    found = share_interval(solved, played)
    assert found.value == pytest.approx(100 * 5 / 160)
    low, high = _theirs(solved, played, cap=160, floor=True)
    assert (found.low, found.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    assert found.low < 5.0 < found.high  # Beta mean 0.05 with ICC 0.5: such a run's truth lies inside
    spread = share_interval(np.array([1, 1] + [0] * 8), played)  # one success in each of two goals: not concentrated
    low, high = _theirs(np.array([1, 1] + [0] * 8), played, cap=160)
    assert (spread.low, spread.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))
    failures = share_interval(16 - solved, played)  # the same with failures as the rarer outcome: the mirror image
    assert (failures.low, failures.high) == (pytest.approx(100 - found.high), pytest.approx(100 - found.low))


# -- the sign-flip test: exact with unequal sample counts, or it says so ---------------------------------


def _brute_flip(differences: list[Fraction]) -> float:
    d = [x for x in differences if x]
    observed = abs(sum(d))
    hits = sum(abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed
               for signs in itertools.product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


def test_the_sign_flip_test_is_exact_with_unequal_sample_counts():
    """Issue 54 item 2: goals with different sample counts (errored samples) are summed exactly, not drawn."""
    rng = np.random.default_rng(8)
    for case in range(80):
        goals = int(rng.integers(2, 11))
        na, nb = rng.integers(1, 9, goals), rng.integers(1, 9, goals)
        ca, cb = rng.binomial(na, 0.5), rng.binomial(nb, 0.5)
        exact = _brute_flip([Fraction(int(b), int(m)) - Fraction(int(a), int(n))
                             for a, n, b, m in zip(ca, na, cb, nb, strict=True)])
        for limit in (1 << 24, 256, 1):  # one lattice, or the goals of other denominators enumerated apart
            found = flip(cb * na - ca * nb, na * nb, exact_limit=limit)
            assert found.error is None and found.p == pytest.approx(exact, abs=1e-11), (case, limit)


def test_a_realistic_errored_run_is_exact():
    """K = 16 on 200 goals, a few samples errored on either side: exact, and the same as the unequal lattice's sum."""
    rng = np.random.default_rng(1)
    na = np.where(rng.random(200) < 0.02, 15, 16)
    nb = np.where(rng.random(200) < 0.02, 14, 16)
    ca, cb = rng.binomial(na, 0.4), rng.binomial(nb, 0.45)
    found = flip(cb * na - ca * nb, na * nb)
    assert found.error is None
    whole = flip(cb * na - ca * nb, na * nb, exact_limit=1 << 40)  # one lattice for every goal (slow, exact)
    assert found.p == pytest.approx(whole.p, abs=1e-10)


def _exact_flip(differences: list[Fraction]) -> Fraction:
    """The sign-flip p-value in exact rationals: the count of sign patterns per sum (Python integers), one goal at a time."""
    d = [abs(x) for x in differences if x]
    observed = abs(sum(differences, Fraction(0)))
    scale = math.lcm(*(x.denominator for x in d)) if d else 1
    counts = {0: 1}
    for x in d:
        step = int(x * scale)
        grown: dict[int, int] = {}
        for value, count in counts.items():
            grown[value + step] = grown.get(value + step, 0) + count
            grown[value - step] = grown.get(value - step, 0) + count
        counts = grown
    return Fraction(sum(c for v, c in counts.items() if abs(Fraction(v, scale)) >= observed), 2 ** len(d))


def test_the_sign_flip_test_is_exact_with_any_sample_counts_up_to_16():
    """Issue 54 item 2, round 4: sample counts 1..16 on either side, every path of the exact computation, to the last bit."""
    rng = np.random.default_rng(54)
    for case in range(60):
        goals = int(rng.integers(2, 12))
        na, nb = rng.integers(1, 17, goals), rng.integers(1, 17, goals)
        ca, cb = rng.binomial(na, rng.random()), rng.binomial(nb, rng.random())
        differences = [Fraction(int(b), int(m)) - Fraction(int(a), int(n)) for a, n, b, m in zip(ca, na, cb, nb, strict=True)]
        exact = float(_exact_flip(differences))
        assert exact == _brute_flip(differences)
        for limits in ({}, {"exact_limit": 1}, {"exact_limit": 64}, {"exact_limit": 1, "points_limit": 1}):
            found = flip(cb * na - ca * nb, na * nb, **limits)  # one lattice, two, or the rest enumerated
            assert found.error is None and found.p == pytest.approx(exact, rel=1e-14, abs=1e-300), (case, limits)


def test_five_hundred_goals_with_a_tenth_short_of_samples_are_exact():
    """The round-3 case that was still drawn (500 goals at K = 16, a tenth of them short of samples): exact now."""
    rng = np.random.default_rng(500)
    na = np.where(rng.random(500) < 0.1, rng.integers(1, 16, 500), 16)
    nb = np.where(rng.random(500) < 0.1, rng.integers(1, 16, 500), 16)
    ca, cb = rng.binomial(na, 0.4), rng.binomial(nb, 0.42)
    found = flip(cb * na - ca * nb, na * nb)
    assert found.error is None and 0.0 < found.p < 1.0
    apart = flip(cb * na - ca * nb, na * nb, exact_limit=1 << 16)  # another split of the goals between the lattices
    assert apart.error is None and apart.p == pytest.approx(found.p, rel=1e-12)
    drawn = flip(cb * na - ca * nb, na * nb, exact_limit=1, points_limit=1, rest_limit=1, resamples=20_000)
    assert drawn.error is not None and abs(drawn.p - found.p) <= 4 * drawn.error + 1e-4
    small = 60  # few enough goals for exact rationals: the same to the last bits
    differences = [Fraction(int(b), int(m)) - Fraction(int(a), int(n))
                   for a, n, b, m in zip(ca[:small], na[:small], cb[:small], nb[:small], strict=True)]
    found = flip((cb * na - ca * nb)[:small], (na * nb)[:small])
    assert found.error is None and found.p == pytest.approx(float(_exact_flip(differences)), rel=1e-13)


def test_a_drawn_p_value_says_so_in_every_form():
    rng = np.random.default_rng(3)
    num, den = rng.integers(-5, 6, 12), rng.integers(1, 6, 12)
    drawn = flip(num, den, exact_limit=1, rest_limit=1, points_limit=1, resamples=20_000)
    assert drawn.error is not None and 0 < drawn.error < 0.01
    assert drawn.p == pytest.approx(_brute_flip([Fraction(int(a), int(b)) for a, b in zip(num, den, strict=True)]),
                                    abs=4 * drawn.error)
    assert flip_test(num, den) == flip(num, den).p and flip(num, den).error is None
    compared = PairedComparison(goals=12, won=5, lost=4, tied=3, solved_both=1, solved_a_only=4, solved_b_only=5,
                                solved_neither=2, score_diff=None, sr_diff=None, sign_p=1.0, mcnemar_p=0.0401,
                                samples=4, mcnemar_error=0.0019)
    cell = paired_cells(compared)[-1]
    assert cell == "≈0.040 ± 0.002"
    assert _tex(cell) == r"$\approx$0.040 $\pm$ 0.002"  # the LaTeX form
    far = paired_cells(replace(compared, mcnemar_p=1 / 10_001, mcnemar_error=0.0001))[-1]  # no draw as far out
    assert far == "≈0.0001 ± 0.0001"
    keys = np.repeat(np.arange(12), 4).tolist()  # the mean@K row of the same comparison (report, viewer): ≈ too
    rows = paired_at_k(Goals.of(np.zeros(48), keys), Goals.of(np.ones(48), keys), 4, resamples=100, compared=compared)
    assert at_k_cells(rows[0])[-1] == "≈0.040 ± 0.002" and rows[0].error == 0.0019


# -- order-free comparisons, no -0.0 ---------------------------------------------------------------------


def test_comparisons_do_not_depend_on_the_order_of_samples():
    """Issue 54 item 3: the same samples in another order give the same won / lost / tied and p."""
    rng = np.random.default_rng(0)
    goals, k = 100, 5
    levels = np.array([0.1, 0.2, 0.3, 0.7, 0.6, 1.0 / 3.0])
    rewards = rng.choice(levels, (goals, k))
    keys = np.repeat(np.arange(goals), k).tolist()
    a = Goals.of(rewards.ravel(), keys)
    shuffled = np.array([rng.permutation(row) for row in rewards])
    b = Goals.of(shuffled.ravel(), keys)
    assert any(sum(r.tolist()) != sum(s.tolist()) for r, s in zip(rewards, shuffled, strict=True))  # float sums differ
    found = paired_goals(a, b, 500, 0)
    assert (found.won, found.lost, found.tied) == (0, 0, 100) and found.sign_p == 1.0 and found.mcnemar_p == 1.0
    assert paired_cells(found)[2] == "0.0 [0.0, 0.0]"
    assert goal_intervals(a) == goal_intervals(b)


def test_no_minus_zero_is_printed():
    assert Interval(-0.0, -0.04, 0.03).format() == "0.0 [0.0, 0.0]"
    assert Interval(-0.2, -0.06, 0.0).format() == "-0.2 [-0.1, 0.0]"
    assert fmt(-0.01) == "0.0" and fmt(-0.0, 2) == "0.00" and fmt(-1e-17) == "0.0"
    tiny = Goals.of([0.1 + 0.2, 0.3], [0, 1])  # 0.30000000000000004 against 0.3
    same = Goals.of([0.3, 0.1 + 0.2], [0, 1])
    cells = paired_cells(paired_goals(tiny, same, 200, 0))
    assert all("-0.0" not in c for c in cells), cells


# -- an episode without its terminal record is not scored ------------------------------------------------


def _cut_last_episode(source: Path, target: Path) -> None:
    """``source`` without its summary line and its last episode's terminal step, ending in a half-written line."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    records = [json.loads(line) for line in lines]
    terminal = max(i for i, r in enumerate(records) if r.get("type") == "step" and (r["terminated"] or r["truncated"]))
    kept = [line for i, (line, r) in enumerate(zip(lines, records, strict=True))
            if i != terminal and r.get("type") != "summary"]
    target.write_text("".join(kept) + lines[terminal][: len(lines[terminal]) // 2], encoding="utf-8")


def test_a_cut_episode_is_not_scored_by_any_reader(runs_dir, tmp_path):
    """Issue 54 item 4: report, viewer and --resume agree: 23 / 24 scored, and --resume replays that episode."""
    cut = tmp_path / "cut.jsonl"
    _cut_last_episode(runs_dir / "rule.jsonl", cut)
    whole = load_run(runs_dir / "rule.jsonl")
    run = load_run(cut)
    assert len(run.episodes) == 24 and sum(e.scored for e in run.episodes) == 23
    assert run.figures["episodes"] == 23 and run.figures["counts"]["unfinished"] == 1
    report = build_report([str(cut)], resamples=200)
    published = dict(zip(*(lambda t: (t[0], t[1][0]))(tables(report)["published"]), strict=True))
    assert published["scored / planned"] == "23 / 24"
    assert "1 episode without a terminal record" in report.rows[0].completeness.words()
    index = RunIndex(cut)  # the viewer's index
    index.refresh()
    table = index.table()
    assert table.figures["episodes"] == 23 and int(table.unscored.sum()) == 1
    found = intervals(table.reward, table.unscored)
    assert found["score"] == report.rows[0].score and found["sr"] == report.rows[0].sr
    kept = [e.position for e in run.episodes if e.scored]  # what eval --resume keeps (resume_plan: RunEpisode.scored)
    assert kept == list(range(23)) and [e.goal_index for e in run.episodes if not e.scored] == [
        whole.episodes[-1].goal_index]
