"""The Ray side of :class:`~webshop_gym.envs.ray_env.WebShopRayVectorEnv`: the engine pool over actors.

:class:`RayEnginePool` has the engine interface of :class:`~webshop_gym.engine.Engine` and
:class:`~webshop_gym.envs.workers.WorkerPool`: the batch is split into contiguous shards of whole
groups, each shard an :class:`~webshop_gym.engine.Engine` inside a Ray actor
(:class:`~webshop_gym.envs.ray_actor.ShardEngine`).  Its errors (:class:`ActorDied`,
:class:`ActorError`, :class:`ShopMismatch`), lost episodes and :func:`init_ray` live here too.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from webshop_gym.engine import Engine
from webshop_gym.envs.ray_actor import ShardEngine, remote_shop_arguments, shop_fingerprint
from webshop_gym.envs.workers import ShardedEngine, WorkerDied, WorkerError, portable_action
from webshop_gym.error import DependencyNotInstalled, Error
from webshop_gym.shop import Shop

__all__ = ["ActorDied", "ActorError", "LostEpisode", "RayEnginePool", "ShopMismatch", "import_ray", "init_ray"]

log = logging.getLogger(__name__)

RAY_PIP = "pip install 'webshop-gym[ray]'"
SIGNAL_ENV = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"
PLACEMENTS = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
CHUNK = 32
"""Slots per return value of an actor call: text answers stay under Ray's 100 KiB inline limit."""


class ActorDied(WorkerDied):
    """A shard's Ray actor died, its node was lost, or it stopped answering within the timeout."""


class ActorError(WorkerError):
    """A shard's Ray actor failed to start or raised an exception (its traceback is in the message)."""


class ShopMismatch(Error, ValueError):
    """A node opened a different shop than the driver (other data or another webshop-gym version)."""


@dataclass(frozen=True)
class LostEpisode:
    """An episode that ended because the actor holding it died (``restart_failed=True``).

    Attributes:
        slot: the slot (index in the batch).
        shard: the shard whose actor died.
        goal_index: the episode's goal.
        steps: steps the episode had taken when it was last seen.
        reason: what happened to the actor.
    """

    slot: int
    shard: int
    goal_index: int
    steps: int
    reason: str

    def as_info(self) -> dict:
        """The ``info["lost_episode"]`` entry (no free text, so infos stay comparable)."""
        return {"goal_index": self.goal_index, "steps": self.steps, "shard": self.shard}


def import_ray():
    """Import Ray, or raise DependencyNotInstalled with the pip line."""
    try:
        import ray
    except ImportError as exc:
        raise DependencyNotInstalled(f"WebShopRayVectorEnv needs Ray: `{RAY_PIP}`") from exc
    return ray


def init_ray(**kwargs: Any) -> None:
    """``ray.init(**kwargs)`` without Ray's crash signal handler, which breaks a running JVM.

    Ray installs a handler for SIGSEGV and friends when it connects; the JVM uses those signals
    itself, so a process whose JVM started before ``ray.init`` (a local env searched first)
    would crash on the JVM's next internal fault.  Ray's documented switch,
    ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER=1``, is set here for this process (and for the local
    cluster's workers, which inherit the environment) before connecting.
    """
    ray = import_ray()
    os.environ.setdefault(SIGNAL_ENV, "1")
    try:  # the constant is read from the environment when ray is imported: set it as well
        from ray._private import ray_constants

        ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = os.environ[SIGNAL_ENV].lower() in ("1", "true")
    except (ImportError, AttributeError):  # pragma: no cover - other Ray versions
        pass
    ray.init(**kwargs)


