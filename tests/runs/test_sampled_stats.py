"""The statistics of runs that played each goal K times (issue 42, item 1 and "Proof that the statistics are right").

A goal's K samples are one cluster, not K independent episodes: the intervals resample goals,
the paired tests pair goals, pass@k is the unbiased estimator.  Checked here against independent
implementations (scipy's bootstrap and permutation test, brute-force enumeration) and by a small
version of the coverage simulation of ``benchmarks/intervals.py`` (runs with known truth).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from benchmarks.intervals import SCENARIOS, Scenario, coverage, draw_run, null_rejections
from webshop_gym.analysis.figures import intervals, summarize
from webshop_gym.analysis.intervals import (
    effective_trials,
    goal_intervals,
    sampled_intervals,
    score_interval,
    share_interval,
    sr_interval,
)
from webshop_gym.analysis.stats import (
    Goals,
    flip_test,
    paired,
    paired_goals,
    resampled_ratio,
    sign_test,
)
from webshop_gym.protocols.play import adhoc_protocol, with_samples
from webshop_gym.protocols.scoring import pass_at_k


def _deterministic_runs(goals: int, k: int, solved_a: set, solved_b: set) -> tuple[Goals, Goals, np.ndarray, np.ndarray]:
    """Two deterministic policies played K times per goal: every sample of a goal the same."""
    ra = np.repeat([1.0 if g in solved_a else 0.25 for g in range(goals)], k)
    rb = np.repeat([1.0 if g in solved_b else 0.25 for g in range(goals)], k)
    keys = np.repeat(np.arange(goals), k).tolist()
    return Goals.of(ra, keys), Goals.of(rb, keys), ra, rb


# -- item 1: the goal is the unit ------------------------------------------------------------------------


def test_a_deterministic_policy_played_five_times_has_the_intervals_of_once():
    rng = np.random.default_rng(3)
    once = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], 500, p=[0.2, 0.1, 0.1, 0.1, 0.5])
    five = np.repeat(once, 5)
    keys = np.repeat(np.arange(500), 5).tolist()
    single, sampled = intervals(once), intervals(five, goals=keys)
    assert sampled["sr"] == single["sr"]  # Wilson on 500 goals, not on 2,500 episodes
    assert sampled["score"] == single["score"]  # the same goals resampled, the same draws
    episodes = intervals(five)  # what every reader showed before: 2,500 independent episodes
    assert episodes["sr"].high - episodes["sr"].low < 0.5 * (single["sr"].high - single["sr"].low)


def test_two_sampled_runs_pair_goals_not_samples():
    """10 goals solved only by B, 4 only by A, each played 5 times: 14 discordant goals, not 70 discordant pairs."""
    solved_a = set(range(0, 4)) | set(range(20, 60))
    solved_b = set(range(4, 14)) | set(range(20, 60))
    a, b, ra, rb = _deterministic_runs(500, 5, solved_a, solved_b)
    found = paired_goals(a, b, 2000, 0, samples=5)
    assert found.goals == 500 and (found.won, found.lost, found.tied) == (10, 4, 486)
    assert (found.solved_a_only, found.solved_b_only, found.solved_both, found.solved_neither) == (4, 10, 40, 446)
    assert found.sign_p == found.mcnemar_p == sign_test(10, 4) == pytest.approx(0.1796, abs=1e-4)
    before = paired(ra, rb, 2000, 0)  # every sample paired with the other run's: 2,500 "goals"
    assert before.goals == 2500 and before.mcnemar_p < 0.001
    assert found.sr_diff.high - found.sr_diff.low > 2 * (before.sr_diff.high - before.sr_diff.low)


def test_one_sample_per_goal_keeps_every_number():
    rng = np.random.default_rng(0)
    a, b = rng.choice([0.0, 0.5, 1.0], 300), rng.choice([0.0, 0.6, 1.0], 300)
    assert paired_goals(Goals.of(a), Goals.of(b), 1000, 4) == paired(a, b, 1000, 4)
    assert goal_intervals(Goals.of(a), 1000, 4) == {"score": score_interval(a, 1000, 4), "sr": sr_interval(a == 1.0)}
    assert intervals(a, goals=list(range(300)), resamples=1000, seed=4) == intervals(a, resamples=1000, seed=4)
    assert share_interval((a == 1.0).astype(float)) == sr_interval(a == 1.0)


def test_the_effective_trials_of_a_share_in_clusters():
    all_or_nothing = np.array([4.0, 0.0, 4.0, 0.0, 0.0])
    assert effective_trials(all_or_nothing, np.full(5, 4)) == 5.0  # K identical samples are one observation
    assert effective_trials(np.zeros(5), np.full(5, 4)) == 5.0  # no success at all: the goals count
    assert effective_trials(np.full(5, 2.0), np.full(5, 4)) == 20.0  # every goal the same share: the samples
    varied = np.array([1.0, 3.0, 2.0, 0.0, 4.0, 2.0])
    sizes = np.full(6, 4)
    p = varied.sum() / 24
    v = ((varied - 4 * p) ** 2).sum() / 24**2 * 6 / 5  # the small-sample factor G / (G - 1)
    assert effective_trials(varied, sizes) == pytest.approx(p * (1 - p) / v)
    assert effective_trials(varied, sizes, units=10) == 10.0  # capped: the samples are worth at most ``units``


def test_pass_at_k_is_the_unbiased_estimator():
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                subsets = list(itertools.combinations([1] * c + [0] * (n - c), k))
                assert pass_at_k(c, n, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets)), (c, n, k)
    assert pass_at_k(0, 3, 5) == 0.0 and pass_at_k(2, 3, 5) == 1.0  # fewer plays than k: their own value
    with pytest.raises(ValueError, match="successes <= samples"):
        pass_at_k(4, 3, 2)


def test_more_samples_than_k_give_the_unbiased_pass_at_k():
    """A protocol of K = 2 whose goals were played 4 times: pass@2 per goal is 1 - C(n-c, 2) / C(n, 2)."""
    protocol = with_samples(adhoc_protocol(start=0, stop=3, max_steps=15, price_seed=0, goal_kind="synthetic"), 2)
    outcomes = {0: [1, 0, 0, 0], 1: [1, 1, 0, 0], 2: [0, 0, 0, 0]}
    rows = [{"raw_reward": float(r), "purchased": True, "goal": g, "sample": s, "trial": 0}
            for g, rs in outcomes.items() for s, r in enumerate(rs)]
    values = protocol.figures(rows)
    expected = [1 - math.comb(4 - sum(rs), 2) / math.comb(4, 2) for rs in outcomes.values()]  # 1/2, 5/6, 0
    assert values["pass@2"] == pytest.approx(100 * sum(expected) / 3)
    assert values["mean@2"] == pytest.approx(100 * (0.25 + 0.5 + 0) / 3)


def test_mean_and_pass_at_k_get_intervals_of_their_own():
    protocol = with_samples(adhoc_protocol(start=0, stop=40, max_steps=15, price_seed=0, goal_kind="synthetic"), 4)
    rng = np.random.default_rng(1)
    episodes = []
    for g in range(40):
        p = rng.beta(0.5, 1.0)
        for s in range(4):
            won = rng.random() < p
            episodes.append({"reward": 1.0 if won else 0.5, "purchased": True, "steps": 3, "invalid_actions": 0,
                             "goal_index": g, "protocol": {"item": g, "sample": s}})
    figures = summarize(episodes, protocol)
    found = figures["protocol"]["intervals"]
    goals = Goals.of([e["reward"] for e in episodes], [e["protocol"]["item"] for e in episodes])
    expected = sampled_intervals(goals, 4)
    for key in ("mean@4", "pass@4"):
        assert found[key] == {"low": expected[key].low, "high": expected[key].high}
        assert found[key]["low"] <= figures["protocol"][key] <= found[key]["high"]
    assert figures["counts"]["goals"] == 40 and figures["counts"]["episodes"] == 160
    assert figures["protocol"]["pass@4"] > figures["protocol"]["mean@4"]


# -- the goal-level bootstrap against scipy.stats.bootstrap ---------------------------------------------


@pytest.mark.parametrize(("unequal", "partial"), [(False, [0.0, 0.5, 0.75]), (True, [0.0, 0.5, 0.75]), (False, None)])
def test_the_goal_bootstrap_agrees_with_scipy(unequal, partial):
    """The percentile bootstrap over goals equals scipy's on the per-goal means, within Monte Carlo error.

    Few distinct goal outcomes are drawn as a multinomial, many (``partial`` None: any reward) goal by goal.
    """
    rng = np.random.default_rng(11)
    goals, k = 300, 4
    p = rng.beta(0.6, 0.9, goals)
    fails = rng.random((goals, k)) if partial is None else rng.choice(partial, (goals, k))
    rewards = np.where(rng.random((goals, k)) < p[:, None], 1.0, fails)
    sizes = np.where(rng.random(goals) < 0.2, 3, k) if unequal else np.full(goals, k)  # errored samples left out
    totals = np.array([rewards[g, : sizes[g]].sum() for g in range(goals)])
    assert (len(np.unique(totals)) > 256) == (partial is None)  # both ways of drawing the goals are checked
    ours = [resampled_ratio(totals, sizes, 10_000, seed) for seed in range(6)]
    index = np.arange(goals)

    def ratio(i, axis=-1):
        return totals[i].sum(axis=axis) / sizes[i].sum(axis=axis)

    theirs = stats.bootstrap((index,), ratio, vectorized=True, n_resamples=10_000, method="percentile",
                             confidence_level=0.95, random_state=np.random.default_rng(5)).confidence_interval
    spread = np.std([o.low for o in ours]) + np.std([o.high for o in ours])  # Monte Carlo error of one interval
    assert spread < 0.5
    low, high = np.mean([o.low for o in ours]), np.mean([o.high for o in ours])
    assert abs(low - 100 * theirs.low) < 4 * spread and abs(high - 100 * theirs.high) < 4 * spread
    assert ours[0].value == pytest.approx(100 * totals.sum() / sizes.sum())


# -- the test on successes: the exact sign-flip test ----------------------------------------------------


def _brute_flip(numerators, denominators) -> float:
    d = [Fraction(int(n), int(m)) for n, m in zip(numerators, denominators, strict=True) if n]
    observed = abs(sum(d))
    hits = sum(abs(sum(s * x for s, x in zip(signs, d, strict=True))) >= observed
               for signs in itertools.product((1, -1), repeat=len(d)))
    return hits / 2 ** len(d)


def test_the_sign_flip_test_is_exact():
    rng = np.random.default_rng(2)
    for _ in range(200):
        n = int(rng.integers(1, 13))
        num, den = rng.integers(-5, 6, n), rng.integers(1, 6, n)
        assert flip_test(num, den) == pytest.approx(_brute_flip(num, den), abs=1e-12)
    # scipy's paired permutation test (exact for few goals) on differences of success shares of 4 samples
    shares = rng.integers(-4, 5, 12)
    theirs = stats.permutation_test((shares / 4,), np.sum, permutation_type="samples", n_resamples=np.inf,
                                    alternative="two-sided")
    assert flip_test(shares, 4) == pytest.approx(theirs.pvalue, abs=1e-12)
    # differences of -1, 0, 1 (one sample per goal): McNemar's exact test, i.e. the sign test
    ones = np.array([1] * 10 + [-1] * 4 + [0] * 30)
    assert flip_test(ones) == sign_test(10, 4)
    # a lattice too large for the exact sum: seeded draws of the flips, within their Monte Carlo error
    num, den = rng.integers(-5, 6, 14), rng.integers(1, 6, 14)
    assert flip_test(num, den, exact_limit=1, resamples=20_000) == pytest.approx(_brute_flip(num, den), abs=0.01)
    assert flip_test([0, 0]) == 1.0
    with pytest.raises(ValueError, match="positive"):
        flip_test([1, 2], [0, 1])


# -- proof by simulation (a small version of benchmarks/intervals.py) ------------------------------------


RUNS = 400  # coverage of one cell: standard error 1.1 points; the band below is about 2.6 standard errors


@pytest.mark.parametrize(("scenario", "goals", "k"), [
    (Scenario("beta", 0.3, 0.3), 100, 4),
    (Scenario("deterministic", 0.4), 100, 16),
    (Scenario("binomial", 0.05), 200, 1),
])
def test_intervals_cover_the_truth_in_simulated_runs(scenario, goals, k):
    found = coverage(scenario, goals, k, RUNS, resamples=400)
    for name in ("score", "sr", "mean@K", "pass@K"):
        assert 92.0 <= found["coverage"][name] <= 98.0, (name, found["coverage"])
    if k > 1:  # the intervals before (every sample an independent episode) miss the truth far more often
        assert found["coverage"]["sr (episodes, before)"] < 88.0
        assert found["coverage"]["score (episodes, before)"] < 90.0


@pytest.mark.parametrize(("scenario", "null", "k"), [
    (Scenario("beta", 0.3, 0.3), "same rates", 4),
    (Scenario("deterministic", 0.4), "own rates", 5),
])
def test_paired_tests_keep_their_false_positive_rate(scenario, null, k):
    found = null_rejections(scenario, 100, k, RUNS, resamples=300, null=null)["percent"]
    assert found["success test"] <= 7.5 and found["sign test"] <= 7.5, found  # nominal 5, +2.3 standard errors
    assert found["Δ SR covers 0"] >= 92.0 and found["Δ Score covers 0"] >= 92.0, found
    if scenario.kind == "deterministic":  # the pairing before: K pairs a goal, K times the evidence
        assert found["McNemar (sample pairs)"] > 15.0, found


def test_the_simulation_knows_its_truth():
    """The scenarios' closed forms against a large draw."""
    rng = np.random.default_rng(0)
    for scenario in SCENARIOS:
        rewards = np.concatenate([draw_run(scenario, 2000, 8, rng)[0] for _ in range(5)])
        truth = scenario.truth(8)
        assert 100 * rewards.mean() == pytest.approx(truth["score"], abs=1.0), scenario.name
        assert 100 * (rewards == 1.0).mean() == pytest.approx(truth["sr"], abs=1.0), scenario.name
        assert 100 * (rewards == 1.0).any(axis=1).mean() == pytest.approx(truth["pass@K"], abs=1.0), scenario.name
