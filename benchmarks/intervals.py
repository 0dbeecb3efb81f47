"""Proof that the intervals and paired tests are right: simulated runs with known truth.

Each simulated run plays ``G`` goals ``K`` times each.  A goal's samples are correlated through
the goal: goal ``g`` has a success rate ``p_g`` and a partial-credit level ``m_g``; each sample
succeeds with probability ``p_g`` (reward 1.0), else scores ``m_g`` (probability 0.7) or 0.  The
scenarios draw ``p_g`` as

* ``binomial p``: every goal the same ``p`` (samples independent: per-goal successes are binomial);
* ``beta mu/icc``: ``p_g ~ Beta`` with mean ``mu`` and intra-goal correlation ``icc`` (= 1 / (a + b + 1));
* ``deterministic mu``: ``p_g`` is 0 or 1 (a deterministic policy: a goal's K samples are identical).

The truth is known in closed form (SR = mean@K = E[p]; pass@k = 1 - E[(1 - p)^k];
Score = E[p] + 0.7 E[m] (1 - E[p])).  For every cell (scenario, goals, K) the script draws
``--runs`` runs and counts how often the 95% intervals that every reader of a run shows
(:func:`webshop_gym.analysis.intervals.goal_intervals` and ``sampled_intervals``, what ``eval``,
``report``, the viewer and the bundle call) cover the truth; beside them, the
episode-level intervals (every sample an independent episode) and the candidates not chosen
(Score by BCa over goals; SR, mean@K, pass@K by the percentile bootstrap over goals, the last
what the viewer showed for mean@K and pass@K before).
With K = 16 it also estimates pass@4 from the 16 samples (the unbiased estimator).

The paired part draws two runs of equally good policies (the null hypothesis: the same per-goal
rates, or each policy its own rates drawn from the same scenario) and counts how often each test
rejects at 5% (its false-positive rate) and how often the paired intervals of the differences
cover 0; beside them, the tests as they paired sampled runs before (sample i of a goal against
sample i: K pairs a goal).

    python benchmarks/intervals.py                      # the full table: 2,000 runs a cell
    python benchmarks/intervals.py --runs 200 --goals 100 --samples 1 4 --quick
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import save, table  # noqa: E402
from webshop_gym.analysis.intervals import (  # noqa: E402
    goal_intervals,
    sampled_intervals,
    score_interval,
    sr_interval,
)
from webshop_gym.analysis.stats import Goals, paired, paired_goals, resampled_mean, resampled_ratio  # noqa: E402

#: Partial-credit levels of a goal (WebShop rewards are fractions with small denominators), drawn uniformly.
LEVELS = np.array([0.25, 0.5, 0.6, 0.75, 0.9])
#: The chance that a failed sample still scores its goal's partial credit (else 0: no purchase, a wrong product).
PARTIAL = 0.7


@dataclass(frozen=True)
class Scenario:
    """How per-goal success rates are drawn: ``kind`` binomial, beta or deterministic."""

    kind: str
    mean: float
    icc: float = 0.0

    @property
    def name(self) -> str:
        if self.kind == "beta":
            return f"beta {self.mean:g}/icc {self.icc:g}"
        return f"{self.kind} {self.mean:g}"

    def rates(self, goals: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "binomial":
            return np.full(goals, self.mean)
        if self.kind == "deterministic":
            return (rng.random(goals) < self.mean).astype(float)
        total = 1.0 / self.icc - 1.0
        return rng.beta(self.mean * total, (1.0 - self.mean) * total, goals)

    def pass_truth(self, k: int) -> float:
        """1 - E[(1 - p)^k]."""
        if self.kind == "binomial":
            return 1.0 - (1.0 - self.mean) ** k
        if self.kind == "deterministic":
            return self.mean
        total = 1.0 / self.icc - 1.0
        a, b = self.mean * total, (1.0 - self.mean) * total
        return 1.0 - math.prod((b + i) / (a + b + i) for i in range(k))

    def truth(self, k: int) -> dict[str, float]:
        score = self.mean + PARTIAL * float(LEVELS.mean()) * (1.0 - self.mean)
        out = {"score": 100 * score, "sr": 100 * self.mean, "mean@K": 100 * self.mean, "pass@K": 100 * self.pass_truth(k)}
        if k >= 16:
            out["pass@4 of 16"] = 100 * self.pass_truth(4)
        return out


SCENARIOS = [Scenario("binomial", 0.3), Scenario("binomial", 0.05), Scenario("beta", 0.3, 0.3),
             Scenario("beta", 0.1, 0.5), Scenario("beta", 0.6, 0.2), Scenario("deterministic", 0.4)]


#: The paired nulls drawn: the same rates on both sides (the sharp null; binomial: the only one), or each policy
#: its own (deterministic: the same rates would be the same run).
NULLS = [(SCENARIOS[0], "same rates"), (SCENARIOS[2], "same rates"), (SCENARIOS[2], "own rates"),
         (SCENARIOS[3], "own rates"), (SCENARIOS[5], "own rates")]


def draw_run(scenario: Scenario, goals: int, k: int, rng: np.random.Generator,
             rates: np.ndarray | None = None, levels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One run: rewards (goals x k) and the goals' rates and levels (given: the same goals as another run)."""
    p = scenario.rates(goals, rng) if rates is None else rates
    m = rng.choice(LEVELS, goals) if levels is None else levels
    if scenario.kind == "deterministic":  # every sample of a goal the same
        solved = np.repeat((p > 0.5)[:, None], k, 1)
        partial = np.repeat((rng.random(goals) < PARTIAL)[:, None], k, 1)
    else:
        solved = rng.random((goals, k)) < p[:, None]
        partial = rng.random((goals, k)) < PARTIAL
    rewards = np.where(solved, 1.0, np.where(partial, m[:, None], 0.0))
    return rewards, (p, m)


