"""A local OpenAI-compatible chat server for tests and benchmarks (a thread on 127.0.0.1).

It answers ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed as server-sent events when
the request asks for ``"stream": true``, as verifiers' interception proxy does) with a scripted shopping policy
that reads the prompt as a model would (the instruction and the admissible actions of the last
user turn): search the instruction, open the first result, buy.  It can wait a fixed latency
per request, inject faults at set rates (429 with ``Retry-After``, 500, a timeout, a malformed
body, a dropped connection), fail every request whose prompt contains given text, and records
what it received and how many requests overlapped.

>>> with ChatServer(latency=0.0) as server:  # doctest: +SKIP
...     server.url  # 'http://127.0.0.1:PORT/v1'
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

FAULTS = ("429", "500", "timeout", "malformed", "drop")


class ToolCalls:
    """An answer (of ``ChatServer``'s ``answer``) that calls tools: ``ToolCalls([("search", {"query": "x"})])``."""

    def __init__(self, calls: list[tuple[str, dict]], content: str | None = None):
        self.calls = calls
        self.content = content


def scripted_answer(messages: list[dict], fmt: str = "think-answer") -> str:
    """The scripted policy: search the instruction, open the first result, choose nothing, buy."""
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    instruction = re.search(r"Instruction: (.*)", text)
    query = instruction.group(1).split(", and price lower than")[0] if instruction else "product"
    last = str(messages[-1].get("content", ""))
    actions = last.split("Admissible actions:\n", 1)[1].splitlines() if "Admissible actions:\n" in last else []
    if "search[<query>]" in actions:
        action = f"search[{query}]"
    elif "click[buy now]" in actions:
        action = "click[buy now]"
    else:
        products = [a for a in actions if re.fullmatch(r"click\[b[0-9a-z]{9}\]", a)]
        action = products[0] if products else (actions[0] if actions else "click[back to search]")
    if fmt == "react":
        return f"Thought: next step.\nAction: {action}"
    return f"<think>next step</think><answer>{action}</answer>"


def scripted_tool_calls(messages: list[dict], detours: Sequence = ()):
    """A tool-calling model: search the instruction; then the ``detours`` answers, one per turn (text, or
    :class:`ToolCalls`); then the first product of the results, "buy now", and one more "buy now" in one answer
    (a call after the purchase, which is never stepped)."""
    turn = sum(m["role"] == "assistant" for m in messages)
    first = next(m["content"] for m in messages if m["role"] == "user")
    if turn == 0:
        instruction = re.search(r"Instruction: (.*)", first).group(1)
        return ToolCalls([("search", {"query": instruction.split(", and price")[0]})], content="Let me search.")
    if turn <= len(detours):
        return detours[turn - 1]
    labels = [json.loads(found.group(1)) for m in messages
              if (found := re.search(r"click\(label\) with label one of (\[.*?\])", str(m.get("content"))))]
    products = [x for x in labels[0] if re.fullmatch(r"b[0-9a-z]{9}", x)]  # the results page
    return ToolCalls([("click", {"label": products[0]}), ("click", {"label": "buy now"}),
                      ("click", {"label": "buy now"})])


class ChatServer:
    """The server (start with ``with ChatServer(...) as server`` or :meth:`start`/:meth:`stop`).

    Args:
        models: the names ``/v1/models`` lists (and the only ones served).
        latency: seconds each successful request waits before answering.
        faults: ``{"429": rate, "500": rate, "timeout": rate, "malformed": rate, "drop": rate}``:
            the share of requests that get each fault (drawn from a seeded generator).
        fail_when: every request whose prompt contains this text (or one of these texts) answers 500.
        retry_after: the ``Retry-After`` value of the 429s (seconds, as text).
        hang: seconds a ``timeout`` fault waits before answering (longer than the client's timeout).
        usage: send ``usage`` (else none: the client must mark tokens unknown).
        reasoning: send this as ``reasoning_content`` besides the answer.
        answer: replaces :func:`scripted_answer` (``messages -> content``; may return None or a list,
            or bytes: a raw response body, or :class:`ToolCalls`).
        seed: seed of the fault draws.
    """

    def __init__(self, models=("scripted",), latency: float = 0.0, faults: dict | None = None,
                 fail_when: str | Sequence[str] | None = None, retry_after: str = "0.01", hang: float = 2.0, usage: bool = True,
                 reasoning: str | None = None, answer: Callable | None = None, seed: int = 0):
        self.models = list(models)
        self.latency = float(latency)
        self.faults = {k: float(v) for k, v in (faults or {}).items()}
        unknown = set(self.faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; expected {FAULTS}")
        self.fail_when = [fail_when] if isinstance(fail_when, str) else list(fail_when or [])
        self.retry_after = retry_after
        self.hang = float(hang)
        self.usage = usage
        self.reasoning = reasoning
        self.answer = answer
        self.rng = np.random.default_rng(seed)
        self.lock = threading.Lock()
        self.requests: list[dict] = []  # every chat request received (body)
        self.keys: list[str | None] = []  # the Authorization header of each
        self.responses: list[dict] = []  # every successful answer: content and usage sent
        self.injected: dict[str, int] = dict.fromkeys(FAULTS, 0)
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopping = threading.Event()
        self.server: _Server | None = None
        self.thread: threading.Thread | None = None

    # -- life cycle -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API root (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> ChatServer:
        handler = _handler(self)
        self.server = _Server(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and wait for every request thread (none is left running after a test)."""
        if self.server is not None:
            self.stopping.set()  # ends the waits of latency and timeout faults
            self.server.shutdown()
            self.server.close_connections()  # ends the threads waiting on a kept-alive connection
            self.server.server_close()  # joins the request threads (block_on_close)
            self.server = None

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what was sent ------------------------------------------------------------------------------------

    def usage_sums(self) -> tuple[int, int]:
        """Prompt and completion tokens of every successful answer sent."""
        return (sum(r["usage"]["prompt_tokens"] for r in self.responses if r["usage"]),
                sum(r["usage"]["completion_tokens"] for r in self.responses if r["usage"]))

    def _fault(self, body: dict) -> str | None:
        prompt = json.dumps(body.get("messages", []))
        if self.fail_when and any(text in prompt for text in self.fail_when):
            return "500"
        with self.lock:
            draw = float(self.rng.random())
        for name in FAULTS:
            rate = self.faults.get(name, 0.0)
            if draw < rate:
                return name
            draw -= rate
        return None


class _Server(ThreadingHTTPServer):
    # set on the class: the constructor already listens, with the backlog it finds here (the
    # default of 5 drops connections under load: the client's connect then times out)
    request_queue_size = 2048
    daemon_threads = False  # tracked, so that server_close() joins them (socketserver skips daemon threads)
    block_on_close = True

    def __init__(self, *args, **kwargs):
        self.open_connections: set = set()
        self.connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address):
        with self.connections_lock:
            self.open_connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        with self.connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.open_connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _count_tokens(messages: list[dict]) -> int:
    return sum(len(str(m.get("content", "")).split()) + 4 for m in messages)


def _handler(owner: ChatServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out in two writes: with Nagle's algorithm the body would wait for
        # the client's delayed ACK of the headers (~40 ms per request), as no real server does
        disable_nagle_algorithm = True

        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, status: int, payload: bytes, headers: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def _json(self, status: int, obj, headers: dict | None = None) -> None:
            self._send(status, json.dumps(obj).encode(), headers)

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "test"}
                                                            for m in owner.models]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._json(404, {"error": {"message": "not found"}})
                return
            with owner.lock:
                owner.requests.append(body)
                owner.keys.append(self.headers.get("Authorization"))
                owner.in_flight += 1
                owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
            try:
                self._chat(body)
            finally:
                with owner.lock:
                    owner.in_flight -= 1

        def _chat(self, body: dict) -> None:
            if body.get("model") not in owner.models:
                self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                return
            fault = owner._fault(body)
            if fault is not None:
                with owner.lock:
                    owner.injected[fault] += 1
            if fault == "429":
                self._json(429, {"error": {"message": "rate limited"}}, {"Retry-After": owner.retry_after})
                return
            if fault == "500":
                self._json(500, {"error": {"message": "internal error"}})
                return
            if fault == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if fault == "timeout":  # the client gave up long before: nothing is sent
                owner.stopping.wait(owner.hang)
                self.close_connection = True
                return
            if owner.latency:
                owner.stopping.wait(owner.latency)
            if fault == "malformed":
                self._send(200, b'{"id": "x", "choices": [ {"message": ')
                return
            messages = body.get("messages", [])
            fmt = "react" if "Thought:" in str(messages[0].get("content", "")) else "think-answer"
            content = owner.answer(messages) if owner.answer else scripted_answer(messages, fmt)
            if isinstance(content, bytes):  # a raw response body, sent as it is
                self._send(200, content)
                return
            tool_calls = None
            if isinstance(content, ToolCalls):  # an answer that calls tools
                content, tool_calls = content.content, content.calls
            stops = body.get("stop") or []
            if isinstance(content, str):
                for stop in stops:  # like vLLM: cut at the stop string, which is not returned
                    if stop in content:
                        content = content[: content.index(stop)]
            usage = None
            if owner.usage:
                completion = len(str(content).split()) if content else 0
                usage = {"prompt_tokens": _count_tokens(messages), "completion_tokens": completion,
                         "total_tokens": _count_tokens(messages) + completion}
            message = {"role": "assistant", "content": content}
            if tool_calls is not None:
                message["tool_calls"] = [{"id": f"call_{len(messages)}_{k}", "type": "function",
                                          "function": {"name": name, "arguments": json.dumps(arguments)}}
                                         for k, (name, arguments) in enumerate(tool_calls)]
            if owner.reasoning is not None:
                message["reasoning_content"] = owner.reasoning
            reply = {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                     "model": body.get("model"), "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
            if usage is not None:
                reply["usage"] = usage
            with owner.lock:
                owner.responses.append({"content": content, "usage": usage})
            if body.get("stream"):
                self._stream(reply, content, usage if (body.get("stream_options") or {}).get("include_usage") else None)
            else:
                self._json(200, reply)

        def _stream(self, reply: dict, content, usage: dict | None) -> None:
            """The answer as server-sent events, as vLLM and OpenAI stream it: a role chunk, the content
            in a few pieces, each tool call (its id and name, then its arguments in pieces), a chunk with
            the finish reason, the usage chunk when asked for, ``[DONE]``."""
            head = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
            text = content if isinstance(content, str) else ""
            pieces = [text[i : i + 16] for i in range(0, len(text), 16)]
            deltas = [{"role": "assistant", "content": ""}, *({"content": p} for p in pieces)]
            for k, call in enumerate(reply["choices"][0]["message"].get("tool_calls") or []):
                # a call's id and name first, then its arguments in two pieces (as OpenAI streams them)
                arguments = call["function"]["arguments"]
                half = len(arguments) // 2
                deltas.append({"tool_calls": [{"index": k, "id": call["id"], "type": "function",
                                               "function": {"name": call["function"]["name"], "arguments": ""}}]})
                deltas += [{"tool_calls": [{"index": k, "function": {"arguments": piece}}]}
                           for piece in (arguments[:half], arguments[half:])]
            if owner.reasoning is not None:
                deltas.insert(1, {"reasoning_content": owner.reasoning})
            events = [head | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
            events.append(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if usage is not None:
                events.append(head | {"choices": [], "usage": usage})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")  # the body ends when the connection closes
            self.end_headers()
            self.close_connection = True
            for event in events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes (benchmarks run the server in its own process): ``python tests/openai_server.py``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="A local OpenAI-compatible chat server with a scripted policy.")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request (default 0.2)")
    parser.add_argument("--model", default="scripted", help="the model name served (default scripted)")
    args = parser.parse_args(argv)
    with ChatServer(models=[args.model], latency=args.latency) as server:
        print(server.url, flush=True)
        sys.stdin.read()  # until the parent closes it


if __name__ == "__main__":
    main()
