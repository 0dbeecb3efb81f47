"""Evaluate a served model: many episodes in flight on one shared engine, fault-tolerant, resumable.

:func:`evaluate_served` is what :func:`webshop_gym.evaluation.local.evaluate` runs for a policy that
plays episodes turn by turn over the network (:class:`~webshop_gym.agents.openai.OpenAIPolicy`,
``openai:MODEL``).  Episodes advance independently: up to ``concurrency`` of them are in flight,
each with at most one model request outstanding and its turns in order, all on one event loop
in the calling thread, which owns the engines (one slot per episode in flight; one
:class:`~webshop_gym.engine.Engine` per shop, i.e. per price seed of a protocol's plan) and the
run file.  The answers that arrived together are stepped as one batch.

* An episode whose model call still fails after the policy's retries ends as **errored**: the
  steps it took are kept, ``errored``/``error`` mark it, and it never counts towards Score or SR.
* The run file (``out``) is written as episodes finish (goal order; see
  :class:`~webshop_gym.runs.run.RunWriter`); on Ctrl-C every finished episode is written.
* ``resume=True`` reads ``out``, checks that its ``run`` line matches this evaluation (shop
  fingerprint, goals, split, prompt, model, sampling settings; :class:`ResumeMismatch`
  otherwise), plays only the missing and errored episodes and rewrites the file in goal order,
  so the finished file reads like an uninterrupted run's.
* ``shard=(i, n)`` plays the ``i``-th of ``n`` contiguous blocks of the goals (``--shard i/n``),
  so several processes can share a split; ``webshop-gym report`` reads the shards as one run.
* A protocol's plan (``--protocol``, ``--samples``) is resumed and sharded by its episodes'
  ordinals (each a goal, price seed and sample), after checking the protocol fingerprint.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from webshop_gym.analysis.figures import accounting, add_accounting, billed, summarize
from webshop_gym.engine import Engine
from webshop_gym.error import Error
from webshop_gym.evaluation.episode import episode_seed, mark_reachability, progress_rate, slim_info
from webshop_gym.evaluation.progress import Progress
from webshop_gym.protocols.play import ADHOC, display_name, protocol_difference
from webshop_gym.runs.log import dumps_line, episode_lines
from webshop_gym.runs.replay import fingerprint_difference
from webshop_gym.runs.run import SUMMARY_KEYS, RunWriter, load_run, now_iso

__all__ = ["ResumeMismatch", "evaluate_served", "is_served", "parse_shard", "play", "shard_goals"]

#: The run line's fields that must match for ``--resume`` (with the fingerprint and the policy settings).
RESUME_KEYS = ("policy", "prompt", "split", "goals", "num_goals", "shard", "seed", "max_steps", "observation_mode")


class ResumeMismatch(Error):
    """``--resume`` was given a run file written by another evaluation."""


def is_served(policy) -> bool:
    """Whether ``policy`` plays episodes turn by turn over the network (``openai:MODEL`` or such an object)."""
    if isinstance(policy, str):
        return policy.startswith("openai:")
    return callable(getattr(policy, "decide", None)) and callable(getattr(policy, "new_session", None))


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n`` (raises ``ValueError`` with the reason)."""
    parts = str(text).split("/")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):  # int() would take "١" or " 1"
        raise ValueError(f"must be i/n with integers 0 <= i < n, got {text!r}")
    i, n = int(parts[0]), int(parts[1])
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"must be i/n with integers 0 <= i < n, got {text!r}")
    return i, n


