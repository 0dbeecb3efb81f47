"""The two HTTP clients of a served policy (issue 44): the built-in asyncio HTTP/1.1 client reads what servers send
(chunked, gzip, deflate, close-delimited, 1xx, kept-alive connections a server closed) and fails as the `openai`
client fails (the same one-line errors, statuses, retries and request counts)."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import ssl
import subprocess
import threading
import time
import zlib

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer  # noqa: E402
from webshop_gym.adapters import OpenAIPolicy  # noqa: E402
from webshop_gym.agents import transport  # noqa: E402
from webshop_gym.agents.answer import status_message  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.error import InvalidArgument  # noqa: E402

MESSAGES = [{"role": "user", "content": "Instruction: buy shoes\nAdmissible actions:\nsearch[<query>]"}]
ANSWER = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {
    "role": "assistant", "content": "<think>go</think><answer>search[shoes]</answer>", "reasoning_content": "r"}}],
    "usage": {"prompt_tokens": 11, "completion_tokens": 4}}
BODY = json.dumps(ANSWER).encode()


def _response(status: int, body: bytes, *headers: str, reason: str = "X") -> bytes:
    head = [f"HTTP/1.1 {status} {reason}", *headers]
    if not any(h.lower().startswith(("content-length", "transfer-encoding")) for h in headers):
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _chunked(body: bytes, size: int = 7) -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\nX-Trailer: t\r\n\r\n"


class RawServer:
    """A server that reads each request and answers with what ``reply(index, head, body, writer)`` (a coroutine) writes.

    ``reply`` returns whether the connection stays open for the next request.
    """

    def __init__(self, reply, tls: ssl.SSLContext | None = None):
        self.reply = reply
        self.tls = tls
        self.heads: list[str] = []
        self.connections = 0
        self.open: set = set()
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(self.loop.create_server(lambda: _RawConnection(self), "127.0.0.1",
                                                                               0, ssl=tls))
            self.port = self.server.sockets[0].getsockname()[1]
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        started.wait(10)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{'localhost' if self.tls else '127.0.0.1'}:{self.port}/v1"

    def close(self):
        async def stop():
            self.server.close()
            await asyncio.sleep(0)
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for connection in list(self.open):
                connection.abort()
            for _ in range(3):
                await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class _RawConnection(asyncio.Protocol):
    def __init__(self, owner: RawServer):
        self.owner = owner
        self.buffer = b""
        self.busy = False

    def connection_made(self, transport):
        self.transport = transport
        self.owner.open.add(transport)
        self.owner.connections += 1

    def connection_lost(self, exc):
        self.owner.open.discard(self.transport)

    def data_received(self, data):
        self.buffer += data
        if not self.busy:
            self._next()

    def _next(self):
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buffer[:end].decode("latin-1")
        length = int(next((line.split(":")[1] for line in head.split("\r\n") if line.lower().startswith("content-length")),
                          "0"))
        if len(self.buffer) < end + 4 + length:
            return
        body, self.buffer = self.buffer[end + 4 : end + 4 + length], self.buffer[end + 4 + length :]
        self.owner.heads.append(head)
        self.busy = True
        task = asyncio.get_running_loop().create_task(self.owner.reply(len(self.owner.heads) - 1, head, body, self))
        task.add_done_callback(self._done)

    def _done(self, task):
        self.busy = False
        if task.cancelled() or task.exception() is not None or not task.result():
            self.close()
        else:
            self._next()

    # the writer's side, for the replies
    def write(self, data: bytes):
        if not self.transport.is_closing():
            self.transport.write(data)

    async def drain(self):
        await asyncio.sleep(0)

    def close(self):
        if not self.transport.is_closing():
            self.transport.close()


def _fixed(data: bytes, keep: bool = True):
    async def reply(index, head, body, writer):
        writer.write(data)
        await writer.drain()
        return keep

    return reply


def _complete(url: str, client: str, **kw):
    policy = OpenAIPolicy("scripted", base_url=url, http_client=client,
                          **{"max_retries": 0, "timeout": 5.0, "backoff": 0.01, "max_backoff": 0.02, **kw})
    try:
        assert policy.http_client == client
        return policy.complete(MESSAGES)
    finally:
        policy.close()


def _fields(call) -> dict:
    return {k: getattr(call, k) for k in ("text", "reasoning", "prompt_tokens", "completion_tokens", "requests",
                                          "retries", "finish_reason", "error", "non_text", "tool_calls", "status")}


VLLM_400 = json.dumps({"object": "error", "message": '"auto" tool choice requires --enable-auto-tool-choice and '
                       "--tool-call-parser to be set", "type": "BadRequestError", "param": None, "code": 400}).encode()
ANSWERS = {
    "vllm 400": _response(400, VLLM_400),
    "openai 401": _response(401, b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'),
    "fastapi 404": _response(404, b'{"detail": "Not Found"}'),
    "422 list": _response(422, b'{"detail": [{"loc": ["body", "messages"], "msg": "field required"}]}'),
    "429 ms": _response(429, b'{"error": "slow down"}', "retry-after-ms: 20"),
    "500 text": _response(500, b"Internal Server Error", "Content-Type: text/plain"),
    "503 empty": _response(503, b""),
    "502 html": _response(502, b"<html><body>Bad gateway</body></html>", "Content-Type: text/html"),
    "nested error": _response(500, b'{"error": {"error": {"message": "deep"}}}'),
    "chunked": _response(200, _chunked(BODY), "Transfer-Encoding: chunked"),
    "gzip": _response(200, gzip.compress(BODY), "Content-Encoding: gzip"),
    "deflate": _response(200, zlib.compress(BODY), "Content-Encoding: deflate"),
    "gzip chunked": _response(200, _chunked(gzip.compress(BODY), 5), "Transfer-Encoding: chunked",
                              "Content-Encoding: gzip"),
    "100 continue first": b"HTTP/1.1 100 Continue\r\n\r\n" + _response(200, BODY),
    "empty json": _response(200, b"{}"),
}
CLOSE_DELIMITED = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY


@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_both_clients_read_every_answer_alike(case):
    got = {}
    for client in ("builtin", "openai"):
        server = RawServer(_fixed(ANSWERS[case]))
        try:
            got[client] = _fields(_complete(server.url, client))
        finally:
            server.close()
    assert got["builtin"] == got["openai"]
    if case.startswith(("chunked", "gzip", "deflate", "100")):
        assert got["builtin"]["text"].endswith("search[shoes]</answer>") and got["builtin"]["error"] is None
    if case == "vllm 400":
        assert got["builtin"]["error"] == ('status 400: "auto" tool choice requires --enable-auto-tool-choice and '
                                           "--tool-call-parser to be set")


def test_a_redirect_is_the_turns_error_not_followed():
    server = RawServer(_fixed(_response(307, b"", "Location: http://127.0.0.1:9/v1/chat/completions")))
    try:
        call = _complete(server.url, "builtin", max_retries=3)
    finally:
        server.close()
    assert call.error == "status 307: Error code: 307" and call.requests == 1 and call.retries == 0
    assert len(server.heads) == 1


def test_a_close_delimited_answer_is_read_to_the_end():
    for client in ("builtin", "openai"):
        server = RawServer(_fixed(CLOSE_DELIMITED, keep=False))
        try:
            call = _complete(server.url, client)
        finally:
            server.close()
        assert call.error is None and call.text.endswith("</answer>") and call.prompt_tokens == 11, client


@pytest.mark.parametrize("fault", ["429", "500", "malformed", "drop", "timeout"])
def test_both_clients_fail_alike_on_every_fault(fault):
    got = {}
    for client in ("builtin", "openai"):
        with ChatServer(faults={fault: 1.0}, hang=1.0) as server:
            got[client] = _fields(_complete(server.url, client, max_retries=1, timeout=0.3))
            assert len(server.requests) == 2
    assert got["builtin"] == got["openai"] and got["builtin"]["retries"] == 1 and got["builtin"]["requests"] == 2
    expected = {"429": "status 429: rate limited", "500": "status 500: internal error",
                "malformed": "malformed response body (not JSON", "timeout": "timed out after 0.3 s",
                "drop": "connection error (Server disconnected without sending a response.)"}[fault]
    assert got["builtin"]["error"].startswith(expected) and got["builtin"]["error"].endswith("(after 1 retries)")


def test_a_refused_connection_is_retried_and_never_counted_as_a_request():
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        got = {client: _fields(_complete(url, client, max_retries=2)) for client in ("builtin", "openai")}
    assert got["builtin"] == got["openai"]
    assert got["builtin"]["error"] == "connection error ([Errno 111] Connection refused) (after 2 retries)"
    assert got["builtin"]["requests"] == 0 and got["builtin"]["retries"] == 2


def test_status_messages_read_the_body_as_the_openai_client_does():
    assert status_message(400, VLLM_400).startswith('"auto" tool choice requires')
    assert status_message(500, b'{"error": {"message": "boom"}}') == "boom"
    assert status_message(500, b'{"error": "flat"}') == "Error code: 500"
    assert status_message(404, b'{"detail": "Not Found"}') == "Error code: 404"
    assert status_message(502, b"<html>\n bad \n</html>") == "Error code: 502"
    assert status_message(500, b'{"message": "vllm style"}') == "vllm style"
    assert status_message(500, b"[" * 100_000) == "Error code: 500"


def test_kept_alive_connections_are_reused_and_one_the_server_closed_is_replaced():
    # the server answers 3 requests per connection, then closes it without saying so (an idle
    # timeout): the client notices the closed connection and opens another; nothing is retried
    async def reply(index, head, body, writer):
        writer.write(_response(200, BODY))
        await writer.drain()
        return index % 3 != 2

    server = RawServer(reply)
    try:
        policy = OpenAIPolicy("scripted", base_url=server.url, max_retries=0, timeout=5.0)
        calls = []
        for _ in range(7):
            calls.append(policy.complete(MESSAGES))
            import time

            time.sleep(0.02)  # the server's close arrives before the next request
        policy.close()
    finally:
        server.close()
    assert all(c.error is None and c.retries == 0 and c.requests == 1 for c in calls)
    assert server.connections == 3  # 3 + 3 + 1 requests
    assert all("Authorization: Bearer EMPTY" in h and "Content-Type: application/json" in h for h in server.heads)


def test_an_answer_that_trickles_in_within_the_deadline_is_awaited_and_a_silent_one_times_out():
    async def trickle(index, head, body, writer):
        data = _response(200, BODY)
        for k in range(0, len(data), len(data) // 5 + 1):
            writer.write(data[k : k + len(data) // 5 + 1])
            await writer.drain()
            await asyncio.sleep(0.12)  # 0.6 s in all, within the 2 s deadline
        return True

    async def silent(index, head, body, writer):
        writer.write(_response(200, BODY)[:40])  # the status line, then nothing
        await asyncio.sleep(5)
        return False

    for reply, timeout, error in ((trickle, 2.0, None), (silent, 0.3, "timed out after 0.3 s")):
        for client in ("builtin", "openai"):
            server = RawServer(reply)
            try:
                call = _complete(server.url, client, timeout=timeout)
            finally:
                server.close()
            assert call.error == error and call.requests == 1, client


async def _continue_forever(index, head, body, writer):
    while True:  # an interim head every 0.2 s, never the answer
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.2)


async def _a_byte_a_second(index, head, body, writer):
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    for byte in BODY:  # one chunk of one byte a second: the answer would take minutes
        writer.write(b"1\r\n" + bytes([byte]) + b"\r\n")
        await writer.drain()
        await asyncio.sleep(1.0)
    return False


async def _headers_a_byte_at_a_time(index, head, body, writer):
    for byte in _response(200, BODY):
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.1)
    return False


@pytest.mark.parametrize("reply", [_continue_forever, _a_byte_a_second, _headers_a_byte_at_a_time],
                         ids=["100 continue every 0.2 s", "a chunked byte a second", "the head a byte at a time"])
def test_timeout_is_the_deadline_of_the_whole_request_through_either_client(reply):
    for client in ("builtin", "openai"):
        server = RawServer(reply)
        try:
            started = time.perf_counter()
            call = _complete(server.url, client, timeout=1.0, max_retries=1)
            took = time.perf_counter() - started
        finally:
            server.close()
        assert call.error == "timed out after 1 s (after 1 retries)" and call.requests == 2, client
        assert 2.0 <= took < 6.0, (client, took)  # two attempts of 1 s each, and the backoff between


def test_interim_heads_are_capped_in_number():
    few = b"HTTP/1.1 100 Continue\r\n\r\n" * transport.MAX_INTERIM + _response(200, BODY)
    many = b"HTTP/1.1 100 Continue\r\n\r\n" * (transport.MAX_INTERIM + 1) + _response(200, BODY)
    for data, error in ((few, None), (many, f"connection error (the answer sent over {transport.MAX_INTERIM} interim "
                                            "(1xx) heads)")):
        server = RawServer(_fixed(data))
        try:
            call = _complete(server.url, "builtin")
        finally:
            server.close()
        assert call.error == error and call.requests == 1


def test_eval_timeout_bounds_each_request_of_a_server_that_never_answers(tmp_path, capsys):
    server = RawServer(_continue_forever)  # the model check (GET /models) never gets an answer either
    try:
        started = time.perf_counter()
        status = main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "2",
                       "--timeout", "1", "--quiet", "--json", str(tmp_path / "r.json")])
        took = time.perf_counter() - started
    finally:
        server.close()
    assert status == 2 and took < 30.0  # the shop loads, then one check of 1 s (without a deadline: forever)
    assert f"{server.url} did not answer within 1 s" in capsys.readouterr().err

    async def models_then_silence(index, head, body, writer):
        if head.startswith("GET"):
            writer.write(_response(200, b'{"object": "list", "data": [{"id": "scripted", "object": "model"}]}'))
            return True
        return await _continue_forever(index, head, body, writer)

    server = RawServer(models_then_silence)
    try:
        started = time.perf_counter()
        status = main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "2",
                       "--concurrency", "2", "--timeout", "1", "--max-retries", "0", "--quiet",
                       "--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "run.jsonl")])
        took = time.perf_counter() - started
    finally:
        server.close()
    result = json.loads((tmp_path / "r.json").read_text())
    assert status == 1 and result["errored"] == 2 and result["requests"] == 2 and took < 30.0  # all errored: 1
    episodes = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert [e["error"] for e in episodes if e["type"] == "episode"] == ["timed out after 1 s"] * 2


class ClosingServer:
    """A blocking server that closes each connection right after its answer, saying nothing (no ``Connection: close``).

    The answer and the close leave together (``TCP_CORK``), as from a server in another process.
    """

    def __init__(self):
        import socket

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        import socket

        from tests.openai_server import scripted_answer

        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(5)
                data = b""
                try:
                    while b"\r\n\r\n" not in data:
                        data += conn.recv(65536)
                    head, _, body = data.partition(b"\r\n\r\n")
                    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                                   if line.lower().startswith(b"content-length")), 0)
                    while len(body) < length:
                        body += conn.recv(65536)
                except OSError:
                    continue
                if head.startswith(b"GET"):
                    answer = b'{"object": "list", "data": [{"id": "scripted", "object": "model"}]}'
                else:
                    text = scripted_answer(json.loads(body)["messages"])
                    answer = json.dumps({**ANSWER, "choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": text}}]}).encode()
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
                conn.sendall(_response(200, answer))
                conn.shutdown(socket.SHUT_WR)

    def close(self):
        self.running = False
        self.thread.join(5)
        self.sock.close()


def test_a_server_that_closes_each_connection_after_answering_costs_no_retry(tmp_path):
    server = ClosingServer()
    try:
        status = main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "20",
                       "--concurrency", "2", "--max-retries", "0", "--quiet", "--json", str(tmp_path / "r.json")])
    finally:
        server.close()
    result = json.loads((tmp_path / "r.json").read_text())
    assert status == 0 and result["errored"] == 0 and result["retries"] == 0
    assert result["requests"] == 20 * result["mean_steps"] and server.connections == result["requests"] + 1


def test_keep_alive_max_is_honoured():
    # each connection carries 2 requests (Keep-Alive: max=1, then max=0); the server closes it
    # 50 ms after the second answer, by which time the client has sent its next request
    async def reply(index, head, body, writer):
        second = index % 2 == 1
        writer.write(_response(200, BODY, f"Keep-Alive: timeout=5, max={0 if second else 1}"))
        if second:
            asyncio.get_running_loop().call_later(0.05, writer.close)
        return True

    server = RawServer(reply)
    try:
        policy = OpenAIPolicy("scripted", base_url=server.url, max_retries=0, timeout=5.0)
        calls = [policy.complete(MESSAGES) for _ in range(8)]
        policy.close()
    finally:
        server.close()
    assert all(c.error is None and c.retries == 0 for c in calls)
    assert server.connections == 4


def test_answers_over_the_bounds_are_failed_attempts(monkeypatch):
    monkeypatch.setattr(transport, "MAX_BODY", 1000)
    cases = {"length": _response(200, b" " * 2000 + BODY), "chunked": _response(200, _chunked(b" " * 2000 + BODY, 500),
                                                                                "Transfer-Encoding: chunked"),
             "gzip bomb": _response(200, gzip.compress(b" " * 50_000), "Content-Encoding: gzip"),
             "headers": b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n"}
    for name, data in cases.items():
        server = RawServer(_fixed(data))
        try:
            call = _complete(server.url, "builtin")
        finally:
            server.close()
        assert call.error is not None and call.error.startswith("connection error (the answer") and call.requests == 1, name


def test_an_endpoint_behind_a_proxy_goes_through_the_openai_client(monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    url = "http://10.1.2.3:8000/v1"
    assert OpenAIPolicy("m", base_url=url).http_client == "builtin"
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    assert OpenAIPolicy("m", base_url=url).http_client == "openai"
    monkeypatch.setenv("NO_PROXY", "10.1.2.3")
    assert OpenAIPolicy("m", base_url=url).http_client == "builtin"
    assert OpenAIPolicy("m", base_url="https://api.example.com/v1").http_client == "builtin"  # no HTTPS_PROXY
    with pytest.raises(InvalidArgument, match="http_client must be one of builtin, openai"):
        OpenAIPolicy("m", base_url=url, http_client="curl")


def test_https_with_the_certificates_named_by_ssl_cert_file(tmp_path, monkeypatch):
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"],
                   check=True, capture_output=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = RawServer(_fixed(_response(200, BODY)), tls=context)
    try:
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        refused = _complete(server.url, "builtin", max_retries=1)
        assert refused.error.startswith("connection error ([SSL: CERTIFICATE_VERIFY_FAILED]")
        assert refused.requests == 0 and refused.retries == 1  # nothing was sent
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        call = _complete(server.url, "builtin")
    finally:
        server.close()
    assert call.error is None and call.text.endswith("</answer>")


def test_evaluate_from_a_running_event_loop(default_shop):
    from webshop_gym.evaluation.local import evaluate

    async def notebook():  # e.g. a Jupyter cell: a loop already runs in this thread
        with ChatServer() as server:
            policy = OpenAIPolicy("scripted", base_url=server.url, concurrency=4)
            try:
                return evaluate(policy, shop=default_shop, num_goals=6)
            finally:
                policy.close()

    result = asyncio.run(notebook())
    assert result["counts"]["episodes"] == 6 and result["errored"] == 0


def test_the_flag_reaches_the_policy_and_is_refused_for_other_policies(tmp_path, capsys):
    for client in ("builtin", "openai"):
        with ChatServer() as server:
            assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "2",
                         "--http-client", client, "--quiet", "--json", str(tmp_path / "r.json")]) == 0
        assert json.loads((tmp_path / "r.json").read_text())["counts"]["episodes"] == 2
    assert main(["eval", "--policy", "rule", "--http-client", "openai", "--num-goals", "1"]) == 2
    assert "--http-client apply to openai:MODEL policies only" in capsys.readouterr().err
