"""Load test of the play server: concurrent simulated players against ``webshop-gym serve``.

Starts ``webshop-gym serve`` on 127.0.0.1 at a free port (a subprocess, with session logs on,
as a lab would run it), then runs ``--players`` threads that each take ``--actions`` actions
the way a person does: start a game, search, page through results, open products, pick
options, look at tabs, go back, make the odd invalid click, buy, start the next game.  Each
action is a POST (or a product link's GET) answered by a 303 redirect, plus the GET of the
page it leads to; its latency is the time of both.  Any unexpected status, missing page
content or network error counts as an error.  The server's RSS is sampled throughout.

Bounded: at most 500 players x 2,000 actions, a wall-clock limit (``--timeout``), and only
127.0.0.1 traffic.  Prints a table and writes ``benchmarks/results/server.json``.

    python benchmarks/server.py                      # 50 players x 100 actions
    python benchmarks/server.py --players 10 --actions 20 --shop ../shared/webshop-small
"""

from __future__ import annotations

import argparse
import html
import http.client
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import stop_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"

BUTTON = re.compile(r'<button type="submit" name="action" value="([^"]*)"')
PRODUCT = re.compile(r'<a class="product-link" href="([^"]*)" data-action="([^"]*)"')
OPTION = re.compile(r'<input type="radio" [^>]*data-action="([^"]*)"')
INSTRUCTION = re.compile(r"Instruction:\s*<br>(.*?)</h4>", re.S)


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Player(threading.Thread):
    """One simulated person: a keep-alive connection and a scripted but page-driven routine."""

    def __init__(self, index: int, port: int, actions: int, goals: range, deadline: float):
        super().__init__(name=f"player-{index}", daemon=True)
        self.port = port
        self.budget = actions
        self.goals = goals
        self.deadline = deadline
        self.rng = np.random.default_rng(index)
        self.conn = http.client.HTTPConnection(HOST, port, timeout=60)
        self.latencies: list[float] = []  # seconds per action
        self.requests: list[float] = []  # seconds per HTTP request
        self.errors: list[str] = []
        self.episodes = 0
        self.purchases: list[float] = []
        self.url = ""
        self.page = ""

    # -- HTTP -----------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: str | None = None) -> tuple[int, dict, str]:
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else {}
        for attempt in (0, 1):
            t0 = time.perf_counter()
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                text = response.read().decode("utf-8")
                self.requests.append(time.perf_counter() - t0)
                return response.status, dict(response.getheaders()), text
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed: reconnect once (not an error).
                self.conn.close()
                self.conn = http.client.HTTPConnection(HOST, self.port, timeout=60)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def act(self, method: str, path: str, body: str | None = None) -> bool:
        """One action: the request, its 303, and the page it leads to."""
        if self.budget <= 0 or time.monotonic() > self.deadline:
            return False
        self.budget -= 1
        t0 = time.perf_counter()
        try:
            status, headers, _ = self.request(method, path, body)
            if status != 303:
                self.errors.append(f"{method} {path}: status {status}")
                return False
            location = urlsplit(headers.get("Location", "")).path
            status, _, page = self.request("GET", location)
            if status != 200 or ("Instruction:" not in page and "score-board" not in page):
                self.errors.append(f"GET {location}: status {status}")
                return False
        except Exception as exc:  # noqa: BLE001 - every failure is a counted error
            self.errors.append(f"{method} {path}: {type(exc).__name__}: {exc}")
            return False
        self.latencies.append(time.perf_counter() - t0)
        self.url, self.page = location, page
        return True

    def post(self, action: str, query: str | None = None) -> bool:
        body = "action=" + quote(action, safe="")
        if query is not None:
            body += "&query=" + quote(query, safe="")
        return self.act("POST", self.url, body)

    # -- the routine ----------------------------------------------------------------------------

    def choice(self, items):
        return items[int(self.rng.integers(len(items)))]

    def run(self) -> None:
        try:
            while self.budget > 0 and time.monotonic() < self.deadline:
                self.episode()
        finally:
            self.conn.close()

    def episode(self) -> None:
        goal = int(self.rng.integers(self.goals.start, self.goals.stop))
        if not self.act("GET", f"/goal/{goal}"):
            return
        self.episodes += 1
        match = INSTRUCTION.search(self.page)
        words = html.unescape(match.group(1)).split(" with ")[0].split() if match else ["shoes"]
        query = " ".join(words[: int(self.rng.integers(3, 9))])
        if not self.post("search", query):
            return
        if self.rng.random() < 0.5 and (not self.post("click[next >]") or not self.post("click[< prev]")):
            return
        for visit in range(2):
            products = PRODUCT.findall(self.page)
            if not products:
                self.post("click[back to search]")
                return
            link, _ = self.choice(products)
            if not self.act("GET", html.unescape(link)):
                return
            options = OPTION.findall(self.page)
            for _ in range(min(len(options), int(self.rng.integers(0, 3)))):
                if not self.post(html.unescape(self.choice(options))):
                    return
            if self.rng.random() < 0.4:
                if not self.post(self.choice(["click[description]", "click[features]", "click[reviews]"])):
                    return
                if not self.post("click[< prev]"):
                    return
            if self.rng.random() < 0.15 and not self.post("click[no such button]"):
                return
            if visit == 0 and self.rng.random() < 0.3:
                if not self.post("click[< prev]"):  # back to the results, try another product
                    return
                continue
            break
        if self.post("click[buy now]"):
            match = re.search(r'id="score">([0-9.]+)<', self.page)
            if match:
                self.purchases.append(float(match.group(1)))
            else:
                self.errors.append("done page without a score")


class RssSampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.1):
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.every = every
        self.samples: list[int] = []
        self.stop = threading.Event()

    def rss(self) -> int:
        total = self.process.memory_info().rss
        for child in self.process.children(recursive=True):
            try:
                total += child.memory_info().rss
            except psutil.Error:
                pass
        return total

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append(self.rss())
            except psutil.Error:
                return
            self.stop.wait(self.every)


def start_server(args, port: int, log_dir: str | None) -> subprocess.Popen:
    command = [sys.executable, "-m", "webshop_gym.cli", "serve", "--host", HOST, "--port", str(port),
               "--max-sessions", str(args.max_sessions), "--max-steps", "15", "--seed", "0"]
    if args.shop:
        command += ["--shop", args.shop]
    if log_dir:
        command += ["--log-dir", log_dir]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line and proc.poll() is not None:
            raise SystemExit(f"the server exited with status {proc.returncode} before serving")
        if "play at" in line:
            break
    for _ in range(200):
        try:
            with socket.create_connection((HOST, port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("the server did not start listening in time")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) * 1000 if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=50, help="concurrent players (default 50, at most 500)")
    parser.add_argument("--actions", type=int, default=100, help="actions per player (default 100, at most 2000)")
    parser.add_argument("--shop", metavar="DIR", help="shop directory (default: the embedded shop)")
    parser.add_argument("--split", default="test", choices=["test", "eval", "train", "all"], help="goals to draw from (default test)")
    parser.add_argument("--max-sessions", type=int, default=1000, help="server --max-sessions (default 1000)")
    parser.add_argument("--no-logs", action="store_true", help="run the server without session logs")
    parser.add_argument("--timeout", type=float, default=300, help="wall-clock limit of the load phase in seconds (default 300)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "server.json"), help="JSON output file")
    args = parser.parse_args(argv)
    if not (1 <= args.players <= 500 and 1 <= args.actions <= 2000):
        parser.error("--players must be 1..500 and --actions 1..2000")

    from webshop_gym.data.goals import SPLITS

    start, stop = SPLITS.get(args.split, (0, None))
    from webshop_gym import load_shop

    num_goals = len(load_shop(args.shop, progress=False).goals)
    goals = range(start, min(stop or num_goals, num_goals)) if args.split != "all" else range(num_goals)

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="webshop-gym-bench-") as log_dir:
        t_start = time.perf_counter()
        proc = start_server(args, port, None if args.no_logs else log_dir)
        startup_s = time.perf_counter() - t_start
        sampler = RssSampler(proc.pid)
        try:
            rss_ready = sampler.rss()
            sampler.start()
            deadline = time.monotonic() + args.timeout
            players = [Player(i, port, args.actions, goals, deadline) for i in range(args.players)]
            t0 = time.perf_counter()
            for p in players:
                p.start()
            for p in players:
                p.join(max(0.0, deadline - time.monotonic()) + 30)
            wall = time.perf_counter() - t0
            rss_end = sampler.rss()
        finally:
            sampler.stop.set()
            stop_server(proc)
        logs = sorted(Path(log_dir).glob("*.jsonl"))
        log_lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in logs)

    latencies = [x for p in players for x in p.latencies]
    requests = [x for p in players for x in p.requests]
    errors = [e for p in players for e in p.errors]
    purchases = [x for p in players for x in p.purchases]
    unfinished = sum(1 for p in players if p.is_alive() or p.budget > 0)
    result = {
        "players": args.players,
        "actions_per_player": args.actions,
        "actions": len(latencies),
        "requests": len(requests),
        "errors": len(errors),
        "error_examples": errors[:5],
        "players_unfinished": unfinished,
        "episodes": sum(p.episodes for p in players),
        "purchases": len(purchases),
        "mean_purchase_reward": statistics.fmean(purchases) if purchases else None,
        "wall_s": wall,
        "actions_per_s": len(latencies) / wall if wall else None,
        "action_latency_ms": {"p50": pct(latencies, 50), "p90": pct(latencies, 90), "p99": pct(latencies, 99),
                              "max": pct(latencies, 100)},
        "request_latency_ms": {"p50": pct(requests, 50), "p99": pct(requests, 99)},
        "server_rss_mb": {"ready": rss_ready / 2**20, "peak": max(sampler.samples + [rss_ready]) / 2**20,
                          "end": rss_end / 2**20},
        "server_startup_s": startup_s,
        "session_logs": {"files": len(logs), "lines": log_lines} if not args.no_logs else None,
        "shop": args.shop or "embedded",
        "split": args.split,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "server": "webshop-gym serve (Werkzeug threaded server, one engine thread)",
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")

    a, r, m = result["action_latency_ms"], result["request_latency_ms"], result["server_rss_mb"]
    rows = [
        ("players x actions", f"{args.players} x {args.actions}"),
        ("actions done / errors", f"{result['actions']} / {result['errors']}"),
        ("episodes / purchases", f"{result['episodes']} / {result['purchases']}"),
        ("wall time", f"{wall:.1f} s ({result['actions_per_s']:.0f} actions/s)"),
        ("action latency p50 / p90 / p99", f"{a['p50']:.1f} / {a['p90']:.1f} / {a['p99']:.1f} ms (max {a['max']:.0f} ms)"),
        ("request latency p50 / p99", f"{r['p50']:.1f} / {r['p99']:.1f} ms"),
        ("server RSS ready / peak / end", f"{m['ready']:.0f} / {m['peak']:.0f} / {m['end']:.0f} MB"),
        ("session logs", f"{len(logs)} files, {log_lines} lines" if not args.no_logs else "off"),
    ]
    width = max(len(k) for k, _ in rows)
    print("webshop-gym play server under load (one action = POST/GET + 303 + page GET)")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    if errors:
        print("errors, first few:\n  " + "\n  ".join(errors[:5]))
    print(f"wrote {out}")
    return 1 if errors or unfinished else 0


if __name__ == "__main__":
    sys.exit(main())
