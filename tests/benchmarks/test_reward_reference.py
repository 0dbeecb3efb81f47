"""benchmarks/reward.py: "x the reference implementation" only from a side-by-side run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "reward.py"


def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=os.environ.copy())


@pytest.mark.slow
def test_without_reference_no_reference_ratio(tmp_path):
    out = tmp_path / "reward.json"
    proc = run("--shop", "default", "--batches", "1", "--python-n", "20", "--spacy-n", "5", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    scorers = [r["scorer"] for r in result["rows"]]
    assert scorers == ["python, spaCy per call (the reference's way)", "python (nouns cached)", "kernel"]
    assert all("x_reference_impl" not in r for r in result["rows"])
    assert "reference" not in result and "x_reference_impl" not in proc.stdout
    kernel = result["rows"][2]
    # computed from the unrounded rates: equal to the rounded ones' ratio within rounding
    assert kernel["x_spacy_per_call"] == pytest.approx(kernel["tuples_per_s"] / result["rows"][0]["tuples_per_s"],
                                                       rel=0.01)


def test_bad_reference_is_one_line_exit_2(tmp_path):
    out = tmp_path / "reward.json"
    proc = run("--reference", str(tmp_path / "no-such-checkout"), "--json", str(out), timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reward.py: error: "), proc.stderr
    # without ../shared the real shop is missing first; with it, the checkout is
    assert "no such directory" in lines[0] or "needs the real shop" in lines[0]
    assert not out.exists()
