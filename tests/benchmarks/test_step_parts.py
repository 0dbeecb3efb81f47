"""benchmarks/step_parts.py: the per-part timer of a cold WebShopEnv replay, checked against the golden outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "step_parts.py"


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the children import this checkout's package
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, env=env)


def test_one_cold_replay_times_every_part_and_matches_the_golden_outputs(real_dir, tmp_path):
    out = tmp_path / "parts.json"
    proc = run("--repeat", "1", "--shop", str(real_dir), "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "mismatches 0" in proc.stdout
    result = json.loads(out.read_text())
    (only,) = result["runs"]
    assert only["mismatches"] == 0 and only["actions"] == 2662
    assert only["counts"] == {"search": 554, "click": 1702, "buy": 406, "obs_results": 554, "obs_done": 406}
    for part in ("step", "search", "click", "buy", "obs", "obs_results", "obs_done", "info", "reset", "cpu_us"):
        assert only[part] > 0, part
    assert only["search"] > only["click"] and only["buy"] > only["click"]  # the kinds are told apart


@pytest.mark.parametrize(("args", "message"), [
    (("--repeat", "0"), "--repeat must be at least 1, not 0"),
    (("--shop", "/nonexistent"), "/nonexistent has no golden/trajectories.jsonl"),
    (("--repeat", "x"), "argument --repeat: invalid int value: 'x'"),
])
def test_bad_arguments_are_one_line_and_exit_2(args, message):
    proc = run(*args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr
