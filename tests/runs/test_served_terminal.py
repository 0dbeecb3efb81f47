"""What `eval --policy openai:MODEL` shows and when it stops (issue 44): progress as one updating line on a
terminal and a few lines in a log; a protocol's episodes all in flight at --concurrency, with the true figure
printed (issue 42, item 6); `--prompt tools` against a server that ignores the tools stops in one line."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer, Status, ToolCalls  # noqa: E402
from webshop_gym.agents.openai import TOOLS_PROBE  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _served(server, *extra: str) -> list[str]:
    return ["eval", "--policy", "openai:scripted", "--base-url", server.url, "--max-retries", "0", *extra]


def test_progress_in_a_log_is_a_few_summary_lines(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WEBSHOP_GYM_PROGRESS", raising=False)
    with ChatServer() as server:
        assert main(_served(server, "--num-goals", "24", "--concurrency", "4", "--out", str(tmp_path / "run.jsonl"))) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    # errored episodes and retries first: an 80-column terminal cuts the end of the line (issue 56)
    assert [re.match(r"eval: (\d+)/24 episodes \((\d+)%\) in [\d.]+ s, errored 0, retries 0, SR [\d.]+%, in flight \d+ "
                     r"\(max [1-4], average [0-4]\), [\d,]+ tok/s$", line).groups() for line in lines] == [
        ("6", "25"), ("12", "50"), ("18", "75"), ("24", "100")]
    assert ", in flight 0 (max 4, " in lines[-1]  # every episode done: nothing is in flight; at most --concurrency
    with ChatServer() as server:  # --quiet: nothing
        assert main(_served(server, "--num-goals", "4", "--quiet")) == 0
    assert capsys.readouterr().err == ""


def test_progress_on_a_terminal_is_one_updating_line(tmp_path):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # a terminal 160 columns wide
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}
    env.pop("WEBSHOP_GYM_PROGRESS", None)
    with ChatServer(latency=0.02) as server:
        proc = subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", *_served(server, "--num-goals", "24",
                                 "--concurrency", "4", "--out", str(tmp_path / "run.jsonl"))],
                                stdout=subprocess.DEVNULL, stderr=slave, env=env, cwd=tmp_path)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0
    os.close(master)
    screen = b"".join(chunks).decode()
    assert screen.count("\r") > 2 and "24/24" in screen  # redrawn in place
    assert screen.rstrip("\r\n").count("\n") == 0  # on one line


def test_a_protocol_plays_every_episode_at_the_requested_concurrency(real_dir, tmp_path, capsys, monkeypatch):
    # verl-agent plays 128 price seeds of 2 episodes: all of them in flight together, not 2 at a time,
    # with one progress line (it drew one bar per price seed: 128 lines)
    monkeypatch.setenv("WEBSHOP_GYM_PROGRESS", "1")
    protocol = ["--shop", str(real_dir), "--protocol", "verl-agent"]
    with ChatServer(latency=0.05) as server:
        assert main(_served(server, *protocol, "--concurrency", "64", "--out", str(tmp_path / "wide.jsonl"),
                            "--json", str(tmp_path / "wide.json"))) == 0
        most = server.max_in_flight
    captured = capsys.readouterr()
    assert captured.err.count("\n") <= 1 and "256/256" in captured.err
    assert most == 64
    wide = json.loads((tmp_path / "wide.json").read_text())
    assert wide["requests_max_in_flight"] == 64 and wide["concurrency"] == 64
    found = re.search(r"^wall time +[\d.]+ s \(\d+ steps/s, max 64, average (\d+) in flight\)$", captured.out, re.M)
    assert found and 1 <= int(found[1]) <= 64 and wide["requests_mean_in_flight"] == pytest.approx(int(found[1]), abs=0.5)
    monkeypatch.delenv("WEBSHOP_GYM_PROGRESS")
    with ChatServer() as server:
        assert main(_served(server, *protocol, "--concurrency", "3", "--quiet", "--out", str(tmp_path / "narrow.jsonl"),
                            "--json", str(tmp_path / "narrow.json"))) == 0
    narrow = json.loads((tmp_path / "narrow.json").read_text())
    assert narrow["requests_max_in_flight"] == 3
    for key in ("score", "sr", "counts", "tokens", "requests", "protocol"):
        assert wide[key] == narrow[key], key
    episodes = [[(e.episode, e.goal_index, e.reward, [s["action"] for s in e.steps]) for e in read_log(path).episodes]
                for path in (tmp_path / "wide.jsonl", tmp_path / "narrow.jsonl")]
    assert episodes[0] == episodes[1] and len(episodes[0]) == 256
    assert re.search(r"max 3, average \d in flight\)$", capsys.readouterr().out, re.M)


def test_fewer_episodes_than_the_concurrency_print_the_true_figure(capsys):
    with ChatServer() as server:
        assert main(_served(server, "--num-goals", "5", "--concurrency", "64", "--quiet", "--json", "-")) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["requests_max_in_flight"] == 5
    assert re.search(r"^wall time .*, max 5, average [0-5] in flight \(--concurrency 64\)\)$", captured.err, re.M)


VLLM_REFUSAL = {"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                "--tool-call-parser to be set", "type": "BadRequestError", "param": None, "code": 400}


@pytest.mark.parametrize("server_answer, said", [
    (lambda messages: Status(400, VLLM_REFUSAL),
     'refused the tools (status 400: "auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
     "to be set)"),
    (lambda messages: '<tool_call>\n{"name": "search", "arguments": {"query": "shoes"}}\n</tool_call>',
     f"ignores the tools: none of the first {TOOLS_PROBE} answers called one (the last: '<tool_call> "
     '{"name": "search", "arguments": {"query": "shoes"}} </tool_call>\')'),
], ids=["vllm-refuses", "calls-as-text"])
def test_tools_against_a_server_that_ignores_them_stop_in_one_line(server_answer, said, tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    with ChatServer(answer=server_answer) as server:
        status = main(_served(server, "--prompt", "tools", "--num-goals", "20", "--concurrency", "4", "--quiet",
                              "--out", str(out)))
        asked = len(server.requests)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err == (f"webshop-gym eval: error: --prompt tools: the server at {server.url} {said}; start vLLM with "
                   "--enable-auto-tool-choice --tool-call-parser PARSER, or SGLang with --tool-call-parser PARSER "
                   "(docs/agents.md, 'The tools format')\n")
    assert asked <= TOOLS_PROBE + 4  # stopped at once, not after 20 episodes
    assert read_log(out).summary is None  # the run can be resumed once the server calls tools


def test_tools_that_are_called_late_or_sometimes_do_not_stop_the_run(tmp_path, capsys):
    def answer(messages):  # the first answer of every episode is text, the next ones call tools
        if sum(m["role"] == "assistant" for m in messages) == 0:
            return "Let me think."
        return ToolCalls([("search", {"query": "shoes"})])

    with ChatServer(answer=answer) as server:
        assert main(_served(server, "--prompt", "tools", "--num-goals", "12", "--concurrency", "12", "--max-steps",
                            "3", "--quiet", "--out", str(tmp_path / "run.jsonl"))) == 0
    assert len(read_log(tmp_path / "run.jsonl").episodes) == 12
    capsys.readouterr()
