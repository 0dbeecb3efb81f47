"""Issue 20, G2, G5 and G11: bounded flags, one-line errors, clean interruption, one output rule, naming."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import default_sigint
from webshop_gym.cli.app import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _options(parser: argparse.ArgumentParser, path=()):
    """Every option of every subcommand that takes a value: (command words, action)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from _options(sub, (*path, name))
        elif action.option_strings and action.nargs != 0:
            yield path, action


def _numeric(action) -> bool:
    if action.type is None or action.choices:
        return False
    try:
        return isinstance(action.type("1"), (int, float))
    except (argparse.ArgumentTypeError, ValueError):
        return False


NUMERIC = [(words, action) for words, action in _options(build_parser()) if _numeric(action)]


def test_every_command_has_numeric_flags_to_check():
    names = {(" ".join(w), a.option_strings[-1]) for w, a in NUMERIC}
    for expected in [("serve", "--agentgym-max-envs"), ("serve", "--max-sessions"), ("serve", "--threads"),
                     ("eval", "--num-envs"), ("data synth", "--products"), ("sft-data", "--num-goals")]:
        assert expected in names


@pytest.mark.parametrize("words,action", NUMERIC, ids=lambda x: x if isinstance(x, str) else
                         (" ".join(x) if isinstance(x, tuple) else x.option_strings[-1]))
def test_every_numeric_flag_has_an_upper_bound(words, action):
    with pytest.raises(argparse.ArgumentTypeError):
        action.type("9" * 30)
    if "seed" not in action.dest:  # seeds take any 63-bit integer
        with pytest.raises(argparse.ArgumentTypeError):
            action.type("99999999999")
    if "_at_most_" in getattr(action.type, "__name__", ""):  # the bound is documented in --help
        assert "at most" in action.help


def _one_line_error(argv: list[str], capsys, prefix: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # no usage block, no traceback
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


@pytest.mark.parametrize("argv,message", [
    (["serve", "--agentgym-max-envs", "99999999999"], "argument --agentgym-max-envs: must be at most 100,000"),
    (["serve", "--max-sessions", "99999999999"], "argument --max-sessions: must be at most 100,000"),
    (["serve", "--threads", "100000"], "argument --threads: must be at most 256"),
    (["serve", "--host", "256.1.1.1"], "argument --host: '256.1.1.1' is neither an IP address nor a host name"),
    (["serve", "--host", "nope.invalid"], "argument --host: cannot resolve host 'nope.invalid'"),
    (["serve", "--session-ttl", "1e300"], "argument --session-ttl: must be a finite number >= 0"),
    (["eval", "--num-envs", "1000000"], "argument --num-envs: must be at most 65,536"),
    (["eval", "--num-workers", "100000"], "argument --num-workers: must be at most 256"),
    (["eval", "--max-steps", "99999999999"], "argument --max-steps: must be at most 1,000"),
    (["data", "synth", "--products", "99999999999", "--out", "x"], "argument --products: must be at most 10,000,000"),
    (["demo", "--max-steps", "0"], "argument --max-steps: must be a positive integer"),
])
def test_out_of_range_flags_are_one_line_errors(argv, message, capsys, monkeypatch):
    import webshop_gym.server.cli as server_cli

    import webshop_gym.cli.app as cli
    import webshop_gym.cli.eval as evaluation

    def ran(args):
        raise AssertionError("the command ran: the parser let the value through")

    for module, name in ((server_cli, "run"), (evaluation, "run"), (cli, "_data_synth"), (cli, "_demo")):
        monkeypatch.setattr(module, name, ran)
    command = " ".join(w for w in argv[:2] if not w.startswith("-")) if argv[0] == "data" else argv[0]
    line = _one_line_error(argv, capsys, f"webshop-gym {command}: error: {message}")
    assert line.endswith(f"(see webshop-gym {command} --help)")


def test_serve_host_that_cannot_be_bound_is_one_line(capsys, monkeypatch):
    """An address that parses but cannot be bound (not this machine's) fails at bind time, in one line."""
    pytest.importorskip("uvicorn")
    status = main(["serve", "--host", "192.0.2.1", "--port", "0"])  # TEST-NET-1: never a local address
    err = capsys.readouterr().err
    line = err.strip().splitlines()
    assert status == 2 and len(line) == 1, err
    assert line[0].startswith("webshop-gym serve: error: cannot listen on 192.0.2.1:0: ")


def test_hf_policy_folder_says_what_is_missing(tmp_path, capsys):
    empty = tmp_path / "empty-model"
    empty.mkdir()
    line = _one_line_error(["eval", "--policy", f"hf:{empty}"], capsys, "webshop-gym eval: error: argument --policy: ")
    assert "lacks config.json, a tokenizer (tokenizer.json or tokenizer_config.json), weights " in line
    (empty / "config.json").write_text("{}")
    (empty / "tokenizer.json").write_text("{}")
    line = _one_line_error(["eval", "--policy", f"hf:{empty}"], capsys, "webshop-gym eval: error: argument --policy: ")
    assert "lacks weights (*.safetensors or pytorch_model*.bin)" in line and "config.json" not in line.split("lacks")[1]


def test_synth_checks_the_disk_before_writing(tmp_path, capsys, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 10**6, 10**6))
    out = tmp_path / "shop"
    assert main(["data", "synth", "--products", "100000", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webshop-gym data synth: error: --products 100,000 needs about 0.2 GB in ")
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("signum,status,word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted"),
                                               (signal.SIGHUP, 129, "terminated")], ids=["TERM", "INT", "HUP"])
