"""SIGTERM and SIGINT stop a served eval within seconds, every time (issue 51): no traceback, every finished
episode kept, the run file marked stopped and resumable; 20 signals at random points of a resumed run."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.helpers import default_sigint  # noqa: E402
from tests.openai_server import ChatServer  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# The child runs `main` once to load the shop (no signal), then once per line the parent sends, each time
# resuming the same run file. Between two commands it holds the signals blocked and drops any that came too
# late (after its command had returned), so that only a command in progress ever sees one.
CHILD = r"""
import signal, sys, time
from webshop_gym.cli.app import main

argv = sys.argv[1:]
signals = {signal.SIGINT, signal.SIGTERM}
main([a for a in argv if a != "--resume"][:-2] + ["--num-goals", "1", "--out", argv[-1] + ".warm"])
signal.pthread_sigmask(signal.SIG_BLOCK, signals)
print("@@ ready", flush=True)
for line in sys.stdin:
    while signal.sigtimedwait(signals, 0) is not None:
        pass
    print("@@ start", flush=True)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
    status = main(argv)
    signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    print(f"@@ end {status} {time.monotonic()}", flush=True)
"""


def _episode_lines(path: Path) -> list[dict]:
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["type"] in ("episode", "step"):
            for key in ("latency_s", "retries", "requests"):
                record.pop(key, None)
            out.append(record)
    return out


def test_signals_at_random_points_stop_the_run_at_once_and_it_resumes_to_the_uninterrupted_file(tmp_path):
    out, reference = tmp_path / "run.jsonl", tmp_path / "reference.jsonl"
    rng = np.random.default_rng(51)
    # a plan long enough (about 20 s of answers) that no command can finish it before its signal (0-0.6 s in)
    with ChatServer(latency=0.1) as server:
        argv = ["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "160",
                "--concurrency", "4", "--quiet", "--resume", "--out", str(out)]
        child = subprocess.Popen([sys.executable, "-c", CHILD, *argv], cwd=ROOT, text=True, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=default_sigint,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x.split()[1:]) for x in child.stdout if x.startswith("@@ ")],
                         daemon=True).start()  # the child's own lines; not the tables its commands print
        try:
            assert lines.get(timeout=120) == ["ready"]
            outcomes = []
            for k in range(20):
                sent = signal.SIGTERM if k % 2 == 0 else signal.SIGINT
                child.stdin.write("go\n")
                child.stdin.flush()
                assert lines.get(timeout=30) == ["start"]
                delay = float(rng.uniform(0.0, 0.6))
                try:
                    end = lines.get(timeout=delay)  # finished before the signal: nothing left to play
                    outcomes.append(("finished", int(end[1])))
                    continue
                except queue.Empty:
                    pass
                child.send_signal(sent)
                signalled = time.monotonic()
                end = lines.get(timeout=30)
                assert end[0] == "end" and float(end[2]) - signalled < 3.0, (k, end)
                outcomes.append((sent.name, int(end[1])))
                if out.exists():  # a signal before the run file was opened leaves it as it was
                    last = json.loads(out.read_text().splitlines()[-1])
                    if last["type"] != "summary":
                        assert last["type"] == "stopped" and last["signal"] in ("SIGTERM", "SIGINT"), (k, last)
            child.stdin.close()
            assert child.wait(timeout=60) == 0
            err = child.stderr.read()
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()
            child.stderr.close()
        assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]
        stopped = [(name, status) for name, status in outcomes if name != "finished"]
        assert len(stopped) >= 10  # most signals came while a command ran
        assert all(status == {"SIGTERM": 143, "SIGINT": 130}[name] for name, status in stopped), outcomes
        assert err.count("webshop-gym eval: terminated") + err.count("webshop-gym eval: interrupted") == len(stopped)
        assert main(argv) == 0  # the rest of the run, if any
        assert main([a for a in argv if a not in ("--resume", str(out))] + [str(reference)]) == 0
    assert _episode_lines(out) == _episode_lines(reference)
    log = read_log(out)
    assert [e.goal_index for e in log.episodes] == list(range(160)) and log.summary is not None
    assert '"type": "stopped"' not in out.read_text()  # the finished file reads like an uninterrupted run's
