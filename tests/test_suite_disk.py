"""The suite says up front when the disk is too full for it (a full disk once failed CI in
scattered tests and then inside pytest itself, with no word of why)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import namedtuple

from tests.conftest import ROOT
from tests.helpers import SUITE_DISK_PEAK, disk_shortfall

Usage = namedtuple("Usage", "total used free")


def test_disk_shortfall_names_the_disk_and_the_bytes(monkeypatch, tmp_path):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**12, 0, 210_000_000))
    message = disk_shortfall([tmp_path])
    assert message == (f"only 210 MB free on the disk of {tmp_path}; the test suite writes about 1.0 GB at "
                       "its peak: expect 'No space left on device' failures")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**12, 0, SUITE_DISK_PEAK))
    assert disk_shortfall([tmp_path]) is None


def test_a_folder_not_made_yet_is_judged_by_its_parent(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(shutil, "disk_usage", lambda path: seen.append(path) or Usage(10**12, 0, 5))
    message = disk_shortfall([tmp_path / "cache" / "webshop-gym"])
    assert seen == [tmp_path] and f"on the disk of {tmp_path};" in message


PLUGIN = """
import shutil
from collections import namedtuple
FREE = {free}
shutil.disk_usage = lambda path: namedtuple("Usage", "total used free")(10**12, 0, FREE)
"""


def _session_header(tmp_path, free: int) -> str:
    (tmp_path / "fakedisk.py").write_text(PLUGIN.format(free=free))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "fakedisk", "-q", "-n", "2", "--collect-only",
                           "-p", "no:cacheprovider", "tests/test_fingerprint.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_suite_warns_once_before_it_runs_when_the_disk_is_short(tmp_path):
    out = _session_header(tmp_path, 42_000_000)
    lines = [line for line in out.splitlines() if line.startswith("WARNING: ")]
    assert len(lines) == 1, out  # the controller says it; the two xdist workers do not
    assert lines[0].startswith("WARNING: only 42 MB free on the disk of ")
    assert "expect 'No space left on device' failures" in lines[0]
    assert "WARNING" not in _session_header(tmp_path, 50 * SUITE_DISK_PEAK)