def run_intervals(rewards: np.ndarray, resamples: int, seed: int) -> dict[str, tuple[float, float]]:
    """The intervals every reader shows, and the ones not chosen, for one run (``rewards``: goals x K)."""
    g, k = rewards.shape
    keys = np.repeat(np.arange(g), k)
    goals = Goals.of(rewards.ravel(), keys.tolist() if k > 1 else None)
    found = {name: (i.low, i.high) for name, i in goal_intervals(goals, resamples, seed).items()}
    episodes = rewards.ravel()
    found["score (episodes)"] = _bounds(score_interval(episodes, resamples, seed))
    found["sr (episodes)"] = _bounds(sr_interval(episodes == 1.0))
    if k > 1:
        sampled = sampled_intervals(goals, k)
        found["mean@K"] = _bounds(sampled[f"mean@{k}"])
        found["pass@K"] = _bounds(sampled[f"pass@{k}"])
        found["score (goal BCa)"] = bca(goals.reward, goals.played, resamples, seed)
        found["sr (goal bootstrap)"] = _bounds(resampled_ratio(goals.solved, goals.played, resamples, seed))
        found["mean@K (goal bootstrap)"] = _bounds(resampled_mean(goals.share, resamples, seed))
        found["pass@K (goal bootstrap)"] = _bounds(resampled_mean((goals.solved > 0).astype(float), resamples, seed))
        if k >= 16:
            found["pass@4 of 16"] = _bounds(sampled_intervals(goals, 4)["pass@4"])
    else:
        found["mean@K"] = found["pass@K"] = found["sr"]
    return found


