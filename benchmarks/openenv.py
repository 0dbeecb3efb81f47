"""Load test of ``webshop-gym openenv``: concurrent OpenEnv WebSocket sessions, beside the AgentGym API.

Starts ``webshop-gym openenv --port 0`` on 127.0.0.1 (a subprocess), reads the bound port from
its "serving at" line, then runs the load generator in ``--procs`` separate processes, each an
asyncio event loop with its share of ``--sessions`` WebSocket sessions speaking OpenEnv's wire
protocol (``{"type": "reset"|"step", "data": ...}`` frames, as ``EnvClient`` sends them; a raw
``websockets`` client, so the generator spends little CPU per step).  Each session resets on a
random goal, then takes ``--steps`` actions chosen from the observation's admissible actions
(a search built from the instruction, clicks, the odd invalid action, a purchase now and then;
after a purchase it resets on another goal).  Every step is timed from send to answer; an
error frame, malformed answer or dropped connection counts as an error.  The server's RSS is
sampled throughout.  With ``--agentgym`` the AgentGym API (``benchmarks/agentgym.py``) runs the
same number of clients and steps afterwards, for the figure beside it.

Bounded: at most 1,024 sessions x 1,000 steps, a wall-clock limit (``--timeout``), only
127.0.0.1 traffic.  Prints a table and writes ``benchmarks/results/openenv.json``.

    python benchmarks/openenv.py                      # 256 sessions x 50 steps, 2 generator processes
    python benchmarks/openenv.py --agentgym           # and the AgentGym API on the same load
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import generate, sample_rss, save, start_cli_server, stop_server, table  # noqa: E402

# -- the load generator (one process) ----------------------------------------------------------------


def _choose(rng: random.Random, obs: dict) -> str:
    if obs["has_search_bar"]:
        words = obs["instruction"].split()
        return "search[" + " ".join(words[: rng.randint(3, 8)]) + "]"
    actions = [a for a in obs["admissible_actions"] if a != "click[buy now]" or rng.random() < 0.15]
    if not actions or rng.random() < 0.03:
        return "click[no such button]"
    return rng.choice(actions)


async def _session(index: int, url: str, steps: int, goals: int, ready, go: asyncio.Event, out: dict) -> None:
    from websockets.asyncio.client import connect

    rng = random.Random(index)
    try:
        async with connect(url, compression=None, max_size=2**24, open_timeout=120, ping_interval=None) as ws:
            async def ask(message: dict) -> dict:
                await ws.send(json.dumps(message))
                frame = json.loads(await ws.recv())
                if frame.get("type") != "observation":
                    raise RuntimeError(f"{message['type']}: {str(frame)[:200]}")
                return frame["data"]

            data = await ask({"type": "reset", "data": {"goal_index": rng.randrange(goals)}})
            out["episodes"] += 1
            ready()
            await go.wait()
            for _ in range(steps):
                action = _choose(rng, data["observation"])
                t0 = time.perf_counter()
                data = await ask({"type": "step", "data": {"action": action}})
                out["step_ms"].append((time.perf_counter() - t0) * 1000)
                if data["done"]:
                    t0 = time.perf_counter()
                    data = await ask({"type": "reset", "data": {"goal_index": rng.randrange(goals)}})
                    out["other_ms"].append((time.perf_counter() - t0) * 1000)
                    out["episodes"] += 1
    except Exception as exc:  # an error of the run: counted, never raised
        out["errors"].append(f"{type(exc).__name__}: {exc}"[:300])


def _generator(first: int, count: int, url: str, steps: int, goals: int, connected, start, results) -> None:
    generate(_session, first, count, url, steps, goals, connected, start, results)


# -- one run -------------------------------------------------------------------------------------------


def run_openenv(sessions: int, steps: int, procs: int, shop: str | None, timeout: float) -> dict:
    proc, port, goals = start_cli_server(["openenv", "--port", "0", "--max-envs", str(sessions),
                                          *(["--shop", shop] if shop else [])], r"serving at http://127\.0\.0\.1:(\d+)", 300)
    try:
        url = f"ws://127.0.0.1:{port}/ws"
        rss: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, rss), daemon=True)
        sampler.start()
        time.sleep(0.5)
        ready_rss = rss[-1] if rss else float("nan")
        server_cpu0 = sum(psutil.Process(proc.pid).cpu_times()[:2])
        ctx = mp.get_context("spawn")
        connected, start, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
        shares = [sessions // procs + (i < sessions % procs) for i in range(procs)]
        firsts = np.cumsum([0, *shares[:-1]])
        workers = [ctx.Process(target=_generator, args=(int(f), n, url, steps, goals, connected, start, results))
                   for f, n in zip(firsts, shares) if n]
        for w in workers:
            w.start()
        for _ in workers:
            if not connected.acquire(timeout=timeout):
                raise RuntimeError("sessions did not connect in time")
        connected_rss = rss[-1]
        server_cpu1 = sum(psutil.Process(proc.pid).cpu_times()[:2])
        t0 = time.perf_counter()
        start.set()
        outs = [results.get(timeout=timeout) for _ in workers]
        wall = time.perf_counter() - t0
        server_cpu = sum(psutil.Process(proc.pid).cpu_times()[:2]) - server_cpu1
        for w in workers:
            w.join(30)
        stop.set()
        sampler.join()
        step_ms = np.array([x for o in outs for x in o["step_ms"]])
        other_ms = np.array([x for o in outs for x in o["other_ms"]])
        errors = [e for o in outs for e in o["errors"]]
        return {
            "server": f"openenv ({procs} generator procs)", "clients": sessions, "steps_per_client": steps,
            "steps": int(len(step_ms)), "episodes": int(sum(o["episodes"] for o in outs)),
            "errors": len(errors), "first_errors": errors[:5],
            "wall_s": round(wall, 2), "steps_per_s": round(len(step_ms) / wall, 1),
            "step_p50_ms": round(float(np.percentile(step_ms, 50)), 1) if len(step_ms) else None,
            "step_p99_ms": round(float(np.percentile(step_ms, 99)), 1) if len(step_ms) else None,
            "other_p50_ms": round(float(np.percentile(other_ms, 50)), 1) if len(other_ms) else None,
            "other_p99_ms": round(float(np.percentile(other_ms, 99)), 1) if len(other_ms) else None,
            "server_cpu_s": round(server_cpu, 2), "server_cpu_us_per_step": round(1e6 * server_cpu / max(len(step_ms), 1)),
            "generator_cpu_s": round(sum(o["cpu_s"] for o in outs), 2),
            "rss_ready_mb": round(ready_rss, 0), "rss_connected_mb": round(connected_rss, 0),
            "rss_peak_mb": round(max(rss), 0), "rss_end_mb": round(rss[-1], 0), "connect_cpu_s": round(server_cpu1 - server_cpu0, 2),
        }
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=256)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--procs", type=int, default=2, help="load-generator processes (default 2)")
    parser.add_argument("--shop", help="shop folder (default: the embedded shop)")
    parser.add_argument("--agentgym", action="store_true", help="also run the AgentGym API on the same load")
    parser.add_argument("--timeout", type=float, default=600, help="wall-clock limit per run (s)")
    parser.add_argument("--out", default="openenv", help="results name (benchmarks/results/<out>.json)")
    args = parser.parse_args()
    load_start = os.getloadavg()
    if not (1 <= args.sessions <= 1024 and 1 <= args.steps <= 1000 and 1 <= args.procs <= 16):
        parser.error("at most 1,024 sessions x 1,000 steps, 1-16 generator processes")
    rows = [run_openenv(args.sessions, args.steps, args.procs, args.shop, args.timeout)]
    if args.agentgym:
        import agentgym

        rows.append(agentgym.run_one("uvicorn", args.sessions, args.steps, args.shop, args.timeout, 8))
    columns = ["server", "clients", "steps", "errors", "steps_per_s", "step_p50_ms", "step_p99_ms",
               "other_p50_ms", "other_p99_ms", "server_cpu_us_per_step", "rss_ready_mb", "rss_peak_mb", "wall_s"]
    print(table(rows, columns))
    load = os.getloadavg()
    conditions = (f"127.0.0.1; {os.cpu_count()} cores shared by the server, the load generator and other jobs "
                  f"(1-minute load average {load_start[0]:.1f} at the start, {load[0]:.1f} at the end); "
                  "openenv: one server process (uvicorn, one event loop) and asyncio WebSocket generators in separate "
                  "processes, each step = one step frame (the observation carries the admissible actions); "
                  "agentgym: asyncio clients as AgentGym's WebshopEnvClient in 2 generator processes, each step = one "
                  "keep-alive POST /step (benchmarks/agentgym.py); "
                  "shop: " + (args.shop or "embedded 1,000-product shop"))
    path = save(args.out, {"conditions": conditions, "load_average_start": load_start, "load_average_end": load,
                           "rows": rows})
    print(conditions)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
