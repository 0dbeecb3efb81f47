"""The OpenEnv server of WebShop: OpenEnv's own FastAPI routes over one shared engine.

Routes are OpenEnv's (``openenv.core.env_server.HTTPEnvServer.register_routes``): ``/ws`` (the
WebSocket session every OpenEnv client uses: ``reset``, ``step``, ``state``, ``close`` frames),
``/health``, ``/schema``, ``/metadata``, the stateless ``/reset``, ``/step`` and ``/state``, and
``/mcp``.  At most ``max_envs`` sessions live at once (OpenEnv answers one more with a
``CAPACITY_REACHED`` error frame), and sessions idle for ``idle_timeout`` seconds are evicted by
OpenEnv's reaper, which hands their slot back.

Three things are added to OpenEnv 0.10's server here:

* **MCP tools.**  ``search`` and ``click`` are OpenEnv MCP tools of every session (RFC 003): the
  session WebSocket takes ``list_tools``/``call_tool`` step frames (the environment answers them,
  :mod:`.environment`), and ``POST /mcp`` answers JSON-RPC ``tools/list`` and ``tools/call`` on a
  session (``params.session_id``, from ``openenv/session/create``), which is how OpenEnv's
  ``MCPToolClient`` calls tools.  OpenEnv routes ``/mcp`` tool requests to an environment only when
  its action class is one of OpenEnv's MCP actions, so :class:`_McpTools` answers them here and
  passes every other ``/mcp`` request (sessions) on to OpenEnv.

* **an evicted session's socket is closed.**  OpenEnv's reaper closes the environment of an
  idle session but leaves its WebSocket open, blocked in a read, so connections and file
  descriptors would grow by up to ``max_envs`` every idle timeout with clients that drop
  sessions without closing them.  :class:`_SessionServer` remembers which connection created
  each session and, when the reaper destroys one, sends the client an error frame saying why
  and closes the socket (code 1000); the client's later frames never reach the server.
* **every error body is strict JSON.**  FastAPI renders a 422 that echoes ``1e400`` or ``NaN``
  with Python's ``json``, which refuses it: a 500.  Validation errors, HTTP errors and our own
  errors are written by :func:`webshop_gym.utils.strict_json.dumps` instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import os
import socket
from typing import TYPE_CHECKING

from webshop_gym.error import DependencyNotInstalled, Error, InvalidArgument
from webshop_gym.utils.body_limit import BodyLimit
from webshop_gym.utils.checks import check_int
from webshop_gym.utils.heap import freeze_loaded
from webshop_gym.utils.serving import serve_until_stopped
from webshop_gym.utils.strict_json import dumps
from webshop_gym.utils.surrogates import clean_value, may_hold_surrogates

if TYPE_CHECKING:
    from webshop_gym.shop import Shop

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_MAX_ENVS", "MAX_BODY_BYTES", "MAX_ENVS", "MAX_FRAME_BYTES", "Listener",
           "create_app", "serve"]

DEFAULT_MAX_ENVS = 256
MAX_ENVS = 8192
"""Upper bound of ``--max-envs`` (an engine slot is a few hundred bytes; the cap bounds the threads OpenEnv keeps per session)."""
DEFAULT_IDLE_TIMEOUT = 600.0
MAX_FRAME_BYTES = 1 << 20
"""Largest WebSocket message a client may send (1 MiB; the largest valid frame, a step with an
action of :data:`~webshop_gym.core.actions.MAX_ACTION_LENGTH` characters, each written as a
six-character JSON escape, is 0.6 MB).  A larger one closes the connection with code 1009 (message too big); it
bounds what one connection can make the server hold."""
MAX_BODY_BYTES = MAX_FRAME_BYTES
"""Largest HTTP request body (``POST /mcp``, ``/reset``, ``/step``, every route): 1 MiB, as a
WebSocket message.  A larger one is answered ``413`` with ``{"detail": ...}``, before its body is
read when its ``Content-Length`` says so, else at the chunk that passes the limit."""


def create_app(shop: Shop | str | os.PathLike | None = None, *, goals: str | os.PathLike | None = None,
               human_goals: bool = False, price_seed: int = 0, max_envs: int = DEFAULT_MAX_ENVS,
               max_steps: int | None = 15, idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
               observation_mode: str = "text", show_attrs: bool = False, seed_goals: bool = False,
               warm_up: bool = True, progress: bool = False):
    """Return the FastAPI app serving WebShop over OpenEnv's protocol.

    Args:
        shop: a loaded :class:`~webshop_gym.shop.Shop`, a shop directory in the reference format,
            or ``None`` for the embedded shop.
        goals: a frozen goal-set file (when ``shop`` is not loaded yet).
        human_goals: human instructions instead of synthetic goals (when ``shop`` is not loaded yet).
        price_seed: seed of product prices and price caps (when ``shop`` is not loaded yet).
        max_envs: WebSocket sessions alive at once (1 to :data:`MAX_ENVS`).
        max_steps: step cap per episode (``None``: none).
        idle_timeout: seconds after which an idle session is evicted and its socket closed (``None``: never).
        observation_mode: ``text`` (default), ``text_rich``, ``html`` or ``url``.
        show_attrs: show the Attributes tab on item pages.
        seed_goals: ``reset(seed=s)`` plays goal ``s`` (see :class:`~webshop_gym.integrations.openenv.environment.SlotPool`).
        warm_up: play a few actions before serving (compiles the kernels).
        progress: show progress bars while a shop is compiled for the first time.

    Returns:
        The app; ``app.state.webshop_pool`` is the :class:`~webshop_gym.integrations.openenv.environment.SlotPool`.
    """
    try:
        from openenv.core.env_server.types import ConcurrencyConfig
    except ImportError as exc:

        raise DependencyNotInstalled(
            f"the OpenEnv server needs OpenEnv ({exc}): pip install 'webshop-gym[openenv]'") from exc
    from fastapi import FastAPI
    from fastapi.encoders import jsonable_encoder
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    from webshop_gym import __version__
    from webshop_gym.shop import Shop, load_shop

    from .environment import NoFreeSlot, SlotPool, WebShopEnvironment, closed_message
    from .models import WebShopAction, WebShopObservation, WebShopState

    max_envs = check_int("max_envs", max_envs, low=1, high=MAX_ENVS)
    if idle_timeout is not None and (isinstance(idle_timeout, bool) or not isinstance(idle_timeout, int | float)
                                     or not 0 < idle_timeout < float("inf")):
        raise InvalidArgument(f"idle_timeout must be a number of seconds > 0 or None, got {idle_timeout!r}")
    if not isinstance(shop, Shop):
        shop = load_shop(shop, goals=goals, human_goals=human_goals, seed=price_seed, progress=progress)
    pool = SlotPool(shop, max_envs + 1, max_steps=max_steps, observation_mode=observation_mode,
                    show_attrs=show_attrs, idle_timeout=idle_timeout, seed_goals=seed_goals)
    if warm_up:
        pool.warm_up()
    # OpenEnv's create_fastapi_app, with our server class (it closes evicted sessions' sockets)
    app = FastAPI(title="WebShop (webshop-gym) over OpenEnv", version=__version__,
                  description="WebShop served with OpenEnv's protocol: play episodes over the WebSocket at /ws.")
    server = _session_server_class()(
        functools.partial(WebShopEnvironment, pool=pool), WebShopAction, WebShopObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_envs, session_timeout=idle_timeout),
        env_name="webshop", state_cls=WebShopState, evicted_message=closed_message(idle_timeout),
    )
    server.register_routes(app, mode="simulation")
    app.add_middleware(_TrackConnections)
    app.add_middleware(_McpTools, server=server, pool=pool)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)  # added last: outermost, before anything reads a body

    async def _user_error(request, exc: Error):
        # The stateless HTTP routes: our errors are the client's to fix, never a 500.
        status = 503 if isinstance(exc, NoFreeSlot) else 409 if isinstance(exc, RuntimeError) else 422
        return _json_error(str(exc), status)

    async def _validation_error(request, exc: RequestValidationError):
        return _json_error(jsonable_encoder(exc.errors()), 422)

    async def _http_error(request, exc: HTTPException):
        from fastapi.exception_handlers import http_exception_handler

        if exc.status_code in (204, 304) or exc.status_code < 200:  # no body allowed: FastAPI's answer
            return await http_exception_handler(request, exc)
        return _json_error(jsonable_encoder(exc.detail), exc.status_code, getattr(exc, "headers", None))

    app.add_exception_handler(Error, _user_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.state.webshop_pool = pool
    app.state.openenv_server = server
    return app


# -- strict JSON error bodies ----------------------------------------------------------------------


@functools.cache
def _strict_response_class():
    from starlette.responses import JSONResponse

    class StrictJSONResponse(JSONResponse):
        """A JSON response that is strict JSON whatever it echoes (``1e400``, ``NaN``, lone surrogates)."""

        def render(self, content) -> bytes:
            return dumps(content)

    return StrictJSONResponse


def _json_error(detail, status_code: int, headers=None):
    """An error answer ``{"detail": ...}`` in strict JSON."""
    return _strict_response_class()({"detail": detail}, status_code=status_code, headers=headers)


# -- closing the sockets of evicted sessions -------------------------------------------------------


_CONNECTION: contextvars.ContextVar[_Connection | None] = contextvars.ContextVar("webshop_openenv_connection",
                                                                              default=None)
"""The WebSocket connection whose handler runs in this task (set by :class:`_TrackConnections`)."""

CLOSE_TIMEOUT = 10.0
"""Seconds an eviction waits to hand the client its error frame and close frame (a client that
does not read can hold a send); the server's own close timer then drops the connection."""


