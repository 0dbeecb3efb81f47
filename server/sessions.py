"""Play sessions: random ids mapped to the slots of one shared :class:`~webshop_gym.engine.Engine`.

Every player gets a session (a URL-safe random token) that owns one slot of a single engine
with ``MAX_SESSIONS`` slots; the env, the vector env and this server therefore run the same
simulator.  The store is bounded: sessions idle for longer than ``SESSION_TTL`` seconds expire,
and when every slot is taken the least recently used session is evicted, so memory stays flat
however many sessions are created.  Freed slots are reused.

All engine work (reset, step, render) runs on one dedicated thread, one job at a time: the
engine's arrays are not meant for concurrent writers, and Pyserini's Java VM is then only ever
entered from that one thread (Werkzeug serves each connection on a new thread, and a thread
that entered the JVM must be detached before it exits).  A job looks a session up and uses
its slot in one go, so a slot can never be handed to a new session between the two.

With ``LOG_DIR`` set, each session appends to ``LOG_DIR/<session>.jsonl`` in the trajectory
format of :mod:`webshop_gym.runs.log` (an ``episode`` line when the session starts, a ``step``
line after every action, each flushed before the player sees the page), so
``webshop-gym replay LOG`` replays it in ``WebShopEnv``.
"""

from __future__ import annotations

import copy
import dataclasses
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from webshop_gym.engine import Engine
from webshop_gym.error import Error, GoalNotFound
from webshop_gym.render.html import Nav
from webshop_gym.runs.log import TrajectoryWriter, shop_record

__all__ = ["LogWriteFailed", "Session", "SessionStore", "get_store", "init_app"]

EXTENSION = "webshop_gym"


class LogWriteFailed(Error, OSError):
    """A session log line could not be written; the action or the new game was rolled back."""


@dataclass(eq=False)
class Session:
    """One player's episode.

    Attributes:
        id: the URL token.
        slot: the engine slot it owns.
        goal: the goal index.
        split: the split the goal was drawn from (``None``: picked by index).
        started: wall-clock start time (seconds since the epoch).
        last_seen: the store clock's time of the last request.
        log: the session's JSONL log (``None`` when logging is off).
        notice: a one-shot message for the next page view, and its kind.
    """

    id: str
    slot: int
    goal: int
    split: str | None
    started: float
    last_seen: float
    log: Path | None = None
    notice: tuple[str, str] | None = field(default=None, repr=False)


@dataclass
class Outcome:
    """What one action did (returned by :meth:`SessionStore.act`)."""

    action: str
    applied: bool
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    invalid: bool = False


