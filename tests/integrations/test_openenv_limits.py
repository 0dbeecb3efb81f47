"""Issue 51, item 4: every HTTP route of ``webshop-gym openenv`` bounds its request body, and no session_id gives a 500."""

from __future__ import annotations

import json

import pytest

from tests.helpers import require_extra  # noqa: E402

require_extra("openenv", "openenv", "OpenEnv")

import requests  # noqa: E402

from tests.helpers import ServedApp  # noqa: E402
from tests.helpers_http import post_chunked  # noqa: E402
from webshop_gym.integrations.openenv.app import MAX_BODY_BYTES, create_app  # noqa: E402

ROUTES = ["/mcp", "/reset", "/step", "/webshop/task"]


@pytest.fixture(scope="module")
def server(default_shop):
    served = ServedApp(create_app(default_shop, idle_timeout=None, max_envs=4))
    yield served.url
    served.stop()


@pytest.mark.parametrize("path", ROUTES)
def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(server, path):
    answer = requests.post(server + path, data=b" " * (MAX_BODY_BYTES + 1), timeout=30,
                           headers={"Content-Type": "application/json"})
    assert answer.status_code == 413
    assert answer.json() == {"detail": f"the request body is larger than this server's limit of {MAX_BODY_BYTES:,} bytes"}


@pytest.mark.parametrize("path", ROUTES)
def test_an_undeclared_body_is_counted_as_its_chunks_arrive(server, path):
    """A chunked body with no length: refused at the chunk that passes 1 MiB, long before the 16 MiB are sent."""
    status, answer, sent = post_chunked(server, path, b" " * 65536, chunks=256)
    assert status == 413 and "limit of 1,048,576 bytes" in answer["detail"]
    assert sent < 256 * 65536  # the server answered (and closed) before the client was done


def test_bodies_within_the_limit_are_served(server):
    padded = json.dumps({"goal_index": 3}) + " " * (MAX_BODY_BYTES - 20)  # valid JSON of nearly 1 MiB
    answer = requests.post(server + "/reset", data=padded, headers={"Content-Type": "application/json"}, timeout=30)
    assert answer.status_code == 200 and answer.json()["observation"]["goal_index"] == 3
    status, answer, _ = post_chunked(server, "/mcp", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode(),
                                     chunks=1)
    assert status == 200 and [t["name"] for t in answer["result"]["tools"]] == ["search", "click"]


@pytest.mark.parametrize("session_id", [[1], {"a": 1}, 12, 1.5, True, "", None, "nope", "\ud800", "\udc00x", "a" * 10_000])
@pytest.mark.parametrize("method", ["openenv/session/close", "tools/call"])
def test_no_session_id_gets_a_500(server, method, session_id):
    body = {"jsonrpc": "2.0", "id": 1, "method": method,
            "params": {"session_id": session_id, "name": "search", "arguments": {"query": "x"}}}
    answer = requests.post(server + "/mcp", data=json.dumps(body), headers={"Content-Type": "application/json"},
                           timeout=30)
    assert answer.status_code == 200
    error = answer.json()["error"]
    assert error["code"] == -32602 and isinstance(error["message"], str)


@pytest.mark.parametrize("request_id", ["\ud800", [1], {"a": 1}, 1.5])
def test_no_request_id_gets_a_500(server, request_id):
    body = {"jsonrpc": "2.0", "id": request_id, "method": "openenv/session/close", "params": {"session_id": "x"}}
    answer = requests.post(server + "/mcp", data=json.dumps(body), headers={"Content-Type": "application/json"},
                           timeout=30)
    assert answer.status_code == 200 and "error" in answer.json()
