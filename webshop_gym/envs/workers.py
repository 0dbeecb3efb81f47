"""Multi-process stepping: a batch's slots split into shards, each stepped by its own process.

:class:`WorkerPool` has the interface of :class:`~webshop_gym.engine.Engine` (reset, step,
observe, info, ...), so :class:`~webshop_gym.envs.vector_env.WebShopVectorEnv` keeps its autoreset,
goal and info logic in the parent and results are identical to one process.  With
``num_workers=W`` the batch is split into ``W`` contiguous shards: this process steps shard 0
itself while ``W - 1`` spawned worker processes step the others (a parent that only waited
for its workers would leave a core idle).  Every worker runs an engine over the same shop: the
compiled catalog is memory-mapped from the cache (not pickled or copied), and each worker runs
its own search engine.  Workers start with ``spawn``; one that dies raises :class:`WorkerDied`
in the parent instead of hanging it, and so does every later ``reset`` or ``step`` (the same
message; after ``close()``, one saying the workers were stopped).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import traceback
from collections.abc import Sequence
from multiprocessing.connection import wait
from multiprocessing.reduction import ForkingPickler

import numpy as np

from webshop_gym.error import Error
from webshop_gym.protocols.splits import goal_ids

__all__ = ["ShardedEngine", "WorkerDied", "WorkerError", "WorkerPool", "portable_action", "shop_arguments"]


class WorkerDied(Error, RuntimeError):
    """A worker process exited unexpectedly."""


class WorkerError(Error, RuntimeError):
    """A worker raised an exception (its traceback is in the message)."""


def shop_arguments(shop) -> dict:
    """Arguments that make ``load_shop`` rebuild ``shop`` in another process."""
    goals = shop.goals
    return {
        "path": str(shop.path),
        "goals": goals.source or None,
        "human_goals": goals.kind == "human",
        "seed": goals.seed if goals.seed is not None else 0,
        "num_products": shop.catalog.meta.get("num_products"),
        "index": str(shop.engine.index_arg) if shop.engine.index_arg is not None else None,
        "search_backend": shop.engine.backend,
    }


def portable_action(action):
    """The action as a worker should see it: a plain ``str``, or ``None`` for any non-string.

    In one process a non-string action is an invalid no-op; ``None`` is one too, and unlike a
    lambda or a lock it always pickles.  A ``str`` subclass becomes the plain string it holds.
    """
    if type(action) is str:
        return action
    if isinstance(action, str):
        return "".join((action,))
    return None


def _snapshot(engine, slot: int) -> tuple:
    return engine.observe(slot), engine.info(slot), engine.finished(slot)


def _start_without_sigint(proc) -> None:
    """Start a worker process that ignores Ctrl-C from its first instruction on.

    Ctrl-C reaches the whole process group and the parent handles it (closing the workers).  A
    worker ignores SIGINT once its code runs, but a spawned interpreter starts with Python's own
    handler, so a Ctrl-C landing while it imported printed a KeyboardInterrupt traceback from the
    worker.  An ignored SIGINT is inherited across exec (and Python then installs no handler), so
    the parent ignores it while the worker starts, with SIGINT blocked meanwhile: a Ctrl-C for the
    parent in that moment stays pending and is delivered once its handler is back.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        proc.start()  # pragma: no cover - only the main thread sets handlers; the worker ignores SIGINT itself
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            proc.start()
        finally:
            signal.signal(signal.SIGINT, handler)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _worker(conn, shop_args: dict, engine_args: dict, n_slots: int, heap: str | None) -> None:
    # Ctrl-C reaches the whole process group; the parent handles it and closes the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if heap:
            from webshop_gym.search import java as _java

            _java.set_heap(heap)
        from webshop_gym.engine import Engine
        from webshop_gym.shop import load_shop

        shop = load_shop(progress=False, **shop_args)
        engine = Engine(shop, n_slots, **engine_args)
        conn.send(("ready", os.getpid()))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        try:
            command = message[0]
            if command == "close":
                conn.send(("ok",))
                return
            if command == "reset":
                _, slots, goals = message
                engine.reset(slots, goals)
                conn.send(("ok", [_snapshot(engine, s) for s in slots]))
            elif command == "step":
                _, slots, actions = message
                rewards, terminated, truncated = engine.step(slots, actions)
                conn.send(("ok", rewards, terminated, truncated, [_snapshot(engine, s) for s in slots]))
            elif command == "observe":
                _, slot, mode = message
                conn.send(("ok", engine.observe(slot, mode)))
            elif command == "exit":  # for tests: die without a word
                os._exit(int(message[1]))
            else:
                conn.send(("error", f"unknown command {command!r}"))
        except BaseException:
            conn.send(("error", traceback.format_exc()))


