"""``WebShopRayVectorEnv``: the vector env with its batch sharded over Ray actors.

The vector env's logic (autoreset, goal streams, groups, the evaluation queue, info batching)
stays in the driver, exactly as in :class:`~webshop_gym.envs.vector_env.WebShopVectorEnv`; only the
engine is distributed.  :class:`RayEnginePool` has the engine interface of
:class:`~webshop_gym.engine.Engine` and :class:`~webshop_gym.envs.workers.WorkerPool`: the batch is
split into contiguous shards of whole groups, each shard an :class:`~webshop_gym.engine.Engine`
inside a Ray actor (:class:`~webshop_gym.envs.ray_actor.ShardEngine`).  A step sends every shard its
actions at once and gathers the results, so with equal seeds and actions the results equal the
local vector env's.

On each node the compiled catalog and the Lucene index are built once (under a file lock in the
node's cache folder) and memory-mapped by every actor there.  A dead actor raises
:class:`ActorDied` in the driver (never a hang: every wait has a timeout); with
``restart_failed=True`` the shard is rebuilt instead and the episodes it held are reported lost
(truncated, with ``info["lost_episode"]``).  See ``docs/ray.md``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from gymnasium.vector import AutoresetMode

from webshop_gym.envs.ray_pool import LostEpisode, RayEnginePool, import_ray, init_ray
from webshop_gym.envs.vector_env import WebShopVectorEnv
from webshop_gym.shop import Shop

__all__ = ["WebShopRayVectorEnv"]

log = logging.getLogger(__name__)


class WebShopRayVectorEnv(WebShopVectorEnv):
    """:class:`~webshop_gym.envs.vector_env.WebShopVectorEnv` with its batch sharded over Ray actors.

    Same API, autoreset modes, group sampling and evaluation mode as the local vector env, and
    with the same seeds and actions the same results: the vector env's logic runs in the driver
    and only the engine is distributed (:class:`RayEnginePool`).  Shards hold whole groups of
    ``group_size`` slots.  Ray is initialised on first use (``ray.init(address=address)``) unless
    the caller already did.

    Args:
        num_envs: number of slots.
        num_actors: Ray actors (shards); at most ``num_envs // group_size``.
        shop, goals, human_goals, price_seed, num_products, observation_mode, split,
            max_steps, group_size, eval_mode, autoreset_mode, show_attrs, render_mode,
            max_episode_steps: as :class:`~webshop_gym.envs.vector_env.WebShopVectorEnv`.
        num_cpus_per_actor: Ray CPUs reserved per actor (default 1).
        resources_per_actor: other Ray resources per actor (e.g. ``{"webshop": 1}``).
        scheduling_strategy: Ray scheduling strategy per actor (``"SPREAD"``, a
            ``NodeAffinitySchedulingStrategy``, a callable ``shard -> strategy``, ...).
        placement: reserve a placement group with one bundle per actor: ``"PACK"``,
            ``"SPREAD"``, ``"STRICT_PACK"`` or ``"STRICT_SPREAD"``.
        actor_options: more Ray actor options (``memory``, ``runtime_env``, ...).
        cache_dir: the cache folder on every node (``WEBSHOP_GYM_CACHE``); default: the node's.
        java_heap: each actor's JVM heap (default ``WEBSHOP_GYM_JAVA_HEAP`` or ``"1g"``).
        restart_failed: rebuild a shard whose actor died and go on; its episodes end truncated
            with ``info["lost_episode"]`` and are listed in :attr:`lost_episodes`.  Without it a
            dead actor raises :class:`ActorDied`.
        max_restarts: restarts allowed per shard.
        timeout: seconds one step (or render) may take before an actor counts as stuck.
        start_timeout: seconds the actors may take to start (catalog build on a fresh node).
        address: the cluster to connect to when Ray is not initialised yet (``"auto"``,
            ``"ray://host:10001"``); ``None`` follows ``ray.init()``'s defaults.

    Example:
        >>> import ray
        >>> from webshop_gym.envs.ray_env import WebShopRayVectorEnv
        >>> ray.init(num_cpus=2)  # doctest: +SKIP
        >>> envs = WebShopRayVectorEnv(64, num_actors=2)  # doctest: +SKIP
        >>> obs, infos = envs.reset(seed=0)  # doctest: +SKIP
        >>> obs, rewards, terminations, truncations, infos = envs.step(["search[red shirt]"] * 64)  # doctest: +SKIP
        >>> envs.close()  # doctest: +SKIP
    """

    def __init__(
        self,
        num_envs: int,
        num_actors: int = 1,
        shop: str | os.PathLike | Shop | None = None,
        goals: str | os.PathLike | None = None,
        human_goals: bool = False,
        observation_mode: str = "text",
        split: str | None = None,
        max_steps: int | None = 15,
        group_size: int = 1,
        eval_mode: bool = False,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        show_attrs: bool = False,
        price_seed: int = 0,
        num_products: int | None = None,
        num_cpus_per_actor: float = 1,
        resources_per_actor: dict[str, float] | None = None,
        scheduling_strategy: Any | Callable[[int], Any] = None,
        placement: str | None = None,
        actor_options: dict[str, Any] | None = None,
        cache_dir: str | os.PathLike | None = None,
        java_heap: str | None = None,
        restart_failed: bool = False,
        max_restarts: int = 5,
        timeout: float = 600.0,
        start_timeout: float = 1800.0,
        address: str | None = None,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
    ):
        ray = import_ray()
        # The vector env builds a local engine (cheap: no search engine starts); the pool below
        # takes its place (and keeps it to render start pages), so the vector env's logic stays
        # as it is.
        super().__init__(
            num_envs, shop=shop, goals=goals, human_goals=human_goals, observation_mode=observation_mode,
            split=split, max_steps=max_steps, group_size=group_size, eval_mode=eval_mode,
            autoreset_mode=autoreset_mode, num_workers=0, show_attrs=show_attrs, price_seed=price_seed,
            num_products=num_products, render_mode=render_mode, max_episode_steps=max_episode_steps,
        )
        if max_episode_steps is not None:
            max_steps = max_episode_steps
        if not ray.is_initialized():
            init_ray(address=address)
        self.engine = RayEnginePool(
            num_actors, self.num_envs, self.shop, observation_mode=observation_mode, max_steps=max_steps,
            show_attrs=show_attrs, split=split, group_size=self.group_size, num_cpus=num_cpus_per_actor,
            resources=resources_per_actor, scheduling_strategy=scheduling_strategy, placement=placement,
            actor_options=actor_options, cache_dir=cache_dir, java_heap=java_heap, restart_failed=restart_failed,
            max_restarts=max_restarts, timeout=timeout, start_timeout=start_timeout, local=self.engine,
        )

    @property
    def lost_episodes(self) -> list[LostEpisode]:
        """Episodes lost to dead actors so far (``restart_failed=True``), oldest first."""
        return list(self.engine.lost_episodes)

    @property
    def actors(self) -> list[dict]:
        """Per shard: its slots and where its actor runs (node ip, pid, start-up seconds)."""
        return [
            {"shard": k, "slots": (a, b), **{key: w.get(key) for key in ("ip", "node_id", "pid", "seconds", "cache")}}
            for k, ((a, b), w) in enumerate(zip(self.engine.shards, self.engine.where, strict=True))
        ]

    def render(self) -> tuple[str, ...] | None:
        """Return every slot's page as text (``"ansi"``) or HTML (``"html"``), one call per actor."""
        if self.render_mode is None:
            return None
        mode = "text" if self.render_mode == "ansi" else "html"
        live = [i for i in range(self.num_envs) if not self._idle[i]]
        pages = dict(zip(live, self.engine.observe_many(live, mode), strict=True))
        return tuple(pages.get(i, "") for i in range(self.num_envs))

    def __repr__(self) -> str:
        return f"WebShopRayVectorEnv(num_envs={self.num_envs}, num_actors={len(self.engine.shards)})"

