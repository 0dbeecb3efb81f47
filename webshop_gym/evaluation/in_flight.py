"""Many served episodes in flight on one event loop: :func:`play`, the loop of a served evaluation.

Up to ``concurrency`` episodes advance independently, each with at most one model request
outstanding and its turns in order, all on one event loop in the calling thread, which owns the
engines (one slot per episode in flight; one :class:`~webshop_gym.engine.Engine` per shop, i.e.
per price seed of a protocol's plan).  The answers that arrived together are stepped as one
batch per engine.  An episode whose model call failed (after the policy's retries) ends as
errored.  :mod:`webshop_gym.evaluation.served` plans, resumes and writes the run around it.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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
        stats: filled with ``requests_max_in_flight``, ``engine_steps`` and ``concurrency``.
        seeds: each entry's episode seed (repeated goals: a protocol's plays); the records then
            carry ``entry``, their index in ``goals``.  Default: from ``seed`` and the goal.
        shops: each entry's shop (a protocol's price seeds: one engine per shop, all in flight
            together); default ``shop`` for every entry.
        stop: asked at each turn of the loop (every 0.5 s at least): a signal's number stops the
            episodes in flight (their requests cancelled) and raises
            :class:`~webshop_gym.error.Interrupted` (:mod:`webshop_gym.evaluation.stopping`).

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
    uses: dict[int, int] = {}
    for each in entry_shops:
        uses[id(each)] = uses.get(id(each), 0) + 1
    engines: dict[int, tuple[Engine, list[int]]] = {}  # a shop's engine and its free slots

    def engine_of(each) -> tuple[Engine, list[int]]:
        found = engines.get(id(each))
        if found is None:
            size = min(n, uses[id(each)])
            found = engines[id(each)] = (Engine(each, size, observation_mode=observation_mode, max_steps=max_steps),
                                         list(reversed(range(size))))
        return found

    async def main() -> list[dict]:
        loop = asyncio.get_running_loop()
        threads = None
        ask = getattr(policy, "adecide", None)
        if ask is None:  # a thread-safe decide(): one thread per episode in flight
            threads = ThreadPoolExecutor(n, thread_name_prefix="webshop-served")

            def ask(session, obs, info):
                return loop.run_in_executor(threads, policy.decide, session, obs, info)

        ready: list[tuple] = []
        wake = asyncio.Event()
        turns: set = set()
        pending = list(reversed(range(len(goals))))
        current: list[dict | None] = [None] * n
        sessions: list[Any] = [None] * n
        where: list[Any] = [None] * n  # a lane's (engine, engine slot, free slots)
        tokens = [0] * n  # a lane's episode number: a late answer of an older episode is ignored
        results: dict[int, dict] = {}
        progress_bar = Progress(len(goals), progress)
        counts = {"in_flight": 0, "max_in_flight": 0, "engine_steps": 0}

        async def turn(lane: int, session, obs: str, info: dict, token: int) -> None:
            try:
                result: Any = await ask(session, obs, info)
            except Exception as exc:  # a bug of the policy (or a stop it asks for): handed to the loop, which raises it
                result = exc
            ready.append((lane, token, result))
            wake.set()

        def submit(lane: int, info: dict | None = None) -> None:
            engine, slot, _ = where[lane]
            info = engine.info(slot) if info is None else info
            obs = engine.observe(slot)
            current[lane]["_obs"], current[lane]["_info"] = obs, info
            task = loop.create_task(turn(lane, sessions[lane], obs, info, tokens[lane]))
            turns.add(task)
            task.add_done_callback(turns.discard)
            counts["in_flight"] += 1
            counts["max_in_flight"] = max(counts["max_in_flight"], counts["in_flight"])

        def start(lanes: list[int]) -> None:
            live = []
            resets: dict[int, tuple[Engine, list[int], list[int]]] = {}
            for lane in lanes:
                if not pending:
                    current[lane] = None
                    continue
                k = pending.pop()
                engine, free = engine_of(entry_shops[k])
                slot = free.pop()
                where[lane] = (engine, slot, free)
                resets.setdefault(id(engine), (engine, [], []))
                resets[id(engine)][1].append(slot)
                resets[id(engine)][2].append(goals[k])
                live.append((lane, k))
            for engine, slots, reset_goals in resets.values():
                engine.reset(slots, reset_goals)
            for lane, k in live:
                goal = goals[k]
                engine, slot, _ = where[lane]
                tokens[lane] += 1
                info = engine.info(slot)
                sessions[lane] = policy.new_session(info, seed=episode_seed(seed, goal) if seeds is None else int(seeds[k]))
                if hasattr(sessions[lane], "max_steps"):
                    sessions[lane].max_steps = max_steps  # the tools format's texts name the step cap
                current[lane] = {"goal_index": goal, "invalid_actions": 0, "trajectory": [], "errored": False,
                                 "tokens": {"prompt": 0, "completion": 0}, "requests": 0, "retries": 0,
                                 "latency_s": 0.0, "_k": k}
                submit(lane, info)

        def finish(lane: int, episode: dict) -> None:
            episode.pop("_obs", None)
            episode.pop("_info", None)
            k = episode.pop("_k")
            if seeds is not None:
                episode["entry"] = k
            _, slot, free = where[lane]
            free.append(slot)
            current[lane] = None
            results[k] = episode
            progress_bar.in_flight = counts["in_flight"]  # the figure now, not the last batch's
            progress_bar.update(episode)
            if on_episode is not None:
                on_episode(episode)

        try:
            start(list(range(n)))
            progress_bar.in_flight = counts["in_flight"]
            while len(results) < len(goals):
                if stop is not None and stop() is not None:
                    raise Interrupted(stop())
                if not ready:
                    try:
                        await asyncio.wait_for(wake.wait(), 0.5)
                    except asyncio.TimeoutError:
                        progress_bar.update(force=True)
                        continue
                wake.clear()
                batch, ready[:] = list(ready), []
                stepping: dict[int, tuple[Engine, list[int], list[str]]] = {}
                restart: list[int] = []
                for lane, token, decision in batch:
                    counts["in_flight"] -= 1
                    if isinstance(decision, BaseException):
                        raise decision
                    if token != tokens[lane] or current[lane] is None:
                        continue
                    episode = current[lane]
                    call = decision.call
                    add_call(episode, call)
                    progress_bar.retries += call.retries
                    progress_bar.tokens += (call.prompt_tokens or 0) + (call.completion_tokens or 0)
                    if call.error is not None:
                        episode.update(errored=True, error=call.error, reward=0.0, success=False,
                                       steps=int(episode["_info"]["steps"]), purchased=False, truncated=False,
                                       final_observation=episode["_obs"], final_info=slim_info(episode["_info"]))
                        finish(lane, episode)
                        restart.append(lane)
                        continue
                    entry: dict[str, Any] = {"observation": episode["_obs"], "info": slim_info(episode["_info"]),
                                             "action": decision.action, "usage": call.usage(),
                                             "latency_s": round(call.latency_s, 6), "retries": call.retries,
                                             "reasoning": call.reasoning, "finish_reason": call.finish_reason}
                    model = decision.model_record()
                    if model is not None:
                        entry["model"] = model
                    episode["trajectory"].append(entry)
                    engine = where[lane][0]
                    group = stepping.setdefault(id(engine), (engine, [], []))
                    group[1].append(lane)
                    group[2].append(decision.action)
                for engine, lanes, actions in stepping.values():
                    rewards, terminated, truncated = engine.step([where[lane][1] for lane in lanes], actions)
                    counts["engine_steps"] += 1
                    for k, lane in enumerate(lanes):
                        episode = current[lane]
                        slot = where[lane][1]
                        info = engine.info(slot)
                        episode["invalid_actions"] += int(bool(info.get("invalid_action")))
                        if not (terminated[k] or truncated[k]):
                            submit(lane, info)
                            continue
                        reward = float(rewards[k]) if terminated[k] else 0.0
                        episode.update(reward=reward, success=bool(reward == 1.0), steps=int(info["steps"]),
                                       purchased=bool(terminated[k]), truncated=bool(truncated[k]),
                                       final_observation=engine.observe(slot), final_info=slim_info(info))
                        for key in ("reward_info", "purchased_asin", "purchased_options", "purchased_price"):
                            if key in info:
                                episode[key] = info[key]
                        finish(lane, episode)
                        restart.append(lane)
                if restart:
                    start(restart)
                progress_bar.in_flight = counts["in_flight"]
                progress_bar.update()
        finally:
            for task in list(turns):
                task.cancel()
            await asyncio.gather(*turns, return_exceptions=True)
            release = getattr(policy, "release", None)
            if callable(release):
                await release()
            if threads is not None:
                threads.shutdown(wait=False, cancel_futures=True)
            progress_bar.close()
        if stats is not None:
            stats.update(requests_max_in_flight=counts["max_in_flight"], engine_steps=counts["engine_steps"],
                         concurrency=n)
        return [results[k] for k in range(len(goals))]

    return _run_loop(main())


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

