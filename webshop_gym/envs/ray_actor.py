"""What runs inside each Ray actor of :class:`~webshop_gym.envs.ray_pool.RayEnginePool`.

:class:`ShardEngine` is a plain class (the pool wraps it with ``ray.remote`` when Ray is
imported): it opens the shop on its node, checks that it is the driver's shop and steps an
:class:`~webshop_gym.engine.Engine` over one contiguous shard of slots.  The shop's compiled
catalog and Lucene index live in the node's cache folder; the first actor on a node builds them
under a file lock and every other actor on that node memory-maps the same files.

This module imports neither Ray nor the heavy parts of the package at import time, so Ray can
unpickle the class on any node that has webshop-gym installed.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
import zlib
from collections.abc import Sequence

import numpy as np

from webshop_gym.utils.paths import CACHE_ENV, default_shop_dir
from webshop_gym.utils.paths import cache_dir as node_cache

__all__ = ["ShardEngine", "remote_shop_arguments", "shop_fingerprint"]


def shop_fingerprint(shop) -> dict:
    """What must be equal on every node for results to equal the driver's.

    The compiled catalog's folder name is a hash of the input files and of the compiler's code,
    so it also catches a node with another version of webshop-gym.
    """
    goals = shop.goals
    text = "\n".join(goals.instruction).encode("utf-8", "surrogatepass")
    return {
        "catalog": shop.catalog.folder.name,
        "products": len(shop.catalog),
        "goal_kind": goals.kind,
        "goals": len(goals),
        "instructions_crc32": zlib.crc32(text),
        "prices_crc32": zlib.crc32(np.ascontiguousarray(goals.prices, dtype=np.float64).tobytes()),
    }


def remote_shop_arguments(shop) -> dict:
    """Arguments that make ``load_shop`` open ``shop`` on another node.

    The embedded default shop is passed as ``path=None`` so every node resolves its own
    installation; other folders and goal files must exist at the same path on every node.  A
    custom Lucene index (``load_shop(index=...)``) is passed on as well.
    """
    from webshop_gym.envs.workers import shop_arguments

    args = shop_arguments(shop)
    try:
        if os.path.samefile(args["path"], default_shop_dir()):
            args["path"] = None
    except (OSError, FileNotFoundError):
        pass
    index = getattr(shop.engine, "_index_arg", None)
    if index is not None:
        args["index"] = str(index)
    return args


def _snapshot(engine, slot: int) -> tuple:
    return engine.observe(slot), engine.info(slot), engine.finished(slot)


def _pieces(head, snapshots: list, parts: int):
    """Split a call's answer into ``parts`` return values: ``(head, first piece)``, then pieces.

    Ray sends a return value under 100 KiB inline with the reply and puts larger ones in the
    object store, which costs more than the split (a 256-slot text step answers ~250 KiB).
    """
    n = len(snapshots)
    if parts <= 1:
        return head, snapshots
    pieces = [snapshots[i * n // parts : (i + 1) * n // parts] for i in range(parts)]
    return ((head, pieces[0]), *pieces[1:])


class ShardEngine:
    """One shard of a batch: an :class:`~webshop_gym.engine.Engine` over ``num_slots`` slots.

    Construction never raises: a failure (missing data, another shop) is kept and reported by
    :meth:`ready`, so the driver can raise a precise error instead of Ray's generic one.

    Args:
        shard: the shard's number (for messages).
        num_slots: slots of this shard (local slot ``i`` is global slot ``start + i``).
        shop_args: arguments of ``load_shop`` (see :func:`remote_shop_arguments`).
        engine_args: arguments of :class:`~webshop_gym.engine.Engine`.
        fingerprint: the driver's :func:`shop_fingerprint`; a different shop is an error.
        cache_dir: the node's cache folder (``WEBSHOP_GYM_CACHE``); ``None`` keeps the node's.
        java_heap: the JVM's maximum heap (``WEBSHOP_GYM_JAVA_HEAP``); ``None`` keeps the node's.
        warmup: load the search backend now (the ``bm25`` postings and kernel; for ``pyserini``,
            the JVM and the Lucene index), not on the first search.
    """

    def __init__(
        self,
        shard: int,
        num_slots: int,
        shop_args: dict,
        engine_args: dict,
        fingerprint: dict,
        cache_dir: str | None = None,
        java_heap: str | None = None,
        warmup: bool = True,
    ):
        started = time.perf_counter()
        self.shard = shard
        self.engine = None
        self.error: tuple[str, str] | None = None
        try:
            from webshop_gym.search import java as _java

            if cache_dir:
                os.environ[CACHE_ENV] = str(cache_dir)
            if java_heap:
                os.environ[_java.HEAP_ENV] = java_heap
                _java.set_heap(java_heap)  # the package read the variable when it was imported
            from webshop_gym.engine import Engine
            from webshop_gym.shop import load_shop

            shop = load_shop(progress=False, **shop_args)
            got = shop_fingerprint(shop)
            if got != fingerprint:
                diff = {k: (fingerprint.get(k), got.get(k)) for k in fingerprint if fingerprint.get(k) != got.get(k)}
                self.error = (
                    "ShopMismatch",
                    f"the shop opened on node {socket.gethostname()} differs from the driver's "
                    f"(field: (driver, node)) {diff}; install the same webshop-gym version and data on every node",
                )
                return
            self.engine = Engine(shop, num_slots, **engine_args)
            if warmup:
                shop.engine.prepare()
            self.cache = str(node_cache())
        except BaseException:
            self.error = ("Exception", traceback.format_exc())
        self.seconds = time.perf_counter() - started

    def ready(self) -> dict:
        """Where this actor runs and how long it took to start (or why it could not)."""
        try:
            import ray

            node_id = ray.get_runtime_context().get_node_id()
            ip = ray.util.get_node_ip_address()
        except Exception:  # pragma: no cover - only outside Ray
            node_id, ip = None, None
        return {
            "shard": self.shard,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "ip": ip,
            "node_id": node_id,
            "error": self.error,
            "seconds": round(getattr(self, "seconds", 0.0), 3),
            "cache": getattr(self, "cache", None),
        }

    def advance(self, resets: Sequence[int], goals: Sequence[int], slots: Sequence[int], actions: Sequence, parts: int = 1):
        """Start the pending episodes, then step ``slots``.

        Returns ``parts`` values: ``((rewards, terminations, truncations), first piece)``, then
        the other pieces of the stepped slots' ``(obs, info, finished)`` snapshots.
        """
        if len(resets):
            self.engine.reset(resets, goals)
        head = self.engine.step(slots, actions) if len(slots) else None
        return _pieces(head, [_snapshot(self.engine, s) for s in slots], parts)

    def observe(self, resets: Sequence[int], goals: Sequence[int], slots: Sequence[int], mode: str | None = None):
        """Start the pending episodes, then render slots in another mode, as ``(None, pages)``."""
        if len(resets):
            self.engine.reset(resets, goals)
        return None, [self.engine.observe(s, mode) for s in slots]

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds`` (tests: an actor that stops answering)."""
        time.sleep(seconds)

    def exit(self, code: int = 1) -> None:
        """End the process at once, without a word (tests: an actor that crashes)."""
        os._exit(int(code))