def shard_goals(goals: Sequence[int], shard: tuple[int, int] | None) -> list[int]:
    """The ``i``-th of ``n`` contiguous, nearly equal blocks of ``goals`` (all of them without a shard)."""
    goals = list(goals)
    if shard is None:
        return goals
    i, n = shard
    return goals[i * len(goals) // n : (i + 1) * len(goals) // n]


# -- the loop ----------------------------------------------------------------------------------------


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
            progress_bar.update(episode)
            if on_episode is not None:
                on_episode(episode)

        try:
            start(list(range(n)))
            progress_bar.in_flight = counts["in_flight"]
            while len(results) < len(goals):
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
                    _account(episode, call)
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


def _account(episode: dict, call) -> None:
    """Add one call's usage, requests, retries and latency to the episode's totals."""
    episode["requests"] += call.requests
    episode["retries"] += call.retries
    episode["latency_s"] = round(episode["latency_s"] + call.latency_s, 6)
    totals = episode["tokens"]
    for key, value in (("prompt", call.prompt_tokens), ("completion", call.completion_tokens)):
        if value is None:
            if call.error is None:
                totals[key] = None  # the server sent no usage: the total is unknown
        elif totals[key] is not None:
            totals[key] += int(value)


# -- the evaluation ------------------------------------------------------------------------------------


def make_served_policy(spec, seed: int = 0, **kwargs: Any):
    """``"openai:MODEL"`` (with :class:`~webshop_gym.agents.openai.OpenAIPolicy` arguments) or a policy object."""
    if isinstance(spec, str):
        from webshop_gym.agents.openai import OpenAIPolicy

        return OpenAIPolicy(spec[len("openai:"):], **{"seed": seed, **kwargs})
    if kwargs:
        raise TypeError(f"arguments {sorted(kwargs)} only apply to openai:MODEL policies, not {type(spec).__name__}")
    return spec


def evaluate_served(
    policy,
    shop,
    split: str | None = "test",
    seed: int = 0,
    max_steps: int = 15,
    num_goals: int | None = None,
    observation_mode: str = "text",
    progress: bool = False,
    keep_episodes: bool = True,
    out: str | os.PathLike | None = None,
    run_settings: dict | None = None,
    concurrency: int | None = None,
    resume: bool = False,
    shard: tuple[int, int] | None = None,
    check: bool = True,
    protocol_plan=None,
    **policy_kwargs: Any,
) -> dict:
    """:func:`~webshop_gym.evaluation.local.evaluate` for a served policy (see the module docstring).

    Args:
        policy: ``"openai:MODEL"`` or an object with ``new_session`` and ``decide``.
        shop: a loaded :class:`~webshop_gym.shop.Shop`.
        split: ``"test"``, ``"eval"``, ``"train"`` or ``"all"``/None.
        seed: the run's seed (per-episode seeds of sampling requests).
        max_steps: step cap per episode.
        num_goals: only the first ``num_goals`` goals of the split.
        observation_mode: what the policy sees.
        progress: show a progress bar (stderr).
        keep_episodes: include the per-goal records under ``"episodes_detail"``.
        out: the run file.
        run_settings: extra fields of the run line.
        concurrency: episodes in flight (default: the policy's ``concurrency``).
        resume: continue the run in ``out`` (see the module docstring).
        shard: ``(i, n)``: play only the ``i``-th of ``n`` blocks of the goals.
        check: check the endpoint and the model before starting (``policy.check()``).
        protocol_plan: the :class:`~webshop_gym.evaluation.plan.EvaluationPlan` (``evaluate`` makes it):
            its protocol is recorded in the run line; a named protocol's or a ``--samples``
            plan's episodes are played as planned, identified by their plan ordinal (goal, price
            seed, sample) for ``resume`` and ``shard``.
        **policy_kwargs: :class:`~webshop_gym.agents.openai.OpenAIPolicy` arguments for ``openai:MODEL``.

    Returns:
        The result :func:`~webshop_gym.evaluation.local.evaluate` returns, with ``errored``,
        ``tokens``, ``requests``, ``retries`` (see :func:`~webshop_gym.evaluation.local.summarize`)
        and ``concurrency``.
    """
    if resume and out is None:
        raise Error("--resume needs --out (the run file to continue)")
    if concurrency is not None and not 1 <= int(concurrency) <= 1024:
        raise Error(f"concurrency must be in 1-1024, got {concurrency}")
    if protocol_plan is not None and (protocol_plan.named or not protocol_plan.simple):
        return _evaluate_plan(policy, protocol_plan, seed=seed, max_steps=max_steps, observation_mode=observation_mode,
                              progress=progress, keep_episodes=keep_episodes, out=out, run_settings=run_settings,
                              concurrency=concurrency, check=check, resume=resume, shard=shard, **policy_kwargs)
    if protocol_plan is not None:
        run_settings = {**(run_settings or {}), "protocol": protocol_plan.record}
    split = None if split == "all" else split
    all_goals = list(shop.goals.split_range(split))
    if num_goals is not None:
        all_goals = all_goals[: int(num_goals)]
    goals = shard_goals(all_goals, shard)
    agent = make_served_policy(policy, seed=seed, **policy_kwargs)
    owned = agent is not policy
    n = int(concurrency or getattr(agent, "concurrency", 8))
    settings = _run_line(policy, agent, split, seed, max_steps, n, observation_mode, shard, run_settings)
    kept: list[dict] = []
    history: dict = {}  # earlier sessions of a resumed run and the attempts they dropped
    todo = goals
    writer = None
    try:
        plan = _resume_plan(out, shop, goals, settings) if resume and Path(out).is_file() else None
        if plan is not None:
            todo = [g for g in goals if g not in plan]
        if check and todo and callable(getattr(agent, "check", None)):
            agent.check()  # before the file is touched
        if plan is not None:
            kept, history = _keep_only(out, goals, plan)
        started = time.perf_counter()
        stats: dict = {}
        if out is not None:

            writer = RunWriter(out, shop, todo, append=bool(kept) or (resume and Path(out).is_file()),
                               **settings)
        played = play(agent, shop, todo, concurrency=n, seed=seed, max_steps=max_steps,
                      observation_mode=observation_mode,
                      on_episode=mark_reachability(shop, None if writer is None else writer.add),
                      progress="eval" if progress else None, stats=stats)
    except BaseException:
        if writer is not None:
            writer.close()  # every finished episode stays in the file; no summary line
        raise
    finally:
        if owned:
            agent.close()
    wall = time.perf_counter() - started
    episodes = sorted(kept + played, key=lambda e: e["goal_index"])
    if [e["goal_index"] for e in episodes] != goals:
        if writer is not None:
            writer.close()
        raise RuntimeError(f"evaluation covered {len(episodes)} goals, expected each of {len(goals)} exactly once")
    result = summarize(episodes, protocol=None if protocol_plan is None else protocol_plan.record)
    played_steps = sum(int(e["steps"]) for e in played)
    result.update(
        policy=settings["policy"], shop=str(shop.path), fingerprint=shop.fingerprint(), goal_kind=shop.goals.kind,
        split=split or "all", goals=[goals[0], goals[-1] + 1] if goals else [0, 0], num_envs=n, concurrency=n,
        seed=seed, max_steps=max_steps, wall_s=wall, steps_per_s=played_steps / wall if wall > 0 else None,
        env_steps=stats.get("engine_steps", 0), requests_max_in_flight=stats.get("requests_max_in_flight", 0),
    )
    if history:  # a resumed run: every session's time, and what the whole run cost
        this = {"wall_s": wall, "finished": True, "episodes": len(played)}
        result["sessions"] = [*history["sessions"], this]
        result["billed"] = billed(result, history["dropped"])
    if shard is not None:
        result["shard"] = list(shard)
    if resume:
        result["resumed"] = {"kept": len(kept), "played": len(played)}
    if writer is not None:
        writer.close(result if not kept else None)
        if kept or not _in_goal_order(out):
            _rewrite_in_goal_order(out, goals, result)
        result["run_file"] = str(out)
    if not keep_episodes:
        return result
    result["episodes_detail"] = [{k: v for k, v in e.items() if k not in ("trajectory", "final_observation",
                                                                          "final_info")} for e in episodes]
    return result


def _evaluate_plan(policy, plan, *, seed, max_steps, observation_mode, progress, keep_episodes, out, run_settings,
                   concurrency, check, resume=False, shard=None, **policy_kwargs) -> dict:
    """Play a protocol's planned episodes (one engine per price seed), write the run, return the figures.

    An episode of a plan is its ``ordinal`` (its place in the plan: goal, price seed and sample);
    ``shard`` plays a contiguous block of the ordinals and ``resume`` keeps the finished episodes
    of the run file by ordinal and plays the others with the seeds the plan gives them.
    """
    agent = make_served_policy(policy, seed=seed, **policy_kwargs)
    owned = agent is not policy
    n = int(concurrency or getattr(agent, "concurrency", 8))
    chosen: list = shard_goals(plan.episodes, shard)  # the plan's episodes this run plays (all without a shard)
    expected = [e.goal for e in chosen]
    ordinals = [e.ordinal for e in chosen]
    settings = _run_line(policy, agent, f"protocol {plan.protocol.name}", seed, max_steps, n, observation_mode, shard,
                         {**(run_settings or {}), "protocol": plan.record})
    writer = None
    episodes: list[dict] = []
    kept: list[dict] = []
    history: dict = {}
    stats: dict = {}
    resuming = resume and Path(out).is_file()
    started = time.perf_counter()
    try:
        keep = _resume_planned(out, plan, chosen, settings) if resuming else {}
        todo = [e for e in chosen if e.ordinal not in keep]
        if check and todo and callable(getattr(agent, "check", None)):
            agent.check()  # before the file is touched
        if resuming:
            kept, history = _keep_only(out, ordinals, keep)
            for record, ordinal in zip(kept, [o for o in ordinals if o in keep]):
                record["ordinal"] = ordinal
        started = time.perf_counter()
        if out is not None:
            writer = RunWriter(out, plan.shop, expected, append=resuming, keys=[e.ordinal for e in todo], **settings)
        # one loop over every planned episode, whatever its price seed (an engine per seed): the
        # episodes are independent once the plan is resolved, so --concurrency of them are in flight
        shops = [plan.shops[e.price_seed] for e in todo]
        seeds = [episode_seed(seed, e.goal, e.sample) for e in todo]

        def finished(episode: dict) -> None:
            entry = episode.pop("entry")
            episode["ordinal"] = todo[entry].ordinal
            episode["protocol"] = {**todo[entry].as_dict(), "policy_seed": seeds[entry]}
            episode["reachable"], episode["reason"] = shops[entry].reachable(int(episode["goal_index"]))
            if plan.reports_progress:
                episode["protocol"]["progress"] = round(progress_rate(shops[entry], episode), 6)
            if writer is not None:
                writer.add(episode, shop=shops[entry])

        episodes = play(agent, plan.shop, [e.goal for e in todo], concurrency=n, seed=seed, max_steps=max_steps,
                        observation_mode=observation_mode, on_episode=finished, progress="eval" if progress else None,
                        stats=stats, seeds=seeds, shops=shops)
    except BaseException:
        if writer is not None:
            writer.close()  # every finished episode stays in the file; no summary line
        raise
    finally:
        if owned:
            agent.close()
    wall = time.perf_counter() - started
    played_steps = sum(int(e["steps"]) for e in episodes)
    played = len(episodes)
    episodes = sorted(kept + episodes, key=lambda e: e["ordinal"])
    if [e["ordinal"] for e in episodes] != ordinals:
        if writer is not None:
            writer.close()
        raise RuntimeError(f"evaluation covered {len(episodes)} episodes, expected each of {len(ordinals)} exactly once")
    result = summarize(episodes, protocol=plan.record)
    shop = plan.shop
    result.update(
        policy=settings["policy"], shop=str(shop.path), fingerprint=shop.fingerprint(), goal_kind=shop.goals.kind,
        split=settings["split"], goals=[min(expected), max(expected) + 1] if expected else [0, 0], num_envs=n,
        concurrency=n, seed=seed, max_steps=max_steps, wall_s=wall,
        steps_per_s=played_steps / wall if wall > 0 else None, env_steps=stats.get("engine_steps", 0),
        requests_max_in_flight=stats.get("requests_max_in_flight", 0), protocol_record=plan.record,
    )
    if history:  # a resumed run: every session's time, and what the whole run cost
        result["sessions"] = [*history["sessions"], {"wall_s": wall, "finished": True, "episodes": played}]
        result["billed"] = billed(result, history["dropped"])
    if shard is not None:
        result["shard"] = list(shard)
    if resume:
        result["resumed"] = {"kept": len(kept), "played": played}
    if writer is not None:
        writer.close(result if not kept else None)
        if kept:
            _rewrite_in_goal_order(out, [f"e{o}" for o in ordinals], result)
        result["run_file"] = str(out)
    if keep_episodes:
        result["episodes_detail"] = [{k: v for k, v in e.items() if k not in ("trajectory", "final_observation",
                                                                              "final_info")} for e in episodes]
    return result


def _run_line(spec, agent, split, seed, max_steps, concurrency, observation_mode, shard, extra) -> dict:
    name = spec if isinstance(spec, str) else f"openai:{getattr(agent, 'model', getattr(agent, 'name', 'served'))}"
    settings_of = getattr(agent, "settings", None)
    policy_settings = dict(settings_of) if isinstance(settings_of, dict) else {}
    prompt = policy_settings.pop("prompt", None) or getattr(getattr(agent, "prompt", None), "name", None)
    out = {"policy": name, "prompt": prompt, "split": split or "all", "seed": seed, "max_steps": max_steps,
           "num_envs": concurrency, "concurrency": concurrency, "num_workers": 0, "observation_mode": observation_mode,
           "policy_settings": policy_settings}
    if shard is not None:
        out["shard"] = list(shard)
    out.update(extra or {})
    return out


# -- resume ------------------------------------------------------------------------------------------------


def _compare_header(path, header: dict, shop, settings: dict, goals: list[int], goal_range: list | None = None) -> None:
    where = f"--resume: {path}"
    if not header:
        raise ResumeMismatch(f"{where} has no run line (not written by `webshop-gym eval --out`)")
    recorded = header.get("fingerprint")
    if isinstance(recorded, dict):
        problem = fingerprint_difference(recorded, shop)
        if problem is not None:
            raise ResumeMismatch(f"{where} was written on another shop or goal set ({problem})")
    if goal_range is None:
        goal_range = [goals[0], goals[-1] + 1] if goals else [0, 0]
    expected = {**{k: settings.get(k) for k in RESUME_KEYS}, "goals": goal_range,
                "num_goals": len(goals)}
    for key in RESUME_KEYS:
        if header.get(key) != expected.get(key):
            raise ResumeMismatch(f"{where} was written with {key} {header.get(key)!r}, this command has "
                                 f"{expected.get(key)!r} (same settings, or another --out)")
    mine, theirs = settings.get("policy_settings") or {}, header.get("policy_settings") or {}
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) != theirs.get(key):
            raise ResumeMismatch(f"{where} was written with {key} {theirs.get(key)!r}, this command has "
                                 f"{mine.get(key)!r} (same settings, or another --out)")


