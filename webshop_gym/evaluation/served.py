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
  fingerprint, goals, split, prompt, model, sampling settings;
  :class:`~webshop_gym.evaluation.resume.ResumeMismatch` otherwise), plays only the missing and errored episodes and rewrites the file in goal order,
  so the finished file reads like an uninterrupted run's.
* ``shard=(i, n)`` plays the ``i``-th of ``n`` contiguous blocks of the goals (``--shard i/n``,
  :func:`~webshop_gym.evaluation.plan.shard_goals`), so several processes can share a split;
  ``webshop-gym report`` reads the shards as one run.
* A protocol's plan (``--protocol``, ``--samples``) is resumed and sharded by its episodes'
  ordinals (each a goal, price seed and sample), after checking the protocol fingerprint.

The episodes in flight are :func:`~webshop_gym.evaluation.in_flight.play`'s, the resume checks
and rewrites :mod:`~webshop_gym.evaluation.resume`'s, each call's cost and ``eval``'s rows of it
:mod:`~webshop_gym.evaluation.accounting`'s; this module plans, writes and sums the run.
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from webshop_gym.analysis.figures import billed, summarize
from webshop_gym.error import Error, Interrupted
from webshop_gym.evaluation.episode import episode_seed, mark_reachability, progress_rate
from webshop_gym.evaluation.in_flight import play
from webshop_gym.evaluation.plan import shard_goals
from webshop_gym.evaluation.resume import (
    in_goal_order,
    keep_only,
    resume_plan,
    resume_planned,
    rewrite_in_goal_order,
)
from webshop_gym.evaluation.stopping import signals_deferred
from webshop_gym.runs.run import RunWriter

__all__ = ["evaluate_served", "is_served", "make_served_policy"]


def is_served(policy) -> bool:
    """Whether ``policy`` plays episodes turn by turn over the network (``openai:MODEL`` or such an object)."""
    if isinstance(policy, str):
        return policy.startswith("openai:")
    return callable(getattr(policy, "decide", None)) and callable(getattr(policy, "new_session", None))


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
    scope = ExitStack()
    try:
        plan = resume_plan(out, shop, goals, settings) if resume and Path(out).is_file() else None
        if plan is not None:
            todo = [g for g in goals if g not in plan]
        if check and todo and callable(getattr(agent, "check", None)):
            agent.check()  # before the file is touched
        stop = scope.enter_context(signals_deferred())  # from here a signal stops the run at a safe point
        if plan is not None:
            kept, history = keep_only(out, goals, plan)
        started = time.perf_counter()
        stats: dict = {}
        if out is not None:
            writer = RunWriter(out, shop, todo, append=bool(kept) or (resume and Path(out).is_file()),
                               **settings)
        stop.check()
        played = play(agent, shop, todo, concurrency=n, seed=seed, max_steps=max_steps,
                      observation_mode=observation_mode,
                      on_episode=mark_reachability(shop, None if writer is None else writer.add),
                      progress="eval" if progress else None, stats=stats, stop=stop.asked)
    except BaseException as exc:
        if writer is not None:
            writer.close(stopped=stopped_by(exc))  # every finished episode stays in the file; no summary line
        scope.close()
        raise
    finally:
        if owned:
            agent.close()
    with scope:  # a signal from here on: the run is finished, then the command stops
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
            if kept or not in_goal_order(out):
                rewrite_in_goal_order(out, goals, result)
            result["run_file"] = str(out)
        stop.check()  # a signal while the finished run was written: it is complete; the command stops now
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
    scope = ExitStack()
    try:
        keep = resume_planned(out, plan, chosen, settings) if resuming else {}
        todo = [e for e in chosen if e.ordinal not in keep]
        if check and todo and callable(getattr(agent, "check", None)):
            agent.check()  # before the file is touched
        stop = scope.enter_context(signals_deferred())  # from here a signal stops the run at a safe point
        if resuming:
            kept, history = keep_only(out, ordinals, keep)
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

        stop.check()
        episodes = play(agent, plan.shop, [e.goal for e in todo], concurrency=n, seed=seed, max_steps=max_steps,
                        observation_mode=observation_mode, on_episode=finished, progress="eval" if progress else None,
                        stats=stats, seeds=seeds, shops=shops, stop=stop.asked)
    except BaseException as exc:
        if writer is not None:
            writer.close(stopped=stopped_by(exc))  # every finished episode stays in the file; no summary line
        scope.close()
        raise
    finally:
        if owned:
            agent.close()
    with scope:  # a signal from here on: the run is finished, then the command stops
        return _summarize_plan(plan, settings, agent_n=n, seed=seed, max_steps=max_steps, started=started,
                               episodes=episodes, kept=kept, history=history, stats=stats, ordinals=ordinals,
                               expected=expected, shard=shard, resume=resume, writer=writer, out=out,
                               keep_episodes=keep_episodes, stop=stop)


def _summarize_plan(plan, settings, *, agent_n, seed, max_steps, started, episodes, kept, history, stats, ordinals,
                    expected, shard, resume, writer, out, keep_episodes, stop) -> dict:
    n = agent_n
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
            rewrite_in_goal_order(out, [f"e{o}" for o in ordinals], result)
        result["run_file"] = str(out)
    stop.check()  # a signal while the finished run was written: it is complete; the command stops now
    if keep_episodes:
        result["episodes_detail"] = [{k: v for k, v in e.items() if k not in ("trajectory", "final_observation",
                                                                              "final_info")} for e in episodes]
    return result


def stopped_by(exc: BaseException) -> str | None:
    """The signal that stopped the run (``"SIGTERM"``, ``"SIGINT"``), ``None`` for an error."""
    if isinstance(exc, Interrupted):
        try:
            return signal.Signals(exc.signum).name
        except ValueError:
            return f"signal {exc.signum}"
    return "SIGINT" if isinstance(exc, KeyboardInterrupt) else None


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
