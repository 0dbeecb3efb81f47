"""The application factory and the ``webshop-gym serve`` command."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from webshop_gym.server import DEFAULTS, create_app
from webshop_gym.server.cli import config_from_args

from tests.helpers import default_sigint
from webshop_gym.cli.app import build_parser


def test_defaults_are_safe(default_shop):
    app = create_app({"SHOP": default_shop})
    try:
        assert not app.debug and not app.testing
        assert app.config["PROPAGATE_EXCEPTIONS"] is False
        assert app.config["MAX_STEPS"] == 15 and app.config["LOG_DIR"] is None
    finally:
        app.extensions["webshop_gym"].close()


def test_config_reaches_the_store(make_app):
    app = make_app(MAX_STEPS=7, MAX_SESSIONS=5, SESSION_TTL=30, SHOW_ATTRS=True)
    store = app.extensions["webshop_gym"]
    assert store.engine.max_steps == 7 and store.max_sessions == 5 and store.ttl == 30
    assert store.engine.ctx.show_attrs and store.engine.num_slots == 5


def test_a_crash_is_a_500_page_without_traceback(default_shop, monkeypatch):
    app = create_app({"SHOP": default_shop, "MAX_SESSIONS": 2})
    store = app.extensions["webshop_gym"]
    try:
        client = app.test_client()
        url = client.get("/goal/0").headers["Location"]

        def broken(*args):
            raise RuntimeError("secret internals")

        monkeypatch.setattr(store, "page", broken)
        app.logger.disabled = True
        response = client.get(url)
        assert response.status_code == 500
        page = response.get_data(as_text=True)
        assert "Something went wrong" in page and "secret internals" not in page and "Traceback" not in page
    finally:
        store.close()


def test_serve_flags_and_defaults(tmp_path):
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.max_steps, args.session_ttl, args.max_sessions) == ("127.0.0.1", 3000, 15, 3600, 1000)
    assert args.log_dir is None and not args.images and not args.show_attrs and not args.human_goals and not args.dev
    goals = tmp_path / "goals.json"
    goals.write_text("[]", encoding="utf-8")
    config = config_from_args(build_parser().parse_args(
        ["serve", "--shop", str(tmp_path), "--goals", str(goals), "--human-goals", "--price-seed", "3", "--max-steps", "0",
         "--session-ttl", "0", "--max-sessions", "9", "--log-dir", str(tmp_path / "L"), "--images", "--show-attrs",
         "--agentgym-max-envs", "5", "--agentgym-env-ttl", "0"]))
    assert config["MAX_STEPS"] is None and config["SESSION_TTL"] is None and config["AGENTGYM_ENV_TTL"] is None
    assert {k: config[k] for k in ("SHOP", "GOALS", "HUMAN_GOALS", "PRICE_SEED", "MAX_SESSIONS", "LOG_DIR", "IMAGES", "SHOW_ATTRS",
                                   "AGENTGYM_MAX_ENVS")} == {
        "SHOP": str(tmp_path), "GOALS": str(goals), "HUMAN_GOALS": True, "PRICE_SEED": 3, "MAX_SESSIONS": 9,
        "LOG_DIR": str(tmp_path / "L"), "IMAGES": True, "SHOW_ATTRS": True, "AGENTGYM_MAX_ENVS": 5}
    assert set(config) <= set(DEFAULTS)


@pytest.mark.parametrize(("flags", "message"), [
    (["--port", "-1"], "argument --port: must be a port number in 0-65535"),
    (["--port", "70000"], "argument --port: must be a port number in 0-65535"),
    (["--port", "http"], "argument --port: must be a port number"),
    (["--log-dir", "{file}"], "argument --log-dir: "),
    (["--log-dir", "{missing}/a/b"], "argument --log-dir: folder"),
    (["--max-sessions", "0"], "argument --max-sessions: must be a positive integer"),
    (["--max-steps", "-1"], "argument --max-steps: must be an integer >= 0"),
    (["--session-ttl", "nan"], "argument --session-ttl: must be a finite number >= 0"),
    (["--seed", "-1"], "argument --seed: must be an integer seed"),
    (["--threads", "0"], "argument --threads: must be a positive integer"),
    (["--agentgym-max-envs", "x"], "argument --agentgym-max-envs: must be a positive integer"),
])
def test_bad_serve_flags_are_one_line_errors(tmp_path, capsys, flags, message):
    from webshop_gym.cli.app import main

    file = tmp_path / "a-file"
    file.write_text("x", encoding="utf-8")
    flags = [f.format(file=file, missing=tmp_path / "missing") for f in flags]
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", *flags])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("webshop-gym serve: error: " + message)  # usage, then one line
    assert "Traceback" not in err


def test_command_line_does_not_import_flask():
    code = ("import sys, webshop_gym.cli.app as c; c.build_parser().parse_args(['serve', '--port', '1']); "
            "print('flask' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_serve_help():
    out = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "serve", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0
    for flag in ("--shop", "--goals", "--human-goals", "--price-seed", "--port", "--host", "--max-steps",
                 "--session-ttl", "--max-sessions", "--log-dir", "--images", "--show-attrs"):
        assert flag in out.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ),
                            preexec_fn=default_sigint)


def _wait_for(proc: subprocess.Popen, text: str) -> str:
    line, lines = "", []
    deadline = time.monotonic() + 120
    while text not in line and time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        assert line or proc.poll() is None, "serve exited early:\n" + "".join(lines)
    return line


@pytest.mark.slow
@pytest.mark.parametrize("dev", [False, True], ids=["uvicorn", "werkzeug"])
def test_serve_command_serves_on_a_free_port(tmp_path, dev):
    proc = _serve(["--port", "0", "--log-dir", str(tmp_path), *(["--dev"] if dev else [])])
    try:
        line = _wait_for(proc, "play at")
        match = re.search(r"play at http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        port = int(match.group(1))
        assert port != 0
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/goal/0", timeout=10).read().decode()
        assert "Instruction:" in page
        assert len(list(tmp_path.glob("*.jsonl"))) == 1
        assert json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/agentgym/", timeout=10).read()) == "ok"
        response = urllib.request.urlopen(f"http://127.0.0.1:{port}/fixed_0", timeout=10)
        assert response.status == 200 and "WebShop" in response.read().decode()
        server = response.headers.get("Server", "")
        assert server == ("webshop-gym" if not dev else server) and ("Werkzeug" in server) == dev
        proc.send_signal(signal.SIGINT)  # Ctrl+C: a clean stop, no traceback
        rest = proc.communicate(timeout=60)[0]
        assert proc.returncode == 0, rest[-2000:]
        assert "Traceback" not in rest and "KeyboardInterrupt" not in rest
        assert rest.strip().splitlines()[-1] == "webshop-gym: stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        proc.stdout.close()


@pytest.mark.slow
def test_serve_on_a_port_in_use_is_a_one_line_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "serve", "--port", str(port)],
                             capture_output=True, text=True, timeout=180)
    assert out.returncode == 2, out.stderr[-2000:]
    assert f"webshop-gym serve: error: cannot listen on 127.0.0.1:{port}" in out.stderr
    assert "Traceback" not in out.stderr and "play at" not in out.stdout