def _resume_plan(path, shop, goals: list[int], settings: dict) -> dict[int, Any]:
    """Check the run line; return the finished, not errored episodes of ``goals`` by goal."""
    run = load_run(path, require_episodes=False)
    theirs = run.header.get("protocol")
    if isinstance(theirs, dict) and (theirs.get("name") != ADHOC or int(theirs.get("samples") or 1) > 1):
        difference = protocol_difference(theirs, settings.get("protocol"))  # a protocol's plan, resumed without it
        if difference:
            raise ResumeMismatch(f"--resume: {path} was written under another protocol ({difference}; same protocol "
                                 "and settings, or another --out)")
    _compare_header(path, run.header, shop, settings, goals)
    keep: dict[int, Any] = {}
    for episode in run.episodes:
        ok = not episode.log.record.get("errored") and (episode.purchased or episode.truncated)
        if ok:
            keep[episode.goal_index] = episode
        else:
            keep.pop(episode.goal_index, None)
    wanted = set(goals)
    return {g: e for g, e in keep.items() if g in wanted}


def _ordinal(episode_id: str) -> int | None:
    """The plan ordinal of an episode id ``e<ordinal>`` (``None`` for a goal-keyed id ``g<goal>``)."""
    return int(episode_id[1:]) if episode_id[:1] == "e" and episode_id[1:].isdigit() else None


