"""The run viewer on a large run: page times and server memory with a 50,000-episode run beside small ones.

Writes, in a temporary folder:

* ``rule.jsonl``, ``random.jsonl``: real runs of ``webshop-gym eval --out`` (``--goals`` goals of
  the test split);
* ``big.jsonl``: ``--episodes`` episodes (default 50,000) synthesised from the rule run by
  repeating its episodes under new episode ids (each copy is a real, replayable episode);
* ``long.jsonl``: one episode of ``--long-steps`` actions (default 20,000; paging through
  results, no step cap), logged by the env's ``RecordTrajectory``.

Then starts ``webshop-gym serve --runs`` in a fresh process (as a user does) and measures, over
HTTP: the run list while the big run is being indexed (it must not wait for it), the indexing
time and the progress lines of the server log, then every page of the viewer on the big run
(run page, sorted, filtered, a far page, an episode, its stepper, an env page, a comparison),
the stepper of the long episode, and the server's RSS throughout (sampled every 50 ms).  Each
page is fetched ``--repeats`` times after a first (cold) fetch; the table shows the cold and the
worst warm time.  Targets (issue 24): every page under 1 s after the first indexing, RSS under 1 GB.

Prints a table and writes ``benchmarks/results/viewer.json``.

    python benchmarks/viewer.py
    python benchmarks/viewer.py --shop ../shared/webshop-small --episodes 50000
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import save, stop_server, table  # noqa: E402

PLACEHOLDER = "@@EPISODE-ID@@"


def synthesise(source: Path, out: Path, episodes: int) -> int:
    """Write a run of ``episodes`` episodes repeating ``source``'s under new ids; return its size in bytes."""
    from webshop_gym.analysis.figures import summarize
    from webshop_gym.runs.log import dumps_line
    from webshop_gym.runs.run import load_run

    run = load_run(source)
    header = dict(run.header, num_goals=episodes, goals=[0, episodes])
    templates = []
    for e in run.episodes:
        lines = [dumps_line(dict(e.log.record, episode=PLACEHOLDER))]
        lines += [dumps_line(dict(s, episode=PLACEHOLDER)) for s in e.log.steps]
        templates.append("\n".join(lines) + "\n")
    key = f'"episode": "{PLACEHOLDER}"'
    records = []
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(dumps_line(header) + "\n")
        for i in range(episodes):
            j = i % len(templates)
            handle.write(templates[j].replace(key, f'"episode": "e{i}"'))
            records.append(run.episodes[j].record())
        handle.write(dumps_line({"type": "summary", "run": header.get("run"), "finished": header.get("created"),
                                 "result": summarize(records)}) + "\n")
    return out.stat().st_size


def long_episode(shop, out: Path, steps: int) -> None:
    """One episode of ``steps`` actions: a search, then pages of results forwards and back (no step cap)."""
    from webshop_gym import WebShopEnv
    from webshop_gym.runs.log import RecordTrajectory

    env = RecordTrajectory(WebShopEnv(shop=shop, max_steps=None), out)
    env.reset(options={"goal_index": 0})
    env.step("search[shoes]")
    for k in range(steps - 1):
        env.step("click[next >]" if k % 2 == 0 else "click[< prev]")
    env.close()


