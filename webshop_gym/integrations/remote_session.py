"""The OpenEnv WebSocket session under :class:`~webshop_gym.integrations.trl.WebShopRemoteToolEnv`.

A :class:`RemoteSession` is one session on a ``webshop-gym openenv`` server, opened on the first
request: ``reset``, ``step`` and ``state`` calls through OpenEnv's typed client
(:class:`~webshop_gym.integrations.openenv.client.WebShopEnvClient`), each answer translated to
the ``(obs, reward, terminated, truncated, info)`` of :meth:`WebShopEnv.step
<webshop_gym.WebShopEnv.step>` by :func:`unpack`.  The sessions of a process share one
background event-loop thread, which holds their sockets.  A session refused at capacity raises
:class:`ServerFull`; :func:`dropped` tells a lost socket (which a new session can take over) from
any other error.  The remote env repairs a dropped episode on top of this (it replays the
episode's actions on a new session) and raises :class:`EpisodeLost` when it cannot.

TRL never closes its environments: a session whose owner is collected, or alive when the process
exits, closes its socket through a finalizer, so the server frees the slot at once.
"""

from __future__ import annotations

import re
import threading
import weakref
from typing import Any

from webshop_gym.error import Error

__all__ = ["EpisodeLost", "RemoteSession", "ServerFull", "dropped", "unpack"]


class EpisodeLost(Error, ConnectionError):
    """The connection to a remote shop dropped and the episode could not be re-established."""


class ServerFull(Error, RuntimeError):
    """The remote shop holds as many sessions as its ``--max-envs`` allows; the message names the limit."""


def _server_full(url: str, message: str) -> ServerFull:
    """The one-line error of a session refused at capacity (OpenEnv's ``CAPACITY_REACHED`` frame)."""
    found = re.search(r"(\d+)/(\d+) sessions", message)
    held = f"{found.group(1)}/{found.group(2)} sessions" if found else "its maximum of sessions"
    limit = found.group(2) if found else "N"
    return ServerFull(f"the shop server at {url} is full: it holds {held}, the limit it was started with "
                      f"(webshop-gym openenv --max-envs {limit}); close() the instances you no longer use, or "
                      "restart the server with a larger --max-envs")


RELEASE_TIMEOUT = 5.0
"""Seconds a collected instance (or the process exit) waits for its session's close handshake."""


class _Socket:
    """A session's OpenEnv client, held apart from the session so that a finalizer can close it."""

    __slots__ = ("client",)

    def __init__(self) -> None:
        self.client = None


def _release(socket: _Socket) -> None:
    """Close a session's socket (an instance collected without ``close()``, or the process exiting).

    The server sees the close at once and hands the session's slot back, instead of holding it
    until its idle timeout.  Never raises; never waits on the event-loop thread itself.
    """
    client, socket.client = socket.client, None
    if client is None or not _LOOP:
        return
    import asyncio

    loop = _LOOP[0]
    try:
        future = asyncio.run_coroutine_threadsafe(client._close_async(), loop)
        if _LOOP_THREAD and threading.current_thread() is not _LOOP_THREAD[0]:
            future.result(RELEASE_TIMEOUT)
    except Exception:  # noqa: BLE001 - the socket or the loop may be gone already
        pass


_LOOP_LOCK = threading.Lock()
_LOOP: list = []
"""The one background event loop (and its thread) that carries every remote session's WebSocket."""
_LOOP_THREAD: list[threading.Thread] = []


def _client_loop():
    with _LOOP_LOCK:
        if not _LOOP:
            import asyncio

            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="webshop-remote-tools", daemon=True)
            thread.start()
            _LOOP.append(loop)
            _LOOP_THREAD.append(thread)
        return _LOOP[0]


class RemoteSession:
    """One OpenEnv WebSocket session on ``url`` (opened on the first request, again after :meth:`close`).

    Args:
        url: the server's address.
        timeout: seconds to wait for each answer of the server.
        client_cls: OpenEnv's client class (``WebShopEnvClient``), imported by the caller (the
            openenv extra).
    """

    def __init__(self, url: str, timeout: float, client_cls) -> None:
        self.url = url
        self.timeout = float(timeout)
        self._client_cls = client_cls
        self._socket = _Socket()
        weakref.finalize(self, _release, self._socket)

    @property
    def client(self):
        """The session's OpenEnv client (``None`` until the first request, and after :meth:`close`)."""
        return self._socket.client

    def run(self, coroutine):
        """Run a coroutine on the event-loop thread that holds the sockets; wait for its result."""
        import asyncio

        return asyncio.run_coroutine_threadsafe(coroutine, _client_loop()).result(self.timeout + 5)

    def call(self, method: str, arguments: dict[str, Any], retry: bool = False):
        """One request (``reset``, ``step`` or ``state``); with ``retry``, once more on a fresh session if the socket dropped.

        Raises:
            ServerFull: the server refused the session at capacity.
        """
        for attempt in range(2 if retry else 1):
            if self._socket.client is None:
                self._socket.client = self._client_cls(base_url=self.url, message_timeout_s=self.timeout)
            try:
                return self.run(_request(self._socket.client, method, arguments))
            except Exception as exc:
                if isinstance(exc, RuntimeError) and "CAPACITY_REACHED" in str(exc):
                    self.close()  # the server refused the session: no socket to keep
                    raise _server_full(self.url, str(exc)) from None
                if not dropped(exc) or attempt == (1 if retry else 0):
                    raise
                self.close()
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the socket, if open (the next request opens a new session)."""
        if self._socket.client is not None:
            client, self._socket.client = self._socket.client, None
            try:
                self.run(client._close_async())  # on the loop that holds its socket (close() would use another)
            except Exception:  # noqa: BLE001 - the socket may be gone already
                pass


async def _request(client, method: str, arguments: dict[str, Any]):
    if method == "reset":
        return await client._reset_async(**arguments)
    if method == "step":
        return await client._step_async(arguments["action"])
    return await client._state_async()


def dropped(exc: BaseException) -> bool:
    """Whether an error means the session is gone (and a new one can take over)."""
    from websockets.exceptions import ConnectionClosed

    if isinstance(exc, ConnectionClosed | ConnectionError | OSError):
        return True
    # OpenEnv's client reopens a closed socket by itself, as a new session without our episode
    return isinstance(exc, RuntimeError) and any(
        text in str(exc) for text in ("session was closed", "no episode in this session"))


def unpack(result) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """An OpenEnv step or reset result as :meth:`WebShopEnv.step <webshop_gym.WebShopEnv.step>`'s five values."""
    o = result.observation
    info: dict[str, Any] = {"goal_index": o.goal_index, "instruction": o.instruction, "page": o.page,
                            "steps": o.steps, "invalid_action": o.invalid_action,
                            "valid_actions": list(o.admissible_actions), "purchased_asin": o.purchased_asin}
    if o.reward_breakdown is not None:
        info["reward_info"] = dict(o.reward_breakdown)
    done = bool(result.done)
    return o.text, float(result.reward or 0.0), done and not o.truncated, done and o.truncated, info