def _resume_planned(path, plan, chosen: list, settings: dict) -> dict[int, Any]:
    """Check the run line of a protocol's run; return its finished, not errored episodes by plan ordinal.

    Each kept episode must be the one the plan puts at its ordinal (goal, price seed, sample):
    a file whose episodes say otherwise was not written by this plan.
    """
    run = load_run(path, require_episodes=False)
    theirs = run.header.get("protocol")
    if run.header and not isinstance(theirs, dict):
        raise ResumeMismatch(f"--resume: {path} records no protocol; this command plays {display_name(plan.record)} "
                             "(same protocol and settings, or another --out)")
    difference = protocol_difference(theirs, plan.record) if run.header else ""
    if difference:  # before the settings: the protocol is what the user changed
        raise ResumeMismatch(f"--resume: {path} was written under another protocol ({difference}; same protocol and "
                             "settings, or another --out)")
    goals = [e.goal for e in chosen]
    _compare_header(path, run.header, plan.shop, settings, goals,
                    goal_range=[min(goals), max(goals) + 1] if goals else [0, 0])
    wanted = {e.ordinal: e for e in chosen}
    keep: dict[int, Any] = {}
    for episode in run.episodes:
        ordinal = _ordinal(episode.log.episode)
        if ordinal is None:
            raise ResumeMismatch(f"--resume: {path} holds episode {episode.log.episode!r}, not one of a protocol's "
                                 "plan (same settings, or another --out)")
        planned = wanted.get(ordinal)
        mine = episode.log.record.get("protocol") or {}
        if planned is not None and (episode.goal_index, mine.get("price_seed"), mine.get("sample")) != (
                planned.goal, planned.price_seed, planned.sample):
            raise ResumeMismatch(f"--resume: {path} played goal {episode.goal_index} at price seed "
                                 f"{mine.get('price_seed')}, sample {mine.get('sample')} as episode {ordinal}; this "
                                 f"command's plan has goal {planned.goal} at price seed {planned.price_seed}, sample "
                                 f"{planned.sample} (same settings, or another --out)")
        if not episode.log.record.get("errored") and (episode.purchased or episode.truncated):
            keep[ordinal] = episode
        else:
            keep.pop(ordinal, None)
    return {o: e for o, e in keep.items() if o in wanted}