class RayEnginePool(ShardedEngine):
    """An engine whose slots are sharded over Ray actors (the engine interface of ``Engine``).

    Args:
        num_actors: actors (shards); at most the number of groups.
        num_slots: slots in all.
        shop: the driver's shop (every actor opens the same shop on its node).
        observation_mode, max_steps, show_attrs, split: as :class:`~webshop_gym.engine.Engine`.
        group_size: shards hold whole groups, so a group's slots always share an actor.
        num_cpus: Ray CPUs reserved per actor.
        resources: other Ray resources per actor (e.g. ``{"webshop": 1}``).
        scheduling_strategy: Ray scheduling strategy for every actor (``"SPREAD"``, a
            ``NodeAffinitySchedulingStrategy``, ...), or a callable ``shard -> strategy``.
        placement: ``"PACK"``, ``"SPREAD"``, ``"STRICT_PACK"`` or ``"STRICT_SPREAD"``: reserve a
            placement group with one bundle per actor (removed by :meth:`close`).
        actor_options: more ``.options(...)`` for every actor (``memory``, ``runtime_env``, ...).
        cache_dir: cache folder on each node (``WEBSHOP_GYM_CACHE``); ``None``: the node's own.
        java_heap: each actor's JVM heap (``WEBSHOP_GYM_JAVA_HEAP``, default 1g).
        restart_failed: rebuild a shard whose actor died and report its episodes lost, instead
            of raising :class:`ActorDied`.
        max_restarts: restarts allowed per shard before giving up (raising :class:`ActorDied`).
        timeout: seconds to wait for one step (or render) before declaring an actor stuck.
        start_timeout: seconds to wait for actors to start (they may build the catalog).
        warmup: actors load the search backend (postings and kernel; the JVM for ``pyserini``)
            before the first step.
        local: the driver's engine over all slots, which renders start pages (default: a new one).
    """

    def __init__(
        self,
        num_actors: int,
        num_slots: int,
        shop: Shop,
        observation_mode: str = "text",
        max_steps: int | None = 15,
        show_attrs: bool = False,
        split: str | None = None,
        group_size: int = 1,
        num_cpus: float = 1,
        resources: dict[str, float] | None = None,
        scheduling_strategy: Any = None,
        placement: str | None = None,
        actor_options: dict[str, Any] | None = None,
        cache_dir: str | os.PathLike | None = None,
        java_heap: str | None = None,
        restart_failed: bool = False,
        max_restarts: int = 5,
        timeout: float = 600.0,
        start_timeout: float = 1800.0,
        warmup: bool = True,
        local: Engine | None = None,
    ):
        ray = import_ray()
        self._ray = ray
        groups = num_slots // group_size
        if not 1 <= num_actors <= groups:
            raise ValueError(
                f"num_actors must be between 1 and the number of groups (num_envs / group_size = {groups}), got {num_actors}"
            )
        reserved = {"max_restarts", "max_task_retries", "max_concurrency"} & set(actor_options or {})
        if reserved:
            raise ValueError(
                f"actor_options may not set {sorted(reserved)}: the pool restarts shards itself (restart_failed=True) "
                "and each actor must run one call at a time"
            )
        if placement is not None and scheduling_strategy is not None:
            raise ValueError("pass either placement= or scheduling_strategy=, not both")
        if placement is not None and str(placement).upper() not in PLACEMENTS:
            raise ValueError(f"placement={placement!r} is not supported; expected one of {list(PLACEMENTS)}")
        self.observation_mode = observation_mode
        self.restart_failed = bool(restart_failed)
        self.max_restarts = int(max_restarts)
        self.timeout = float(timeout)
        self.start_timeout = float(start_timeout)
        # shards hold whole groups: a GRPO group never spans two actors
        self._init_shards(shop, split, np.linspace(0, groups, num_actors + 1).round().astype(int) * group_size)
        self._live = np.zeros(num_slots, bool)  # the slot has an episode on its current actor
        self._lost: list[LostEpisode | None] = [None] * num_slots  # lost, not yet reported
        self._pending: list[dict[int, int]] = [{} for _ in self.shards]  # per shard: slot -> goal to reset
        self.lost_episodes: list[LostEpisode] = []
        self.restarts = [0] * num_actors
        self._closed = False
        self._failure: str | None = None
        engine_args = {"observation_mode": observation_mode, "max_steps": max_steps, "show_attrs": show_attrs, "split": split}
        self.local = local if local is not None else Engine(shop, num_slots, **engine_args)
        self._args = {
            "shop_args": remote_shop_arguments(shop),
            "engine_args": engine_args,
            "fingerprint": shop_fingerprint(shop),
            "cache_dir": None if cache_dir is None else os.fspath(cache_dir),
            "java_heap": java_heap,
            "warmup": bool(warmup),
        }
        resources = dict(resources or {})
        self._options: dict[str, Any] = {
            "num_cpus": num_cpus,
            "max_concurrency": 1,
            "max_restarts": 0,  # the pool decides (restart_failed); Ray must not replay our calls
            "max_task_retries": 0,
            **({"resources": resources} if resources else {}),
            **(actor_options or {}),
        }
        self._strategy = scheduling_strategy
        self.placement_group = None
        if placement is not None:
            bundle = {**({"CPU": num_cpus} if num_cpus else {}), **resources}
            if not bundle:
                raise ValueError("placement= needs num_cpus_per_actor > 0 or resources_per_actor: a bundle cannot be empty")
            self.placement_group = ray.util.placement_group([dict(bundle) for _ in self.shards], strategy=str(placement).upper())
            try:
                ray.get(self.placement_group.ready(), timeout=self.start_timeout)
            except ray.exceptions.GetTimeoutError:
                self.close()
                raise ActorDied(
                    f"the placement group ({len(self.shards)} x {bundle}, {placement}) was not ready within "
                    f"{self.start_timeout:.0f} s: the cluster lacks those resources ({ray.available_resources()})"
                ) from None
        total = ray.cluster_resources().get("CPU", 0.0)
        if placement is None and num_cpus and num_actors * num_cpus > total:
            log.warning(
                "%d actors x %s CPUs exceed the cluster's %s CPUs: they wait for an autoscaler (start_timeout=%.0f s); "
                "lower num_cpus_per_actor or num_actors, or start Ray with more CPUs",
                num_actors, num_cpus, total, self.start_timeout,
            )
        self._remote = ray.remote(ShardEngine)
        self.actors: list[Any] = [None] * num_actors
        self.where: list[dict] = [{} for _ in range(num_actors)]
        for k in range(num_actors):
            self.actors[k] = self._create(k)
        try:
            self._await_ready(range(num_actors))
        except BaseException:
            self.close()
            raise

    # -- actors ---------------------------------------------------------------------------------

    def _strategy_for(self, k: int):
        if self.placement_group is not None:
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            return PlacementGroupSchedulingStrategy(self.placement_group, placement_group_bundle_index=k)
        if callable(self._strategy):
            return self._strategy(k)
        return self._strategy

    def _create(self, k: int):
        a, b = self.shards[k]
        options = dict(self._options)
        strategy = self._strategy_for(k)
        if strategy is not None:
            options["scheduling_strategy"] = strategy
        return self._remote.options(**options).remote(k, b - a, **self._args)

    def _describe(self, k: int) -> str:
        a, b = self.shards[k]
        where = self.where[k]
        at = f" on {where.get('ip') or where.get('host')}, pid {where.get('pid')}" if where else ""
        return f"shard {k} (slots {a}-{b - 1}){at}"

    def _await_ready(self, shards: Sequence[int]) -> None:
        ray = self._ray
        refs = {k: self.actors[k].ready.remote() for k in shards}
        deadline = time.monotonic() + self.start_timeout
        for k, ref in refs.items():
            try:
                where = ray.get(ref, timeout=max(0.0, deadline - time.monotonic()))
            except ray.exceptions.GetTimeoutError:
                raise ActorDied(
                    f"the actor of {self._describe(k)} did not start within {self.start_timeout:.0f} s; the cluster may "
                    f"lack what each actor asks for ({self._resource_text()}); available: {ray.available_resources()}"
                ) from None
            except ray.exceptions.RayActorError as exc:  # its process died (out of memory, node lost, ...)
                raise ActorDied(f"the actor of {self._describe(k)} died while starting: {exc}") from exc
            except ray.exceptions.RayError as exc:
                raise ActorError(f"the actor of {self._describe(k)} failed to start: {exc}") from exc
            self.where[k] = where
            if where["error"] is not None:
                kind, message = where["error"]
                if kind == "ShopMismatch":
                    raise ShopMismatch(f"{self._describe(k)}: {message}")
                raise ActorError(f"the actor of {self._describe(k)} failed to start:\n{message}")

    def _resource_text(self) -> str:
        parts = [f"num_cpus={self._options.get('num_cpus')}"]
        for key in ("resources", "memory", "num_gpus"):
            if key in self._options:
                parts.append(f"{key}={self._options[key]}")
        return ", ".join(parts)

    def _kill(self, actor) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:
            pass

    def _restart(self, k: int, reason: str) -> None:
        self._kill(self.actors[k])
        while True:
            if self.restarts[k] >= self.max_restarts:
                self._give_up(
                    ActorDied(f"{self._describe(k)} failed again after {self.restarts[k]} restarts (max_restarts); last: {reason}")
                )
            self.restarts[k] += 1
            log.warning("restarting the actor of %s (%s)", self._describe(k), reason.splitlines()[0])
            self.actors[k] = self._create(k)
            try:
                self._await_ready([k])
                return
            except ActorDied as exc:  # died or did not start in time: count it and try again
                self._kill(self.actors[k])
                reason = str(exc)
            except Error as exc:
                self._give_up(exc)

    def _give_up(self, exc: Exception):
        self._failure = str(exc)
        self.close()
        raise exc

    # -- calls ------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ActorDied(
                "the Ray engine pool is closed" + (f" after a failure: {self._failure}" if self._failure else "")
                + "; create the vector env again"
            )

    def _flush(self, k: int) -> tuple[list[int], list[int]]:
        """Shard ``k``'s pending resets as (local slots, goals), to send with its next call."""
        base = self.shards[k][0]
        pending = self._pending[k]
        return [s - base for s in pending], list(pending.values())

    def _call(self, k: int, local: list[int], actions: list) -> list:
        """Send shard ``k`` its pending resets and a step; the answer comes in ``CHUNK``-slot pieces."""
        parts = max(1, -(-len(local) // CHUNK))
        resets, goals = self._flush(k)
        refs = self.actors[k].advance.options(num_returns=parts).remote(resets, goals, local, actions, parts)
        return list(refs) if parts > 1 else [refs]

    def _gather(self, refs: dict[int, list]) -> tuple[dict[int, Any], dict[int, BaseException]]:
        """Wait for one call per shard (bounded by ``timeout``); return answers and failures.

        An answer is ``(head, snapshots)``: the pieces of a call are joined again.  A shard whose
        call succeeded has received its pending resets.
        """
        ray = self._ray
        deadline = time.monotonic() + self.timeout
        flat = [ref for k in refs for ref in refs[k]]
        try:
            values = ray.get(flat, timeout=self.timeout)
        except ray.exceptions.RayError:
            values = None  # find out which shards failed; the others' answers stand
        results: dict[int, Any] = {}
        failures: dict[int, BaseException] = {}
        at = 0
        for k, parts in refs.items():
            if values is not None:
                got = values[at : at + len(parts)]
                at += len(parts)
            else:
                try:
                    got = ray.get(parts, timeout=max(0.0, deadline - time.monotonic()))
                except ray.exceptions.RayError as exc:
                    failures[k] = exc
                    continue
            (head, first), rest = got[0], got[1:]
            results[k] = (head, [*first, *(s for piece in rest for s in piece)])
            self._pending[k].clear()
        return results, failures

    def _failed(self, k: int, exc: BaseException) -> None:
        """Handle shard ``k``'s failure: raise, or restart it and mark its live episodes lost.

        Episodes whose resets have not reached the actor yet are not lost: the new actor gets
        their resets with its first call.
        """
        ray = self._ray
        if isinstance(exc, ray.exceptions.RayTaskError):
            self._give_up(ActorError(f"the actor of {self._describe(k)} raised an exception:\n{exc}"))
        if isinstance(exc, ray.exceptions.GetTimeoutError):
            reason = f"it did not answer within {self.timeout:.0f} s"
        else:
            lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
            why = [line for line in lines[1:] if line.startswith("The actor is dead because")]
            reason = f"{type(exc).__name__}: " + (" ".join(lines[:1] + why[:1]) or "no message")
        if not self.restart_failed:
            self._give_up(
                ActorDied(
                    f"the Ray actor of {self._describe(k)} died or stopped answering ({reason}); the episodes of "
                    "these slots are lost. Create the vector env again, or pass restart_failed=True to rebuild "
                    "the shard and continue."
                )
            )
        a, b = self.shards[k]
        pending = self._pending[k]
        for s in range(a, b):
            if self._live[s] and not self._finished[s] and s not in pending and self._lost[s] is None:
                info = self._info[s]
                lost = LostEpisode(s, k, int(info.get("goal_index", -1)), int(info.get("steps", 0)), reason)
                self._lost[s] = lost
                self.lost_episodes.append(lost)
        self._live[a:b] = False
        self._live[list(pending)] = True
        self._restart(k, reason)

    def reset(self, slots: Sequence[int], goals: Sequence[int]) -> None:
        """Start episodes in ``slots``.

        A start page depends only on the goal, so the driver's own engine renders it and the
        resets travel to the actors with their next step: resetting costs no round trip (with
        ``SAME_STEP`` autoreset, a step would otherwise wait for one per finished episode).
        """
        self._check_open()
        slots = [int(s) for s in slots]
        local = self.local
        local.reset(slots, goals)  # validates the goals as the actors would
        for s, g in zip(slots, goals, strict=True):
            self._obs[s] = local.observe(s)
            self._info[s] = local.info(s)
            self._finished[s] = local.finished(s)
            self._live[s] = True
            self._pending[int(self.owner[s])][s] = int(g)
            lost = self._lost[s]
            if lost is not None:  # lost, then reset before any step could report it
                self._info[s] = {**self._info[s], "lost_episode": lost.as_info()}
                self._lost[s] = None

    def step(self, slots: Sequence[int], actions: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Step ``slots`` in their actors, all actors at once (with the pending resets).

        A slot whose episode was lost (its actor died) is not sent: it reports reward 0,
        ``truncated=True`` and ``info["lost_episode"]``, so the vector env starts its next
        episode as after any truncation.
        """
        self._check_open()
        slots = [int(s) for s in slots]
        position = {slot: i for i, slot in enumerate(slots)}
        rewards = np.zeros(len(slots), np.float64)
        terminated = np.zeros(len(slots), bool)
        truncated = np.zeros(len(slots), bool)
        send = [(s, a) for s, a in zip(slots, actions, strict=True) if self._lost[s] is None]
        parts = self._split([s for s, _ in send], [portable_action(a) for _, a in send])
        for k, pending in enumerate(self._pending):
            if pending and k not in parts:
                parts[k] = ([], [])
        todo = parts
        while todo:
            refs = {k: self._call(k, local, vals) for k, (local, vals) in todo.items()}
            results, failures = self._gather(refs)
            for k, (head, snapshots) in results.items():
                local = todo[k][0]
                if not local:
                    continue
                self._store(k, local, snapshots)
                base = self.shards[k][0]
                idx = [position[base + s] for s in local]
                rewards[idx], terminated[idx], truncated[idx] = head
            retry = {}
            for k, exc in failures.items():
                base, pending = self.shards[k][0], self._pending[k]
                local, vals = todo[k]
                # an episode the dead actor had not seen yet (its reset was in this call) is
                # replayed on the new actor; the others are lost
                fresh = [(s, a) for s, a in zip(local, vals, strict=True) if base + s in pending]
                self._failed(k, exc)
                retry[k] = ([s for s, _ in fresh], [a for _, a in fresh])
            todo = {k: part for k, part in retry.items() if part[0] or self._pending[k]}
        for s in slots:
            lost = self._lost[s]
            if lost is not None:
                truncated[position[s]] = True
                self._finished[s] = True
                self._info[s] = {**self._info[s], "lost_episode": lost.as_info()}
                self._lost[s] = None
        return rewards, terminated, truncated

    def observe(self, slot: int, mode: str | None = None) -> str:
        """The slot's observation (another mode asks its actor)."""
        if mode is None or mode == self.observation_mode:
            return self._obs[slot]
        return self.observe_many([slot], mode)[0]

    def observe_many(self, slots: Sequence[int], mode: str | None = None) -> list[str]:
        """Observations of many slots in ``mode``, one call per actor (``""`` for lost slots)."""
        self._check_open()
        slots = [int(s) for s in slots]
        if mode is None or mode == self.observation_mode:
            return [self._obs[s] for s in slots]
        known = [s for s in slots if self._live[s]]
        parts = self._split(known, known)
        refs = {k: [self.actors[k].observe.remote(*self._flush(k), local, mode)] for k, (local, _) in parts.items()}
        results, failures = self._gather(refs) if refs else ({}, {})
        for k, exc in failures.items():
            self._failed(k, exc)
        out = {s: "" for s in slots}
        for k, (_, pages) in results.items():
            base = self.shards[k][0]
            for s, page in zip(parts[k][0], pages, strict=True):
                out[base + s] = page
        return [out[s] for s in slots]

    def kill_actor(self, k: int, wait: float = 30.0) -> None:
        """Kill the actor of shard ``k`` and wait until Ray reports it dead (to test failures).

        ``ray.kill`` only sends the request; without the wait a call made at once may still
        reach the actor.
        """
        ray = self._ray
        actor = self.actors[k]
        ray.kill(actor, no_restart=True)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                ray.get(actor.ready.remote(), timeout=max(0.0, deadline - time.monotonic()))
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                return
            time.sleep(0.05)
        raise ActorDied(f"the actor of {self._describe(k)} was still answering {wait:.0f} s after ray.kill")

    def close(self) -> None:
        """Kill every actor and remove the placement group (if the pool made one)."""
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        if not ray.is_initialized():
            return
        for actor in getattr(self, "actors", []):
            if actor is not None:
                self._kill(actor)
        if self.placement_group is not None:
            try:
                ray.util.remove_placement_group(self.placement_group)
            except Exception:
                pass

    def __del__(self):  # pragma: no cover - best effort at interpreter exit
        try:
            self.close()
        except Exception:
            pass
