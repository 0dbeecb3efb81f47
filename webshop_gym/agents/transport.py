"""How a chat-completions request travels: the built-in HTTP/1.1 client, or the official ``openai`` client.

:class:`~webshop_gym.agents.openai.OpenAIPolicy` sends every request through a transport, awaited
on an event loop, and reads what comes back the same way whatever the transport:

* :class:`HTTPTransport` (the default, ``http_client="builtin"``): an asyncio HTTP/1.1 client with
  a pool of kept-alive connections per event loop, one request per connection at a time.  It
  costs about 0.1 ms of CPU per request where the ``openai`` client costs 1.3-2.2 ms (its
  request building, httpx and pydantic), which capped one process at 200-370 requests/s on two
  cores (docs/benchmarks.md, "Served evaluation").  It speaks what an OpenAI-compatible server
  answers: ``Content-Length``, chunked or read-to-close bodies, gzip/deflate, ``Connection:
  close``, 1xx interim answers (at most :data:`MAX_INTERIM`); ``https`` with the certificates of ``$SSL_CERT_FILE`` /
  ``$SSL_CERT_DIR``, else certifi's.  Redirects are not followed (the status is the turn's error).  An endpoint behind
  an HTTP proxy (``$HTTPS_PROXY`` / ``$HTTP_PROXY`` not bypassed by ``$NO_PROXY``) goes through
  the ``openai`` client instead, which reads those variables.  ``timeout`` is the deadline of a
  whole request (connecting, interim heads, the answer), not a bound on silence.  A kept-alive
  connection is reused only if the server has not closed it, and no more often than the server
  allows (:attr:`HTTPTransport.answers_per_connection`).
* :class:`OpenAITransport` (``http_client="openai"``, or a ``client`` handed to the policy): the
  official client's synchronous call, one worker thread per request in flight.

Both raise :class:`TransportError` for a request that got no answer (a refused or dropped
connection, a time-out), saying whether the request went out, and return a :class:`Reply` for every
answer, whatever its status: the policy decides what is retried, from the same fields, so a run
reads the same through either (tested: equal run files, faults and errors included).
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import ssl
import threading
import urllib.parse
import urllib.request
import weakref
import zlib
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["HTTP_CLIENTS", "MAX_BODY", "HTTPTransport", "LoopThread", "OpenAITransport", "Reply", "TransportError",
           "proxied"]

#: The transports a policy can use (``--http-client``).
HTTP_CLIENTS = ("builtin", "openai")
#: The largest response body read (bytes, after decompression); a longer one is a failed attempt.
MAX_BODY = 64 * 2**20
#: The largest status line and headers read (bytes).
MAX_HEAD = 64 * 2**10
#: The most interim (1xx) heads read before an answer's own head; more is a failed attempt.
MAX_INTERIM = 8


@dataclass
class Reply:
    """An HTTP answer: its status, its headers (lower-case names) and its body."""

    status: int
    headers: Any
    content: bytes


class TransportError(Exception):
    """A request that got no answer.

    Attributes:
        sent: whether the request went out (a server may have seen it); ``False`` when its
            connection could not be opened.
        timeout: whether it timed out (its deadline passed while connecting or reading the answer).
    """

    def __init__(self, message: str, sent: bool = True, timeout: bool = False):
        super().__init__(message)
        self.sent = sent
        self.timeout = timeout


def proxied(url: str) -> bool:
    """Whether the environment sends requests to ``url`` through a proxy (``*_PROXY``, ``NO_PROXY``)."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


# -- the built-in client ------------------------------------------------------------------------------