class SessionStore:
    """A bounded map of session ids to the slots of one engine.

    Args:
        shop: the shop to play.
        max_sessions: engine slots, i.e. the most sessions alive at once.
        ttl: seconds of inactivity after which a session expires (``None``: never).
        max_steps: actions per episode before it is truncated (``None``: no cap).
        show_attrs: show the ``Attributes`` tab on item pages.
        images: let pages load product images.
        log_dir: folder of the per-session JSONL logs (``None``: no logs).
        log_fsync: also fsync every log line (survives a machine crash, not just a process crash).
        seed: seed of the random goals (``None``: fresh entropy).
        clock: monotonic clock in seconds (tests inject a fake one).
        price_seed: recorded in the logs so that ``replay`` reloads the same shop.
    """

    def __init__(
        self,
        shop,
        max_sessions: int = 1000,
        ttl: float | None = 3600.0,
        max_steps: int | None = 15,
        show_attrs: bool = False,
        images: bool = False,
        log_dir: str | Path | None = None,
        log_fsync: bool = False,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        price_seed: int | None = None,
    ):
        if int(max_sessions) < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions!r}")
        if ttl is not None and float(ttl) <= 0:
            raise ValueError(f"session ttl must be a positive number of seconds or None, got {ttl!r}")
        self.shop = shop
        self.engine = Engine(shop, int(max_sessions), observation_mode="text", max_steps=max_steps,
                             show_attrs=show_attrs, html_images=images)
        self.max_sessions = int(max_sessions)
        self.ttl = None if ttl is None else float(ttl)
        self.log_dir = Path(log_dir) if log_dir else None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)  # a bad folder fails now, not mid-game
        self.log_fsync = bool(log_fsync)
        self.clock = clock
        self.rng = np.random.default_rng(seed)
        self.shop_record = shop_record(shop, price_seed=price_seed)
        self.stats = {"created": 0, "expired": 0, "evicted": 0, "actions": 0}
        self._sessions: OrderedDict[str, Session] = OrderedDict()  # least recently used first
        self._free = list(range(self.max_sessions - 1, -1, -1))  # pop() hands out slot 0 first
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webshop-engine")
        self._worker_ident: int | None = None

    # -- the engine thread ----------------------------------------------------------------------

    def _call(self, fn: Callable, *args: Any) -> Any:
        """Run ``fn(*args)`` on the engine thread and return its result (or raise its error)."""
        if threading.get_ident() == self._worker_ident:
            return fn(*args)
        return self._worker.submit(self._on_worker, fn, *args).result()

    def _on_worker(self, fn: Callable, *args: Any) -> Any:
        self._worker_ident = threading.get_ident()
        return fn(*args)

    def run(self, fn: Callable, *args: Any) -> Any:
        """Run ``fn(*args)`` on the engine thread (the one thread that uses the engine and the JVM)."""
        return self._call(fn, *args)

    def submit(self, fn: Callable, *args: Any) -> Future:
        """Queue ``fn(*args)`` on the engine thread without waiting; its future (for event loops)."""
        return self._worker.submit(self._on_worker, fn, *args)

    def close(self) -> None:
        """Stop the engine thread (pending jobs finish first)."""
        self._worker.shutdown(wait=True)

    def warm_up(self) -> None:
        """Do now what the first players would otherwise wait for.

        Plays one short episode in a free slot (no session, no log): it starts the Java VM and
        the search engine, compiles every page template and runs the reward once.
        """
        self._call(self._warm_up)

    def _warm_up(self) -> None:
        with self._lock:
            if not self._free:
                return
            slot = self._free[-1]
        engine, goal = self.engine, self.goal_range(None).start
        engine.reset([slot], [goal])
        pages = [engine.html.render(engine.state, slot, human=True)]
        engine.step([slot], [f"search[{self.shop.goals.instruction[goal]}]"])
        products = [a for a in engine.info(slot)["valid_actions"]
                    if a not in ("click[back to search]", "click[next >]", "click[< prev]")]
        for action in [*products[:1], "click[description]", "click[< prev]", "click[buy now]"]:
            pages.append(engine.html.render(engine.state, slot, human=True))
            if action not in engine.info(slot)["valid_actions"]:
                break
            engine.step([slot], [action])
        pages.append(engine.html.render(engine.state, slot, human=True))
        engine.reset([slot], [goal])

    # -- sessions -----------------------------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def __contains__(self, sid: str) -> bool:
        with self._lock:
            return sid in self._sessions

    def goal_range(self, split: str | None) -> range:
        """Goal indices of a split (``None`` or ``"all"``: every goal)."""
        return self.shop.goals.split_range(split)

    def create(self, goal: int | None = None, split: str | None = None) -> Session:
        """Start a session on ``goal``, or on a goal drawn from ``split`` in proportion to weight.

        Raises:
            GoalNotFound: the goal index is out of range or the split holds no goals.
            ValueError: the split name is unknown.
        """
        if goal is not None:
            goal = self.engine.check_goal(goal)
            split = None
        else:
            goals = self.goal_range(split)
            if len(goals) == 0:
                raise GoalNotFound(f"split {split!r} holds no goals in this goal set ({len(self.shop.goals)} goals)")
        return self._call(self._create, goal, split)

    def _create(self, goal: int | None, split: str | None) -> Session:
        if goal is None:
            goal = int(self.shop.goals.sample(self.rng, self.goal_range(split)))
        now = self.clock()
        with self._lock:
            self._expire(now)
            if not self._free:
                _, oldest = self._sessions.popitem(last=False)
                self._free_slot(oldest)
                self.stats["evicted"] += 1
            slot = self._free.pop()
            sid = secrets.token_urlsafe(18)
            while sid in self._sessions:  # pragma: no cover - 144 random bits
                sid = secrets.token_urlsafe(18)
            log = self.log_dir / f"{sid}.jsonl" if self.log_dir else None
            session = Session(sid, slot, int(goal), split, time.time(), now, log)
            self._sessions[sid] = session
            self.stats["created"] += 1
        self.engine.reset([slot], [goal])
        if log is not None:
            try:
                self._write(log, "episode", sid, goal, self.shop.goals.instruction[goal], self.shop_record,
                            source="server", split=split, max_steps=self.engine.max_steps)
            except Exception as exc:
                # No game without its log line: forget the session and give the slot back.
                with self._lock:
                    self._sessions.pop(sid, None)
                    self._free_slot(session)
                    self.stats["created"] -= 1
                raise LogWriteFailed(f"could not write the session log {log}: {exc}") from exc
        return session

    def get(self, sid: str) -> Session | None:
        """Return a live session and mark it used (``None`` if unknown or expired)."""
        return self._call(self._lookup, sid)

    def _lookup(self, sid: str) -> Session | None:
        now = self.clock()
        with self._lock:
            self._expire(now)
            session = self._sessions.get(sid)
            if session is not None:
                session.last_seen = now
                self._sessions.move_to_end(sid)
            return session

    def _expire(self, now: float) -> None:
        """Drop sessions idle for longer than the TTL (the oldest are first in the map)."""
        if self.ttl is None:
            return
        while self._sessions:
            sid, session = next(iter(self._sessions.items()))
            if now - session.last_seen <= self.ttl:
                break
            del self._sessions[sid]
            self._free_slot(session)
            self.stats["expired"] += 1

    def _free_slot(self, session: Session) -> None:
        # Back to a blank start page: drops the slot's results, visited set and purchase.
        self.engine.reset([session.slot], [self.goal_range(None).start])
        self._free.append(session.slot)

    def expire(self) -> int:
        """Drop expired sessions now; return how many are left."""
        def job() -> int:
            with self._lock:
                self._expire(self.clock())
                return len(self._sessions)

        return self._call(job)

    # -- playing --------------------------------------------------------------------------------

    def act(self, sid: str, action: str) -> Outcome | None:
        """Apply one action to a session's episode (``None`` if the session is unknown).

        Actions on a finished episode (bought, or at the step cap) change nothing and are not
        logged; the page then says so.
        """
        return self._call(self._act, sid, action)

    def _act(self, sid: str, action: str) -> Outcome | None:
        session = self._lookup(sid)
        if session is None:
            return None
        slot, engine = session.slot, self.engine
        if engine.finished(slot):
            session.notice = ("This episode is over: start a new game to play again.", "info")
            return Outcome(action, applied=False)
        saved = self._save_slot(slot) if session.log is not None else None
        rewards, terminated, truncated = engine.step([slot], [action])
        outcome = Outcome(action, True, float(rewards[0]), bool(terminated[0]), bool(truncated[0]),
                          bool(engine.invalid[slot]))
        if session.log is not None:
            info = engine.info(slot)
            try:
                self._write(session.log, "step", sid, int(engine.state.steps[slot]), action, info,
                            outcome.reward, outcome.terminated, outcome.truncated)
            except Exception as exc:
                # Never an applied but unlogged action: undo the step, then report.
                self._restore_slot(slot, saved)
                raise LogWriteFailed(f"could not write the session log {session.log}: {exc}") from exc
        self.stats["actions"] += 1
        if outcome.invalid:
            session.notice = (f"Nothing happened: {action!r} is not available on this page.", "warn")
        return outcome

    def page(self, sid: str, nav: Nav) -> str | None:
        """Render a session's current page for a person (``None`` if the session is unknown)."""
        return self._call(self._page, sid, nav)

    def _page(self, sid: str, nav: Nav) -> str | None:
        session = self._lookup(sid)
        if session is None:
            return None
        slot, engine = session.slot, self.engine
        state = engine.state
        extra = dict(nav.extra)
        extra.update(steps=int(state.steps[slot]), max_steps=engine.max_steps, keywords=state.keywords[slot])
        if engine.truncated[slot]:
            extra.update(notice=f"Step limit reached ({engine.max_steps} actions) without a purchase: "
                                "the episode ends with reward 0.", notice_kind="warn")
        elif session.notice is not None:
            extra.update(notice=session.notice[0], notice_kind=session.notice[1])
        session.notice = None
        nav = Nav(action=nav.action, click_base=nav.click_base, menu=nav.menu, extra=extra)
        return engine.html.render(state, slot, human=True, nav=nav)

    def snapshot(self, sid: str) -> dict | None:
        """The session's state as JSON-ready data: the text observation, the info dict, reward."""
        return self._call(self._snapshot, sid)

    def _snapshot(self, sid: str) -> dict | None:
        session = self._lookup(sid)
        if session is None:
            return None
        slot, engine = session.slot, self.engine
        return {
            "session": sid,
            "goal_index": session.goal,
            "split": session.split,
            "observation": engine.observe(slot, "text"),
            "reward": float(engine.state.reward[slot]),
            "terminated": bool(engine.state.done[slot]),
            "truncated": bool(engine.truncated[slot]),
            "max_steps": engine.max_steps,
            "info": engine.info(slot),
        }

    def observe(self, sid: str, mode: str = "text") -> str | None:
        """A session's observation in any of the engine's modes (``None`` if unknown)."""
        def job() -> str | None:
            session = self._lookup(sid)
            return None if session is None else self.engine.observe(session.slot, mode)

        return self._call(job)

    def _save_slot(self, slot: int) -> dict:
        """A copy of everything a step can change in ``slot`` (to undo it)."""
        engine = self.engine
        saved = {}
        for f in dataclasses.fields(engine.state):
            column = getattr(engine.state, f.name)
            saved[f.name] = column[slot].copy() if isinstance(column, np.ndarray) else copy.copy(column[slot])
        saved["_invalid"] = bool(engine.invalid[slot])
        saved["_truncated"] = bool(engine.truncated[slot])
        return saved

    def _restore_slot(self, slot: int, saved: dict) -> None:
        """Put ``slot`` back as :meth:`_save_slot` found it."""
        engine = self.engine
        for f in dataclasses.fields(engine.state):
            getattr(engine.state, f.name)[slot] = saved[f.name]
        engine.invalid[slot] = saved["_invalid"]
        engine.truncated[slot] = saved["_truncated"]
        engine.forget(slot)  # what the engine kept of the undone page (its text, its actions)

    # -- logs ---------------------------------------------------------------------------------

    def _write(self, path: Path, kind: str, *args: Any, **extra: Any) -> None:
        # One open-append-flush-close per line: no file handle is held per session, so the number
        # of sessions is not limited by the process's open-file limit, and a crash loses nothing.
        writer = TrajectoryWriter(path, fsync=self.log_fsync)
        try:
            getattr(writer, kind)(*args, **extra)
        finally:
            writer.close()


