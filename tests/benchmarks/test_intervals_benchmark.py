"""benchmarks/intervals.py, the coverage simulation, run as a user runs it (a few runs a cell: the table and the JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "intervals.py"


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, env=env)


def test_the_simulation_prints_its_table_and_writes_its_json(tmp_path):
    out = tmp_path / "intervals.json"
    proc = run("--runs", "30", "--goals", "60", "--samples", "1", "4", "--resamples", "200",
               "--scenarios", "beta 0.3/icc 0.3", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Coverage (%) of nominal 95% intervals, 30 simulated runs a cell, 200 bootstrap resamples" in proc.stdout
    assert "| beta 0.3/icc 0.3 | 60    | 4 |" in proc.stdout
    result = json.loads(out.read_text())
    assert result["runs"] == 30 and result["resamples"] == 200 and "load_average" in result and result["machine"]
    assert [(c["scenario"], c["goals"], c["K"]) for c in result["coverage"]] == [("beta 0.3/icc 0.3", 60, 1),
                                                                               ("beta 0.3/icc 0.3", 60, 4)]
    shown = result["coverage"][1]["coverage"]
    assert {"score", "sr", "mean@K", "pass@K", "score (before)", "score (episodes, before)",
            "sr (episodes, before)", "pass@k of K (refused)"} <= set(shown)
    assert all(0 <= v <= 100 for v in shown.values())
    assert {(n["null"], n["K"]) for n in result["null"]} == {("same rates", 1), ("same rates", 4), ("own rates", 1),
                                                              ("own rates", 4)}


def test_an_unknown_scenario_is_one_line():
    proc = run("--runs", "5", "--scenarios", "gamma 0.3")
    assert proc.returncode == 2 and "unknown scenario" in proc.stderr and "Traceback" not in proc.stderr
