"""WebShop as an OpenEnv ``Environment``: each session a slot of one shared engine.

OpenEnv's server (``HTTPEnvServer``) calls an environment factory once per WebSocket session
(and once per stateless HTTP request).  Here the factory is cheap: a
:class:`WebShopEnvironment` is a thin facade that borrows a slot of the one
:class:`~webshop_gym.engine.Engine` held by a :class:`SlotPool` at its first reset and gives
it back at ``close()`` (the end of the session, or OpenEnv's idle-session reaper).  So every
session plays the same simulator as :class:`~webshop_gym.envs.env.WebShopEnv`, memory does not
grow with the number of sessions ever opened, and no shop is loaded per session.

``reset_async`` and ``step_async`` run on the server's event loop, which spares OpenEnv's
per-session thread hop.  Steps are batched: every session whose step frame arrives in the same
turn of the event loop is advanced by one call of the batched engine (as the vector env does),
then each gets its own observation; a session's results do not depend on who shares its batch.
The engine is guarded by one lock for the few calls OpenEnv makes from its executor threads
(``close``).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Sequence
from typing import Any

from gymnasium.utils import seeding
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
)
from openenv.core.env_server.types import EnvironmentMetadata

from webshop_gym.agents.tools import (
    ToolCallError,
    call_action,
    call_text,
    inadmissible_text,
    page_text,
    tool_schemas,
)
from webshop_gym.core.actions import MAX_ACTION_LENGTH
from webshop_gym.engine import Engine
from webshop_gym.error import EpisodeFinished, Error, InvalidArgument
from webshop_gym.protocols import goal_ids
from webshop_gym.shop import Shop
from webshop_gym.utils.checks import check_goal_index, check_seed

from .models import WebShopAction, WebShopObservation, WebShopState, check_reset_arguments

__all__ = ["MAX_EPISODE_ID", "NoEpisode", "NoFreeSlot", "SPLITS", "SessionClosed", "SlotPool", "WebShopEnvironment",
           "closed_message", "mcp_tools"]

SPLITS = {"test": "test", "eval": "validation", "train": "train"}
"""The goal splits (test = the first 500 goals) and the OpenEnv task-API type of each."""
MAX_EPISODE_ID = 255
"""Longest ``episode_id`` (characters), as OpenEnv's HTTP ``/reset`` allows."""


def mcp_tools() -> list[Tool]:
    """``search`` and ``click`` as OpenEnv's MCP tools: the schemas of :func:`~webshop_gym.agents.tools.tool_schemas`."""
    return [Tool(name=f["name"], description=f["description"], input_schema=f["parameters"])
            for f in (s["function"] for s in tool_schemas())]


def closed_message(idle_timeout: float | None) -> str:
    """What a client is told about a closed session (the error frame sent when it is evicted)."""
    return ("this session was closed" + (f" (idle for more than {idle_timeout:g} s)" if idle_timeout else "")
            + "; open a new session")


class SessionClosed(Error, RuntimeError):
    """The session was closed (idle too long, or the server is stopping); open a new one."""


class NoEpisode(Error, RuntimeError):
    """A step before any reset (also: a stateless HTTP ``/step``, which has no episode)."""


class NoFreeSlot(Error, RuntimeError):
    """Every slot of the engine is in use."""


