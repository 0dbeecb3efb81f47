"""Load test of the AgentGym API: concurrent AgentGym-style clients against ``webshop-gym serve``.

Starts ``webshop-gym serve --port 0`` on 127.0.0.1 (a subprocess: uvicorn with the batching ASGI
front, or Flask under Werkzeug with ``--dev``), reads the bound port from its "play at" line,
then runs ``--clients`` clients in ``--procs`` load-generator processes (asyncio, raw HTTP/1.1
over one keep-alive connection per client, so that the generator spends little CPU per step).
Each client does what AgentGym's ``WebshopEnvClient`` does: ``POST /create``; ``POST /reset``
with a goal index, then ``GET /observation`` (its ``reset``); then ``--steps`` times one
``POST /step`` (its ``step``), choosing the action from the page text it got back, as an agent
reading the observation does: a search built from the instruction, a product, an option, a tab,
``< prev``, ``buy now`` now and then, the odd invalid click.  After a purchase it resets on
another goal; at the end it closes its env (``POST /close``).  Any non-200 answer, malformed
JSON or network error counts as an error.  The server's CPU time over the stepping phase gives
the CPU per step; its RSS is sampled throughout.

Bounded: at most 1,024 clients x 1,000 steps, a wall-clock limit (``--timeout``), only
127.0.0.1 traffic.  Prints a table and writes ``benchmarks/results/agentgym.json``.

    python benchmarks/agentgym.py                        # 256 clients x 50 steps, uvicorn
    python benchmarks/agentgym.py --servers uvicorn,dev  # and Werkzeug, one after the other
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import re
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import generate, sample_rss, save, start_cli_server, stop_server, table  # noqa: E402

HOST = "127.0.0.1"
SEP = " [SEP] "
ASIN = re.compile(r"B[0-9A-Z]{9}")
SERVERS = {"uvicorn": [], "dev": ["--dev"]}

# -- the load generator (one process) ----------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection to the server, reopened when the server closes it (as
    ``requests.Session`` does; Werkzeug's development server closes after every answer)."""

    def __init__(self, port: int, prefix: str):
        self.port, self.prefix = port, prefix
        self.reader = self.writer = None

    async def call(self, method: str, path: str, body: dict | None = None):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
        data = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {self.prefix}/{path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {len(data)}\r\n"
                + ("Content-Type: application/json\r\n" if body is not None else "") + "\r\n")
        self.writer.write(head.encode() + data)
        status_line = await self.reader.readline()
        length, close = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"connection" and value.strip().lower() == b"close":
                close = True
        payload = await self.reader.readexactly(length)
        if close:
            self.close()
        status = int(status_line.split()[1])
        if status != 200:
            raise RuntimeError(f"{method} /{path}: {status} {payload[:200]!r}")
        return json.loads(payload)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.reader = self.writer = None


def choose(rng: random.Random, obs: str, instruction: str) -> str:
    """An action read off the page text, as an agent would pick one."""
    parts = obs.split(SEP)
    if parts[0] == "WebShop":
        words = instruction.split()
        return "search[" + " ".join(words[: rng.randint(3, 8)]) + "]"
    if rng.random() < 0.03:
        return "click[no such button]"  # the odd invalid action
    if parts[-1] == "Buy Now":  # an item page: options sit between "< Prev" and the title
        options = parts[parts.index("< Prev") + 1: -6]
        choices = ["< prev", "description", "features", "reviews", *(o.lower() for o in options)]
        return "click[buy now]" if rng.random() < 0.15 else f"click[{rng.choice(choices)}]"
    asins = [p for p in parts if ASIN.fullmatch(p)]
    if asins:  # a results page
        return "click[next >]" if rng.random() < 0.1 else f"click[{rng.choice(asins).lower()}]"
    return "click[< prev]"  # a tab of an item page


async def _client(index: int, port: int, steps: int, goals: int, ready, go: asyncio.Event, out: dict) -> None:
    rng = random.Random(index)
    try:
        http = Connection(port, "/agentgym")
        env = await http.call("POST", "create")

        async def reset() -> str:
            await http.call("POST", "reset", {"env_idx": env, "session_id": rng.randrange(goals)})
            obs = await http.call("GET", f"observation?env_idx={env}")
            out["episodes"] += 1
            return obs

        obs = await reset()
        instruction = obs.split(SEP)[2]
        ready()
        await go.wait()
        for _ in range(steps):
            action = choose(rng, obs, instruction)
            t0 = time.perf_counter()
            answer = await http.call("POST", "step", {"env_idx": env, "action": action})
            out["step_ms"].append((time.perf_counter() - t0) * 1000)
            if not isinstance(answer.get("state"), str) or answer.get("info", 0) is not None:
                raise RuntimeError(f"malformed step answer {str(answer)[:200]}")
            obs = answer["state"]
            if answer["done"]:
                t0 = time.perf_counter()
                obs = await reset()
                instruction = obs.split(SEP)[2]
                out["other_ms"].append((time.perf_counter() - t0) * 1000)
        await http.call("POST", "close", {"env_idx": env})
        http.close()
    except Exception as exc:  # an error of the run: counted, never raised
        out["errors"].append(f"{type(exc).__name__}: {exc}"[:300])
        ready()


def _generator(first: int, count: int, port: int, steps: int, goals: int, connected, start, results) -> None:
    generate(_client, first, count, port, steps, goals, connected, start, results)


