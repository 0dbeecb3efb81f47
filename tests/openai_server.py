"""A local OpenAI-compatible chat server for tests and benchmarks (an event loop thread on 127.0.0.1).

It answers ``GET /v1/models`` and ``POST /v1/chat/completions`` (streamed as server-sent events when
the request asks for ``"stream": true``, as verifiers' interception proxy does) with a scripted shopping policy
that reads the prompt as a model would (the instruction and the admissible actions of the last
user turn): search the instruction, open the first result, buy.  It can wait a fixed latency
per request, inject faults at set rates (429 with ``Retry-After``, 500, a timeout, a malformed
body, a dropped connection), fail every request whose prompt contains given text, and records
what it received and how many requests overlapped.

It is one asyncio event loop (HTTP/1.1 with kept-alive connections, parsed by hand): benchmarks
run it on the same cores as the evaluation they measure, so its own CPU must stay small (about
0.1 ms per request, where a thread per connection with ``http.server`` cost 0.3-0.6 ms and
hundreds of threads contending for the interpreter lock; docs/benchmarks.md).

>>> with ChatServer(latency=0.0) as server:  # doctest: +SKIP
...     server.url  # 'http://127.0.0.1:PORT/v1'
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from http.client import responses

import numpy as np

FAULTS = ("429", "500", "timeout", "malformed", "drop")


class ToolCalls:
    """An answer (of ``ChatServer``'s ``answer``) that calls tools: ``ToolCalls([("search", {"query": "x"})])``."""

    def __init__(self, calls: list[tuple[str, dict]], content: str | None = None):
        self.calls = calls
        self.content = content


class Status:
    """An answer (of ``ChatServer``'s ``answer``) that is an error: ``Status(400, {"object": "error", "message": ...})``."""

    def __init__(self, status: int, body: dict):
        self.status = status
        self.body = body


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
            or bytes: a raw response body, or :class:`ToolCalls`, or :class:`Status`: an error answer).
        edit: called with each successful reply (the JSON object) before it is sent; may change it.
        seed: seed of the fault draws.
    """

    def __init__(self, models=("scripted",), latency: float = 0.0, faults: dict | None = None,
                 fail_when: str | Sequence[str] | None = None, retry_after: str = "0.01", hang: float = 2.0, usage: bool = True,
                 reasoning: str | None = None, answer: Callable | None = None, edit: Callable | None = None,
                 seed: int = 0):
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
        self.edit = edit
        self.rng = np.random.default_rng(seed)
        self.lock = threading.Lock()
        self.requests: list[dict] = []  # every chat request received (body)
        self.keys: list[str | None] = []  # the Authorization header of each
        self.responses: list[dict] = []  # every successful answer: content and usage sent
        self.injected: dict[str, int] = dict.fromkeys(FAULTS, 0)
        self.in_flight = 0
        self.max_in_flight = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.server: asyncio.Server | None = None
        self.thread: threading.Thread | None = None
        self.connections: set[_Connection] = set()
        self.port = 0

    # -- life cycle -------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The API root (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ChatServer:
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self.loop)
            # a backlog of 2048: a small one drops connections under load (the client's connect then times out)
            self.server = self.loop.run_until_complete(
                self.loop.create_server(lambda: _Connection(self), "127.0.0.1", 0, backlog=2048))
            self.port = self.server.sockets[0].getsockname()[1]
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, name="chat-server", daemon=True)
        self.thread.start()
        started.wait(30)
        return self

    def stop(self) -> None:
        """Stop serving: close every connection, end the waits of latency and timeout faults, stop the loop."""
        if self.loop is None:
            return

        async def shutdown() -> None:
            self.server.close()
            await asyncio.sleep(0)  # connections accepted just now: their connection_made
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for connection in list(self.connections):
                connection.close()
            for _ in range(3):  # the closed transports' last callbacks
                await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()
        self.loop = None

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
        if self.fail_when:
            prompt = json.dumps(body.get("messages", []))
            if any(text in prompt for text in self.fail_when):
                return "500"
        if not self.faults:
            return None
        with self.lock:
            draw = float(self.rng.random())
        for name in FAULTS:
            rate = self.faults.get(name, 0.0)
            if draw < rate:
                return name
            draw -= rate
        return None

    # -- answering ------------------------------------------------------------------------------------------

    async def handle(self, connection: _Connection, method: str, path: str, headers: dict, body: bytes) -> None:
        path = path.rstrip("/")
        if method == "GET":
            if path == "/v1/models":
                connection.json(200, {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "test"}
                                                                 for m in self.models]})
            else:
                connection.json(404, {"error": {"message": "not found"}})
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            connection.json(400, {"error": {"message": "the body is not JSON"}})
            return
        if path != "/v1/chat/completions":
            connection.json(404, {"error": {"message": "not found"}})
            return
        with self.lock:
            self.requests.append(request)
            self.keys.append(headers.get("authorization"))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self._chat(connection, request)
        finally:
            with self.lock:
                self.in_flight -= 1

    async def _chat(self, connection: _Connection, body: dict) -> None:
        if body.get("model") not in self.models:
            connection.json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
            return
        fault = self._fault(body)
        if fault is not None:
            with self.lock:
                self.injected[fault] += 1
        if fault == "429":
            connection.json(429, {"error": {"message": "rate limited"}}, {"Retry-After": self.retry_after})
            return
        if fault == "500":
            connection.json(500, {"error": {"message": "internal error"}})
            return
        if fault == "drop":
            connection.close()
            return
        if fault == "timeout":  # the client gave up long before: nothing is sent
            await asyncio.sleep(self.hang)
            connection.close()
            return
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault == "malformed":
            connection.send(200, b'{"id": "x", "choices": [ {"message": ')
            return
        messages = body.get("messages", [])
        fmt = "react" if "Thought:" in str(messages[0].get("content", "")) else "think-answer"
        content = self.answer(messages) if self.answer else scripted_answer(messages, fmt)
        if isinstance(content, bytes):  # a raw response body, sent as it is
            connection.send(200, content)
            return
        if isinstance(content, Status):
            connection.json(content.status, content.body)
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
        if self.usage:
            completion = len(str(content).split()) if content else 0
            usage = {"prompt_tokens": _count_tokens(messages), "completion_tokens": completion,
                     "total_tokens": _count_tokens(messages) + completion}
        message = {"role": "assistant", "content": content}
        if tool_calls is not None:
            message["tool_calls"] = [{"id": f"call_{len(messages)}_{k}", "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(arguments)}}
                                     for k, (name, arguments) in enumerate(tool_calls)]
        if self.reasoning is not None:
            message["reasoning_content"] = self.reasoning
        reply = {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                 "model": body.get("model"), "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        if usage is not None:
            reply["usage"] = usage
        with self.lock:
            self.responses.append({"content": content, "usage": usage})
        if self.edit is not None:
            reply = self.edit(reply) or reply
        if body.get("stream"):
            connection.stream(_events(reply, content, usage if (body.get("stream_options") or {}).get("include_usage")
                                      else None, self.reasoning))
        else:
            connection.json(200, reply)


def _events(reply: dict, content, usage: dict | None, reasoning: str | None) -> list[dict]:
    """The answer as server-sent events, as vLLM and OpenAI stream it: a role chunk, the content in a
    few pieces, each tool call (its id and name, then its arguments in pieces), a chunk with the
    finish reason, the usage chunk when asked for."""
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
    if reasoning is not None:
        deltas.insert(1, {"reasoning_content": reasoning})
    events = [head | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    events.append(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage is not None:
        events.append(head | {"choices": [], "usage": usage})
    return events


class _Connection(asyncio.Protocol):
    """One client connection: requests read one at a time (kept alive), each answered by a task."""

    def __init__(self, owner: ChatServer):
        self.owner = owner
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False  # a request is being answered: later bytes wait in the buffer
        self.keep = True

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.owner.connections.add(self)

    def connection_lost(self, exc) -> None:
        self.owner.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    def _next(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length") or 0)
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        method, path, version = (lines[0].split(" ") + ["", "", ""])[:3]
        if version == "HTTP/1.0" or headers.get("connection", "").lower() == "close":
            self.keep = False
        self.busy = True
        task = asyncio.get_running_loop().create_task(self.owner.handle(self, method, path, headers, body))
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self.busy = False
        if not task.cancelled() and task.exception() is not None:
            self.json(500, {"error": {"message": f"server error: {task.exception()!r}"}})
        if not self.keep:
            self.close()
        elif self.transport is not None and not self.transport.is_closing():
            self._next()

    def send(self, status: int, payload: bytes, headers: dict | None = None, kind: str = "application/json") -> None:
        if self.transport is None or self.transport.is_closing():
            return
        head = [f"HTTP/1.1 {status} {responses.get(status, '')}", f"Content-Type: {kind}",
                f"Content-Length: {len(payload)}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
        self.transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)

    def json(self, status: int, obj, headers: dict | None = None) -> None:
        self.send(status, json.dumps(obj).encode(), headers)

    def stream(self, events: list[dict]) -> None:
        """Server-sent events, then the end of the connection (the body ends when it closes)."""
        if self.transport is None or self.transport.is_closing():
            return
        self.keep = False
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
        self.transport.write(head.encode() + b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)
                             + b"data: [DONE]\n\n")

    def close(self) -> None:
        self.keep = False
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()


def _count_tokens(messages: list[dict]) -> int:
    return sum(len(str(m.get("content", "")).split()) + 4 for m in messages)


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
