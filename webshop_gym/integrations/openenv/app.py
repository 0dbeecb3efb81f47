"""The OpenEnv server of WebShop: OpenEnv's own FastAPI app over one shared engine.

Routes are OpenEnv's (``openenv.core.env_server.create_fastapi_app``): ``/ws`` (the WebSocket
session every OpenEnv client uses: ``reset``, ``step``, ``state``, ``close`` frames),
``/health``, ``/schema``, ``/metadata``, the stateless ``/reset``, ``/step`` and ``/state``, and
``/mcp``.  At most ``max_envs`` WebSocket sessions live at once (OpenEnv answers one more with a
``CAPACITY_REACHED`` error frame), and sessions idle for ``idle_timeout`` seconds are evicted by
OpenEnv's reaper, which hands their slot back.
"""

from __future__ import annotations

import functools
import os
import socket
from typing import TYPE_CHECKING

from webshop_gym.error import DependencyNotInstalled, Error, InvalidArgument
from webshop_gym.utils.checks import check_int
from webshop_gym.utils.heap import freeze_loaded

if TYPE_CHECKING:
    from webshop_gym.shop import Shop

__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_MAX_ENVS", "MAX_ENVS", "Listener", "create_app", "serve"]

DEFAULT_MAX_ENVS = 256
MAX_ENVS = 8192
"""Upper bound of ``--max-envs`` (an engine slot is a few hundred bytes; the cap bounds the threads OpenEnv keeps per session)."""
DEFAULT_IDLE_TIMEOUT = 600.0


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
        idle_timeout: seconds after which an idle session is evicted (``None``: never).
        observation_mode: ``text`` (default), ``text_rich``, ``html`` or ``url``.
        show_attrs: show the Attributes tab on item pages.
        seed_goals: ``reset(seed=s)`` plays goal ``s`` (see :class:`~webshop_gym.integrations.openenv.environment.SlotPool`).
        warm_up: play a few actions before serving (compiles the kernels).
        progress: show progress bars while a shop is compiled for the first time.

    Returns:
        The app; ``app.state.webshop_pool`` is the :class:`~webshop_gym.integrations.openenv.environment.SlotPool`.
    """
    try:
        from openenv.core.env_server.http_server import create_fastapi_app
        from openenv.core.env_server.types import ConcurrencyConfig
    except ImportError as exc:

        raise DependencyNotInstalled(
            f"the OpenEnv server needs OpenEnv ({exc}): pip install 'webshop-gym[openenv]'") from exc
    from fastapi.responses import JSONResponse

    from webshop_gym.shop import Shop, load_shop

    from .environment import NoFreeSlot, SlotPool, WebShopEnvironment
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
    app = create_fastapi_app(
        functools.partial(WebShopEnvironment, pool=pool), WebShopAction, WebShopObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_envs, session_timeout=idle_timeout),
        env_name="webshop", state_cls=WebShopState, mode="simulation",
    )
    app.title = "WebShop (webshop-gym) over OpenEnv"

    async def _user_error(request, exc: Error):
        # The stateless HTTP routes: our errors are the client's to fix, never a 500.
        status = 503 if isinstance(exc, NoFreeSlot) else 409 if isinstance(exc, RuntimeError) else 422
        return JSONResponse({"detail": str(exc)}, status_code=status)

    app.add_exception_handler(Error, _user_error)
    app.state.webshop_pool = pool
    return app


class Listener:
    """A uvicorn server bound to a port (``port=0``: a free one, then :attr:`port` tells which).

    WebSocket compression is off: observations are a few kB and deflating them costs more CPU
    than the bytes it saves.

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
                                ws_per_message_deflate=False, backlog=2048, timeout_graceful_shutdown=5,
                                lifespan="on")
        self.server = uvicorn.Server(config)

    def run(self) -> None:
        """Serve until :meth:`stop` (or Ctrl+C when run on the main thread)."""
        try:
            self.server.run(sockets=[self.socket])
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
