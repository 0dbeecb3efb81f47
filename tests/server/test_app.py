"""The application factory and the ``webshop-gym serve`` command."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from webshop_gym.server import DEFAULTS, create_app
from webshop_gym.server.cli import config_from_args

from webshop_gym.cli import build_parser


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


def test_serve_flags_and_defaults():
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.max_steps, args.session_ttl, args.max_sessions) == ("127.0.0.1", 3000, 15, 3600, 1000)
    assert args.log_dir is None and not args.images and not args.show_attrs and not args.human_goals
    config = config_from_args(build_parser().parse_args(
        ["serve", "--shop", "S", "--goals", "G", "--human-goals", "--price-seed", "3", "--max-steps", "0",
         "--session-ttl", "0", "--max-sessions", "9", "--log-dir", "L", "--images", "--show-attrs"]))
    assert config["MAX_STEPS"] is None and config["SESSION_TTL"] is None
    assert {k: config[k] for k in ("SHOP", "GOALS", "HUMAN_GOALS", "PRICE_SEED", "MAX_SESSIONS", "LOG_DIR", "IMAGES", "SHOW_ATTRS")} == {
        "SHOP": "S", "GOALS": "G", "HUMAN_GOALS": True, "PRICE_SEED": 3, "MAX_SESSIONS": 9, "LOG_DIR": "L",
        "IMAGES": True, "SHOW_ATTRS": True}
    assert set(config) <= set(DEFAULTS)


def test_command_line_does_not_import_flask():
    code = ("import sys, webshop_gym.cli as c; c.build_parser().parse_args(['serve', '--port', '1']); "
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


@pytest.mark.slow
def test_serve_command_serves_on_localhost(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "webshop_gym.cli", "serve", "--port", str(port), "--log-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ),
    )
    try:
        line = ""
        deadline = time.monotonic() + 90
        while "play at" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "serve exited early"
        assert f"play at http://127.0.0.1:{port}/" in line
        for _ in range(100):
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/goal/0", timeout=10).read().decode()
                break
            except OSError:
                time.sleep(0.1)
        assert "Instruction:" in page
        assert len(list(tmp_path.glob("*.jsonl"))) == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