class ShardedEngine:
    """The engine interface over slots that live in contiguous shards elsewhere.

    Bookkeeping shared by :class:`WorkerPool` (processes) and
    :class:`~webshop_gym.envs.ray_pool.RayEnginePool` (Ray actors): which shard owns a slot, the last
    observation, info and end flag of every slot, and goal sampling, which stays here (the
    vector env's generators live in this process).
    """

    def _init_shards(self, shop, split: str | None, bounds: Sequence[int], allow_test_goals: bool = False) -> None:
        """Split ``bounds[-1]`` slots into shards ``[bounds[k], bounds[k + 1])``."""
        num_slots = int(bounds[-1])
        self.shop = shop
        self.goal_range = goal_ids(shop, split, allow_test_goals=allow_test_goals)
        self.shards = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
        self.owner = np.zeros(num_slots, np.int64)
        for k, (a, b) in enumerate(self.shards):
            self.owner[a:b] = k
        self._obs: list[str] = [""] * num_slots
        self._info: list[dict] = [{}] * num_slots
        self._finished = np.zeros(num_slots, bool)

    def _split(self, slots: Sequence[int], values: Sequence) -> dict[int, tuple[list[int], list]]:
        """Group (slot, value) pairs by shard, with shard-local slot numbers."""
        parts: dict[int, tuple[list[int], list]] = {}
        for slot, value in zip(slots, values):
            k = int(self.owner[slot])
            local, vals = parts.setdefault(k, ([], []))
            local.append(int(slot) - self.shards[k][0])
            vals.append(value)
        return parts

    def _store(self, k: int, local: list[int], snapshots) -> None:
        """Remember the (observation, info, finished) a shard reported for its slots."""
        base = self.shards[k][0]
        for s, (obs, info, finished) in zip(local, snapshots, strict=True):
            self._obs[base + s] = obs
            self._info[base + s] = info
            self._finished[base + s] = finished

    def set_rng(self, slot: int, rng) -> None:
        """Goal sampling happens here; nothing to send."""

    def sample_goal_with(self, rng: np.random.Generator) -> int:
        """Draw a goal here, from this process's generator."""
        return self.shop.goals.sample(rng, self.goal_range)

    def finished(self, slot: int) -> bool:
        """Whether the slot's episode ended."""
        return bool(self._finished[slot])

    def info(self, slot: int) -> dict:
        """The slot's info."""
        return self._info[slot]