def _keep_only(path, goals: list[int], keep: dict[int, Any]) -> tuple[list[dict], dict]:
    """Rewrite the run file with only the episodes kept (goal order); return their records and the run's history.

    The episodes dropped (errored, or of goals not asked now) were paid for: their accounting is
    added to the run line's ``dropped`` totals, and the session that wrote them to its
    ``sessions`` (its wall time when it finished with a summary line, else ``null``), so that a
    resumed run still says what the whole run cost and how long each session took.
    """
    run = load_run(path, require_episodes=False, steps=False)
    header = dict(run.header)
    kept_ids = {e.log.episode for e in keep.values()}
    dropped_now = accounting([e.record() for e in run.episodes if e.log.episode not in kept_ids])
    dropped_now["episodes"] = sum(e.log.episode not in kept_ids for e in run.episodes)
    last = (run.summary or {}).get("result") or {}
    if isinstance(last.get("sessions"), list):  # the last session was a resume that finished: it lists them all
        sessions = list(last["sessions"])
    else:  # the session that wrote the file last, finished (its summary's wall time) or interrupted (unknown)
        sessions = [*(header.get("sessions") or []),
                    {"wall_s": last.get("wall_s"), "finished": run.summary is not None, "episodes": None}]
    history = {"sessions": sessions, "dropped": add_accounting(header.get("dropped"), dropped_now)}
    header.update(sessions=history["sessions"], dropped=history["dropped"])
    lines = episode_lines(path)
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(dumps_line(header) + "\n")
        for goal in goals:
            if goal in keep:
                for line in lines[keep[goal].log.episode]:
                    handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return [keep[g].record() for g in goals if g in keep], history


