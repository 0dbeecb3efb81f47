"""`eval --policy openai:MODEL` against the local test server: episodes/s vs the ideal, and where a turn's CPU goes.

The test server (tests/openai_server.py, its own process) answers every request after a fixed
latency (default 200 ms) with a scripted policy (3 turns per episode: search, open, buy).  For
each concurrency, 500 goals of the test split are evaluated with `evaluate(OpenAIPolicy(...),
out=...)` (concurrency 1: 50 goals unless --full; at 200 ms x 3 turns, 500 goals take 300 s).

* ideal wall = ceil(goals / concurrency) x mean turns x latency (every slot busy, zero overhead);
  "% of ideal" = ideal wall / measured wall.
* CPU per turn, split into: ours (main thread: the loop, stepping the engine, writing the run
  file; worker threads: building prompts, decoding the JSON answer, parsing), the client library
  (the rest of the worker threads' CPU inside the `openai` call: httpx, pydantic, ...), other
  threads of our process (GIL hand-offs, the progress bar; measured as the process total minus
  the parts), and the test server's process.

    python benchmarks/served_eval.py [--latency 0.2] [--goals 500] [--concurrency 1 8 64 256] [--full]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, save, table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class _Clock:
    """Thread CPU time spent inside wrapped callables, summed over threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.total = {}

    def wrap(self, key, fn):
        def timed(*args, **kwargs):
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                with self.lock:
                    self.total[key] = self.total.get(key, 0.0) + spent
        return timed


def run_once(url: str, shop, goals: int, concurrency: int, latency: float, server_pid: int) -> dict:
    import psutil

    from webshop_gym.agents import OpenAIPolicy
    from webshop_gym.evaluation.local import evaluate

    clock = _Clock()
    policy = OpenAIPolicy("scripted", base_url=url, concurrency=concurrency, timeout=60, max_retries=3)
    policy.prompt.messages = clock.wrap("prompt", policy.prompt.messages)
    policy.prompt.parse_detailed = clock.wrap("parse", policy.prompt.parse_detailed)
    policy._read = clock.wrap("decode", policy._read)
    policy.complete = clock.wrap("complete", policy.complete)
    server = psutil.Process(server_pid)
    me = psutil.Process()
    server_cpu0 = sum(server.cpu_times()[:2])
    cpu0 = sum(me.cpu_times()[:2])
    main0 = time.thread_time()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        result = evaluate(policy, shop=shop, split="test", num_goals=goals, concurrency=concurrency,
                          out=Path(folder) / "run.jsonl", keep_episodes=False)
        wall = time.perf_counter() - started
        size = (Path(folder) / "run.jsonl").stat().st_size
    main_cpu = time.thread_time() - main0
    cpu = sum(me.cpu_times()[:2]) - cpu0
    server_cpu = sum(server.cpu_times()[:2]) - server_cpu0
    policy.close()
    turns = result["counts"]["steps"]
    mean_turns = turns / result["counts"]["episodes"]
    ideal = math.ceil(goals / concurrency) * mean_turns * latency
    t = clock.total
    ours_workers = t.get("prompt", 0.0) + t.get("parse", 0.0) + t.get("decode", 0.0)
    client = t.get("complete", 0.0) - t.get("decode", 0.0)
    other = cpu - main_cpu - ours_workers - client
    ms = 1000.0 / turns
    return {"concurrency": concurrency, "goals": goals, "turns": turns, "wall_s": round(wall, 2),
            "episodes_per_s": round(goals / wall, 2), "ideal_episodes_per_s": round(goals / ideal, 2),
            "pct_of_ideal": round(100 * ideal / wall, 1), "requests_per_s": round(result["requests"] / wall, 1),
            "max_in_flight": result["requests_max_in_flight"], "errored": result["errored"],
            "retries": result["retries"],
            "ours_ms_per_turn": round((main_cpu + ours_workers) * ms, 3),
            "ours_loop_step_write_ms": round(main_cpu * ms, 3), "ours_prompt_ms": round(t.get("prompt", 0.0) * ms, 3),
            "ours_decode_parse_ms": round((t.get("parse", 0.0) + t.get("decode", 0.0)) * ms, 3),
            "client_ms_per_turn": round(client * ms, 3), "other_threads_ms_per_turn": round(other * ms, 3),
            "server_ms_per_turn": round(server_cpu * ms, 3), "run_file_mb": round(size / 1e6, 2)}


