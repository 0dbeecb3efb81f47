"""What the browser tests share: Debian's Chromium driven by Playwright, and an app served in a thread."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

import pytest

CHROMIUM = os.environ.get("WEBSHOP_GYM_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run"]


def require_playwright():
    """Playwright's ``sync_playwright``, or skip the test when Playwright or Chromium is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: pip install playwright (the browser itself comes from apt: chromium)")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set WEBSHOP_GYM_CHROMIUM)")
    return sync_playwright


def watch(page, base: str, problems: list[str]) -> None:
    """Append to ``problems`` the page's console errors, uncaught errors and requests to other hosts."""
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: None if r.url.startswith(base) else problems.append("external " + r.url))


@contextlib.contextmanager
def served(app) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 at a free port with Werkzeug's threaded server; yield its base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
