"""Issue 51, item 4: every route of ``webshop-gym serve`` (the AgentGym API, the play UI, the site, the run
viewer) answers 413 past ``MAX_CONTENT_LENGTH``, declared or counted as the chunks arrive."""

from __future__ import annotations

import pytest
import requests

from tests.helpers_http import post_chunked

LIMIT = 64 * 1024  # server/__init__.py's MAX_CONTENT_LENGTH
PATHS = ["/agentgym/step", "/agentgym/create", "/", "/play/nope", "/runs", "/no/such/route"]


@pytest.mark.parametrize("path", PATHS)
def test_a_declared_body_over_the_limit_gets_413_on_every_route(live, tmp_path, path):
    _, base = live(RUNS=str(tmp_path))
    answer = requests.post(base + path, data=b"x" * (LIMIT + 1), timeout=30)
    assert answer.status_code == 413
    if path.startswith("/agentgym"):
        assert "detail" in answer.json()  # the API's errors are JSON
    else:
        assert "text/html" in answer.headers["Content-Type"]  # the site's error page
    assert requests.post(base + "/agentgym/create", data=b"", timeout=30).status_code == 200  # still serving


@pytest.mark.parametrize("path", PATHS)
def test_an_undeclared_body_is_counted_as_its_chunks_arrive(live, request, tmp_path, path):
    if request.node.callspec.params["live"] == "werkzeug":
        pytest.skip("serve --dev (Werkzeug's development server) counts a chunked body only when a route reads it")
    _, base = live(RUNS=str(tmp_path))
    status, _, sent = post_chunked(base, path, b"x" * 16384, chunks=1024)  # 16 MiB offered
    assert status == 413 and sent < 1024 * 16384  # answered before the client was done
    assert requests.post(base + "/agentgym/create", data=b"", timeout=30).status_code == 200  # the server lives on


def test_a_body_within_the_limit_is_served(live):
    _, base = live()
    created = requests.post(base + "/agentgym/create", data=b" " * (LIMIT - 10), timeout=30)
    assert created.status_code == 200