def _in_goal_order(path) -> bool:
    last = -1
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if '"type": "episode"' in line[:40]:
                goal = json.loads(line)["goal_index"]
                if goal < last:
                    return False
                last = goal
    return True


def _rewrite_in_goal_order(path, goals: list, result: dict) -> None:
    """Rewrite a run file with its episodes in goal order and the summary line (atomically).

    ``goals``: the goals in order, or the episode ids in order (``"e<ordinal>"``: a protocol's plan).
    """
    lines = episode_lines(path)
    header = json.loads(lines["run"][0])
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(lines["run"][0] + "\n")
        for goal in goals:
            for line in lines.get(goal if isinstance(goal, str) else f"g{goal}", []):
                handle.write(line + "\n")
        summary = {k: result[k] for k in SUMMARY_KEYS if k in result}
        handle.write(dumps_line({"type": "summary", "run": header.get("run"), "finished": now_iso(),
                                 "result": summary}) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def accounting_rows(result: dict) -> list[tuple[str, str]]:
    """The rows ``eval``'s table adds for a served model (errored episodes, tokens, requests, cost)."""
    tokens = result.get("tokens") or {}
    episodes = result["counts"]["episodes"] + result.get("errored", 0)
    per = tokens.get("per_episode")
    unknown = tokens.get("unknown", 0)
    rows = [
        ("tokens", f"{tokens.get('total', 0):,} ({tokens.get('prompt', 0):,} prompt + {tokens.get('completion', 0):,} "
                   f"completion; {per:,.0f} per episode)" if per is not None else "-"),
        ("requests / retries", f"{result.get('requests', 0):,} / {result.get('retries', 0):,}"),
    ]
    if unknown:
        rows[0] = (rows[0][0], rows[0][1] + f"; {unknown} episodes without usage from the server")
    if result.get("errored"):  # said only when something errored
        rows.insert(0, ("errored episodes", f"{result['errored']} of {episodes} (not scored: the model's calls failed)"))
    if result.get("cost") is not None:
        rows.append(("cost", f"{result['cost']:.4f} USD (at the prices given, USD per million tokens)"))
    whole = result.get("billed")
    if whole:  # a resumed run: what every session sent, the attempts --resume dropped included
        text = (f"{whole['tokens']['total']:,} tokens, {whole['requests']:,} requests / {whole['retries']:,} retries "
                f"over {whole['episodes']:,} episodes played (kept and dropped)")
        if result.get("cost_billed") is not None:
            text += f"; cost {result['cost_billed']:.4f} USD"
        rows.append(("whole run", text))
    return rows
