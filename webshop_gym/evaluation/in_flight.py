"""Many served episodes in flight on one event loop: :func:`play`, the loop of a served evaluation.

Up to ``concurrency`` episodes advance independently, each with at most one model request
outstanding and its turns in order, all on one event loop in the calling thread, which owns the
engines (one slot per episode in flight; one :class:`~webshop_gym.engine.Engine` per shop, i.e.
per price seed of a protocol's plan).  The answers that arrived together are stepped as one
batch per engine.  An episode whose model call failed (after the policy's retries) ends as
errored.  :mod:`webshop_gym.evaluation.served` plans, resumes and writes the run around it.

Under a protocol whose replies are turns (RAGEN's), each answer is split into its turn's actions
by :class:`~webshop_gym.agents.turns.EpisodeTurns`, as the local lanes split it: they are stepped
one engine step each, the policy is asked again after the last; an answer without an action
spends a turn and is asked again on the same page; the turn cap ends an episode without a step
(reward 0, not truncated: the record's ``ended`` is ``"out of turns"``).  Under AgentBench's rule
(``unparsable: "end"``) an answer without an action ends its episode without a step (``ended``:
``"reply without an action"``).
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from webshop_gym.agents.prompts import admissible_actions
from webshop_gym.agents.turns import (
    EpisodeTurns,
    TurnRule,
)
from webshop_gym.engine import Engine
from webshop_gym.error import Interrupted
from webshop_gym.evaluation.accounting import add_call
from webshop_gym.evaluation.episode import episode_seed, slim_info
from webshop_gym.evaluation.progress import Progress

__all__ = ["play"]


def play(
    policy,
    shop,
    goals: Sequence[int],
    concurrency: int | None = None,
    seed: int = 0,
    max_steps: int = 15,
    observation_mode: str = "text",
    on_episode: Callable[[dict], None] | None = None,
    progress: str | None = None,
    stats: dict | None = None,
    seeds: Sequence[int] | None = None,
    shops: Sequence | None = None,
    stop: Callable[[], int | None] | None = None,
    turns: TurnRule | None = None,
) -> list[dict]:
    """Play one episode per entry of ``goals`` with up to ``concurrency`` in flight; return the records in that order.

    The episodes in flight share one event loop in the calling thread (a fresh thread when that
    one already runs a loop): the policy's :meth:`adecide` turns are awaited there, or its
    :meth:`decide` turns run in a pool of ``concurrency`` threads when it has no ``adecide``.
    The answers that arrived together are stepped as one batch per engine.

    Args:
        policy: an object with ``new_session(info, seed)`` and ``adecide(session, obs, info)``
            (a coroutine) or ``decide(session, obs, info)`` (thread-safe across sessions),
            returning a :class:`~webshop_gym.agents.openai.Decision`; an ``async release()``
            is awaited when the loop ends (connections opened from it).
        shop: the :class:`~webshop_gym.shop.Shop`.
        goals: the goal indices to play.
        concurrency: episodes (and requests) in flight at most (default: the policy's).
        seed: base of the per-episode seeds (:func:`~webshop_gym.evaluation.local.episode_seed`).
        max_steps: step cap per episode.
        observation_mode: what the policy sees.
        on_episode: called with each finished record (with its ``trajectory``), in finishing order.
        progress: show the progress with this description (:mod:`webshop_gym.evaluation.progress`).
        stats: filled with ``requests_max_in_flight``, ``requests_mean_in_flight`` (time-weighted),
            ``engine_steps`` and ``concurrency``.
        seeds: each entry's episode seed (repeated goals: a protocol's plays); the records then
            carry ``entry``, their index in ``goals``.  Default: from ``seed`` and the goal.
        shops: each entry's shop (a protocol's price seeds: one engine per shop, all in flight
            together); default ``shop`` for every entry.
        stop: asked at each turn of the loop (every 0.5 s at least): a signal's number stops the
            episodes in flight (their requests cancelled) and raises
            :class:`~webshop_gym.error.Interrupted` (:mod:`webshop_gym.evaluation.stopping`).
        turns: the protocol's :class:`~webshop_gym.agents.turns.TurnRule`; one that splits replies
            is played (the records then carry ``turns`` and ``turns_without_action``).

    Returns:
        Records as :func:`~webshop_gym.evaluation.local.rollout` makes them, plus ``errored`` (and
        ``error``), ``tokens`` ``{"prompt", "completion"}`` (``None`` when the server sent no
        usage), ``requests``, ``retries``, ``latency_s``; trajectory entries add ``usage``,
        ``latency_s``, ``retries``, ``reasoning``, ``finish_reason``.
    """
    goals = [int(g) for g in goals]
    n = max(1, min(int(concurrency or getattr(policy, "concurrency", 8)), len(goals) or 1))
    entry_shops = [shop] * len(goals) if shops is None else list(shops)
    if len(entry_shops) != len(goals):
        raise ValueError(f"{len(entry_shops)} shops for {len(goals)} goals")
    flight = _Flight(policy, goals, entry_shops, n, seed=seed, max_steps=max_steps, observation_mode=observation_mode,
                     on_episode=on_episode, progress=progress, seeds=seeds, stop=stop, turns=turns)
    records = _run_loop(flight.run())
    if stats is not None:
        stats.update(requests_max_in_flight=flight.max_in_flight, engine_steps=flight.engine_steps, concurrency=n,
                     requests_mean_in_flight=round(flight.bar.mean_in_flight(), 1))
    return records


class _Flight:
    """The episodes in flight of one :func:`play`: ``n`` lanes, each playing one episode at a time.

    A lane's episode takes turns: :meth:`_submit` asks the policy (a task), :meth:`_answered`
    records the answers that arrived together, :meth:`_step` steps them as one batch per engine,
    and a finished episode (:meth:`_finish`) frees its lane for the next goal (:meth:`_start`).
    """

    def __init__(self, policy, goals: list[int], shops: list, n: int, *, seed: int, max_steps: int,
                 observation_mode: str, on_episode, progress, seeds, stop, turns=None):
        self.policy, self.goals, self.shops, self.n = policy, goals, shops, n
        self.seed, self.max_steps, self.observation_mode = seed, max_steps, observation_mode
        self.on_episode, self.seeds, self.stop = on_episode, seeds, stop
        self.progress_name = progress
        self.uses: dict[int, int] = {}
        for each in shops:
            self.uses[id(each)] = self.uses.get(id(each), 0) + 1
        self.engines: dict[int, tuple[Engine, list[int]]] = {}  # a shop's engine and its free slots
        self.pending = list(reversed(range(len(goals))))  # entries not started, the next one last
        self.current: list[dict | None] = [None] * n  # a lane's episode record
        self.sessions: list[Any] = [None] * n
        self.where: list[Any] = [None] * n  # a lane's (engine, engine slot, free slots)
        self.tokens = [0] * n  # a lane's episode number: a late answer of an older episode is ignored
        self.results: dict[int, dict] = {}
        self.in_flight = self.max_in_flight = self.engine_steps = 0
        self.ready: list[tuple] = []  # answers arrived: (lane, token, decision or exception)
        self.turns: set = set()
        self.threads: ThreadPoolExecutor | None = None
        self.rule = turns if turns is not None and turns.splits else None
        self.replies: list[EpisodeTurns | None] = [None] * n  # a lane's episode's turns (under such a rule)
        self.format = getattr(getattr(policy, "prompt", None), "name", "plain")
        self.closest = bool(getattr(policy, "closest", False))

    # -- the loop -----------------------------------------------------------------------------------

    async def run(self) -> list[dict]:
        """Play every entry; return the records in entry order."""
        self.loop = asyncio.get_running_loop()
        self.wake = asyncio.Event()
        self.ask = getattr(self.policy, "adecide", None)
        if self.ask is None:  # a thread-safe decide(): one thread per episode in flight
            self.threads = ThreadPoolExecutor(self.n, thread_name_prefix="webshop-served")
            self.ask = self._decide_in_thread
        self.bar = Progress(len(self.goals), self.progress_name)
        try:
            self._start(list(range(self.n)))
            self.bar.in_flight = self.in_flight
            while len(self.results) < len(self.goals):
                if self.stop is not None and self.stop() is not None:
                    raise Interrupted(self.stop())
                if not await self._answers_arrived():
                    continue
                stepping, restart = self._answered()
                restart += self._step(stepping)
                if restart:
                    self._start(restart)
                self.bar.in_flight = self.in_flight
                self.bar.update()
        finally:
            await self._land()
        return [self.results[k] for k in range(len(self.goals))]

    async def _answers_arrived(self) -> bool:
        """Wait for answers (0.5 s at most: the progress redraws, a stop is seen); whether some arrived."""
        if not self.ready:
            try:
                await asyncio.wait_for(self.wake.wait(), 0.5)
            except asyncio.TimeoutError:
                self.bar.update(force=True)
                return False
        self.wake.clear()
        return True

    async def _land(self) -> None:
        """Cancel the turns still out, close the policy's connections of this loop, stop the threads."""
        for task in list(self.turns):
            task.cancel()
        await asyncio.gather(*self.turns, return_exceptions=True)
        release = getattr(self.policy, "release", None)
        if callable(release):
            await release()
        if self.threads is not None:
            self.threads.shutdown(wait=False, cancel_futures=True)
        self.bar.close()

    # -- a lane's turns -----------------------------------------------------------------------------

    def _decide_in_thread(self, session, obs, info):
        return self.loop.run_in_executor(self.threads, self.policy.decide, session, obs, info)

    async def _turn(self, lane: int, session, obs: str, info: dict, token: int) -> None:
        try:
            result: Any = await self.ask(session, obs, info)
        except Exception as exc:  # a bug of the policy (or a stop it asks for): handed to the loop, which raises it
            result = exc
        self.ready.append((lane, token, result))
        self.wake.set()

    def _submit(self, lane: int, info: dict | None = None) -> None:
        """Ask the policy for the lane's next action."""
        engine, slot, _ = self.where[lane]
        info = engine.info(slot) if info is None else info
        obs = engine.observe(slot)
        self.current[lane]["_obs"], self.current[lane]["_info"] = obs, info
        task = self.loop.create_task(self._turn(lane, self.sessions[lane], obs, info, self.tokens[lane]))
        self.turns.add(task)
        task.add_done_callback(self.turns.discard)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _engine_of(self, shop) -> tuple[Engine, list[int]]:
        found = self.engines.get(id(shop))
        if found is None:
            size = min(self.n, self.uses[id(shop)])
            found = self.engines[id(shop)] = (Engine(shop, size, observation_mode=self.observation_mode,
                                                     max_steps=self.max_steps), list(reversed(range(size))))
        return found

    def _start(self, lanes: list[int]) -> None:
        """Give each of ``lanes`` the next entry (reset together per engine) and ask for its first action."""
        live = []
        resets: dict[int, tuple[Engine, list[int], list[int]]] = {}
        for lane in lanes:
            if not self.pending:
                self.current[lane] = None
                continue
            k = self.pending.pop()
            engine, free = self._engine_of(self.shops[k])
            slot = free.pop()
            self.where[lane] = (engine, slot, free)
            resets.setdefault(id(engine), (engine, [], []))
            resets[id(engine)][1].append(slot)
            resets[id(engine)][2].append(self.goals[k])
            live.append((lane, k))
        for engine, slots, reset_goals in resets.values():
            engine.reset(slots, reset_goals)
        for lane, k in live:
            goal = self.goals[k]
            engine, slot, _ = self.where[lane]
            self.tokens[lane] += 1
            info = engine.info(slot)
            seed = episode_seed(self.seed, goal) if self.seeds is None else int(self.seeds[k])
            self.sessions[lane] = self.policy.new_session(info, seed=seed)
            if hasattr(self.sessions[lane], "max_steps"):
                self.sessions[lane].max_steps = self.max_steps  # the tools format's texts name the step cap
            self.current[lane] = {"goal_index": goal, "invalid_actions": 0, "trajectory": [], "errored": False,
                                  "tokens": {"prompt": 0, "completion": 0}, "requests": 0, "retries": 0,
                                  "latency_s": 0.0, "_k": k}
            if self.rule is not None:
                self.replies[lane] = EpisodeTurns(self.rule)
                self.current[lane]["turns_without_action"] = []
            self._submit(lane, info)

    def _answered(self) -> tuple[dict, list[int]]:
        """Record the answers that arrived: the actions to step by engine, and the lanes whose episode errored."""
        batch, self.ready[:] = list(self.ready), []
        stepping: dict[int, tuple[Engine, list[int], list[str]]] = {}
        restart: list[int] = []
        for lane, token, decision in batch:
            self.in_flight -= 1
            if isinstance(decision, BaseException):
                raise decision
            if token != self.tokens[lane] or self.current[lane] is None:
                continue
            episode = self.current[lane]
            call = decision.call
            add_call(episode, call)
            self.bar.retries += call.retries
            self.bar.tokens += (call.prompt_tokens or 0) + (call.completion_tokens or 0)
            if call.error is not None:
                episode.update(errored=True, error=call.error, reward=0.0, success=False,
                               steps=int(episode["_info"]["steps"]), purchased=False, truncated=False,
                               final_observation=episode["_obs"], final_info=slim_info(episode["_info"]))
                self._finish(lane, episode)
                restart.append(lane)
                continue
            accounting = {"usage": call.usage(), "latency_s": round(call.latency_s, 6), "retries": call.retries,
                          "reasoning": call.reasoning, "finish_reason": call.finish_reason}
            turns = self.replies[lane]
            if turns is None:
                entry: dict[str, Any] = {"observation": episode["_obs"], "info": slim_info(episode["_info"]),
                                         "action": decision.action, **accounting}
                model = decision.model_record()
                if model is not None:
                    entry["model"] = model
                episode["trajectory"].append(entry)
                action = decision.action
            elif not turns.reply(call.text or "", self.format):  # a reply without an action: a turn spent
                episode["turns_without_action"].append({**turns.silent(episode["_info"]["steps"]), **accounting})
                if turns.ended:  # AgentBench's end, or the last turn spent: reward 0
                    restart.append(self._end_early(lane, turns.ended))
                else:
                    self._submit(lane, episode["_info"])
                continue
            else:
                action = self._turn_action(lane, accounting)
            engine = self.where[lane][0]
            group = stepping.setdefault(id(engine), (engine, [], []))
            group[1].append(lane)
            group[2].append(action)
        return stepping, restart

    def _turn_action(self, lane: int, accounting: dict | None = None) -> str:
        """The lane's turn's next action, recorded on the page it is played on (``accounting``: the reply's call)."""
        episode = self.current[lane]
        parsed, model = self.replies[lane].next_action(admissible_actions(episode["_info"]), self.closest)
        episode["trajectory"].append({"observation": episode["_obs"], "info": slim_info(episode["_info"]),
                                      "action": parsed.action, **(accounting or {}), "model": model})
        return parsed.action

    def _end_early(self, lane: int, ended: str) -> int:
        """The lane's episode ends without a step, reward 0; its lane is freed.

        ``ended`` (the record's) says why: its last turn used, or a reply without an action under
        AgentBench's rule; ``truncated`` stays the engine's step cap, which was not reached.
        """
        episode = self.current[lane]
        info = episode["_info"]
        episode["ended"] = ended
        episode.update(reward=0.0, success=False, steps=int(info["steps"]), purchased=False, truncated=False,
                       final_observation=episode["_obs"], final_info=slim_info(info))
        self._finish(lane, episode)
        return lane

    def _step(self, stepping: dict) -> list[int]:
        """Step the actions, one batch per engine (again for turns with actions left); ask for the next; return the lanes whose episode ended."""
        restart = []
        while stepping:
            following: dict[int, tuple[Engine, list[int], list[str]]] = {}
            for engine, lanes, actions in stepping.values():
                rewards, terminated, truncated = engine.step([self.where[lane][1] for lane in lanes], actions)
                self.engine_steps += 1
                for k, lane in enumerate(lanes):
                    episode = self.current[lane]
                    slot = self.where[lane][1]
                    info = engine.info(slot)
                    episode["invalid_actions"] += int(bool(info.get("invalid_action")))
                    turns = self.replies[lane]
                    if not (terminated[k] or truncated[k]):
                        if turns is None or not (turns.playing or turns.out_of_turns):
                            self._submit(lane, info)
                            continue
                        episode["_obs"], episode["_info"] = engine.observe(slot), info
                        if turns.ended:
                            restart.append(self._end_early(lane, turns.ended))
                            continue
                        group = following.setdefault(id(engine), (engine, [], []))
                        group[1].append(lane)
                        group[2].append(self._turn_action(lane))
                        continue
                    if turns is not None:
                        turns.drop()  # the turn's remaining actions are never played
                    reward = float(rewards[k]) if terminated[k] else 0.0
                    episode.update(reward=reward, success=bool(reward == 1.0), steps=int(info["steps"]),
                                   purchased=bool(terminated[k]), truncated=bool(truncated[k]),
                                   final_observation=engine.observe(slot), final_info=slim_info(info))
                    for key in ("reward_info", "purchased_asin", "purchased_options", "purchased_price"):
                        if key in info:
                            episode[key] = info[key]
                    self._finish(lane, episode)
                    restart.append(lane)
            stepping = following
        return restart

    def _finish(self, lane: int, episode: dict) -> None:
        """The lane's episode is over: free its engine slot, keep its record, report it."""
        episode.pop("_obs", None)
        episode.pop("_info", None)
        k = episode.pop("_k")
        if self.replies[lane] is not None:
            episode["turns"] = self.replies[lane].taken
        if self.seeds is not None:
            episode["entry"] = k
        _, slot, free = self.where[lane]
        free.append(slot)
        self.current[lane] = None
        self.results[k] = episode
        self.bar.in_flight = self.in_flight  # the figure now, not the last batch's
        self.bar.update(episode)
        if self.on_episode is not None:
            self.on_episode(episode)


def _run_loop(coroutine):
    """Run ``coroutine`` on a new event loop in this thread, or in a fresh thread when this one runs a loop already.

    While it runs, the objects alive before it (the loaded shop: ~200,000 tracked objects) sit in
    the collector's permanent generation, unless the process froze its heap itself: a full
    collection walked them all in 0.1-0.2 s, a stall of every episode in flight (the objects made
    while playing are collected as usual; the frozen ones are handed back at the end).
    """
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        with ThreadPoolExecutor(1, thread_name_prefix="webshop-served-loop") as thread:
            return thread.submit(asyncio.run, coroutine).result()
    finally:
        if freeze:
            gc.unfreeze()

