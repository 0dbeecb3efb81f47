"""A bound on HTTP request bodies, counted as the chunks arrive: every server of the package uses it.

A client that declares a ``Content-Length`` over the limit is refused before a byte of its body is
read; one that sends more than the limit without declaring it (chunked, or a length that lies) is
refused at the chunk that passes the limit, so no request makes a server hold more than
``limit`` bytes plus one chunk.  :func:`read_body` does the counting for an ASGI app that reads
the body itself; :class:`BodyLimit` wraps any ASGI app (FastAPI's included) and answers
``413`` with ``{"detail": "..."}`` in JSON.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["TOO_LARGE", "BodyLimit", "declared_length", "read_body", "refuse", "replaying", "too_large_message"]

TOO_LARGE = object()
"""What :func:`read_body` returns for a body over the limit."""


def too_large_message(limit: int) -> str:
    """The one line a refused request gets."""
    return f"the request body is larger than this server's limit of {limit:,} bytes"


def declared_length(scope: dict) -> int | None:
    """The request's ``Content-Length`` (``None`` when absent or not a number)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def read_body(receive: Callable[[], Awaitable[dict]], limit: int) -> bytes | None | object:
    """The request's body, or :data:`TOO_LARGE` as soon as the chunks so far pass ``limit``, or ``None`` (the client left)."""
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return TOO_LARGE
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def replaying(body: bytes, receive: Callable[[], Awaitable[dict]]) -> Callable[[], Awaitable[dict]]:
    """A ``receive`` that gives ``body`` once, then the client's own messages (a disconnect)."""
    given = False

    async def replay() -> dict:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def refuse(send: Callable[[dict], Awaitable[None]], limit: int, headers: list | None = None) -> None:
    """Answer ``413`` with ``{"detail": ...}`` and close the connection (the rest of the body is never read)."""
    body = json.dumps({"detail": too_large_message(limit)}).encode()
    out = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
           (b"connection", b"close"), *(headers or [])]
    await send({"type": "http.response.start", "status": 413, "headers": out})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets ``413`` (JSON); smaller ones reach ``app`` whole.

    Args:
        app: the ASGI app.
        limit: the largest body, in bytes.

    WebSocket and lifespan scopes pass through (a WebSocket message has its own bound).
    """

    def __init__(self, app: Any, limit: int):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValueError(f"the body limit must be an integer >= 0, got {limit!r}")
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict, receive, send) -> None:
        """Answer one ASGI scope: refused past the limit, else ``app`` with the whole body."""
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = declared_length(scope)
        if declared is not None and declared > self.limit:
            return await refuse(send, self.limit)
        body = await read_body(receive, self.limit)
        if body is None:
            return None
        if body is TOO_LARGE:
            return await refuse(send, self.limit)
        return await self.app(scope, replaying(body, receive), send)
