"""Where a cold ``WebShopEnv`` step's time goes: CPU time per part of each action, fresh processes.

Replays the golden trajectories of the real shop (``../shared/webshop-small``) once per fresh
process, as ``benchmarks/replay.py --modes single`` does (cold caches), and times each part of
every action with the thread's CPU clock (``time.thread_time_ns``, so other work on a busy machine
counts less than with a wall clock; the clock's own cost, about a microsecond a part, is in every
figure alike):

* ``step``: the engine's transition as ``WebShopEnv.step`` calls it (``Engine.step_one``; with
  code older than it, ``Engine.step`` on one slot), over all actions and per kind: ``search``,
  ``click`` (every click but ``buy now``), ``buy`` (``click[buy now]``: the reward);
* ``obs``: the text observation, and ``obs_results`` (the results page after a search) and
  ``obs_done`` (the done page after a purchase);
* ``info``: the info dict with both action lists;
* ``reset``: the 450 episode starts, per action;
* ``cpu_us``/``wall_us``: the whole replay per action (process CPU and wall clock).

The observations and rewards are checked against the golden ones (``mismatches``).  Compare two
versions of the code in one sitting, alternating them (``PYTHONPATH=<checkout>``), as
docs/benchmarks.md does; a figure from another sitting is not comparable.

    python benchmarks/step_parts.py                 # 3 fresh processes, medians
    python benchmarks/step_parts.py --repeat 5 --json parts.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "webshop-small"
PARTS = ("step", "search", "click", "buy", "obs", "obs_results", "obs_done", "info", "reset", "cpu_us", "wall_us")


def child(real: Path) -> dict:
    """One cold replay in this (fresh) process; µs per action (per action of a kind for the kinds)."""
    import numpy as np

    from webshop_gym import WebShopEnv
    from webshop_gym.shop import load_shop

    trajectories = [json.loads(line) for line in (real / "golden" / "trajectories.jsonl").read_text().splitlines()]
    shop = load_shop(real, goals=real / "golden" / "goals.json", progress=False, search_backend="bm25")
    shop.engine.prepare()
    env = WebShopEnv(shop=shop, max_steps=None)
    engine, slot, clock = env.engine, np.zeros(1, np.intp), time.thread_time_ns
    step_one = getattr(engine, "step_one", None)  # what WebShopEnv.step calls (older code: the batch step)
    total = dict.fromkeys(("step", "search", "click", "buy", "obs", "obs_results", "obs_done", "info", "reset"), 0)
    count = dict.fromkeys(("search", "click", "buy", "obs_results", "obs_done"), 0)
    got, expected, n = [], [], 0
    cpu, wall = time.process_time(), time.perf_counter()
    for tr in trajectories:
        a = clock()
        obs, _ = env.reset(options={"goal_index": tr["goal_index"]})
        total["reset"] += clock() - a
        got.append((obs, 0.0))
        expected.append((tr["steps"][0]["obs_text"], tr["steps"][0]["reward"]))
        for step in tr["steps"][1:]:
            action = step["action"]
            a = clock()
            if step_one is not None:
                reward, done, _ = step_one(0, action)
            else:
                rewards, terminated, _ = engine.step(slot, [action])
                reward, done = float(rewards[0]), bool(terminated[0])
            b = clock()
            obs = engine.observe(0)
            c = clock()
            engine.info(0)
            d = clock()
            kind = "search" if action.startswith("search[") else "buy" if action == "click[buy now]" else "click"
            total["step"] += b - a
            total[kind] += b - a
            count[kind] += 1
            total["obs"] += c - b
            total["info"] += d - c
            if kind in ("search", "buy"):
                page = "obs_results" if kind == "search" else "obs_done"
                total[page] += c - b
                count[page] += 1
            got.append((obs, reward))
            expected.append((step["obs_text"], step["reward"]))
            n += 1
            if done:
                break
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    out = {k: round(v / 1000 / (count[k] if k in count else n), 1) for k, v in total.items()}
    out.update(cpu_us=round(cpu * 1e6 / n, 1), wall_us=round(wall * 1e6 / n, 1), actions=n, counts=count,
               mismatches=sum(x != y for x, y in zip(got, expected)), load_average_1min=round(os.getloadavg()[0], 2))
    return out


def fail(message: str) -> None:
    """A bad argument or setup: one line on stderr, exit status 2."""
    print(f"step_parts.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes (median reported; default 3)")
    parser.add_argument("--shop", type=Path, default=REAL, help="the real shop with its golden/ folder")
    parser.add_argument("--json", type=Path, help="also write the runs and medians here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not (args.shop / "golden" / "trajectories.jsonl").is_file():
        fail(f"{args.shop} has no golden/trajectories.jsonl (pass --shop: the real shop with its golden folder)")
    if args.child:
        print(json.dumps(child(args.shop)))
        return
    if args.repeat < 1:
        fail(f"--repeat must be at least 1, not {args.repeat}")
    runs = []
    for _ in range(args.repeat):
        proc = subprocess.run([sys.executable, __file__, "--child", "--shop", str(args.shop)], capture_output=True,
                              text=True, env=os.environ.copy())
        if proc.returncode != 0:
            fail("a replay process failed: " + (proc.stderr.strip().splitlines() or ["no output"])[-1])
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    medians = {k: statistics.median(r[k] for r in runs) for k in (*PARTS, "mismatches", "load_average_1min")}
    for key in PARTS:
        print(f"{key:12s} {medians[key]:8.1f} µs   runs: {', '.join(str(r[key]) for r in runs)}")
    print(f"mismatches {medians['mismatches']:.0f}, load average {medians['load_average_1min']}, "
          f"{runs[0]['actions']} actions {runs[0]['counts']}")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "medians": medians}, indent=1))


if __name__ == "__main__":
    main()