def bca(totals: np.ndarray, sizes: np.ndarray, resamples: int, seed: int) -> tuple[float, float]:
    """The BCa interval over goals of the ratio sum(totals) / sum(sizes) (x100): a candidate, not what readers show."""
    from statistics import NormalDist

    rng = np.random.default_rng(seed)
    g = len(totals)
    picks = rng.integers(0, g, (resamples, g))
    means = totals[picks].sum(1) / sizes[picks].sum(1)
    theta = totals.sum() / sizes.sum()
    normal = NormalDist()
    z0 = normal.inv_cdf(min(max(float((means < theta).mean()), 1e-6), 1 - 1e-6))
    jack = (totals.sum() - totals) / (sizes.sum() - sizes)
    d = jack.mean() - jack
    accel = float((d**3).sum() / (6 * ((d**2).sum()) ** 1.5)) if np.any(d) else 0.0
    tails = [normal.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z))) for z in (normal.inv_cdf(0.025), normal.inv_cdf(0.975))]
    low, high = np.percentile(means, [100 * t for t in tails])
    return 100 * float(low), 100 * float(high)


def _bounds(interval) -> tuple[float, float]:
    return interval.low, interval.high


def coverage(scenario: Scenario, goals: int, k: int, runs: int, resamples: int, seed: int = 0) -> dict:
    """Share of ``runs`` simulated runs whose interval covers the truth, per interval; and mean widths."""
    rng = np.random.default_rng([seed, goals, k, SCENARIOS.index(scenario) if scenario in SCENARIOS else 99])
    truth = scenario.truth(k)
    hits: dict[str, int] = {}
    widths: dict[str, float] = {}
    for r in range(runs):
        rewards, _ = draw_run(scenario, goals, k, rng)
        for name, (low, high) in run_intervals(rewards, resamples, r).items():
            target = truth[name.split(" (")[0]]
            hits[name] = hits.get(name, 0) + int(low - 1e-9 <= target <= high + 1e-9)
            widths[name] = widths.get(name, 0.0) + (high - low)
    return {"scenario": scenario.name, "goals": goals, "K": k, "runs": runs,
            "coverage": {n: 100.0 * h / runs for n, h in hits.items()},
            "width": {n: w / runs for n, w in widths.items()}, "truth": truth}