class _Connection:
    """One WebSocket connection: its ASGI ``send``, and whether the server has closed it."""

    __slots__ = ("closed", "path", "session_id", "_send")

    def __init__(self, scope, send):
        self.path = scope.get("path", "")
        self.session_id: str | None = None
        self.closed = False
        self._send = send

    async def send(self, message) -> None:
        """The handler's ``send``: after an eviction, its late frames and close are dropped."""
        if self.closed and message.get("type") in ("websocket.send", "websocket.close"):
            return
        await self._send(message)

    def evict(self, message: str) -> None:
        """Tell the client why (an OpenEnv error frame on ``/ws``), then close the socket; returns at once."""
        if self.closed:
            return
        self.closed = True
        task = asyncio.get_running_loop().create_task(self._close(message))
        _CLOSING.add(task)  # a strong reference until it is done
        task.add_done_callback(_CLOSING.discard)

    async def _close(self, message: str) -> None:
        frames = []
        if self.path.rstrip("/").endswith("/ws"):  # OpenEnv's session socket; /mcp speaks JSON-RPC
            frames.append({"type": "websocket.send",
                           "text": json.dumps({"type": "error", "data": {"message": message, "code": "SESSION_ERROR"}})})
        frames.append({"type": "websocket.close", "code": 1000, "reason": message[:120]})
        try:
            for frame in frames:
                await asyncio.wait_for(self._send(frame), CLOSE_TIMEOUT)
        except (Exception, asyncio.CancelledError):  # gone already, or not reading: nothing more to tell it
            pass


