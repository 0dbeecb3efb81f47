"""Shared helpers of the benchmarks: timing, RSS, tables, JSON."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import subprocess
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]


def stop_server(proc: subprocess.Popen) -> None:
    """Stop a server started with ``stdout=PIPE``: terminate, wait up to 30 s, else kill."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    proc.stdout.close()


def start_cli_server(args: list[str], url: str, limit: float) -> tuple[subprocess.Popen, int, int | None]:
    """Start ``python -m webshop_gym.cli ARGS`` and read its output until it names the port it bound.

    Args:
        args: the subcommand and its flags (with ``--port 0``).
        url: a regular expression whose group 1 is the port (the line the server prints once bound).
        limit: seconds to wait for that line.

    Returns:
        (the process, with ``stdout`` piped; the port; the goal count of its "N products, M ... goals" line).
    """
    import re
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
    port, goals = None, None
    deadline = time.monotonic() + limit
    while port is None:
        line = proc.stdout.readline()
        if (not line and proc.poll() is not None) or time.monotonic() > deadline:
            stop_server(proc)
            raise RuntimeError(f"webshop-gym {args[0]} did not print its URL (status {proc.returncode})")
        found = re.search(r"(\d+) products, (\d+) \w+ goals", line)
        if found:
            goals = int(found.group(2))
        found = re.search(url, line)
        if found:
            port = int(found.group(1))
    return proc, port, goals


def start_chat_server(latency: float) -> tuple[subprocess.Popen, str]:
    """Start the test chat server (tests/openai_server.py) in its own process; return it and its API root.

    It serves until its standard input closes: ``proc.stdin.close(); proc.wait()``.
    """
    import sys

    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_server.py"), "--latency", str(latency)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def sample_rss(pid: int, stop, out: list[float]) -> None:
    """Append the RSS (MB) of process ``pid`` and its children to ``out`` every 0.2 s until ``stop`` is set."""
    import psutil

    proc = psutil.Process(pid)
    while not stop.is_set():
        try:
            out.append(sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20)
        except psutil.Error:
            return
        stop.wait(0.2)


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of a process (default: this one), in MB."""
    import psutil

    return psutil.Process(pid or os.getpid()).memory_info().rss / 2**20


def machine() -> dict:
    """Where the figures were measured."""
    import psutil

    return {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(), "platform": platform.platform(), "date": time.strftime("%Y-%m-%d")}


def table(rows: list[dict], columns: list[str]) -> str:
    """A Markdown table."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:,.3g}" if abs(v) < 100 else f"{v:,.0f}"
        return str(v)

    widths = [max(len(c), *(len(fmt(r.get(c, ""))) for r in rows)) for c in columns]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)) + " |",
             "| " + " | ".join("-" * w for w in widths) + " |"]
    lines += ["| " + " | ".join(fmt(r.get(c, "")).ljust(w) for c, w in zip(columns, widths)) + " |" for r in rows]
    return "\n".join(lines)


def save(name: str, payload: dict, path: Path | None = None) -> Path:
    """Write ``benchmarks/results/<name>.json`` (or ``path``)."""
    if path is None:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **payload}, indent=1))
    return path


def generate(client, first: int, count: int, target, steps: int, goals: int, connected, start, results) -> None:
    """One load-generator process: ``count`` asyncio clients, started together once every process is connected.

    Args:
        client: ``async client(index, target, steps, goals, ready, go, out)``: connects, calls
            ``ready()``, waits for ``go``, then plays and records into ``out`` (``step_ms``,
            ``other_ms``, ``errors``, ``episodes``).
        first, count: the clients' indices.
        target: the server's port or URL, passed to ``client``.
        steps, goals: the steps per client and the goals of the shop.
        connected: released once when all ``count`` clients are connected.
        start: set by the parent when every process is connected.
        results: receives ``out`` with ``wall_s`` and this process's ``cpu_s`` while playing.
    """
    async def main():
        out = {"step_ms": [], "other_ms": [], "errors": [], "episodes": 0}
        go = asyncio.Event()
        left = [count]

        def ready():
            left[0] -= 1
            if left[0] == 0:
                connected.release()

        tasks = [asyncio.create_task(client(first + i, target, steps, goals, ready, go, out)) for i in range(count)]
        await asyncio.get_running_loop().run_in_executor(None, start.wait)
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        go.set()
        await asyncio.gather(*tasks)
        out["wall_s"] = time.perf_counter() - t0
        out["cpu_s"] = time.process_time() - cpu0
        return out

    results.put(asyncio.run(main()))
