"""The command line's error paths: one line, exit status 2, never a traceback (issue 13)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import default_sigint
from webshop_gym.cli.app import main

# Every flag of every subcommand that takes a checked value, with the kind of value it needs.
# (serve's flags are tested with the server; replay's log checks with the recorder.)
FLAGS = {
    ("demo",): {"--goal": "count0", "--seed": "seed", "--max-steps": "count", "--price-seed": "seed"},
    ("data", "synth", "--products", "5", "--out", "OUT"): {"--seed": "seed"},
    ("data", "compile"): {"--num-products": "count"},
    ("data", "index"): {"--num-products": "count"},
    ("data", "info"): {"--price-seed": "seed"},
    ("data", "goals", "--out", "OUT"): {"--price-seed": "seed"},
    ("eval",): {"--num-envs": "count", "--num-goals": "count", "--seed": "seed", "--max-steps": "count",
                "--num-workers": "count0", "--max-new-tokens": "count", "--top-p": "prob", "--top-k": "count0",
                "--temperature": "positive", "--batch-size": "count", "--max-prompt-tokens": "count"},
    ("demos", "--out", "OUT"): {"-n": "count", "--num-envs": "count", "--max-steps": "count", "--seed": "seed",
                                "--eval-fraction": "fraction", "--min-reward": "prob", "--history": "history"},
}

def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_text = st.text(min_size=0, max_size=12).filter(lambda t: not _is_number(t))  # "+0", " 1_0 " are numbers
BAD = {
    "count": st.one_of(st.integers(max_value=0).map(str), st.floats(allow_nan=True).map(repr), _text),
    "count0": st.one_of(st.integers(max_value=-1).map(str), st.floats(allow_nan=True).map(repr), _text),
    "seed": st.one_of(st.integers(max_value=-1).map(str), st.integers(min_value=2**63).map(str), _text,
                      st.floats().map(repr)),
    "prob": st.one_of(st.floats(min_value=1.0001, allow_infinity=True).map(repr), st.floats(max_value=-0.0001).map(repr),
                      st.just("nan"), _text),
    "fraction": st.one_of(st.floats(min_value=1.0).map(repr), st.floats(max_value=-0.0001).map(repr), st.just("inf"), _text),
    "positive": st.one_of(st.floats(max_value=0.0).map(repr), st.just("nan"), _text),
    "history": st.one_of(st.integers(max_value=-2).map(str), st.floats().map(repr), _text),
}
CASES = [(words, flag, kind) for words, flags in FLAGS.items() for flag, kind in flags.items()]


def _assert_one_line_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2, argv
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("webshop-gym ") and ": error: " in last, err


@pytest.mark.parametrize(("words", "flag", "kind"), CASES, ids=[f"{' '.join(w[:2])} {f}" for w, f, _ in CASES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_bad_values_are_rejected_by_the_parser(words, flag, kind, data, capsys, tmp_path):
    value = data.draw(BAD[kind])
    argv = [str(tmp_path / "out") if w == "OUT" else w for w in words] + [f"{flag}={value}"]
    _assert_one_line_exit_2(argv, capsys)


@pytest.mark.parametrize("argv", [
    ["eval", "--num-envs", "0"], ["eval", "--policy", "nope"], ["eval", "--policy", "hf:/no/such/model"],
    ["eval", "--seed", "-1"], ["eval", "--num-goals", "0"], ["eval", "--json", "/no/such/dir/result.json"],
    ["demos", "--out", "."], ["demos", "--out", "x.jsonl", "--eval-fraction", "2"], ["demos", "-n", "-5", "--out", "x.jsonl"],
    ["demos", "--out", "/no/such/dir/demos.jsonl"],
    ["data", "synth", "--products", "-5", "--out", "shop"], ["data", "synth", "--products", "5", "--out", "/no/such/dir/shop"],
    ["replay", "."], ["replay", "/no/such/log.jsonl"], ["demo", "--shop", "/no/such/shop"], ["eval", "--goals", "/no/such.json"],
    ["data", "info", "/no/such/shop"], ["data", "goals", "--out", "."],
], ids=" ".join)
def test_documented_bad_arguments(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _assert_one_line_exit_2(argv, capsys)


def test_more_workers_than_envs_is_one_line_exit_2(capsys):
    """Caught by the vector env, not the parser (it depends on two flags): still one line, status 2."""
    assert main(["eval", "--num-envs", "2", "--num-workers", "5", "--num-goals", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == "webshop-gym eval: error: num_workers (5) must not exceed num_envs (2): each process steps at least one slot\n"


def test_files_that_are_not_what_they_should_be(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    binary = tmp_path / "goals.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    _assert_one_line_exit_2(["data", "synth", "--products", "5", "--out", str(afile)], capsys)
    # a binary goal file passes the parser (it exists) and is refused by the loader: one line, status 2
    assert main(["eval", "--goals", str(binary), "--num-goals", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webshop-gym eval: error: ") and "not UTF-8" in err and len(err.splitlines()) == 1
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    assert main(["eval", "--goals", str(deep), "--num-goals", "1", "--quiet"]) == 2
    assert "nested too deeply" in capsys.readouterr().err


def test_out_paths_create_no_folders(tmp_path, capsys):
    """--out writes the file only; a missing folder is an error, not created (issue 13, item 17)."""
    for argv in (["demos", "-n", "2", "--out", str(tmp_path / "a" / "b.jsonl")],
                 ["data", "goals", "--out", str(tmp_path / "c" / "g.json")],
                 ["data", "synth", "--products", "3", "--out", str(tmp_path / "d" / "e")]):
        _assert_one_line_exit_2(argv, capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert main(["data", "synth", "--products", "3", "--out", str(tmp_path / "shop"), "--quiet"]) == 0
    assert (tmp_path / "shop" / "items_shuffle.json").is_file()


def test_internal_errors_are_one_line_unless_debug(monkeypatch, capsys):
    import webshop_gym.cli.app as cli

    def boom(args):
        raise ZeroDivisionError("division by zero")

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["demo"].set_defaults(func=boom)
    assert main(["demo"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("webshop-gym demo: error: internal error: ZeroDivisionError: division by zero")
    assert "--debug" in err and "Traceback" not in err
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "demo"])


@pytest.mark.parametrize("policy", ["random", "rule", "oracle"])
def test_every_baseline_through_the_cli(policy, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["eval", "--policy", policy, "--num-envs", "3", "--num-goals", "3", "--json", str(out), "--quiet"]) == 0
    assert json.loads(out.read_text())["counts"]["episodes"] == 3
    assert "Score" in capsys.readouterr().out


@pytest.mark.slow
def test_ctrl_c_during_a_multi_process_eval_exits_130_quietly(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "WEBSHOP_GYM_PROGRESS": "1"}  # its bar shows it runs
    proc = subprocess.Popen(
        [sys.executable, "-m", "webshop_gym.cli", "eval", "--policy", "random", "--num-envs", "2", "--num-workers", "2",
         "--split", "train"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True, preexec_fn=default_sigint,
    )
    try:
        # wait until the run is under way (its progress bar is on stderr), then press Ctrl-C
        deadline = time.monotonic() + 120
        seen = ""
        while "eval:" not in seen and time.monotonic() < deadline and proc.poll() is None:
            seen += os.read(proc.stderr.fileno(), 4096).decode("utf-8", "replace")
        assert "eval:" in seen, seen
        time.sleep(0.2)
        assert proc.poll() is None, "the eval ended before Ctrl-C (it takes ~3 s); make it longer"
        os.killpg(proc.pid, signal.SIGINT)  # the terminal sends it to the whole process group
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = seen + err.decode("utf-8", "replace")
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines()[-1] == "webshop-gym eval: interrupted"
