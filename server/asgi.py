"""The ASGI front of ``webshop-gym serve``: the AgentGym API batched, everything else to Flask.

``webshop-gym serve`` runs this app under uvicorn (one event loop).  The AgentGym API's routes
(:data:`~webshop_gym.server.agentgym.ROUTES`, with their methods) are answered here: the request
is validated on the event loop by the same functions the Flask blueprint uses, and the work goes
to the engine thread as a job of a :class:`Batcher`.  While the engine thread runs one batch,
the requests that arrive queue up; all of them then go to the engine thread as the next batch,
and every ``POST /step`` of that batch (one per env) is one call of the shared engine, as the
OpenEnv server and the vector env step.  An env's answers do not depend on who shares its batch.

Every other request (the play UI, the reference site, the run viewer, and the AgentGym API's
own 404/405/413 answers) goes to the Flask app, run on a pool of ``threads`` threads through a
small WSGI bridge; its responses stream back chunk by chunk, each chunk sent before the next
is produced.

Nothing here is imported unless ``serve`` runs without ``--dev``; uvicorn comes with the
``server`` extra.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs

from webshop_gym.server import HEADERS
from webshop_gym.server.agentgym import (
    EXTENSION,
    ROUTES,
    AgentGymEnvs,
    Step,
    encode,
    error_answer,
)

from webshop_gym.utils.body_limit import TOO_LARGE, declared_length, read_body
from webshop_gym.utils.serving import serve_until_stopped

__all__ = ["Batcher", "Front", "Listener"]

PREFIX = "/agentgym"
SERVER = [(b"Server", b"webshop-gym")]
# Header names keep the casing Flask and waitress send (HTTP says case does not matter; some
# scrapers look headers up in a plain dict).
_LOG = logging.getLogger("webshop_gym.server")


class Batcher:
    """The AgentGym jobs of an event loop, run on the engine thread one batch at a time.

    Args:
        envs: the AgentGym envs.
        store: the session store whose engine thread runs the jobs.
    """

    def __init__(self, envs: AgentGymEnvs, store):
        self.envs = envs
        self.store = store
        self._pending: list[tuple[Any, asyncio.Future]] = []
        self._busy = False

    async def run(self, job) -> Any:
        """The answer of ``job`` (a :class:`~webshop_gym.server.agentgym.Step` or a call), batched."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((job, future))
        if not self._busy:
            self._busy = True
            loop.call_soon(self._flush)
        return await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            self._busy = False
            return
        done = asyncio.wrap_future(self.store.submit(self._execute, [job for job, _ in batch]))
        done.add_done_callback(lambda outcome: self._resolve(batch, outcome))

    def _resolve(self, batch: list, outcome: asyncio.Future) -> None:
        error = RuntimeError("the server is stopping") if outcome.cancelled() else outcome.exception()
        results = [error] * len(batch) if error is not None else outcome.result()
        for (_, future), result in zip(batch, results):
            if future.done():  # the request was cancelled (client gone)
                continue
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
        self._flush()  # what arrived meanwhile is the next batch

    def _execute(self, jobs: list) -> list:
        """On the engine thread: every job in order, consecutive steps of distinct envs as one batch."""
        out: list = [None] * len(jobs)
        group: list[int] = []
        seen: set[int] = set()

        def step_group() -> None:
            answers = self.envs.step_many([(jobs[k].env_idx, jobs[k].action) for k in group])
            for k, answer in zip(group, answers):
                out[k] = answer
            group.clear()
            seen.clear()

        for k, job in enumerate(jobs):
            if isinstance(job, Step):
                if job.env_idx in seen:
                    step_group()
                group.append(k)
                seen.add(job.env_idx)
                continue
            if group:
                step_group()
            try:
                out[k] = job()
            except Exception as exc:  # the request's own error, answered by the route
                out[k] = exc
        if group:
            step_group()
        return out