def loop_only(shop, goals: int, concurrency: int) -> dict:
    """Our part alone: the same loop with a policy that answers at once (the scripted answer, no HTTP)."""
    sys.path.insert(0, str(ROOT))
    from tests.openai_server import scripted_answer
    from webshop_gym.agents.openai import Call, Decision, Session
    from webshop_gym.agents.prompts import Turn, admissible_actions, make_prompt
    from webshop_gym.evaluation.local import evaluate

    class Instant:
        name, model = "instant", "instant"
        prompt = make_prompt("think-answer")
        settings = {"model": "instant"}

        def new_session(self, info, seed=0):
            return Session(int(info["goal_index"]), seed)

        def decide(self, session, obs, info):
            messages = self.prompt.messages(obs, info, session.turns)
            text = scripted_answer(messages)
            admissible = admissible_actions(info)
            parsed = self.prompt.parse_detailed(text, admissible)
            session.turns.append(Turn(obs, parsed.action, text, tuple(admissible)))
            return Decision(parsed.action, parsed, Call(text=text, prompt_tokens=1, completion_tokens=1, requests=1))

    evaluate(Instant(), shop=shop, num_goals=goals, concurrency=concurrency, keep_episodes=False)  # warm
    with tempfile.TemporaryDirectory() as folder:
        main0, cpu0, started = time.thread_time(), time.process_time(), time.perf_counter()
        result = evaluate(Instant(), shop=shop, num_goals=goals, concurrency=concurrency, keep_episodes=False,
                          out=Path(folder) / "run.jsonl")
        wall, main_cpu, cpu = time.perf_counter() - started, time.thread_time() - main0, time.process_time() - cpu0
    turns = result["counts"]["steps"]
    return {"concurrency": concurrency, "goals": goals, "turns": turns, "wall_s": round(wall, 2),
            "main_thread_ms_per_turn": round(1000 * main_cpu / turns, 3),
            "process_ms_per_turn": round(1000 * cpu / turns, 3), "turns_per_s": round(turns / wall)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--goals", type=int, default=500)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--full", action="store_true", help="500 goals at concurrency 1 too (300 s at 200 ms)")
    parser.add_argument("--name", default="served_eval")
    parser.add_argument("--loop-only", action="store_true",
                        help="only our part: the loop with a policy that answers at once (no server, no HTTP)")
    args = parser.parse_args()
    from webshop_gym import load_shop
    from webshop_gym.agents import OpenAIPolicy

    shop = load_shop(progress=False)
    if args.loop_only:
        rows = [loop_only(shop, args.goals, c) for c in args.concurrency]
        load = os.getloadavg()[0]
        print(f"our part alone (prompt, parse, engine, run file; no HTTP), load average {load:.1f} on "
              f"{os.cpu_count()} cores")
        print(table(rows, ["concurrency", "goals", "turns", "wall_s", "turns_per_s", "main_thread_ms_per_turn",
                           "process_ms_per_turn"]))
        print(f"wrote {save(args.name + '_loop', {'rows': rows, 'load_average': load})}")
        return
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"), "--latency", str(args.latency)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        # warm up: the JVM, the search cache of these goals' queries, the client's imports
        warm = OpenAIPolicy("scripted", base_url=url, concurrency=64)
        from webshop_gym.evaluation.local import evaluate

        evaluate(warm, shop=shop, split="test", num_goals=args.goals, concurrency=64, keep_episodes=False)
        warm.close()
        rows = []
        for c in args.concurrency:
            goals = args.goals if (c > 1 or args.full) else min(args.goals, 50)
            row = run_once(url, shop, goals, c, args.latency, proc.pid)
            rows.append(row)
            print(f"concurrency {c}: {row['episodes_per_s']} episodes/s ({row['pct_of_ideal']}% of ideal)", flush=True)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    load = os.getloadavg()
    conditions = (f"test server in its own process, {args.latency * 1000:.0f} ms per request, scripted 3-turn episodes, "
                  f"text observations, run file written; load average {load[0]:.1f} on {os.cpu_count()} cores "
                  "at the end")
    print(conditions)
    print(table(rows, ["concurrency", "goals", "wall_s", "episodes_per_s", "ideal_episodes_per_s", "pct_of_ideal",
                       "requests_per_s", "max_in_flight"]))
    print()
    print("CPU per turn (ms):")
    print(table(rows, ["concurrency", "ours_ms_per_turn", "ours_loop_step_write_ms", "ours_prompt_ms",
                       "ours_decode_parse_ms", "client_ms_per_turn", "other_threads_ms_per_turn", "server_ms_per_turn"]))
    path = save(args.name, {"conditions": conditions, "latency_s": args.latency, "rows": rows, "machine": machine()})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
