"""Load test of the AgentGym API: concurrent AgentGym-style clients against ``webshop-gym serve``.

Starts ``webshop-gym serve --port 0`` on 127.0.0.1 (a subprocess; waitress, or Werkzeug with
``--dev``), reads the bound port from its "play at" line, then runs ``--clients`` threads.  Each
does what AgentGym's ``WebshopEnvClient`` does: ``POST /create``, ``POST /reset`` with a goal
index and ``GET /observation``, then ``--steps`` times ``POST /step`` with an action; to choose
valid actions like an agent that reads the page, it also asks ``GET /available_actions`` before
each step (counted apart).  After a purchase it resets on another goal; at the end it closes
its env.  Any non-200 answer, malformed JSON or network error counts as an error.  The
server's RSS is sampled throughout.

Bounded: at most 1,024 clients x 1,000 steps, a wall-clock limit (``--timeout``), only
127.0.0.1 traffic.  Prints a table and writes ``benchmarks/results/agentgym.json``.

    python benchmarks/agentgym.py                          # 256 clients x 50 steps, waitress
    python benchmarks/agentgym.py --servers waitress,dev   # both servers, one after the other
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from pathlib import Path

import numpy as np
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import sample_rss, save, start_cli_server, stop_server, table  # noqa: E402

HOST = "127.0.0.1"


class Client(threading.Thread):
    """One AgentGym-style agent on its own keep-alive connection."""

    def __init__(self, index: int, base: str, steps: int, goals: int, start: threading.Event, deadline: float):
        super().__init__(name=f"client-{index}", daemon=True)
        self.base, self.steps, self.goals = base, steps, goals
        self.start_event, self.deadline = start, deadline
        self.rng = random.Random(index)
        self.step_ms: list[float] = []
        self.other_ms: list[float] = []
        self.errors: list[str] = []
        self.done_steps = 0
        self.episodes = 0

    def _call(self, http: requests.Session, method: str, path: str, record: list[float], **kwargs):
        t0 = time.perf_counter()
        response = http.request(method, f"{self.base}/{path}", timeout=120, **kwargs)
        record.append((time.perf_counter() - t0) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"{method} /{path}: {response.status_code} {response.text[:200]}")
        return response.json()

    def run(self) -> None:
        http = requests.Session()
        self.start_event.wait()
        try:
            env = self._call(http, "POST", "create", self.other_ms)
            self._reset(http, env)
            while self.done_steps < self.steps and time.monotonic() < self.deadline:
                actions = self._call(http, "GET", f"available_actions?env_idx={env}", self.other_ms)
                action = self._choose(actions)
                out = self._call(http, "POST", "step", self.step_ms, json={"env_idx": env, "action": action})
                if not isinstance(out.get("state"), str) or out.get("info", 0) is not None:
                    raise RuntimeError(f"malformed step answer {str(out)[:200]}")
                self.done_steps += 1
                if out["done"]:
                    self._reset(http, env)
            self._call(http, "POST", "close", self.other_ms, json={"env_idx": env})
        except Exception as exc:  # an error of the run: counted, never raised
            self.errors.append(f"{type(exc).__name__}: {exc}")

    def _reset(self, http: requests.Session, env: int) -> None:
        goal = self.rng.randrange(self.goals)
        out = self._call(http, "POST", "reset", self.other_ms, json={"env_idx": env, "session_id": goal})
        obs = self._call(http, "GET", f"observation?env_idx={env}", self.other_ms)
        if out[1] is not None or not obs.startswith("WebShop [SEP] Instruction:"):
            raise RuntimeError("malformed reset answer")
        self.instruction = obs.split(" [SEP] ")[2]
        self.episodes += 1

    def _choose(self, actions: dict) -> str:
        if actions["has_search_bar"]:
            words = self.instruction.split()
            return "search[" + " ".join(words[: self.rng.randint(3, 8)]) + "]"
        clickables = [c for c in actions["clickables"] if c != "buy now" or self.rng.random() < 0.15]
        if not clickables or self.rng.random() < 0.03:
            return "click[no such button]"  # the odd invalid action
        return f"click[{self.rng.choice(clickables)}]"


def run_one(server: str, clients: int, steps: int, shop: str | None, timeout: float, threads: int) -> dict:
    args = ["serve", "--port", "0", "--agentgym-max-envs", str(max(clients, 1)), "--threads", str(threads),
            *(["--shop", shop] if shop else []), *(["--dev"] if server == "dev" else [])]
    proc, port, goals = start_cli_server(args, r"play at http://127\.0\.0\.1:(\d+)/", 180)
    try:
        base = f"http://{HOST}:{port}/agentgym"
        rss: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(proc.pid, stop, rss), daemon=True)
        sampler.start()
        time.sleep(0.5)
        ready = rss[-1] if rss else float("nan")
        start = threading.Event()
        deadline = time.monotonic() + timeout
        pool = [Client(i, base, steps, goals, start, deadline) for i in range(clients)]
        for c in pool:
            c.start()
        t0 = time.perf_counter()
        start.set()
        for c in pool:
            c.join(max(1.0, deadline - time.monotonic() + 5))
        wall = time.perf_counter() - t0
        stop.set()
        sampler.join()
        step_ms = np.array([x for c in pool for x in c.step_ms])
        other_ms = np.array([x for c in pool for x in c.other_ms])
        errors = [e for c in pool for e in c.errors]
        unfinished = sum(c.is_alive() for c in pool)
        return {
            "server": "waitress" if server == "waitress" else "werkzeug (--dev)",
            "clients": clients, "steps_per_client": steps,
            "steps": int(sum(c.done_steps for c in pool)), "episodes": int(sum(c.episodes for c in pool)),
            "errors": len(errors) + unfinished, "first_errors": errors[:5],
            "wall_s": round(wall, 2), "steps_per_s": round(len(step_ms) / wall, 1),
            "step_p50_ms": round(float(np.percentile(step_ms, 50)), 1) if len(step_ms) else None,
            "step_p99_ms": round(float(np.percentile(step_ms, 99)), 1) if len(step_ms) else None,
            "other_p50_ms": round(float(np.percentile(other_ms, 50)), 1) if len(other_ms) else None,
            "other_p99_ms": round(float(np.percentile(other_ms, 99)), 1) if len(other_ms) else None,
            "rss_ready_mb": round(ready, 0), "rss_peak_mb": round(max(rss), 0), "rss_end_mb": round(rss[-1], 0),
        }
    finally:
        stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=256)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--servers", default="waitress", help="comma-separated: waitress, dev")
    parser.add_argument("--shop", help="shop folder (default: the embedded shop)")
    parser.add_argument("--threads", type=int, default=8, help="serve --threads")
    parser.add_argument("--timeout", type=float, default=600, help="wall-clock limit per server (s)")
    parser.add_argument("--out", default="agentgym", help="results name (benchmarks/results/<out>.json)")
    args = parser.parse_args()
    if not (1 <= args.clients <= 1024 and 1 <= args.steps <= 1000):
        parser.error("at most 1,024 clients x 1,000 steps")
    rows = [run_one(s.strip(), args.clients, args.steps, args.shop, args.timeout, args.threads)
            for s in args.servers.split(",")]
    columns = ["server", "clients", "steps", "errors", "steps_per_s", "step_p50_ms", "step_p99_ms",
               "other_p50_ms", "other_p99_ms", "rss_ready_mb", "rss_peak_mb", "rss_end_mb", "wall_s"]
    print(table(rows, columns))
    conditions = ("127.0.0.1; server and client threads share the machine's cores; each step = POST /step "
                  "(timed as step_*), plus GET /available_actions before it and the create/reset/observation/"
                  "close calls (timed as other_*); shop: " + (args.shop or "embedded 1,000-product shop"))
    path = save(args.out, {"conditions": conditions, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