class Front:
    """The ASGI app of ``serve``: the AgentGym API here (batched), the rest in the Flask app.

    Args:
        flask_app: the app of :func:`~webshop_gym.server.create_app`.
        threads: threads that run Flask requests.
    """

    def __init__(self, flask_app, threads: int = 8):
        self.flask = flask_app
        self.envs: AgentGymEnvs = flask_app.extensions[EXTENSION]
        self.batcher = Batcher(self.envs, flask_app.extensions["webshop_gym"])
        self.limit = int(flask_app.config.get("MAX_CONTENT_LENGTH") or 64 * 1024)
        self.headers = [(k.encode("latin-1"), v.encode("latin-1"))
                        for k, v in flask_app.extensions.get(HEADERS, {}).items()]
        self.routes = {(method, PREFIX + route): prepare for route, (method, prepare) in ROUTES.items()}
        self.executor = ThreadPoolExecutor(max_workers=int(threads), thread_name_prefix="webshop-wsgi")

    def close(self) -> None:
        """Stop the Flask threads: queued requests are dropped, running ones end on their own.

        Not waiting: once the event loop has stopped, a request that was streaming its answer
        could wait for it forever (each chunk waits until the loop has sent it, at most 120 s).
        """
        self.executor.shutdown(wait=False, cancel_futures=True)

    async def __call__(self, scope, receive, send) -> None:
        """Answer one ASGI connection scope (HTTP only).

        A body over the limit (``MAX_CONTENT_LENGTH``), declared or counted as its chunks arrive,
        is not read further: Flask answers 413 for the route (JSON on the AgentGym API, a page
        elsewhere) from the length it is handed.
        """
        if scope["type"] != "http":  # no WebSocket routes; lifespan is off
            return
        declared = declared_length(scope)
        if declared is not None and declared > self.limit:
            return await self._wsgi(scope, b"", send, too_large=declared)
        raw = await read_body(receive, self.limit)
        if raw is None:  # the client left
            return
        if raw is TOO_LARGE:
            return await self._wsgi(scope, b"", send, too_large=self.limit + 1)
        prepare = self.routes.get((scope["method"], scope["path"]))
        if prepare is not None:
            return await self._agentgym(prepare, scope, raw, send)
        await self._wsgi(scope, raw, send)

    # -- the AgentGym API --------------------------------------------------------------------------

    async def _agentgym(self, prepare, scope, raw: bytes, send) -> None:
        status, headers = 200, None
        try:
            query = parse_qs(scope["query_string"].decode("latin-1"), keep_blank_values=True)
            job = prepare(self.envs, lambda name: query[name][0] if name in query else None, raw)
            value = await self.batcher.run(job)
        except Exception as exc:
            answer = error_answer(self.envs, exc)
            if answer is None:
                _LOG.error("unhandled error in %s %s", scope["method"], scope["path"], exc_info=exc)
                answer = (500, "Something went wrong on the server; the error has been logged.", None)
            status, detail, headers = answer
            value = {"detail": detail}
        body = encode(value)
        out = [(b"Content-Type", b"application/json"), (b"Content-Length", str(len(body)).encode()),
               *SERVER, *self.headers]
        out += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": body})

    # -- Flask, through WSGI ----------------------------------------------------------------------

    async def _wsgi(self, scope, raw: bytes, send, too_large: int | None = None) -> None:
        environ = _environ(scope, raw)
        if too_large is not None:  # the app's body limit answers 413 from this length (server/__init__.py)
            environ["CONTENT_LENGTH"] = str(too_large)
            environ.pop("HTTP_TRANSFER_ENCODING", None)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.executor, self._call_flask, loop, environ, send)

    def _call_flask(self, loop: asyncio.AbstractEventLoop, environ: dict, send) -> None:
        """On a Flask thread: run the request and send each chunk (waiting until it is sent)."""
        started: list = []

        def start_response(status: str, headers, exc_info=None):
            started[:] = [int(status.split(" ", 1)[0]), headers]

        def emit(message: dict) -> None:
            asyncio.run_coroutine_threadsafe(send(message), loop).result(timeout=120)

        result = self.flask(environ, start_response)
        try:
            head_sent = False
            for chunk in result:
                if not chunk:
                    continue
                if not head_sent:
                    emit(_start(started))
                    head_sent = True
                emit({"type": "http.response.body", "body": bytes(chunk), "more_body": True})
            if not head_sent:
                emit(_start(started))
            emit({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()


def _start(started: list) -> dict:
    status, headers = started
    out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if not any(k.lower() == b"server" for k, _ in out):
        out += SERVER
    return {"type": "http.response.start", "status": status, "headers": out}


def _environ(scope, body: bytes) -> dict:
    """The WSGI environ of an ASGI request (PEP 3333: strings as latin-1)."""
    import io

    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client")
    environ = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", "").encode("utf-8").decode("latin-1"),
        "PATH_INFO": scope["path"].encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or 80),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": client[0] if client else "",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for name, value in scope["headers"]:
        key = name.decode("latin-1").upper().replace("-", "_")
        if key not in ("CONTENT_LENGTH", "CONTENT_TYPE"):
            key = "HTTP_" + key
        text = value.decode("latin-1")
        environ[key] = f"{environ[key]},{text}" if key in environ else text
    return environ


class Listener:
    """uvicorn serving a :class:`Front`, bound to a port first (``port=0``: a free one, see :attr:`port`).

    Args:
        front: the app.
        host: address to bind.
        port: port (0: any free port).

    Raises:
        OSError: the address cannot be bound.
    """

    def __init__(self, front: Front, host: str, port: int):
        import uvicorn

        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        self.socket = socket.socket(family, kind, proto)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
            self.socket.listen(2048)
        except OSError:
            self.socket.close()
            raise
        self.port = int(self.socket.getsockname()[1])
        self.front = front
        # keep-alive 120 s: agents often think longer than uvicorn's default 5 s between steps.
        config = uvicorn.Config(front, log_level="warning", access_log=False, lifespan="off", server_header=False,
                                backlog=2048, timeout_keep_alive=120, timeout_graceful_shutdown=5,
                                limit_concurrency=4096)
        self.server = uvicorn.Server(config)

    def serve(self) -> int | None:
        """Serve until Ctrl+C or SIGTERM; return the signal that stopped the server (None: stopped otherwise)."""
        return serve_until_stopped(self.server, sockets=[self.socket])

    def close(self) -> None:
        """Release the socket and the Flask threads."""
        self.socket.close()
        self.front.close()
