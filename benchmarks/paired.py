"""The first paired comparison of two huge runs: ``paired`` on 50,000 goals, by part.

Plays a rule and a random run on ``--goals`` goals of a shop (real episodes), then draws
``--size`` goals' rewards from them (seeded) in three ways and times what a comparison page or
``report`` computes once per pair of runs (:func:`webshop_gym.analysis.stats.paired`, the
10,000-resample default), with its parts: the Score difference's bootstrap, the SR difference's
bootstrap and the sign test.

* ``paired draws``: goal i of both runs is the same real goal (few distinct differences);
* ``independent draws``: each run's rewards drawn separately (many distinct differences);
* ``two similar runs``: the rule run against an independent draw of itself (about as many goals
  won as lost: the sign test's worst case).

    python benchmarks/paired.py --shop ../shared/webshop-small --goals 500
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import save, table  # noqa: E402


def _timed(function, *args) -> tuple[object, float]:
    started = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shop", help="shop directory (default: the embedded shop)")
    parser.add_argument("--goals", type=int, default=500, help="goals of the real runs (default 500)")
    parser.add_argument("--size", type=int, default=50_000, help="goals of the compared runs (default 50,000)")
    args = parser.parse_args()

    import numpy as np

    from webshop_gym import load_shop
    from webshop_gym.analysis.intervals import RESAMPLES
    from webshop_gym.analysis.stats import paired, resampled_mean, sign_test
    from webshop_gym.evaluation.local import evaluate
    from webshop_gym.runs.run import load_run

    shop = load_shop(args.shop, progress=False)
    folder = Path(tempfile.mkdtemp(prefix="webshop-paired-bench-"))
    rewards = {}
    for policy in ("rule", "random"):
        evaluate(policy, shop=shop, num_envs=64, num_goals=args.goals, out=folder / f"{policy}.jsonl")
        rewards[policy] = np.array([e.reward for e in load_run(folder / f"{policy}.jsonl", steps=False).episodes])
    rng = np.random.default_rng(0)
    goals = rng.integers(0, args.goals, args.size)
    cases = {
        "paired draws (rule vs random)": (rewards["rule"][goals], rewards["random"][goals]),
        "independent draws (rule vs random)": (rewards["rule"][goals], rewards["random"][rng.integers(0, args.goals, args.size)]),
        "two similar runs (rule vs rule)": (rewards["rule"][goals], rewards["rule"][rng.integers(0, args.goals, args.size)]),
    }
    load_start = os.getloadavg()
    rows = []
    for name, (a, b) in cases.items():
        result, total = _timed(paired, a, b, RESAMPLES, 0)
        sa, sb = a == 1.0, b == 1.0
        _, score_s = _timed(resampled_mean, b - a, RESAMPLES, 0)
        _, sr_s = _timed(resampled_mean, sb.astype(float) - sa.astype(float), RESAMPLES, 0)
        _, sign_s = _timed(lambda r: (sign_test(r.won, r.lost), sign_test(r.solved_b_only, r.solved_a_only)), result)
        rows.append({"case": name, "distinct_differences": len(np.unique(b - a)),
                     "won / lost": f"{result.won:,} / {result.lost:,}", "paired_s": total,
                     "score_diff_s": score_s, "sr_diff_s": sr_s, "sign_tests_s": sign_s})
    load_end = os.getloadavg()
    print(table(rows, ["case", "distinct_differences", "won / lost", "paired_s", "score_diff_s", "sr_diff_s",
                       "sign_tests_s"]))
    print(f"\n{args.size:,} goals, {RESAMPLES:,} resamples; 1-minute load average {load_start[0]:.1f} at the start, "
          f"{load_end[0]:.1f} at the end")
    path = save("paired", {"shop": args.shop or "embedded", "goals": args.goals,
                           "size": args.size, "resamples": RESAMPLES, "load_average_start": load_start,
                           "load_average_end": load_end, "cases": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