class SlotPool:
    """One engine over one shop, whose slots are lent to sessions.

    Args:
        shop: the shop every session plays.
        num_slots: slots of the engine (the server's ``--max-envs`` plus one for stateless HTTP).
        max_steps: step cap per episode (``None``: none).
        observation_mode: ``text`` (default), ``text_rich``, ``html`` or ``url``.
        show_attrs: show the Attributes tab on item pages.
        idle_timeout: seconds after which OpenEnv evicts an idle session (for error messages).
        seed_goals: ``reset(seed=s)`` plays goal ``s`` (with ``split``: the split's ``s``-th goal)
            instead of drawing one from a generator seeded with ``s``; for trainers that name
            tasks by seed (verifiers' OpenEnv taskset: seeds 0-499 are then the test split).
    """

    def __init__(self, shop: Shop, num_slots: int, max_steps: int | None = 15, observation_mode: str = "text",
                 show_attrs: bool = False, idle_timeout: float | None = None, seed_goals: bool = False):
        self.shop = shop
        self.seed_goals = bool(seed_goals)
        self.engine = Engine(shop, num_slots, observation_mode=observation_mode, max_steps=max_steps,
                             show_attrs=show_attrs)
        self.idle_timeout = idle_timeout
        self.lock = threading.Lock()
        self._free = list(range(num_slots - 1, -1, -1))  # pop() hands out slot 0 first
        self._pending: list[tuple[WebShopEnvironment, str, asyncio.Future]] = []
        self._flush_scheduled = False
        self.stats = {"sessions": 0, "episodes": 0, "steps": 0, "batches": 0}
        self._splits: dict[str, range | Sequence[int]] = {}

    def split_goals(self, split: str) -> range | Sequence[int]:
        """The goals of a split: ``test``, ``eval``, ``train``, or a protocol's ``NAME:train``/``NAME:test``.

        A protocol's goals come from :func:`~webshop_gym.protocols.goal_ids` (the shop must be the
        protocol's), test goals included: the client that builds a training set refuses those
        itself.  Computed once per split.
        """
        goals = self._splits.get(split)
        if goals is None:
            goals = self.shop.goals.split_range(split) if split in SPLITS else goal_ids(
                self.shop, split, allow_test_goals=True)
            self._splits[split] = goals
        return goals

    @property
    def num_slots(self) -> int:
        """Slots of the engine."""
        return self.engine.num_slots

    @property
    def in_use(self) -> int:
        """Slots lent out now."""
        with self.lock:
            return self.num_slots - len(self._free)

    def acquire(self) -> int:
        """Lend a slot (the caller holds :attr:`lock`).

        Raises:
            NoFreeSlot: every slot is in use.
        """
        if not self._free:
            raise NoFreeSlot(f"all {self.num_slots} episode slots are in use; close a session or try again later")
        self.stats["sessions"] += 1
        return self._free.pop()

    def release(self, slot: int) -> None:
        """Take a slot back (the caller holds :attr:`lock`)."""
        self._free.append(slot)

    def submit(self, env: WebShopEnvironment, action: str) -> asyncio.Future:
        """Queue a step of ``env`` for the next batch (on the running event loop); returns its future."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((env, action, future))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        """Advance every queued session by one batched engine step and resolve their futures."""
        batch, self._pending = self._pending, []
        self._flush_scheduled = False
        ready, slots = [], set()
        with self.lock:
            for env, action, future in batch:
                if future.done():
                    continue
                try:
                    slot = env._check_step()
                    if slot in slots:
                        raise InvalidArgument("a step of this session is already in progress; await it first")
                    slots.add(slot)
                    ready.append((env, slot, action, future))
                except Exception as exc:
                    future.set_exception(exc)
            if not ready:
                return
            try:
                rewards, terminated, truncated = self.engine.step([r[1] for r in ready], [r[2] for r in ready])
                self.stats["steps"] += len(ready)
                self.stats["batches"] += 1
                for k, (env, slot, _, future) in enumerate(ready):
                    reward = float(rewards[k])
                    env._reward += reward
                    future.set_result(env._observe(slot, reward, bool(terminated[k] or truncated[k])))
            except Exception as exc:  # a bug of ours: every waiting session gets the error frame
                for _, _, _, future in ready:
                    if not future.done():
                        future.set_exception(exc)

    def warm_up(self) -> None:
        """Play a few actions in a spare slot, so the first session does not wait for compilation."""
        with self.lock:
            slot = self.acquire()
            self.stats["sessions"] -= 1
            try:
                engine = self.engine
                engine.reset([slot], [0])
                engine.step([slot], ["search[" + " ".join(engine.instructions[slot].split()[:6]) + "]"])
                engine.observe(slot)
                clicks = [a for a in engine.info(slot)["valid_actions"] if a.startswith("click[b")]
                if clicks:
                    engine.step([slot], [clicks[0]])
                    engine.observe(slot)
                    engine.info(slot)
            finally:
                self.release(slot)


class WebShopEnvironment(Environment[WebShopAction, WebShopObservation, WebShopState]):
    """One OpenEnv session of WebShop: a facade over a slot of the shared engine.

    Built by the server's factory (``functools.partial(WebShopEnvironment, pool=pool)``); it
    takes a slot at the first ``reset`` and gives it back at ``close``.

    Args:
        pool: the shared :class:`SlotPool`.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, pool: SlotPool):
        super().__init__()
        self.pool = pool
        self._slot: int | None = None
        self._closed = False
        self._rng = None
        self._episode_id: str | None = None
        self._split: str | None = None
        self._reward = 0.0
        self._invalid = 0  # inadmissible tool calls in the episode (their error texts count them)

    # -- reset -----------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, goal_index: int | None = None,
              split: str | None = None, index: int | None = None, **unknown: Any) -> WebShopObservation:
        """Start an episode.

        Args:
            seed: seeds the session's generator (goal draws), as ``WebShopEnv.reset(seed=)``:
                the same seed draws the same goal; on a server started with ``--seed-goals``,
                the goal itself (the split's ``seed``-th with ``split``).
            episode_id: a name for the episode (default: a random UUID), echoed in the state.
            goal_index: the goal to play (an index into the server's goal set).
            split: draw the goal from ``test`` (the first 500 goals), ``eval``, ``train`` or a
                protocol's ``NAME:train``/``NAME:test``; with ``index``, take the split's
                ``index``-th goal instead.
            index: position within ``split`` (OpenEnv's task API: ``reset(split=, index=)``).
            **unknown: any other argument is an error naming the known ones (OpenEnv hands
                ``reset`` every key of the frame, because it takes ``**unknown``): a misspelt
                ``goal_idx=3`` would otherwise play a random goal.

        Raises:
            InvalidArgument: an unknown argument, a bad seed, goal, split or index, or ``goal_index`` with ``split``.
            GoalNotFound: ``goal_index`` or ``index`` outside the goal set or the split.
            NoFreeSlot: every slot is in use.
            SessionClosed: the session was closed.
        """
        self._check_open()
        check_reset_arguments(unknown)
        seed = check_seed(seed)
        if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > MAX_EPISODE_ID):
            raise InvalidArgument(f"episode_id must be a string of at most {MAX_EPISODE_ID} characters, got "
                                  + (f"{len(episode_id):,} characters" if isinstance(episode_id, str)
                                     else type(episode_id).__name__))
        pool = self.pool
        goals = pool.shop.goals
        if seed is not None and pool.seed_goals and goal_index is None and index is None:
            if split is None:
                goal_index = seed
            else:
                index = seed
        if goal_index is not None and (split is not None or index is not None):
            raise InvalidArgument("give either goal_index, or split (with an optional index), not both")
        if index is not None and split is None:
            raise InvalidArgument("index needs a split (test, eval or train): reset(split='test', index=0)")
        goal_range = self._split_range(split) if split is not None else None
        if goal_index is not None:
            goal = pool.engine.check_goal(goal_index)
        elif index is not None:

            goal = goal_range[check_goal_index(index, len(goal_range), name=f"index within split {split!r}")]
        else:
            goal = None
        if seed is not None or self._rng is None:
            self._rng, _ = seeding.np_random(seed)
        with pool.lock:
            self._check_open()
            if self._slot is None:
                self._slot = pool.acquire()
            slot = self._slot
            engine = pool.engine
            engine.set_rng(slot, self._rng)
            if goal is None:
                goal = engine.sample_goal_with(self._rng) if goal_range is None else goals.sample(self._rng, goal_range)
            engine.reset([slot], [goal])
            pool.stats["episodes"] += 1
            self._episode_id = episode_id if episode_id is not None else str(uuid.uuid4())
            self._split = split
            self._reward = 0.0
            self._invalid = 0
            return self._observe(slot, 0.0, False)

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None, goal_index: int | None = None,
                          split: str | None = None, index: int | None = None, **unknown: Any) -> WebShopObservation:
        """:meth:`reset`, run inline on the server's event loop."""
        return self.reset(seed=seed, episode_id=episode_id, goal_index=goal_index, split=split, index=index, **unknown)

    # -- step ------------------------------------------------------------------------------------

    def step(self, action: WebShopAction, timeout_s: float | None = None, **kwargs: Any) -> WebShopObservation:
        """Take one action (alone; the server batches concurrent sessions through :meth:`step_async`).

        Raises:
            NoEpisode: no reset yet in this session.
            EpisodeFinished: the episode ended (purchase or step cap); reset to play on.
            SessionClosed: the session was closed.
        """
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=mcp_tools())
        call = self._tool_call(action) if isinstance(action, CallToolAction) else None
        text = call[0] if call is not None else self._action_text(action)
        pool = self.pool
        with pool.lock:
            slot = self._check_step()
            before = list(pool.engine.info(slot)["valid_actions"]) if call is not None else None
            rewards, terminated, truncated = pool.engine.step([slot], [text])
            pool.stats["steps"] += 1
            reward = float(rewards[0])
            self._reward += reward
            observation = self._observe(slot, reward, bool(terminated[0] or truncated[0]))
        return observation if call is None else self._tool_result(action, call, before, observation)

    async def step_async(self, action: WebShopAction, timeout_s: float | None = None, **kwargs: Any) -> WebShopObservation:
        """:meth:`step`, batched with the other sessions stepping in the same turn of the event loop."""
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=mcp_tools())
        call = self._tool_call(action) if isinstance(action, CallToolAction) else None
        text = call[0] if call is not None else self._action_text(action)
        with self.pool.lock:
            slot = self._check_step()  # fail fast, without waiting for the batch
            before = list(self.pool.engine.info(slot)["valid_actions"]) if call is not None else None
        observation = await self.pool.submit(self, text)
        return observation if call is None else self._tool_result(action, call, before, observation)

    # -- MCP tools (OpenEnv's RFC 003: list_tools / call_tool actions on the session) -------------

    @staticmethod
    def _tool_call(action: CallToolAction) -> tuple[str, str, str | None, str | None]:
        """A tool call as ``(action, call text, clicked label, error)``.

        A call that names no tool or lacks its string argument is stepped as an invalid action
        (the empty action), as ``eval --prompt tools`` steps it; ``error`` then says why.
        """
        try:
            text, call = call_action(action.tool_name, action.arguments)
        except ToolCallError as exc:
            return "", call_text(str(action.tool_name), ""), None, str(exc)
        label = text[len("click["):-1] if action.tool_name == "click" else None
        return text, call, label, None  # one over MAX_ACTION_LENGTH is stepped as inadmissible, as the TRL tools do

    def _tool_result(self, action: CallToolAction, call: tuple[str, str, str | None, str | None],
                     admissible_before: list[str], observation: WebShopObservation) -> CallToolObservation:
        """The step of a tool call as OpenEnv's ``CallToolObservation``: the text the TRL tools return, the reward, done.

        ``result`` is ``{"data": text, "is_error": bool}``: an admissible call's text is the new
        page and what it admits (or how the episode ended); an inadmissible one's is the error
        ``eval --prompt tools`` and the TRL environment give (the call still used a step).
        """
        text, shown, label, error = call
        max_steps = self.pool.engine.max_steps
        info = {"instruction": observation.instruction, "valid_actions": observation.admissible_actions,
                "steps": observation.steps, "purchased_asin": observation.purchased_asin}
        truncated = bool(observation.truncated)
        over = bool(observation.done)
        if observation.invalid_action:
            self._invalid += 1
            message = error if error is not None else inadmissible_text(
                shown, label, self._invalid, info, admissible_before, over, max_steps, action_length=len(text))
            result = {"data": message, "is_error": True}
        else:
            result = {"data": page_text(observation.text, info, over, max_steps), "is_error": False}
        metadata = {"page": observation.page, "steps": observation.steps, "invalid_action": observation.invalid_action,
                    "truncated": truncated, "admissible_actions": list(observation.admissible_actions)}
        if observation.reward_breakdown is not None:
            metadata.update(reward_breakdown=observation.reward_breakdown, purchased_asin=observation.purchased_asin)
        return CallToolObservation(tool_name=str(action.tool_name), result=result, reward=observation.reward,
                                   done=over, metadata=metadata)

    # -- state, metadata, close ------------------------------------------------------------------

    @property
    def state(self) -> WebShopState:
        """The session's episode: id, steps, goal, instruction, split, done, reward."""
        with self.pool.lock:
            slot = self._slot
            if slot is None or self._closed:
                return WebShopState(episode_id=self._episode_id, max_steps=self.pool.engine.max_steps)
            engine = self.pool.engine
            return WebShopState(episode_id=self._episode_id, step_count=int(engine.state.steps[slot]),
                                goal_index=int(engine.state.goal[slot]), instruction=engine.instructions[slot],
                                split=self._split, done=engine.finished(slot), reward=self._reward,
                                max_steps=engine.max_steps)

    def get_metadata(self) -> EnvironmentMetadata:
        """Name, description and version shown by ``/metadata``."""
        from webshop_gym import __version__

        goals = self.pool.shop.goals
        return EnvironmentMetadata(
            name="webshop",
            description=(f"WebShop (Yao et al., 2022): shop for the product an instruction describes by searching "
                         f"and clicking; {len(self.pool.shop.catalog)} products, {len(goals)} {goals.kind} goals. "
                         "Actions: search[<keywords>] or click[<label>]; reward in [0, 1] at purchase."),
            version=__version__,
            author="webshop-gym",
        )

    def close(self) -> None:
        """Give the slot back; later calls raise :class:`SessionClosed`."""
        with self.pool.lock:
            if self._slot is not None:
                self.pool.release(self._slot)
                self._slot = None
            self._closed = True

    # -- OpenEnv's task API (GET /webshop/splits, POST /webshop/tasks, /num_tasks, /task, /task_range)

    def list_splits(self) -> list[dict[str, str]]:
        """The goal splits: test (the first 500 goals), eval and train."""
        return [{"name": name, "type": kind} for name, kind in SPLITS.items()]

    def num_tasks(self, split: str) -> int:
        """Goals in ``split``."""
        return len(self._split_range(split))

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        """The ``index``-th goal of ``split``: ``{"id", "split", "index", "goal_index", "instruction"}``.

        Raises:
            GoalNotFound: ``index`` outside the split (an ``IndexError``: OpenEnv answers 400).
        """
        goals = self._split_range(split)
        goal = goals[check_goal_index(index, len(goals), name=f"index within split {split!r}")]
        return {"id": f"{split}-{index}", "split": split, "index": int(index), "goal_index": int(goal),
                "instruction": self.pool.shop.goals.instruction[goal]}

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        """Every goal of ``split`` (see :meth:`get_task`)."""
        return self.get_task_range(split)

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        """The goals ``[start, stop)`` of ``split``, as Python slices them."""
        return [self.get_task(split, i) for i in range(len(self._split_range(split)))[start:stop]]

    # -- helpers ---------------------------------------------------------------------------------

    def _split_range(self, split: str) -> range | Sequence[int]:
        if not isinstance(split, str) or (split not in SPLITS and ":" not in split):
            shown = _short(split) if isinstance(split, str) else f"{_short(split)} ({type(split).__name__})"
            raise InvalidArgument(f"split must be one of {', '.join(SPLITS)} (test = the first 500 goals) or a "
                                  f"protocol's NAME:train / NAME:test, got {shown}")
        return self.pool.split_goals(split)

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed(closed_message(self.pool.idle_timeout))

    def _check_step(self) -> int:
        """The slot to step (the caller holds the pool's lock); raises when there is no episode to step."""
        self._check_open()
        slot = self._slot
        if slot is None:
            idle = self.pool.idle_timeout
            raise NoEpisode("no episode in this session: send a reset first (HTTP POST /step is stateless"
                            + (f", and a client whose session was closed after {idle:g} s idle reconnects to a new "
                               "session" if idle else "") + "; play episodes over the WebSocket at /ws)")
        if self.pool.engine.finished(slot):
            raise EpisodeFinished("the episode has finished (bought or truncated); send a reset to start a new one")
        return slot

    @staticmethod
    def _action_text(action: WebShopAction | str) -> str:
        text = action.action if isinstance(action, WebShopAction) else action
        if not isinstance(text, str):
            raise InvalidArgument(f"action must be a string, got {type(text).__name__}")
        if len(text) > MAX_ACTION_LENGTH:  # outside the action space, as a non-string is: refused, not stepped
            raise InvalidArgument(f"action has {len(text):,} characters; an action has at most "
                                  f"{MAX_ACTION_LENGTH:,} (a search's keywords included)")
        return text

    def _observe(self, slot: int, reward: float, done: bool) -> WebShopObservation:
        engine = self.pool.engine
        info = engine.info(slot)
        available = info["available_actions"]
        reward_info = info.get("reward_info")
        # Validated construction: pydantic's model_construct is slower (it inspects the
        # metadata default factory on every call).
        return WebShopObservation(
            text=engine.observe(slot),
            instruction=info["instruction"],
            goal_index=info["goal_index"],
            page=info["page"],
            steps=info["steps"],
            admissible_actions=list(info["valid_actions"]),
            has_search_bar=bool(available["has_search_bar"]),
            clickables=list(available["clickables"]),
            invalid_action=bool(info["invalid_action"]),
            invalid_reason=info.get("invalid_reason"),
            truncated=bool(engine.truncated[slot]),
            success=info.get("success"),
            reward_breakdown=None if reward_info is None else {k: _plain(v) for k, v in reward_info.items()},
            purchased_asin=info.get("purchased_asin"),
            purchased_options=None if info.get("purchased_options") is None else {
                str(k): str(v) for k, v in info["purchased_options"].items()},
            purchased_price=None if info.get("purchased_price") is None else float(info["purchased_price"]),
            reward=reward,
            done=done,
        )


def _short(value: Any) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _plain(value: Any) -> float | bool:
    """A breakdown value as a plain bool or float (numpy scalars are neither to pydantic)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    return float(value)