_CLOSING: set[asyncio.Task] = set()


class _McpTools:
    """ASGI middleware: JSON-RPC ``tools/list`` and ``tools/call`` on ``POST /mcp``, answered by the session's environment.

    ``tools/call`` steps the session named by ``params.session_id`` (a ``call_tool`` step, as on the
    WebSocket) and answers ``{"data": <the tool's text>, "is_error", "reward", "done", "metadata"}``;
    ``tools/list`` answers the tools (no session needed).  Other methods go to OpenEnv's handler.
    """

    def __init__(self, app, server, pool):
        self.app = app
        self.server = server
        self.pool = pool

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST" or not scope.get("path", "").rstrip("/").endswith("/mcp"):
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return await self.app(scope, receive, send)
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except (ValueError, RecursionError):
            request = None
        if isinstance(request, dict) and request.get("method") == "openenv/session/close":
            refused = _bad_session_id(request)
            if refused is not None:  # OpenEnv's handler answers 500 for these (it looks a list or dict up in a dict)
                return await _strict_response_class()(refused, status_code=200)(scope, receive, send)
        if request is not None and may_hold_surrogates(body):
            # OpenEnv's handler echoes ids and session ids, and cannot encode a lone surrogate (a 500):
            # it gets the request with each one replaced by U+FFFD, as our own routes read JSON
            body = json.dumps(clean_value(request)).encode()
        if not isinstance(request, dict) or request.get("method") not in ("tools/list", "tools/call"):
            replayed = False

            async def replay():
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            return await self.app(scope, replay, send)
        answer = await self._answer(request)
        await _strict_response_class()(answer, status_code=200)(scope, receive, send)

    async def _answer(self, request: dict) -> dict:
        from openenv.core.env_server.mcp_types import CallToolAction

        from .environment import WebShopEnvironment, mcp_tools

        request_id, params = request.get("id"), request.get("params")
        if not isinstance(params, dict):
            params = {}

        def error(code: int, message: str) -> dict:
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}

        if request["method"] == "tools/list":
            return {"jsonrpc": "2.0", "id": request_id,
                    "result": {"tools": [{"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                                         for t in mcp_tools()]}}
        name, arguments, session_id = params.get("name"), params.get("arguments", {}), params.get("session_id")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return error(-32602, "tools/call needs params.name (a string) and params.arguments (an object)")
        env = self.server._sessions.get(session_id) if isinstance(session_id, str) else None
        if not isinstance(env, WebShopEnvironment):
            return error(-32602, "tools/call needs the params.session_id of an open session (openenv/session/create, "
                                 "then reset over the WebSocket /ws?session_id=...)")
        try:
            observation = await env.step_async(CallToolAction(tool_name=name, arguments=arguments))
        except Error as exc:
            return error(-32000, str(exc))
        self.server._update_session_activity(session_id, increment_step=True)
        result = dict(observation.result)
        result.update(reward=observation.reward, done=observation.done, metadata=observation.metadata)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _bad_session_id(request: dict) -> dict | None:
    """The JSON-RPC error for an ``openenv/session/close`` whose ``params.session_id`` is not a string, else ``None``."""
    params = request.get("params")
    session_id = params.get("session_id") if isinstance(params, dict) else None
    if session_id is None or isinstance(session_id, str):
        return None  # absent: OpenEnv's own "'session_id' is required"
    request_id = request.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": -32602, "message": "params.session_id must be the string openenv/session/create "
                                                 f"answered, got {type(session_id).__name__}"}}


class _TrackConnections:
    """ASGI middleware: each WebSocket handler runs with its :class:`_Connection` in :data:`_CONNECTION`."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        connection = _Connection(scope, send)
        token = _CONNECTION.set(connection)
        try:
            return await self.app(scope, receive, connection.send)
        finally:
            _CONNECTION.reset(token)


@functools.cache
def _session_server_class():
    from openenv.core.env_server.http_server import HTTPEnvServer

    class _SessionServer(HTTPEnvServer):
        """OpenEnv's server, whose idle-session reaper also closes the evicted session's socket.

        A session created by a WebSocket handler (``/ws``, ``/mcp``) is remembered with that
        handler's connection; when the session is destroyed by anyone but that handler (OpenEnv's
        reaper), the connection is evicted: an error frame with ``evicted_message``, then a close.
        """

        def __init__(self, *args, evicted_message: str, **kwargs):
            super().__init__(*args, **kwargs)
            self.evicted_message = evicted_message
            self.connections: dict[str, _Connection] = {}

        async def _create_session(self):
            session_id, env = await super()._create_session()
            connection = _CONNECTION.get()
            if connection is not None and connection.session_id is None:
                connection.session_id = session_id
                self.connections[session_id] = connection
            return session_id, env

        async def _destroy_session(self, session_id: str) -> None:
            connection = self.connections.pop(session_id, None)
            try:
                await super()._destroy_session(session_id)
            finally:
                if connection is not None and _CONNECTION.get() is not connection:
                    connection.evict(self.evicted_message)

    return _SessionServer


class Listener:
    """A uvicorn server bound to a port (``port=0``: a free one, then :attr:`port` tells which).

    WebSocket compression is off: observations are a few kB and deflating them costs more CPU
    than the bytes it saves.  Client messages are limited to :data:`MAX_FRAME_BYTES`.

    Args:
        app: the app of :func:`create_app`.
        host: address to bind.
        port: port to bind (0: any free port).
    """

    def __init__(self, app, host: str = "127.0.0.1", port: int = 8000):
        import uvicorn

        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(2048)
        except OSError:
            self.socket.close()
            raise
        self.port = int(self.socket.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", access_log=False, ws="websockets-sansio",
                                ws_per_message_deflate=False, ws_max_size=MAX_FRAME_BYTES, backlog=2048, timeout_graceful_shutdown=5,
                                lifespan="on")
        self.server = uvicorn.Server(config)

    def run(self) -> int | None:
        """Serve until :meth:`stop` (or Ctrl+C or SIGTERM when run on the main thread); return the signal that stopped it."""
        try:
            return serve_until_stopped(self.server, sockets=[self.socket])
        finally:
            self.socket.close()

    def stop(self) -> None:
        """Ask the server to finish (from another thread)."""
        self.server.should_exit = True


def serve(app, host: str = "127.0.0.1", port: int = 8000, ready=None) -> None:
    """Serve ``app`` with uvicorn until interrupted; binds first, then calls ``ready(port)``."""
    listener = Listener(app, host, port)
    freeze_loaded()  # the shop's objects out of the collector: no full-collection stalls while serving
    if ready is not None:
        ready(listener.port)
    listener.run()
