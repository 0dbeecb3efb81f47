"""Runs on disk: what ``eval --out`` costs, and how fast replay, the viewer and the report are.

On one shop and split (default: the embedded shop, test split, 500 goals, rule policy and the
random policy as a second run, 64 envs), measures in one process:

* ``webshop-gym eval`` without and with ``--out`` in fresh processes (the realistic, cold case:
  Java VM start, empty search cache), then ``evaluate`` warm in this process: wall times (ratios
  within this run) and the file size per episode;
* ``replay`` of the run: every step re-run in ``WebShopEnv`` and compared (episodes/s);
* ``load_run``: parse time and the memory the parsed run takes (tracemalloc) per byte of file,
  (the viewer itself no longer parses whole runs: ``benchmarks/viewer.py`` measures it);
* the viewer (Flask test client): the run page of all episodes, an episode page cold (its
  pages re-created by replaying) and warm (cached), a page of the env's HTML;
* ``report`` of the two runs: HTML with plots and 10,000 bootstrap resamples.

Prints a table and writes ``benchmarks/results/runs.json``.

    python benchmarks/runs.py
    python benchmarks/runs.py --shop ../shared/webshop-small --goals 500
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import rss_mb, save, table  # noqa: E402


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shop", help="shop directory (default: the embedded shop)")
    parser.add_argument("--goals", type=int, default=500, help="goals of the test split (default 500)")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="eval repeats with and without --out (default 3)")
    args = parser.parse_args()

    from webshop_gym.server import create_app

    from webshop_gym import load_shop
    from webshop_gym.evaluation.local import evaluate
    from webshop_gym.reporting.plots import draw_all
    from webshop_gym.reporting.report import build_report, to_html
    from webshop_gym.runs.replay import replay
    from webshop_gym.runs.run import load_run

    shop = load_shop(args.shop, progress=False)
    folder = Path(tempfile.mkdtemp(prefix="webshop-runs-bench-"))
    rule, random = folder / "rule.jsonl", folder / "random.jsonl"
    command = [sys.executable, "-m", "webshop_gym.cli", "eval", "--policy", "rule", "--num-goals", str(args.goals),
               "--num-envs", str(args.num_envs), "--quiet", *(["--shop", args.shop] if args.shop else [])]
    cold_plain, cold_written = [], []
    for _ in range(args.repeats):
        cold_plain.append(timed(subprocess.run, command, capture_output=True, check=True)[1])
        cold_written.append(timed(subprocess.run, [*command, "--out", str(folder / "cold.jsonl")],
                                  capture_output=True, check=True)[1])
    evaluate("rule", shop=shop, num_envs=args.num_envs, num_goals=args.goals)  # warm: JVM, search cache, kernel
    plain, written = [], []
    for _ in range(args.repeats):  # interleaved, so drift hits both alike
        plain.append(timed(evaluate, "rule", shop=shop, num_envs=args.num_envs, num_goals=args.goals)[1])
        written.append(timed(evaluate, "rule", shop=shop, num_envs=args.num_envs, num_goals=args.goals, out=rule)[1])
    evaluate("random", shop=shop, num_envs=args.num_envs, num_goals=args.goals, out=random)
    size = rule.stat().st_size
    steps = sum(len(e.log.steps) for e in load_run(rule).episodes)

    results, replay_s = timed(replay, rule)
    assert all(r["match"] for r in results)

    tracemalloc.start()
    run, load_s = timed(load_run, rule)
    parsed_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del run

    app = create_app({"TESTING": True, "SHOP": shop, "RUNS": str(folder), "SEED": 0, "MAX_SESSIONS": 4})
    client = app.test_client()
    _, run_page_cold = timed(client.get, "/runs/rule")
    run_page_warm = statistics.median(timed(client.get, "/runs/rule")[1] for _ in range(5))
    cold, warm, page = [], [], []
    for position in range(10, 30):
        cold.append(timed(client.get, f"/runs/rule/{position}?step=1")[1])
        warm.append(timed(client.get, f"/runs/rule/{position}?step=2")[1])
        page.append(timed(client.get, f"/runs/rule/{position}/page/1")[1])
    app.extensions["webshop_gym"].close()
    app.extensions["webshop_gym_runs"].close()

    report, report_s = timed(build_report, [rule, random], resamples=10_000)
    plots, plots_s = timed(draw_all, report.rows)
    html, html_s = timed(to_html, report, plots)

    episodes = len(results)
    rows = [
        {"what": "webshop-gym eval (fresh process)", "figure": f"{statistics.median(cold_plain):.2f} s",
         "detail": f"median of {args.repeats}"},
        {"what": "webshop-gym eval --out (fresh process)", "figure": f"{statistics.median(cold_written):.2f} s",
         "detail": f"x{statistics.median(cold_written) / statistics.median(cold_plain):.2f}"},
        {"what": f"evaluate, {episodes} goals, {args.num_envs} envs (warm)", "figure": f"{statistics.median(plain):.2f} s", "detail": f"median of {args.repeats}"},
        {"what": "evaluate(out=...) (warm)", "figure": f"{statistics.median(written):.2f} s",
         "detail": f"x{statistics.median(written) / statistics.median(plain):.2f} of eval"},
        {"what": "run file", "figure": f"{size / 2**20:.2f} MB", "detail": f"{size / episodes / 1024:.1f} KiB/episode, {size / steps:.0f} B/step"},
        {"what": "replay", "figure": f"{replay_s:.2f} s", "detail": f"{episodes / replay_s:.0f} episodes/s, every step compared"},
        {"what": "load_run", "figure": f"{load_s * 1000:.0f} ms", "detail": f"{parsed_bytes / 2**20:.1f} MB parsed = {parsed_bytes / size:.1f} x file"},
        {"what": "viewer: run page", "figure": f"{run_page_cold * 1000:.0f} ms cold", "detail": f"{run_page_warm * 1000:.0f} ms warm ({episodes} rows)"},
        {"what": "viewer: episode page", "figure": f"{statistics.median(cold) * 1000:.1f} ms cold", "detail": f"{statistics.median(warm) * 1000:.1f} ms warm (median of 20)"},
        {"what": "viewer: env page", "figure": f"{statistics.median(page) * 1000:.1f} ms", "detail": "cached HTML"},
        {"what": "report (2 runs)", "figure": f"{report_s + plots_s + html_s:.2f} s",
         "detail": f"stats {report_s:.2f} s, 5 plots {plots_s:.2f} s, HTML {html_s:.2f} s ({len(html) / 1024:.0f} KiB)"},
    ]
    print(f"shop: {shop}, rule policy, test split, RSS {rss_mb():.0f} MB")
    print(table(rows, ["what", "figure", "detail"]))
    path = save("runs", {
        "conditions": {"shop": str(shop.path), "goals": episodes, "num_envs": args.num_envs, "policy": "rule",
                       "observation_mode": "text", "repeats": args.repeats,
                       "note": "cli_eval_*: fresh processes (Java VM start, cold search cache); the rest in one process after a warm-up eval (warm search cache)"},
        "cli_eval_s": cold_plain, "cli_eval_out_s": cold_written, "eval_s": plain, "eval_out_s": written, "file_bytes": size, "steps": steps, "replay_s": replay_s,
        "load_run_s": load_s, "parsed_bytes": parsed_bytes, "parsed_per_file_byte": parsed_bytes / size,
        "run_page_cold_s": run_page_cold, "run_page_warm_s": run_page_warm, "episode_page_cold_s": cold,
        "episode_page_warm_s": warm, "env_page_s": page, "report_stats_s": report_s, "report_plots_s": plots_s,
        "report_html_s": html_s, "report_html_bytes": len(html), "rss_mb": rss_mb(),
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