def null_rejections(scenario: Scenario, goals: int, k: int, runs: int, resamples: int, null: str = "same rates",
                    seed: int = 0) -> dict:
    """Two policies equally good: how often each paired test rejects at 5%, and the Δ intervals cover 0.

    ``null``: ``"same rates"`` (both policies have each goal's rate and level: the sharp null) or
    ``"own rates"`` (each policy draws its own per-goal rates and levels from the scenario: equally
    good over goals, not goal by goal, e.g. two deterministic policies each solving 40% of the goals).
    """
    rng = np.random.default_rng([seed, goals, k, 7 if null == "same rates" else 8,
                                 SCENARIOS.index(scenario) if scenario in SCENARIOS else 99])
    counts = {"sign test": 0, "success test": 0, "Δ Score covers 0": 0, "Δ SR covers 0": 0,
              "sign test (sample pairs)": 0, "McNemar (sample pairs)": 0}
    for r in range(runs):
        a, (p, m) = draw_run(scenario, goals, k, rng)
        b, _ = draw_run(scenario, goals, k, rng, *((p, m) if null == "same rates" else (None, None)))
        keys = np.repeat(np.arange(goals), k).tolist() if k > 1 else None
        found = paired_goals(Goals.of(a.ravel(), keys), Goals.of(b.ravel(), keys), resamples, r)
        counts["sign test"] += found.sign_p < 0.05
        counts["success test"] += found.mcnemar_p < 0.05
        counts["Δ Score covers 0"] += found.score_diff.low <= 0 <= found.score_diff.high
        counts["Δ SR covers 0"] += found.sr_diff.low <= 0 <= found.sr_diff.high
        if k > 1:  # the pairing before: sample i of a goal against sample i of the same goal
            before = paired(a.ravel(), b.ravel(), 200, r)
            counts["sign test (sample pairs)"] += before.sign_p < 0.05
            counts["McNemar (sample pairs)"] += before.mcnemar_p < 0.05
    if k == 1:
        del counts["sign test (sample pairs)"], counts["McNemar (sample pairs)"]
    return {"scenario": scenario.name, "null": null, "goals": goals, "K": k, "runs": runs,
            "percent": {n: 100.0 * c / runs for n, c in counts.items()}}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000, help="simulated runs per cell (default 2,000)")
    parser.add_argument("--goals", type=int, nargs="+", default=[100, 500], help="goals per run (default 100 500)")
    parser.add_argument("--samples", type=int, nargs="+", default=[1, 4, 16], help="K, samples per goal (default 1 4 16)")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples per interval (default 1,000; the product's 10,000 change the "
                             "endpoints by Monte Carlo noise only)")
    parser.add_argument("--scenarios", nargs="+", help="names to keep (default: all), e.g. 'beta 0.3/icc 0.3'")
    parser.add_argument("--no-paired", action="store_true", help="skip the paired tests under the null")
    parser.add_argument("--json", help="write the results here (default benchmarks/results/intervals.json)")
    args = parser.parse_args(argv)
    scenarios = [s for s in SCENARIOS if not args.scenarios or s.name in args.scenarios]
    if args.scenarios and len(scenarios) < len(args.scenarios):
        parser.error(f"unknown scenario among {args.scenarios}; known: {', '.join(s.name for s in SCENARIOS)}")
    started, load_before = time.perf_counter(), os.getloadavg()
    cells = []
    for scenario in scenarios:
        for goals in args.goals:
            for k in args.samples:
                t0 = time.perf_counter()
                cells.append(coverage(scenario, goals, k, args.runs, args.resamples))
                cells[-1]["seconds"] = round(time.perf_counter() - t0, 1)
                print(f"  {scenario.name}, {goals} goals, K={k}: {cells[-1]['seconds']} s", file=sys.stderr, flush=True)
    names = ["score", "sr", "mean@K", "pass@K", "pass@4 of 16", "score (episodes)", "sr (episodes)",
             "score (goal BCa)", "sr (goal bootstrap)", "mean@K (goal bootstrap)", "pass@K (goal bootstrap)"]
    rows = [{"scenario": c["scenario"], "goals": c["goals"], "K": c["K"],
             **{n: f"{c['coverage'][n]:.1f}" for n in names if n in c["coverage"]}} for c in cells]
    print(f"Coverage (%) of nominal 95% intervals, {args.runs:,} simulated runs a cell, {args.resamples:,} bootstrap "
          "resamples; the first four columns are what every reader shows, the rest the methods before or not chosen")
    print(table(rows, ["scenario", "goals", "K", *names]))
    nulls = []
    if not args.no_paired:
        for scenario, null in NULLS:
            if scenario not in scenarios:
                continue
            for goals in args.goals:
                for k in args.samples:
                    t0 = time.perf_counter()
                    nulls.append(null_rejections(scenario, goals, k, args.runs, args.resamples, null))
                    print(f"  null ({null}) {scenario.name}, {goals} goals, K={k}: {time.perf_counter() - t0:.1f} s",
                          file=sys.stderr, flush=True)
        tests = ["sign test", "success test", "Δ Score covers 0", "Δ SR covers 0", "sign test (sample pairs)",
                 "McNemar (sample pairs)"]
        print(f"\nTwo runs of policies with the same per-goal rates (the null): % of {args.runs:,} pairs a test rejects "
              "at 5% (nominal: at most 5), % the Δ intervals cover 0 (nominal 95)")
        print(table([{"scenario": n["scenario"], "null": n["null"], "goals": n["goals"], "K": n["K"],
                      **{t: f"{n['percent'][t]:.1f}" for t in tests if t in n["percent"]}} for n in nulls],
                    ["scenario", "null", "goals", "K", *tests]))
    payload = {"runs": args.runs, "resamples": args.resamples, "seconds": round(time.perf_counter() - started, 1),
               "load_average": {"start": load_before, "end": os.getloadavg()}, "coverage": cells, "null": nulls,
               "conditions": "simulated runs (benchmarks/intervals.py docstring); coverage of nominal 95% intervals"}
    path = save("intervals", payload, Path(args.json) if args.json else None)
    print(f"\nwrote {path}", file=sys.stderr)
    return payload


if __name__ == "__main__":
    main()
