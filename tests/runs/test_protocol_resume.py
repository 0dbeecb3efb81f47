"""`eval --protocol` / `--samples` with a served model: `--resume` after Ctrl-C and `--shard i/n` (issue 30).

An episode of a protocol's run is its place in the plan (goal, price seed, sample): a resumed run
keeps the finished ones and plays exactly the missing ones with the same seeds, and the shards of
a run merge into the whole run, figures and protocol fingerprint included.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.helpers import default_sigint  # noqa: E402
from tests.openai_server import ChatServer  # noqa: E402
from tests.runs.test_served import _episodes  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402
from webshop_gym.runs.run import load_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

#: The two plans a user resumes and splits: verl-agent's first validation (256 episodes, a price
#: seed per worker) and 3 samples of 8 goals.
PLANS = {
    "verl-agent": ["--protocol", "verl-agent", "--seed", "0"],
    "samples": ["--num-goals", "8", "--samples", "3", "--sample", "--temperature", "0.7"],
}


def _argv(url: str, real_dir: Path, plan: str, out: Path, *extra: str) -> list[str]:
    return ["eval", "--policy", "openai:scripted", "--base-url", url, "--shop", str(real_dir), *PLANS[plan],
            "--concurrency", "4", "--max-retries", "0", "--quiet", "--out", str(out), *extra]


def _identity(path: Path) -> list[tuple]:
    """Each episode of a run file: (id, goal, price seed, sample, policy seed, reward)."""
    out = []
    for e in load_run(path).episodes:
        p = e.log.record["protocol"]
        out.append((e.log.episode, e.goal_index, p["price_seed"], p["sample"], p["policy_seed"], e.reward))
    return out


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_ctrl_c_then_resume_gives_the_uninterrupted_run(plan, real_dir, tmp_path, capsys):
    out, reference = tmp_path / "run.jsonl", tmp_path / "ref.jsonl"
    # 24 episodes at 0.05 s a request end about 0.7 s after the fifth: a busy machine's SIGINT could come after
    with ChatServer(latency=0.05 if plan == "verl-agent" else 0.2) as server:
        argv = _argv(server.url, real_dir, plan, out)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", *argv], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and (not out.exists() or out.read_text().count('"type": "episode"') < 5):
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and err.strip() == "webshop-gym eval: interrupted"
        log = read_log(out)
        total = 256 if plan == "verl-agent" else 24
        finished = [e.episode for e in log.episodes]
        assert 5 <= len(finished) < total and log.summary is None
        server.requests.clear()
        assert main([*argv, "--resume", "--json", str(tmp_path / "resumed.json")]) == 0
        replayed = len(server.requests)
        assert main(_argv(server.url, real_dir, plan, reference, "--json", str(tmp_path / "ref.json"))) == 0
        whole = len(server.requests) - replayed
    # the scripted model asks the same number of requests per episode: only the missing episodes were played
    assert replayed == whole * (total - len(finished)) // total
    assert _identity(out) == _identity(reference) and len(_identity(out)) == total
    assert [i[0] for i in _identity(out)] == [f"e{k}" for k in range(total)]
    assert _episodes(out) == _episodes(reference)
    resumed = json.loads((tmp_path / "resumed.json").read_text())
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert resumed["resumed"] == {"kept": len(finished), "played": total - len(finished)}
    for key in ("score", "sr", "protocol"):
        assert resumed[key] == pytest.approx(ref[key]) if key != "protocol" else resumed[key] == ref[key]
    assert load_run(out).figures == load_run(reference).figures
    if plan == "samples":
        assert {"mean@3", "pass@3"} <= set(resumed["protocol"])
    else:  # several price seeds: the per-worker prices were kept on resume
        assert len({i[2] for i in _identity(out)}) > 1
    capsys.readouterr()


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_two_shards_merge_into_the_whole_run(plan, real_dir, tmp_path, capsys):
    with ChatServer() as server:
        for i in range(2):
            assert main(_argv(server.url, real_dir, plan, tmp_path / f"part.{i}.jsonl", "--shard", f"{i}/2")) == 0
        assert main(_argv(server.url, real_dir, plan, tmp_path / "whole.jsonl")) == 0
    parts = [load_run(tmp_path / f"part.{i}.jsonl") for i in range(2)]
    total = 256 if plan == "verl-agent" else 24
    assert [len(p.episodes) for p in parts] == [total // 2, total - total // 2]
    assert parts[0].episodes[-1].log.episode == f"e{total // 2 - 1}" and parts[1].episodes[0].log.episode == f"e{total // 2}"
    merged = tmp_path / "merged.jsonl"
    assert main(["report", str(tmp_path / "part.0.jsonl"), str(tmp_path / "part.1.jsonl"), "--merged", str(merged),
                 "--no-plots", "--bootstrap", "100", "--format", "md", "--out", str(tmp_path / "r.md")]) == 0
    whole, joined = load_run(tmp_path / "whole.jsonl"), load_run(merged)
    assert _identity(merged) == _identity(tmp_path / "whole.jsonl")
    assert joined.header["protocol"]["fingerprint"] == whole.header["protocol"]["fingerprint"]
    assert joined.figures == whole.figures
    figures = joined.figures["protocol"]
    if plan == "samples":
        assert figures["mean@3"] == whole.figures["protocol"]["mean@3"] and "pass@3" in figures
    assert joined.figures["score"] == whole.figures["score"] and joined.figures["sr"] == whole.figures["sr"]
    report = (tmp_path / "r.md").read_text()
    assert "2 shards" in report
    capsys.readouterr()


def test_a_resume_under_another_protocol_or_settings_is_one_line(real_dir, tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    with ChatServer() as server:
        assert main(_argv(server.url, real_dir, "samples", out)) == 0
        before = out.read_text()
        capsys.readouterr()
        cases = [
            (["--num-goals", "8", "--samples", "2"], "was written under another protocol (protocol ad-hoc (3 samples "
             "per goal) vs ad-hoc (2 samples per goal): the samples per goal 3 vs 2; the decoding sampling, temperature "
             "0.7, top-p 1, at most 128 new tokens vs greedy, at most 128 new tokens; same protocol and settings, or "
             "another --out)"),
            (["--protocol", "verl-agent"], "was written under another protocol (protocol ad-hoc (3 samples per goal) "
             "vs verl-agent (seed 0)"),
            (["--num-goals", "8", "--samples", "3", "--sample", "--temperature", "0.5"],  # the decoding is the protocol's
             "the decoding sampling, temperature 0.7, top-p 1, at most 128 new tokens vs sampling, temperature 0.5, "
             "top-p 1, at most 128 new tokens"),
            (["--num-goals", "8", "--sample", "--temperature", "0.7"], "was written under another protocol (protocol "
             "ad-hoc (3 samples per goal) vs ad-hoc: the samples per goal 3 vs 1"),
        ]
        for flags, message in cases:
            argv = ["eval", "--policy", "openai:scripted", "--base-url", server.url, "--shop", str(real_dir), *flags,
                    "--max-retries", "0", "--quiet", "--out", str(out), "--resume"]
            assert main(argv) == 2
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, err
        # a plain run's file is not a protocol's plan either
        plain = tmp_path / "plain.jsonl"
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--shop", str(real_dir),
                     "--num-goals", "8", "--quiet", "--out", str(plain)]) == 0
        capsys.readouterr()
        assert main(_argv(server.url, real_dir, "samples", plain, "--resume")) == 2
        assert "another protocol" in capsys.readouterr().err
    assert out.read_text() == before


def test_shards_of_different_protocols_refuse_to_merge(real_dir, tmp_path, capsys):
    with ChatServer() as server:
        assert main(_argv(server.url, real_dir, "samples", tmp_path / "a.0.jsonl", "--shard", "0/2")) == 0
        other = _argv(server.url, real_dir, "samples", tmp_path / "a.1.jsonl", "--shard", "1/2")
        other[other.index("--samples") + 1] = "2"
        assert main(other) == 0
    capsys.readouterr()
    merged = tmp_path / "m.jsonl"
    assert main(["report", str(tmp_path / "a.0.jsonl"), str(tmp_path / "a.1.jsonl"), "--merged", str(merged),
                 "--no-plots", "--format", "md", "--out", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the shards were played under different protocols" in err
    assert "the samples per goal 3 vs 2" in err and not merged.exists()