# -- Flask glue ---------------------------------------------------------------------------------


def init_app(app) -> SessionStore:
    """Load the shop named by the app's config and attach a :class:`SessionStore` to ``app``."""
    from webshop_gym.shop import Shop, load_shop

    config = app.config
    shop = config.get("SHOP")
    if not isinstance(shop, Shop):
        shop = load_shop(shop, goals=config.get("GOALS"), human_goals=bool(config.get("HUMAN_GOALS")),
                         seed=int(config.get("PRICE_SEED") or 0), progress=False)
    max_steps = config.get("MAX_STEPS")
    store = SessionStore(
        shop,
        max_sessions=int(config["MAX_SESSIONS"]),
        ttl=config.get("SESSION_TTL") or None,
        max_steps=int(max_steps) if max_steps else None,
        show_attrs=bool(config.get("SHOW_ATTRS")),
        images=bool(config.get("IMAGES")),
        log_dir=config.get("LOG_DIR") or None,
        log_fsync=bool(config.get("LOG_FSYNC")),
        seed=config.get("SEED"),
        clock=config.get("CLOCK") or time.monotonic,
        price_seed=None if isinstance(config.get("SHOP"), Shop) else int(config.get("PRICE_SEED") or 0),
    )
    app.extensions[EXTENSION] = store
    return store


def get_store():
    """The :class:`SessionStore` of the current Flask app."""
    from flask import current_app

    return current_app.extensions[EXTENSION]
