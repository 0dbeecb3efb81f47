"""``webshop-gym replay``: replay a trajectory log or run file and check every step (:func:`webshop_gym.runs.replay.replay`)."""

from __future__ import annotations

from webshop_gym.runs.log import read_log
from webshop_gym.runs.replay import replay_log


def replay_command(args) -> int:
    """Run ``webshop-gym replay LOG [--shop DIR]``: one line per episode, then a summary.

    For a run (``eval --out``) it also checks that the summary line agrees with the episodes and
    that every goal of the run is there.  Exit status 1 on any mismatch.
    """
    log = read_log(args.log)
    results = replay_log(log, args.shop)
    bad = [r for r in results if not r["match"]]
    for r in results:
        status = "ok" if r["match"] else f"MISMATCH ({r['problem']})"
        print(f"{r['episode'][:12]:<12}  goal {r['goal_index']:>5}  steps {r['steps']:>3}  "
              f"logged {r['logged_reward']:.4f}  replayed {r['replayed_reward']:.4f}  {status}")
    problems = []
    if log.header is not None:
        from webshop_gym.runs.run import run_from_log, summary_difference

        expected = log.header.get("num_goals")
        if isinstance(expected, int) and len(log.episodes) != expected:
            problems.append(f"incomplete run: {len(log.episodes)} of {expected} episodes")
        elif log.summary is None:
            problems.append("incomplete run: no summary line (the evaluation did not finish)")
        difference = summary_difference(run_from_log(log))
        if difference is not None:
            problems.append(f"summary MISMATCH ({difference})")
    for problem in problems:
        print(problem)
    print(f"{len(results)} episodes, {len(bad)} mismatches"
          + (f"; run summary: {'ok' if not problems else 'see above'}" if log.header is not None else ""))
    return 1 if bad or problems else 0