# -- one run -------------------------------------------------------------------------------------------


def run_one(server: str, clients: int, steps: int, shop: str | None, timeout: float, threads: int = 8,
            procs: int = 2) -> dict:
    args = ["serve", "--port", "0", "--agentgym-max-envs", str(max(clients, 1)), "--threads", str(threads),
            *(["--shop", shop] if shop else []), *SERVERS[server]]
    proc, port, goals = start_cli_server(args, r"play at http://127\.0\.0\.1:(\d+)/", 180)
    try:
        rss: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, rss), daemon=True)
        sampler.start()
        time.sleep(0.5)
        ready_rss = rss[-1] if rss else float("nan")
        ctx = mp.get_context("spawn")
        connected, start, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
        shares = [clients // procs + (i < clients % procs) for i in range(procs)]
        firsts = np.cumsum([0, *shares[:-1]])
        workers = [ctx.Process(target=_generator, args=(int(f), n, port, steps, goals, connected, start, results))
                   for f, n in zip(firsts, shares) if n]
        for w in workers:
            w.start()
        for _ in workers:
            if not connected.acquire(timeout=timeout):
                raise RuntimeError("clients did not connect in time")
        load_start = os.getloadavg()[0]
        server_cpu0 = sum(psutil.Process(proc.pid).cpu_times()[:2])
        t0 = time.perf_counter()
        start.set()
        outs = [results.get(timeout=timeout) for _ in workers]
        wall = time.perf_counter() - t0
        server_cpu = sum(psutil.Process(proc.pid).cpu_times()[:2]) - server_cpu0
        for w in workers:
            w.join(30)
        stop.set()
        sampler.join()
        step_ms = np.array([x for o in outs for x in o["step_ms"]])
        other_ms = np.array([x for o in outs for x in o["other_ms"]])
        errors = [e for o in outs for e in o["errors"]]
        return {
            "server": "uvicorn (batching ASGI front)" if server == "uvicorn" else "werkzeug (--dev)",
            "clients": clients, "steps_per_client": steps, "generator_procs": len(workers),
            "steps": int(len(step_ms)), "episodes": int(sum(o["episodes"] for o in outs)),
            "errors": len(errors), "first_errors": errors[:5],
            "wall_s": round(wall, 2), "steps_per_s": round(len(step_ms) / wall, 1),
            "step_p50_ms": round(float(np.percentile(step_ms, 50)), 1) if len(step_ms) else None,
            "step_p99_ms": round(float(np.percentile(step_ms, 99)), 1) if len(step_ms) else None,
            "reset_p50_ms": round(float(np.percentile(other_ms, 50)), 1) if len(other_ms) else None,
            "reset_p99_ms": round(float(np.percentile(other_ms, 99)), 1) if len(other_ms) else None,
            "server_cpu_s": round(server_cpu, 2),
            "server_cpu_us_per_step": round(1e6 * server_cpu / max(len(step_ms), 1)),
            "generator_cpu_s": round(sum(o["cpu_s"] for o in outs), 2),
            "rss_ready_mb": round(ready_rss, 0), "rss_peak_mb": round(max(rss), 0), "rss_end_mb": round(rss[-1], 0),
            "load_average_1min_start": round(load_start, 2), "load_average_1min_end": round(os.getloadavg()[0], 2),
        }
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=256)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--procs", type=int, default=2, help="load-generator processes (default 2)")
    parser.add_argument("--servers", default="uvicorn", help="comma-separated: uvicorn (serve's default), dev")
    parser.add_argument("--shop", help="shop folder (default: the embedded shop)")
    parser.add_argument("--threads", type=int, default=8, help="serve --threads")
    parser.add_argument("--timeout", type=float, default=600, help="wall-clock limit per server (s)")
    parser.add_argument("--out", default="agentgym", help="results name (benchmarks/results/<out>.json)")
    args = parser.parse_args()
    if not (1 <= args.clients <= 1024 and 1 <= args.steps <= 1000 and 1 <= args.procs <= 16):
        parser.error("at most 1,024 clients x 1,000 steps, 1-16 generator processes")
    servers = [s.strip() for s in args.servers.split(",")]
    unknown = [s for s in servers if s not in SERVERS]
    if unknown:
        parser.error(f"--servers: unknown {', '.join(unknown)} (expected uvicorn, dev)")
    rows = [run_one(s, args.clients, args.steps, args.shop, args.timeout, args.threads, args.procs) for s in servers]
    columns = ["server", "clients", "steps", "errors", "steps_per_s", "step_p50_ms", "step_p99_ms",
               "reset_p50_ms", "reset_p99_ms", "server_cpu_us_per_step", "rss_ready_mb", "rss_peak_mb",
               "load_average_1min_start", "wall_s"]
    print(table(rows, columns))
    conditions = (f"127.0.0.1; {os.cpu_count()} cores shared by the server, the load generators and any other work "
                  "(each row's load_average_1min_*); one server process; clients as AgentGym's WebshopEnvClient "
                  "(create, reset = POST /reset + GET /observation, each step = one POST /step, timed as step_*; "
                  "resets after a purchase timed as reset_*), asyncio on keep-alive connections in "
                  f"{args.procs} generator processes; shop: " + (args.shop or "embedded 1,000-product shop"))
    path = save(args.out, {"conditions": conditions, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