class RssSampler(threading.Thread):
    """Samples a process's resident set size every 50 ms; ``peak`` in MB."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        import psutil

        self.process = psutil.Process(pid)
        self.peak = 0.0
        self.last = 0.0
        self.running = True

    def run(self) -> None:
        while self.running:
            try:
                self.last = self.process.memory_info().rss / 2**20
            except Exception:  # the server exited
                return
            self.peak = max(self.peak, self.last)
            time.sleep(0.05)


def fetch(url: str) -> tuple[int, float, int]:
    """GET ``url``: (status, seconds, bytes)."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=600) as response:
            body = response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read(), exc.code
    return status, time.perf_counter() - started, len(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shop", help="shop directory (default: the embedded shop)")
    parser.add_argument("--goals", type=int, default=500, help="goals of the real runs (default 500)")
    parser.add_argument("--episodes", type=int, default=50_000, help="episodes of the big run (default 50,000)")
    parser.add_argument("--long-steps", type=int, default=20_000, help="actions of the long episode (default 20,000)")
    parser.add_argument("--repeats", type=int, default=3, help="warm fetches per page (default 3)")
    parser.add_argument("--folder", help="write the runs here (default: a temporary folder)")
    args = parser.parse_args()
    load_start = os.getloadavg()

    from webshop_gym import load_shop
    from webshop_gym.evaluation.local import evaluate

    shop = load_shop(args.shop, progress=False)
    folder = Path(args.folder or tempfile.mkdtemp(prefix="webshop-viewer-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    evaluate("rule", shop=shop, num_envs=64, num_goals=args.goals, out=folder / "rule.jsonl")
    evaluate("random", shop=shop, num_envs=64, num_goals=args.goals, out=folder / "random.jsonl")
    big_bytes = synthesise(folder / "rule.jsonl", folder / "big.jsonl", args.episodes)
    long_episode(shop, folder / "long.jsonl", args.long_steps)
    prepared = time.perf_counter() - started
    print(f"runs written in {prepared:.1f} s: big.jsonl {big_bytes / 2**20:,.0f} MB ({args.episodes:,} episodes), "
          f"long.jsonl {(folder / 'long.jsonl').stat().st_size / 2**20:,.1f} MB ({args.long_steps:,} actions)")

    command = [sys.executable, "-m", "webshop_gym.cli", "serve", "--port", "0", "--runs", str(folder),
               *(["--shop", args.shop] if args.shop else [])]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(iter(server.stderr.readline, "")), daemon=True).start()
    base = None
    for line in server.stdout:
        m = re.search(r"(http://127\.0\.0\.1:\d+)/runs/", line)
        if m:
            base = m.group(1)
            break
    if base is None:
        raise SystemExit("the server did not start: " + "".join(log))
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
    sampler = RssSampler(server.pid)
    sampler.start()
    rows = []
    try:
        time.sleep(0.5)
        rss_start = sampler.last
        status, list_s, _ = fetch(base + "/runs/")  # starts indexing big.jsonl in the background
        rows.append({"page": "/runs/ while the big run is indexed (first request)", "status": status,
                     "cold_s": list_s, "warm_max_s": None, "kB": None})
        during = [fetch(base + "/runs/")[1] for _ in range(3)]
        status, during_run_s, _ = fetch(base + "/runs/big")
        rows.append({"page": "/runs/ while indexing (3 more)", "status": 200, "cold_s": max(during), "warm_max_s": None})
        rows.append({"page": "/runs/big while indexing (progress page)", "status": status, "cold_s": during_run_s})
        t0 = time.perf_counter()
        while fetch(base + "/runs/big")[0] == 202:
            time.sleep(0.25)
        index_s = time.perf_counter() - t0 + list_s
        mid, last, half = args.episodes // 2, args.episodes - 1, args.long_steps // 2
        pages = [
            "/runs/", "/runs/big", "/runs/big?sort=reward&desc=1", "/runs/big?sort=instruction",
            "/runs/big?tag=seen+but+not+opened&sort=steps", "/runs/big?q=boots",
            f"/runs/big?page={max(1, args.episodes // 200)}",
            f"/runs/big/{mid}", f"/runs/big/{mid}?step=2", f"/runs/big/{mid}/page/2?mark=1", f"/runs/big/{last}?step=3",
            "/runs/big/vs/rule", "/runs/big/vs/rule?show=all&page=3&per=20", "/runs/big/vs/rule/7",
            "/runs/big/vs/random?tag_a=solved&tag_b=seen+but+not+opened", "/runs/rule/vs/random/7",
            "/runs/rule", "/runs/random/3?step=1",
            f"/runs/long/0?step={half}", f"/runs/long/0?step={half + 1}", f"/runs/long/0/page/{half + 1}?mark=1",
            f"/runs/long/0?step={args.long_steps - 1}",
        ]
        for page in pages:
            status, cold, size = fetch(base + page)
            warm = [fetch(base + page)[1] for _ in range(args.repeats)]
            rows.append({"page": page, "status": status, "cold_s": cold, "warm_max_s": max(warm), "kB": size / 1024})
        status, export_s, export_bytes = fetch(base + "/runs/rule/episodes.csv")
        rows.append({"page": "/runs/rule/episodes.csv (500 episodes, streamed)", "status": status, "cold_s": export_s,
                     "kB": export_bytes / 1024})
        rss_end = sampler.last
    finally:
        sampler.running = False
        stop_server(server)
    progress = [line.strip() for line in log if "index" in line]
    after = [r for r in rows if r["page"].startswith("/runs/") and "while" not in r["page"] and "episodes.csv" not in r["page"]]
    worst = max(max(r["cold_s"], r["warm_max_s"] or 0) for r in after)
    first_long = next(r["cold_s"] for r in after if r["page"].startswith("/runs/long/"))
    worst_else = max(max(r["warm_max_s"] or 0, 0 if r["page"].startswith(f"/runs/long/0?step={half}") else r["cold_s"])
                     for r in after)
    print(table(rows, ["page", "status", "cold_s", "warm_max_s", "kB"]))
    print(f"\nindexing big.jsonl ({big_bytes / 2**20:,.0f} MB, {args.episodes:,} episodes): {index_s:.1f} s; "
          f"server RSS {rss_start:,.0f} MB at start, {rss_end:,.0f} MB at the end, peak {sampler.peak:,.0f} MB")
    print(f"worst page after indexing: {worst:.3f} s (target < 1 s), the long episode's first opening at step "
          f"{half:,} included ({first_long:.2f} s: it replays and checks {half + 100:,} of its {args.long_steps:,} "
          f"steps); without it: {worst_else:.3f} s; peak RSS {sampler.peak:,.0f} MB (target < 1024 MB)")
    shown = progress if len(progress) <= 4 else progress[:3] + ["..."] + progress[-1:]
    print("server log:\n  " + "\n  ".join(shown))
    load_end = os.getloadavg()
    print(f"\nConditions: this 2-core machine (1-minute load average {load_start[0]:.1f} at the start, "
          f"{load_end[0]:.1f} at the end); times are wall-clock over HTTP from this process to a fresh "
          "`webshop-gym serve` process.")
    path = save("viewer", {
        "conditions": "fresh `serve --runs` process; HTTP from the benchmark process; cold = first fetch, "
                      "warm_max = slowest of the repeats",
        "load_average_start": load_start, "load_average_end": load_end,
        "shop": args.shop or "embedded", "big_episodes": args.episodes, "big_mb": big_bytes / 2**20,
        "long_steps": args.long_steps, "index_s": index_s, "rss_start_mb": rss_start, "rss_end_mb": rss_end,
        "rss_peak_mb": sampler.peak, "worst_page_s": worst,
        "long_episode_first_open_s": first_long, "worst_page_else_s": worst_else, "pages": rows, "server_log": progress,
    })
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
