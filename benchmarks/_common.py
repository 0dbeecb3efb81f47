"""Shared helpers of the benchmarks: timing, RSS, tables, JSON."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def stop_server(proc: subprocess.Popen) -> None:
    """Stop a server started with ``stdout=PIPE``: terminate, wait up to 30 s, else kill."""
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    proc.stdout.close()


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