def test_a_signal_during_synth_removes_partial_files(tmp_path, signum, status, word):
    out = tmp_path / "shop"
    proc = subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", "data", "synth", "--products", "400000",
                             "--out", str(out), "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            partial = list(out.glob("*.tmp")) if out.is_dir() else []
            if partial and partial[0].stat().st_size > 100_000:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "synth ended before it could be interrupted"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = err.decode()
    assert proc.returncode == status, err
    assert err.strip().splitlines() == [f"webshop-gym data synth: {word}"]
    assert sorted(p.name for p in out.iterdir()) == []  # neither *.tmp nor half a shop


def test_out_creates_missing_folders_below_the_working_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--policy", "random", "--num-envs", "2", "-n", "2", "--quiet", "--out", "runs/a/r.jsonl",
                 "--json", "results/r.json"]) == 0
    assert (tmp_path / "runs" / "a" / "r.jsonl").is_file() and (tmp_path / "results" / "r.json").is_file()
    capsys.readouterr()
    elsewhere = tmp_path.parent / f"not-below-cwd-{os.getpid()}" / "r.jsonl"
    _one_line_error(["eval", "--out", str(elsewhere)], capsys, "webshop-gym eval: error: argument --out: folder ")
    assert not elsewhere.parent.exists()
    (tmp_path / "a-file").write_text("x")
    line = _one_line_error(["sft-data", "--out", "a-file/sub/d.jsonl"], capsys, "webshop-gym sft-data: error: ")
    assert "cannot create folder 'a-file/sub'" in line


def test_report_without_out_prints_markdown_not_html(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "--policy", "rule", "--num-envs", "2", "-n", "2", "--quiet", "--out", "r.jsonl"]) == 0
    capsys.readouterr()
    assert main(["report", "r.jsonl", "--bootstrap", "100"]) == 0
    out = capsys.readouterr().out
    assert out.lstrip().startswith("#") and "| " in out
    assert "<html" not in out.lower() and "data:image" not in out


def _stderr_of_eval(extra_env: dict) -> str:
    env = {k: v for k, v in os.environ.items() if k != "WEBSHOP_GYM_PROGRESS"}
    env.update(PYTHONPATH=str(ROOT), **extra_env)
    done = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "eval", "--policy", "random", "--num-envs", "2",
                           "-n", "4"], env=env, capture_output=True, timeout=300)  # bytes: no newline translation
    assert done.returncode == 0, done.stderr
    return done.stderr.decode()


@pytest.mark.slow
def test_progress_bars_leave_no_carriage_returns_in_logs():
    assert "\r" not in _stderr_of_eval({})  # stderr is a pipe here, as in CI or a log file
    assert "\r" in _stderr_of_eval({"WEBSHOP_GYM_PROGRESS": "1"})  # bars on request


def test_version_and_names(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0 and capsys.readouterr().out.strip() == f"webshop-gym {version('webshop-gym')}"
    parser = build_parser()
    assert parser.parse_args(["demos", "--out", "d.jsonl", "-n", "3"]).num_goals == 3  # the old name keeps working
    assert parser.parse_args(["sft-data", "--out", "d.jsonl", "--num-goals", "3"]).num_goals == 3
    assert parser.parse_args(["eval", "-n", "3"]).num_goals == 3  # -n means the same everywhere
    for words, action in _options(parser):
        if not action.choices:
            metavar = action.metavar or action.dest.upper()
            assert re.fullmatch(r"[A-Z]+", metavar), (words, action.option_strings, metavar)
    help_text = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "--help"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=default_sigint).stdout
    assert "sft-data (demos)" in help_text and "--version" in help_text