class WorkerPool(ShardedEngine):
    """An engine whose slots are sharded over this process and ``num_workers - 1`` worker processes.

    Args:
        num_workers: processes that step the batch, this one included (shard 0 is stepped here).
        num_slots: slots in all.
        shop: the parent's shop (its files are re-opened, memory-mapped, by every worker).
        observation_mode, max_steps, show_attrs, split, allow_test_goals: as :class:`~webshop_gym.engine.Engine`.
        java_heap: each worker's JVM heap (default ``WEBSHOP_GYM_JAVA_HEAP`` or 1g).
        timeout: seconds to wait for a worker's answer before declaring it stuck.
    """

    def __init__(
        self,
        num_workers: int,
        num_slots: int,
        shop,
        observation_mode: str = "text",
        max_steps: int | None = 15,
        show_attrs: bool = False,
        split: str | None = None,
        java_heap: str | None = None,
        timeout: float = 600.0,
        allow_test_goals: bool = False,
    ):
        from webshop_gym.engine import Engine

        if not 1 <= num_workers <= num_slots:
            raise ValueError(f"num_workers must be between 1 and num_envs ({num_slots}), got {num_workers}")
        self._init_shards(shop, split, np.linspace(0, num_slots, num_workers + 1).round().astype(int), allow_test_goals)
        self.timeout = timeout
        engine_args = {"observation_mode": observation_mode, "max_steps": max_steps, "show_attrs": show_attrs, "split": split,
                       "allow_test_goals": allow_test_goals}
        self.local = Engine(shop, self.shards[0][1] - self.shards[0][0], **engine_args)
        ctx = mp.get_context("spawn")
        self.conns: dict[int, object] = {}
        self.procs: dict[int, object] = {}
        self._closed = False
        self._failure: Exception | None = None  # what ended the pool; every later call repeats it
        for k, (a, b) in enumerate(self.shards[1:], start=1):
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_worker, args=(child, shop_arguments(shop), engine_args, b - a, java_heap), daemon=True
            )
            _start_without_sigint(proc)
            child.close()
            self.conns[k] = parent
            self.procs[k] = proc
        for k in self.procs:
            self._receive(k)

    # -- plumbing -----------------------------------------------------------------------------

    def _fail(self, error: Exception) -> None:
        """Stop every worker and raise ``error``; every later call raises it again (see :meth:`_check`)."""
        self._failure = error
        self.close(force=True)
        raise error

    def _check(self) -> None:
        """Raise what ended the pool (a dead worker, a failed one), or say that it was closed."""
        if self._failure is not None:
            raise type(self._failure)(str(self._failure))
        if self._closed:
            raise WorkerDied("the worker processes were stopped (close() was called); create the vector env again")

    def _receive(self, k: int):
        conn, proc = self.conns[k], self.procs[k]
        ready = wait([conn, proc.sentinel], timeout=self.timeout)
        if not ready:
            self._fail(WorkerDied(f"worker {k} (pid {proc.pid}) did not answer within {self.timeout:.0f} s"))
        if conn in ready:
            try:
                message = conn.recv()
            except EOFError:
                message = None
            if message is not None:
                if message[0] == "error":
                    self._fail(WorkerError(f"worker {k} (pid {proc.pid}) failed:\n{message[1]}"))
                return message
        proc.join(timeout=1)
        code = proc.exitcode
        self._fail(WorkerDied(
            f"worker {k} (pid {proc.pid}, slots {self.shards[k][0]}-{self.shards[k][1] - 1}) exited with code {code}; "
            "its episodes are lost. Create the vector env again."
        ))

    def _send(self, k: int, message) -> None:
        self._send_bytes(k, ForkingPickler.dumps(message))

    def _send_bytes(self, k: int, payload) -> None:
        try:
            self.conns[k].send_bytes(payload)
        except (BrokenPipeError, OSError):
            self._receive(k)  # raises WorkerDied with the exit code

    def _broadcast(self, messages: dict[int, tuple]) -> None:
        """Send one message to each of several workers: all of them, or (if one cannot be pickled) none.

        Pickling everything first means a message that fails to pickle can never leave some
        workers one step ahead of the others.
        """
        payloads = {k: ForkingPickler.dumps(message) for k, message in messages.items()}
        for k, payload in payloads.items():
            self._send_bytes(k, payload)

    # -- the engine interface -------------------------------------------------------------------

    def _run(self, command: str, parts: dict[int, tuple[list[int], list]]) -> dict[int, tuple]:
        """Send ``command`` to the workers, run shard 0's part here meanwhile, then collect every answer.

        Each answer is what the worker sends: ``("ok", ...results, snapshots)``.  An error here
        is raised only after every worker has answered, so no worker is left a step behind.
        """
        self._check()
        self._broadcast({k: (command, local, vals) for k, (local, vals) in parts.items() if k != 0})
        answers: dict[int, tuple] = {}
        failure: BaseException | None = None
        if 0 in parts:
            local, vals = parts[0]
            try:
                if command == "reset":
                    self.local.reset(local, vals)
                    answers[0] = ("ok", [_snapshot(self.local, s) for s in local])
                else:
                    result = self.local.step(local, vals)
                    answers[0] = ("ok", *result, [_snapshot(self.local, s) for s in local])
            except BaseException as exc:  # collect the workers' answers first
                failure = exc
        for k in parts:
            if k != 0:
                answers[k] = self._receive(k)
        if failure is not None:
            raise failure
        return answers

    def reset(self, slots: Sequence[int], goals: Sequence[int]) -> None:
        """Start episodes in ``slots``."""
        parts = self._split(slots, [int(g) for g in goals])
        for k, answer in self._run("reset", parts).items():
            self._store(k, parts[k][0], answer[1])

    def step(self, slots: Sequence[int], actions: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Step ``slots``: shard 0 here, the others in their workers, all at once."""
        slots = [int(s) for s in slots]  # Python ints (an index array's items would be numpy ints)
        parts = self._split(slots, [portable_action(a) for a in actions])
        answers = self._run("step", parts)
        position = {slot: i for i, slot in enumerate(slots)}
        rewards = np.zeros(len(slots), np.float64)
        terminated = np.zeros(len(slots), bool)
        truncated = np.zeros(len(slots), bool)
        for k, (_, r, term, trunc, snapshots) in answers.items():
            local = parts[k][0]
            self._store(k, local, snapshots)
            base = self.shards[k][0]
            idx = [position[base + s] for s in local]
            rewards[idx], terminated[idx], truncated[idx] = r, term, trunc
        return rewards, terminated, truncated

    def observe(self, slot: int, mode: str | None = None) -> str:
        """The slot's observation (another mode asks the engine that holds the slot)."""
        if mode is None:
            return self._obs[slot]
        k = int(self.owner[slot])
        if k == 0:
            return self.local.observe(slot, mode)
        self._check()
        self._send(k, ("observe", slot - self.shards[k][0], mode))
        return self._receive(k)[1]

    def kill_worker(self, k: int, code: int = 9) -> None:
        """Make the worker process of shard ``k`` (``k >= 1``) exit at once (to test failure handling)."""
        self.conns[k].send(("exit", code))
        self.procs[k].join(timeout=10)

    def close(self, force: bool = False) -> None:
        """Stop every worker."""
        if self._closed:
            return
        self._closed = True
        for k, proc in self.procs.items():
            conn = self.conns[k]
            if not force and proc.is_alive():
                try:
                    conn.send(("close",))
                    if conn.poll(5):
                        conn.recv()
                except (BrokenPipeError, EOFError, OSError):
                    pass
            proc.join(timeout=0 if force else 5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
            conn.close()

    def __del__(self):  # pragma: no cover - best effort at interpreter exit
        try:
            self.close(force=True)
        except Exception:
            pass