class HTTPTransport:
    """``POST {base_url}/chat/completions`` over kept-alive HTTP/1.1 connections (see the module docstring).

    Args:
        base_url: the API's root (``http://127.0.0.1:8000/v1``).
        api_key: sent as ``Authorization: Bearer KEY``.
        timeout: the deadline of one request, in seconds: opening its connection, the interim
            (1xx) heads, the answer's head and its whole body, all together.
        headers: more request headers.
    """

    def __init__(self, base_url: str, api_key: str, timeout: float, headers: dict[str, str] | None = None):
        parts = urllib.parse.urlsplit(base_url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if self.https else 80)
        self.timeout = float(timeout)
        path = parts.path.rstrip("/") + "/chat/completions" + (f"?{parts.query}" if parts.query else "")
        host = f"[{self.host}]" if ":" in self.host else self.host
        if parts.port is not None:
            host += f":{parts.port}"
        lines = [f"POST {path} HTTP/1.1", f"Host: {host}", "Accept: application/json",
                 "Accept-Encoding: gzip, deflate", "Content-Type: application/json",
                 f"Authorization: Bearer {api_key}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
        self._head = ("\r\n".join(lines) + "\r\nContent-Length: ").encode("latin-1", "replace")
        self._ssl: ssl.SSLContext | None = None
        self._idle: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> idle connections
        self._open: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> every connection
        self._lock = threading.Lock()
        #: Requests sent on one connection at most: learnt from the server, which may close its
        #: connections after so many answers (``Keep-Alive: max=N``, or a close right after an answer).
        self.answers_per_connection = 2**62

    def _context(self) -> ssl.SSLContext:
        """The TLS context: ``$SSL_CERT_FILE`` / ``$SSL_CERT_DIR`` when set, else certifi's bundle, else the system's."""
        if self._ssl is None:
            cafile, capath = os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None
            if cafile is None and capath is None:
                try:
                    import certifi

                    cafile = certifi.where()
                except ImportError:  # pragma: no cover - certifi comes with the openai client
                    pass
            self._ssl = ssl.create_default_context(cafile=cafile, capath=capath)
        return self._ssl

    async def post(self, body: dict) -> Reply:
        """Send one request (``body`` as JSON) on an idle connection of the running loop, or a new one.

        The request has :attr:`timeout` seconds in all, from now to the last byte of its answer.
        An idle connection is used only if the server has not closed it
        (:meth:`_Connection.reusable`) and it has answered fewer requests than the server allows
        on one connection (:attr:`answers_per_connection`).

        Raises:
            TransportError: no answer (see :class:`TransportError`).
        """
        data = encode(body)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        with self._lock:
            idle = self._idle.get(loop)
            if idle is None:
                idle = self._idle[loop] = deque()
                self._open[loop] = set()
        connection = None
        while idle:
            candidate = idle.pop()
            if candidate.answers < self.answers_per_connection and candidate.reusable():
                connection = candidate
                break
            candidate.close()
            self._open[loop].discard(candidate)
        if connection is None:
            connection = await self._connect(loop, deadline)
            self._open[loop].add(connection)
        try:
            return await connection.request(self._head + b"%d\r\n\r\n" % len(data) + data, deadline)
        finally:
            if connection.usable():
                idle.append(connection)
            else:
                self._open[loop].discard(connection)

    def learn(self, answers: int) -> None:
        """The server closes a connection after ``answers`` answers (it said so, or did so at once)."""
        if answers > 0:
            self.answers_per_connection = min(self.answers_per_connection, answers)

    async def _connect(self, loop, deadline: float) -> _Connection:
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(lambda: _Connection(self), self.host, self.port, ssl=self._context() if self.https else None,
                                       server_hostname=self.host if self.https else None),
                max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            raise TransportError("connect timed out", sent=False, timeout=True) from None
        except OSError as exc:
            raise TransportError(_os_error_text(exc), sent=False) from None
        return connection

    def close(self, loop=None) -> None:
        """Close the connections of ``loop`` (call it on that loop), or forget every loop's (``None``).

        A loop's connections are closed on that loop (its owner calls this before closing it);
        ``close()`` only drops the pool of loops that are gone or closed.
        """
        with self._lock:
            if loop is not None:
                for connection in self._open.pop(loop, set()):
                    connection.close()
                self._idle.pop(loop, None)
                return
            for each in list(self._open.keys()):
                if each.is_closed():
                    self._open.pop(each, None)
                    self._idle.pop(each, None)


def encode(body: dict) -> bytes:
    """``body`` as JSON in UTF-8 (orjson when installed: 1-2 µs where ``json`` takes 20-60 µs per prompt).

    What orjson refuses (a lone surrogate, a key that is no string, an integer past 64 bits) goes
    through ``json`` as the ``openai`` client would send it, or fails as it would.
    """
    if _orjson is not None:
        try:
            return _orjson.dumps(body)
        except TypeError:
            pass
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


try:  # optional: the [openai] extra installs it
    import orjson as _orjson
except ImportError:  # pragma: no cover - a client installed without the extra
    _orjson = None


def _os_error_text(exc: OSError) -> str:
    """An OS error as one line, e.g. ``[Errno 111] Connection refused`` (what httpx says too)."""
    if isinstance(exc, ssl.SSLError) or not isinstance(exc.errno, int):
        return " ".join(str(exc).split()) or type(exc).__name__
    return f"[Errno {exc.errno}] {os.strerror(exc.errno) if exc.errno > 0 else exc.strerror}"


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one request at a time, its answer parsed as the bytes arrive."""

    #: A server that closes an idle connection within this many seconds of its answer closes its
    #: connections after so many answers (an idle time-out is longer).
    PROMPT_CLOSE = 1.0

    def __init__(self, owner: HTTPTransport):
        self.owner = owner
        self.answers = 0  # answers received on this connection
        self.answered = 0.0  # when the last one was complete (the event loop's clock)
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.keep = True
        self.waiter: asyncio.Future | None = None
        self.buffer = bytearray()
        self.head: tuple[int, dict, str] | None = None  # status, headers, framing ("length" / "chunked" / "close")
        self.need = 0  # body bytes still expected ("length") or in the current chunk ("chunked")
        self.body = bytearray()
        self.got = 0  # bytes received for the current answer
        self.interim = 0  # interim (1xx) heads of the current answer
        self.timer: asyncio.TimerHandle | None = None

    # -- asyncio's callbacks --------------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():  # bytes nobody asked for: the connection is unusable
            self.keep = False
            self.close()
            return
        self.got += len(data)
        self.buffer += data
        try:
            self._parse()
        except TransportError as exc:
            self._fail(exc)

    def eof_received(self):
        self._closed_by_server()
        self.keep = False
        if self.waiter is not None and not self.waiter.done():
            if self.head is not None and self.head[2] == "close":
                self._finish()
            else:
                if self.got == 0:  # closed as the request crossed it: so many answers are the most it gives
                    self.owner.learn(self.answers)
                self._fail(self._cut_short())
        return False  # close the transport

    def connection_lost(self, exc) -> None:
        if self.keep:
            self._closed_by_server()
        self.closed = True
        self.keep = False
        if self.waiter is not None and not self.waiter.done():
            if exc is not None and not isinstance(exc, ssl.SSLError):
                self._fail(TransportError(_os_error_text(exc) if isinstance(exc, OSError) else str(exc)))
            elif self.head is not None and self.head[2] == "close" and exc is None:
                self._finish()
            else:
                self._fail(self._cut_short() if exc is None else TransportError(_os_error_text(exc)))

    # -- one request ---------------------------------------------------------------------------------------

    def _closed_by_server(self) -> None:
        """The server closed the connection: right after an answer, it closes connections after so many."""
        if self.keep and self.answers and (self.waiter is None or self.waiter.done()) and self.transport is not None:
            loop = asyncio.get_running_loop()
            if loop.time() - self.answered < self.PROMPT_CLOSE:
                self.owner.learn(self.answers)

    def usable(self) -> bool:
        return self.keep and not self.closed and self.transport is not None and not self.transport.is_closing()

    def reusable(self) -> bool:
        """Usable, and its socket has nothing to read.

        A server's close (or stray bytes) that the event loop has not handled yet makes an idle
        socket readable.
        """
        if not self.usable():
            return False
        sock = self.transport.get_extra_info("socket")
        if sock is None:  # pragma: no cover - every socket transport has one
            return True
        try:
            readable, _, _ = select.select([sock.fileno()], [], [], 0)
        except (OSError, ValueError):  # pragma: no cover - closed meanwhile
            return False
        return not readable

    async def request(self, data: bytes, deadline: float) -> Reply:
        loop = asyncio.get_running_loop()
        self.waiter = loop.create_future()
        self.buffer.clear()
        self.body = bytearray()
        self.head = None
        self.got = 0
        self.interim = 0
        self.timer = loop.call_at(deadline, self._time_out)
        try:
            self.transport.write(data)
            return await self.waiter
        except asyncio.CancelledError:
            self.keep = False
            self.close()
            raise
        finally:
            self.timer.cancel()
            self.waiter = None

    def _time_out(self) -> None:
        """The request's deadline: whatever has come of the answer, it is too late."""
        if self.waiter is None or self.waiter.done():
            return
        self._fail(TransportError("read timed out", timeout=True))

    def _fail(self, exc: TransportError) -> None:
        self.keep = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        self.close()

    def _finish(self) -> None:
        status, headers, _ = self.head
        body = bytes(self.body)
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            body = _decompress(body, encoding)
        if headers.get("connection", "").strip().lower() == "close":
            self.keep = False
        self.answers += 1
        self.answered = self.waiter.get_loop().time()
        limit = _keep_alive_max(headers.get("keep-alive", ""))
        if limit is not None:
            self.owner.learn(self.answers + limit)
        self.waiter.set_result(Reply(status, headers, body))
        if not self.keep:
            self.close()

    def _cut_short(self) -> TransportError:
        if self.got == 0:
            return TransportError("Server disconnected without sending a response.")
        return TransportError("peer closed connection without sending complete message body")

    def close(self) -> None:
        """Close at once: the connection is idle, done with or failed (nothing to flush, no TLS goodbye awaited)."""
        self.keep = False
        if self.transport is not None:
            self.transport.abort()

    # -- the answer's bytes ------------------------------------------------------------------------------

    def _parse(self) -> None:
        while True:
            if self.head is None:
                end = self.buffer.find(b"\r\n\r\n")
                if end > MAX_HEAD or (end < 0 and len(self.buffer) > MAX_HEAD):
                    raise TransportError(f"the answer's headers are over {MAX_HEAD:,} bytes")
                if end < 0:
                    return
                status, headers, version = _parse_head(bytes(self.buffer[:end]))
                del self.buffer[: end + 4]
                if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
                    self.interim += 1
                    if self.interim > MAX_INTERIM:
                        raise TransportError(f"the answer sent over {MAX_INTERIM} interim (1xx) heads")
                    continue
                if version == "HTTP/1.0" and headers.get("connection", "").strip().lower() != "keep-alive":
                    self.keep = False
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    self.head, self.need = (status, headers, "chunked"), -1
                elif "content-length" in headers:
                    try:
                        self.need = int(headers["content-length"])
                    except ValueError:
                        raise TransportError("the answer has a malformed Content-Length") from None
                    if not 0 <= self.need <= MAX_BODY:
                        raise TransportError(f"the answer's body is over {MAX_BODY:,} bytes")
                    self.head = (status, headers, "length")
                elif status in (204, 304):
                    self.head, self.need = (status, headers, "length"), 0
                else:
                    self.head, self.keep = (status, headers, "close"), False
            framing = self.head[2]
            if framing == "length":
                take = min(self.need, len(self.buffer))
                self.body += self.buffer[:take]
                del self.buffer[:take]
                self.need -= take
                if self.need == 0:
                    self._finish()
                return
            if framing == "close":
                self.body += self.buffer
                self.buffer.clear()
                if len(self.body) > MAX_BODY:
                    raise TransportError(f"the answer's body is over {MAX_BODY:,} bytes")
                return
            if not self._chunks():
                return
            self._finish()
            return

    def _chunks(self) -> bool:
        """Read chunks from the buffer; ``True`` once the last chunk and the trailers are in."""
        while True:
            if self.need == -1:  # a chunk's size line
                end = self.buffer.find(b"\r\n")
                if end < 0:
                    if len(self.buffer) > MAX_HEAD:
                        raise TransportError("the answer has a malformed chunk")
                    return False
                try:
                    size = int(bytes(self.buffer[:end]).split(b";")[0].strip(), 16)
                except ValueError:
                    raise TransportError("the answer has a malformed chunk") from None
                del self.buffer[: end + 2]
                if size == 0:
                    self.need = -2
                else:
                    if len(self.body) + size > MAX_BODY:
                        raise TransportError(f"the answer's body is over {MAX_BODY:,} bytes")
                    self.need = size + 2  # the chunk and its CRLF
            if self.need == -2:  # trailers, up to an empty line
                end = self.buffer.find(b"\r\n")
                if end < 0:
                    return False
                del self.buffer[: end + 2]
                if end == 0:
                    return True
                continue
            take = min(self.need, len(self.buffer))
            self.body += self.buffer[:take]
            del self.buffer[:take]
            self.need -= take
            if self.need:
                return False
            del self.body[-2:]  # the chunk's CRLF
            self.need = -1


def _keep_alive_max(value: str) -> int | None:
    """``max`` of a ``Keep-Alive`` header (requests the connection may still carry), ``None`` when absent."""
    for part in value.split(","):
        name, _, number = part.partition("=")
        if name.strip().lower() == "max":
            try:
                return max(0, int(number.strip()))
            except ValueError:
                return None
    return None


def _parse_head(head: bytes) -> tuple[int, dict, str]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise TransportError(f"the answer is not HTTP ({lines[0][:60]!r})")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return int(parts[1]), headers, parts[0]


def _decompress(body: bytes, encoding: str) -> bytes:
    wbits = 16 + zlib.MAX_WBITS if "gzip" in encoding else zlib.MAX_WBITS
    try:
        out = zlib.decompressobj(wbits)
        data = out.decompress(body, MAX_BODY + 1)
    except zlib.error:
        if encoding != "deflate":
            raise TransportError("the answer's gzip body is corrupt") from None
        try:  # raw deflate, as some servers send it
            out = zlib.decompressobj(-zlib.MAX_WBITS)
            data = out.decompress(body, MAX_BODY + 1)
        except zlib.error:
            raise TransportError("the answer's deflate body is corrupt") from None
    if len(data) > MAX_BODY:
        raise TransportError(f"the answer's body is over {MAX_BODY:,} bytes")
    return data


# -- an event loop for synchronous callers ------------------------------------------------------------


class LoopThread:
    """An event loop in a daemon thread, started on first use: :meth:`run` runs a coroutine there and waits."""

    def __init__(self, name: str):
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, coroutine):
        """Run ``coroutine`` on the thread's loop; return its result (or raise its exception)."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name=self.name, daemon=True)
                self._thread.start()
            loop = self._loop
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    def close(self, before=None) -> None:
        """Cancel what still runs there, await ``before()`` (e.g. closing connections), stop and close the loop."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None:
            return

        async def finish() -> None:
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if before is not None:
                await before()
            for _ in range(3):  # the closed connections' last callbacks
                await asyncio.sleep(0)

        try:
            asyncio.run_coroutine_threadsafe(finish(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            if not thread.is_alive():
                loop.close()


# -- the openai client --------------------------------------------------------------------------------


class OpenAITransport:
    """The official client's call in a worker thread (one per request in flight), read as a :class:`Reply`.

    ``timeout`` (the client's own when not given) is the deadline of each request, awaited here:
    httpx bounds each read, not the request, so past the deadline the request is given up (a
    time-out) and its worker thread ends with httpx's own time-out or the server's answer.
    """

    def __init__(self, client, workers: int, timeout: float | None = None):
        self.client = client
        self.workers = int(workers)
        if timeout is None:
            found = getattr(client, "timeout", None)
            timeout = found if isinstance(found, (int, float)) else None
        self.timeout = None if timeout is None else float(timeout)
        self._pool = None
        self._lock = threading.Lock()

    async def post(self, body: dict) -> Reply:
        """Send one request (``body`` as the client's ``extra_body``) from a worker thread; return its answer."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                # twice the requests in flight: threads of requests given up at their deadline may
                # still wait for httpx's own time-out
                self._pool = ThreadPoolExecutor(2 * self.workers, thread_name_prefix="webshop-openai")
        future = loop.run_in_executor(self._pool, self._send, body)
        if self.timeout is None:
            return await future
        try:
            return await asyncio.wait_for(future, self.timeout)
        except asyncio.TimeoutError:
            raise TransportError("timed out", timeout=True) from None

    def _send(self, body: dict) -> Reply:
        import openai

        body = dict(body)
        # The body goes as ``extra_body`` (merged last, as sent): the client's type-directed
        # transform of the messages would cost more CPU than everything else of a turn together.
        model = body.pop("model")
        try:
            raw = self.client.chat.completions.with_raw_response.create(model=model, messages=[], extra_body=body)
        except openai.APITimeoutError as exc:
            raise TransportError("timed out", sent=not _never_sent(exc), timeout=True) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise TransportError(" ".join(str(cause).split()) or type(cause).__name__, sent=not _never_sent(exc)) from None
        except openai.APIStatusError as exc:
            response = exc.response
            return Reply(exc.status_code, response.headers, response.content)
        response = raw.http_response
        return Reply(response.status_code, response.headers, response.content)

    def close(self, loop=None) -> None:
        """Stop the worker threads (``loop`` given: nothing to close, the client's connections are its own)."""
        if loop is None and self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


#: The transport errors (httpx's, by class name: the ``openai`` client may bring its own copy of
#: httpx) raised before a request went out: no server saw it.
_UNSENT = frozenset({"ConnectError", "ConnectTimeout", "PoolTimeout"})


def _never_sent(exc: BaseException) -> bool:
    """Whether a connection error or time-out happened before the request was sent."""
    cause = exc.__cause__
    return cause is not None and any(cls.__name__ in _UNSENT for cls in type(cause).__mro__)
