"""Proof that the intervals and paired tests are right: simulated runs with known truth.

Each simulated run plays ``G`` goals ``K`` times each.  A goal's samples are correlated through
the goal: goal ``g`` has a success rate ``p_g`` and a partial-credit level ``m_g``; each sample
succeeds with probability ``p_g`` (reward 1.0), else scores ``m_g`` (probability 0.7) or 0.  The
scenarios draw ``p_g`` as

* ``binomial p``: every goal the same ``p`` (samples independent: per-goal successes are binomial);
* ``beta mu/icc``: ``p_g ~ Beta`` with mean ``mu`` and intra-goal correlation ``icc`` (= 1 / (a + b + 1));
* ``deterministic mu``: ``p_g`` is 0 or 1 (a deterministic policy: a goal's K samples are identical);
* ``... 0/1``: the same without partial credit (rewards 0 or 1: Score = SR);
* ``buys q``: every sample buys with probability ``q`` and then scores ``U(0.2, 1)``, else 0 (no
  success ever); ``near 100 q``: 1 minus that (issue 54's cells at the ends of the scale).

The truth is known in closed form (SR = mean@K = E[p]; pass@k = 1 - E[(1 - p)^k];
Score = E[p] + 0.7 E[m] (1 - E[p]); buys q: Score 0.6 q).  For every cell (scenario, goals, K)
the script draws ``--runs`` runs and counts how often the 95% intervals that every reader of a
run shows (:func:`webshop_gym.analysis.intervals.goal_intervals` and ``sampled_intervals``, what
``eval``, ``report``, the viewer and the bundle call) cover the truth, and how often they are
zero-width; beside them, the methods before (Score by the percentile bootstrap, of episodes or of
goals, 1,000 resamples) and pass@k from K > k samples by the Wilson interval at the effective
trials (what the library no longer gives).

The paired part draws two runs of equally good policies (the null hypothesis: the same per-goal
rates, or each policy its own rates drawn from the same scenario) and counts how often each test
rejects at 5% (its false-positive rate) and how often the paired intervals of the differences
cover 0.

    python benchmarks/intervals.py                      # the full table: 2,000 runs a cell, 2 processes
    python benchmarks/intervals.py --runs 200 --grid issue --no-paired
    python benchmarks/intervals.py --runs 4000 --no-paired --no-before --cell 'near 100 0.05:10:4'   # one cell, closer
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import save, table  # noqa: E402
from webshop_gym.analysis.intervals import (  # noqa: E402
    cluster_interval,
    goal_intervals,
    sampled_intervals,
    sr_interval,
)
from webshop_gym.analysis.stats import (  # noqa: E402
    Goals,
    NoInterval,
    paired,
    paired_goals,
    resampled_mean,
    resampled_ratio,
)
from webshop_gym.protocols.scoring import pass_at_k  # noqa: E402

#: Partial-credit levels of a goal (WebShop rewards are fractions with small denominators), drawn uniformly.
LEVELS = np.array([0.25, 0.5, 0.6, 0.75, 0.9])
#: The chance that a failed sample still scores its goal's partial credit (else 0: no purchase, a wrong product).
PARTIAL = 0.7


@dataclass(frozen=True)
class Scenario:
    """How per-goal success rates are drawn: ``kind`` binomial, beta, deterministic, buys or near (100)."""

    kind: str
    mean: float
    icc: float = 0.0
    partial: bool = True

    @property
    def name(self) -> str:
        if self.kind == "beta":
            base = f"beta {self.mean:g}/icc {self.icc:g}"
        elif self.kind == "near":
            base = f"near 100 {self.mean:g}"
        else:
            base = f"{self.kind} {self.mean:g}"
        return base if self.partial or self.kind in ("buys", "near") else base + " 0/1"

    def rates(self, goals: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind in ("binomial", "buys", "near"):
            return np.full(goals, self.mean)
        if self.kind == "deterministic":
            return (rng.random(goals) < self.mean).astype(float)
        total = 1.0 / self.icc - 1.0
        return rng.beta(self.mean * total, (1.0 - self.mean) * total, goals)

    def pass_truth(self, k: int) -> float:
        """1 - E[(1 - p)^k] (p: a sample's chance of success)."""
        if self.kind == "buys":
            return 0.0
        if self.kind == "near":
            return 1.0 - self.mean**k
        if self.kind == "binomial":
            return 1.0 - (1.0 - self.mean) ** k
        if self.kind == "deterministic":
            return self.mean
        total = 1.0 / self.icc - 1.0
        a, b = self.mean * total, (1.0 - self.mean) * total
        return 1.0 - math.prod((b + i) / (a + b + i) for i in range(k))

    def truth(self, k: int) -> dict[str, float]:
        if self.kind == "buys":
            score, sr = 0.6 * self.mean, 0.0
        elif self.kind == "near":
            score, sr = 1.0 - 0.6 * self.mean, 1.0 - self.mean
        else:
            sr = self.mean
            score = self.mean + (PARTIAL * float(LEVELS.mean()) * (1.0 - self.mean) if self.partial else 0.0)
        out = {"score": 100 * score, "sr": 100 * sr, "mean@K": 100 * sr, "pass@K": 100 * self.pass_truth(k)}
        if k >= 4:
            out[f"pass@{k // 4} of {k}"] = 100 * self.pass_truth(k // 4)
        return out


SCENARIOS = [Scenario("binomial", 0.3), Scenario("binomial", 0.05), Scenario("beta", 0.3, 0.3),
             Scenario("beta", 0.1, 0.5), Scenario("beta", 0.6, 0.2), Scenario("deterministic", 0.4)]
#: Issue 54's cells: (scenario, goals, K).
ISSUE_CELLS = [(Scenario("buys", 0.05), 30, 1), (Scenario("buys", 0.03), 100, 1), (Scenario("near", 0.05), 30, 1),
               (Scenario("binomial", 0.02, partial=False), 20, 1), (Scenario("beta", 0.03, 0.5, False), 30, 4),
               (Scenario("beta", 0.97, 0.5, False), 30, 4), (Scenario("beta", 0.2, 0.5, False), 10, 8),
               (Scenario("buys", 0.5), 10, 1), (Scenario("beta", 0.6, 0.3, False), 20, 16),
               (Scenario("binomial", 0.606, partial=False), 20, 16)]
#: Small runs: 10 and 30 goals, K = 1, 4, 16, means from near 0 to near 100.
SMALL = [Scenario("buys", 0.05), Scenario("near", 0.05), Scenario("beta", 0.2, 0.5, False), Scenario("beta", 0.5, 0.3),
         Scenario("beta", 0.05, 0.5), Scenario("binomial", 0.5)]


#: The paired nulls drawn: the same rates on both sides (the sharp null; binomial: the only one), or each policy
#: its own (deterministic: the same rates would be the same run).
NULLS = [(SCENARIOS[0], "same rates"), (SCENARIOS[2], "same rates"), (SCENARIOS[2], "own rates"),
         (SCENARIOS[3], "own rates"), (SCENARIOS[5], "own rates")]


def grid(name: str, goals: list[int], samples: list[int]) -> list[tuple[Scenario, int, int]]:
    """The cells of ``name``: docs (the docs' scenarios x goals x K), issue (issue 54's), small (10, 30 goals), all."""
    cells = []
    if name in ("docs", "all"):
        cells += [(s, g, k) for s in SCENARIOS for g in goals for k in samples]
    if name in ("issue", "all"):
        cells += ISSUE_CELLS
    if name in ("small", "all"):
        cells += [(s, g, k) for s in SMALL for g in (10, 30) for k in (1, 4, 16)]
    return cells


def draw_run(scenario: Scenario, goals: int, k: int, rng: np.random.Generator,
             rates: np.ndarray | None = None, levels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One run: rewards (goals x k) and the goals' rates and levels (given: the same goals as another run)."""
    p = scenario.rates(goals, rng) if rates is None else rates
    m = rng.choice(LEVELS, goals) if levels is None else levels
    if scenario.kind in ("buys", "near"):
        bought = np.where(rng.random((goals, k)) < scenario.mean, rng.uniform(0.2, 1.0, (goals, k)), 0.0)
        return (bought if scenario.kind == "buys" else 1.0 - bought), (p, m)
    if scenario.kind == "deterministic":  # every sample of a goal the same
        solved = np.repeat((p > 0.5)[:, None], k, 1)
        partial = np.repeat((rng.random(goals) < PARTIAL)[:, None], k, 1)
    else:
        solved = rng.random((goals, k)) < p[:, None]
        partial = rng.random((goals, k)) < PARTIAL
    if not scenario.partial:
        partial = np.zeros_like(partial)
    rewards = np.where(solved, 1.0, np.where(partial, m[:, None], 0.0))
    return rewards, (p, m)


def run_intervals(rewards: np.ndarray, resamples: int, seed: int, before: bool = True) -> dict[str, tuple[float, float]]:
    """The intervals every reader shows, and the ones before (``before``), for one run (``rewards``: goals x K)."""
    g, k = rewards.shape
    keys = np.repeat(np.arange(g), k)
    goals = Goals.of(rewards.ravel(), keys.tolist() if k > 1 else None)
    found = {name: (i.low, i.high) for name, i in goal_intervals(goals).items()}
    if before:
        found["score (before)"] = _bounds(resampled_ratio(goals.reward, goals.played, resamples, seed))
    if k > 1:
        sampled = sampled_intervals(goals, k)
        found["mean@K"] = _bounds(sampled[f"mean@{k}"])
        found["pass@K"] = _bounds(sampled[f"pass@{k}"])
        j = k // 4
        if j >= 1:
            passes = np.array([pass_at_k(c, n, j) for c, n in zip(goals.solved.tolist(), goals.played.tolist(),
                                                                   strict=True)])
            found[f"pass@{j} of {k} (refused)"] = _bounds(cluster_interval(passes, units=float(goals.played.sum())))
        if before:
            found["score (episodes, before)"] = _bounds(resampled_mean(rewards.ravel(), resamples, seed))
            found["sr (episodes, before)"] = _bounds(sr_interval(rewards.ravel() == 1.0))
    else:
        found["mean@K"] = found["pass@K"] = found["sr"]
    return found


def _bounds(interval) -> tuple[float | None, float | None]:
    """An interval's bounds; ``(None, None)`` where the readers withhold it (a :class:`NoInterval`)."""
    return (None, None) if isinstance(interval, NoInterval) else (interval.low, interval.high)


#: The columns of the coverage table: what readers show, then the methods before or refused.
NAMES = ["score", "sr", "mean@K", "pass@K", "pass@k of K (refused)", "score (before)", "score (episodes, before)",
         "sr (episodes, before)"]


def coverage(scenario: Scenario, goals: int, k: int, runs: int, resamples: int, seed: int = 0,
             before: bool = True) -> dict:
    """Share of ``runs`` simulated runs whose interval covers the truth, per interval; zero-width shares; mean widths."""
    index = SCENARIOS.index(scenario) if scenario in SCENARIOS else 99 + sum(map(ord, scenario.name))
    rng = np.random.default_rng([seed, goals, k, index])
    truth = scenario.truth(k)
    hits: dict[str, int] = {}
    shown: dict[str, int] = {}
    zero: dict[str, int] = {}
    widths: dict[str, float] = {}
    for r in range(runs):
        rewards, _ = draw_run(scenario, goals, k, rng)
        for name, (low, high) in run_intervals(rewards, resamples, r, before).items():
            target = truth[name.split(" (")[0]]
            column = "pass@k of K (refused)" if " of " in name else name
            shown.setdefault(column, 0)
            if low is None:  # withheld: no interval can stand behind this count (webshop_gym.analysis.withheld)
                continue
            shown[column] += 1
            hits[column] = hits.get(column, 0) + int(low - 1e-9 <= target <= high + 1e-9)
            zero[column] = zero.get(column, 0) + int(high - low <= 1e-12)
            widths[column] = widths.get(column, 0.0) + (high - low)
    printed = {n: max(1, c) for n, c in shown.items()}
    return {"scenario": scenario.name, "goals": goals, "K": k, "runs": runs,
            "coverage": {n: 100.0 * hits.get(n, 0) / printed[n] if shown[n] else None for n in shown},
            "withheld": {n: 100.0 * (runs - c) / runs for n, c in shown.items()},
            "zero_width": {n: 100.0 * zero.get(n, 0) / printed[n] for n in shown},
            "width": {n: widths.get(n, 0.0) / printed[n] for n in shown}, "truth": truth}


def _covered(cell: dict, name: str) -> str:
    """A table cell: the coverage of the intervals printed, with the runs withheld and zero-width beside it."""
    found, withheld = cell["coverage"][name], cell["withheld"][name]
    text = "-" if found is None else f"{found:.1f}"
    if withheld >= 0.05:
        text += f" ({withheld:.0f}% withheld)" if withheld >= 0.5 else f" ({withheld:.1f}% withheld)"
    if found is not None and cell["zero_width"][name] >= 0.5:
        text += f" ({cell['zero_width'][name]:.0f}% 0-wide)"
    return text


def _cell(args: tuple) -> dict:
    scenario, goals, k, runs, resamples, before, seed = args
    t0 = time.perf_counter()
    found = coverage(scenario, goals, k, runs, resamples, seed, before=before)
    found["seconds"] = round(time.perf_counter() - t0, 1)
    return found


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
    parser.add_argument("--grid", choices=["docs", "issue", "small", "all"], default="all",
                        help="which cells: the docs' scenarios x --goals x --samples, issue 54's, 10 and 30 goals, or all")
    parser.add_argument("--goals", type=int, nargs="+", default=[100, 500], help="goals per run (default 100 500)")
    parser.add_argument("--samples", type=int, nargs="+", default=[1, 4, 16], help="K, samples per goal (default 1 4 16)")
    parser.add_argument("--resamples", type=int, default=1000,
                        help="bootstrap resamples of the methods before and the paired intervals (default 1,000)")
    parser.add_argument("--scenarios", nargs="+", help="names to keep (default: all), e.g. 'beta 0.3/icc 0.3'")
    parser.add_argument("--cell", action="append", metavar="SCENARIO:GOALS:K",
                        help="keep only these cells of the grid (repeatable), e.g. 'near 100 0.05:10:4'")
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--seed", type=int, default=0,
                        help="the simulated runs' seed (default 0, the docs' table; another seed gives independent runs)")
    parser.add_argument("--no-paired", action="store_true", help="skip the paired tests under the null")
    parser.add_argument("--no-before", action="store_true",
                        help="skip the methods before (the percentile bootstraps: most of the time; their columns stay empty)")
    parser.add_argument("--json", help="write the results here (default benchmarks/results/intervals.json)")
    args = parser.parse_args(argv)
    cells_asked = [c for c in grid(args.grid, args.goals, args.samples)
                   if not args.scenarios or c[0].name in args.scenarios]
    if args.cell:
        cells_asked = list(dict.fromkeys(c for c in cells_asked if f"{c[0].name}:{c[1]}:{c[2]}" in args.cell))
        if not cells_asked:
            parser.error(f"no cell of --grid {args.grid} is among {args.cell}")
    scenarios = [s for s in SCENARIOS if not args.scenarios or s.name in args.scenarios]
    if args.scenarios and not cells_asked:
        parser.error(f"unknown scenario among {args.scenarios}; known: {', '.join(s.name for s in SCENARIOS)}")
    started, load_before = time.perf_counter(), os.getloadavg()
    work = [(s, g, k, args.runs, args.resamples, not args.no_before, args.seed) for s, g, k in cells_asked]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            cells = list(pool.map(_cell, work))
    else:
        cells = [_cell(w) for w in work]
    rows = [{"scenario": c["scenario"], "goals": c["goals"], "K": c["K"], "truth": f"{c['truth']['score']:.1f}",
             **{n: _covered(c, n) for n in NAMES if n in c["coverage"]}} for c in cells]
    print(f"Coverage (%) of nominal 95% intervals, {args.runs:,} simulated runs a cell, {args.resamples:,} bootstrap "
          "resamples (the methods before); truth: the Score; the first four columns are what every reader shows, then "
          "pass@k from K > k samples by the Wilson interval at the effective trials (the library refuses it), Score "
          "by the percentile bootstrap (of goals; of episodes) and SR of episodes as before; (x% 0-wide): runs with a "
          "zero-width interval; (x% withheld): runs whose figure is a count no interval can stand behind "
          "(the readers print none; the coverage is of the intervals printed)")
    print(table(rows, ["scenario", "goals", "K", "truth", *(n for n in NAMES if any(n in c["coverage"] for c in cells))]))
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
    payload = {"runs": args.runs, "resamples": args.resamples, "seed": args.seed, "seconds": round(time.perf_counter() - started, 1),
               "load_average": {"start": load_before, "end": os.getloadavg()}, "coverage": cells, "null": nulls,
               "conditions": "simulated runs (benchmarks/intervals.py docstring); coverage of nominal 95% intervals"}
    path = save("intervals", payload, Path(args.json) if args.json else None)
    print(f"\nwrote {path}", file=sys.stderr)
    return payload


if __name__ == "__main__":
    main()
