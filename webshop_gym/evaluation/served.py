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

A run is one pass: :func:`_plan` (its entries: goals, or a protocol's planned episodes, a block
of them with ``shard``; the run line), :func:`_resume` (``--resume`` filters the plan: the entries
the run file has not finished), :func:`_play` (the episodes in flight,
:func:`~webshop_gym.evaluation.in_flight.play`, written as they finish), :func:`_summarize` (the
figures) and :func:`_record` (the summary line; a resumed file rewritten in order).  The resume
checks and rewrites are :mod:`~webshop_gym.evaluation.resume`'s, each call's cost and ``eval``'s
rows of it :mod:`~webshop_gym.evaluation.accounting`'s, signals
:mod:`~webshop_gym.evaluation.stopping`'s.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webshop_gym.agents.turns import TurnRule
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
    agent = make_served_policy(policy, seed=seed, **policy_kwargs)
    try:
        n = int(concurrency or getattr(agent, "concurrency", 8))
        run = _plan(policy, agent, shop, protocol_plan, split=split, num_goals=num_goals, shard=shard, seed=seed,
                    max_steps=max_steps, concurrency=n, observation_mode=observation_mode, run_settings=run_settings)
        if resume and Path(out).is_file():
            _resume(run, out)
        if check and run.todo and callable(getattr(agent, "check", None)):
            agent.check()  # before the file is touched
        with signals_deferred() as stop:  # from here a signal stops the run at a safe point
            played, wall, stats = _play(run, agent, out, stop, concurrency=n, seed=seed, max_steps=max_steps,
                                        observation_mode=observation_mode, progress=progress)
            result = _summarize(run, played, wall, stats, concurrency=n, seed=seed, max_steps=max_steps, shard=shard,
                                resume=resume)
            _record(run, result, out)
            stop.check()  # a signal while the finished run was written: it is complete; the command stops now
    finally:
        if agent is not policy:
            agent.close()
    if keep_episodes:
        result["episodes_detail"] = [{k: v for k, v in e.items() if k not in ("trajectory", "final_observation",
                                                                              "final_info")} for e in run.episodes]
    return result


@dataclass
class _Run:
    """A served run as planned: its entries in order, each a goal (ad hoc) or a planned episode (a protocol's plan).

    ``keys`` identify the entries in the run file and for ``--resume``: the goal indices, or the
    plan ordinals; resuming filters ``todo`` and fills ``kept`` / ``history``.
    """

    shop: Any  # the run line's shop
    settings: dict  # the run line's fields
    goals: list[int]  # each entry's goal
    keys: list[int]  # each entry's goal (ad hoc) or plan ordinal
    plan: Any = None  # the EvaluationPlan of a protocol's plan (episodes played as planned), else None
    planned: list = field(default_factory=list)  # each entry's PlannedEpisode (a protocol's plan)
    record: dict | None = None  # the protocol's record of the summary (None: none given)
    todo: list[int] = field(default_factory=list)  # the entries to play (indices)
    keep: dict | None = None  # resume: the finished episodes of the run file, by key
    kept: list[dict] = field(default_factory=list)  # their records
    history: dict = field(default_factory=dict)  # earlier sessions and the attempts they dropped
    episodes: list[dict] = field(default_factory=list)  # every entry's record once played, in order
    writer: Any = None  # the run file's writer (None without ``out``)

    @property
    def keyed(self) -> bool:
        """Entries are plan ordinals (a protocol's plan: episode ids ``e<ordinal>``), not goals."""
        return self.plan is not None


def _plan(policy, agent, shop, protocol_plan, *, split, num_goals, shard, seed, max_steps, concurrency,
          observation_mode, run_settings) -> _Run:
    """The run's entries (a block of them with ``shard``) and its run line."""
    if protocol_plan is not None and (protocol_plan.named or not protocol_plan.simple):
        # a protocol's plan: its episodes (goal, price seed, sample) as planned, one engine per price seed
        chosen = shard_goals(protocol_plan.episodes, shard)
        settings = _run_line(policy, agent, f"protocol {protocol_plan.protocol.name}", seed, max_steps, concurrency,
                             observation_mode, shard, {**(run_settings or {}), "protocol": protocol_plan.record})
        return _Run(protocol_plan.shop, settings, [e.goal for e in chosen], [e.ordinal for e in chosen],
                    plan=protocol_plan, planned=chosen, record=protocol_plan.record,
                    todo=list(range(len(chosen))))
    if protocol_plan is not None:
        run_settings = {**(run_settings or {}), "protocol": protocol_plan.record}
    split = None if split == "all" else split
    goals = list(shop.goals.split_range(split))
    if num_goals is not None:
        goals = goals[: int(num_goals)]
    goals = shard_goals(goals, shard)
    settings = _run_line(policy, agent, split, seed, max_steps, concurrency, observation_mode, shard, run_settings)
    return _Run(shop, settings, goals, list(goals), record=None if protocol_plan is None else protocol_plan.record,
                todo=list(range(len(goals))))


def _resume(run: _Run, out) -> None:
    """``--resume`` as a filter on the plan: check the run file, play only the entries it has not finished."""
    if run.keyed:
        run.keep = resume_planned(out, run.plan, run.planned, run.settings)
    else:
        run.keep = resume_plan(out, run.shop, run.goals, run.settings)
    run.todo = [i for i, key in enumerate(run.keys) if key not in run.keep]


def _play(run: _Run, agent, out, stop, *, concurrency, seed, max_steps, observation_mode,
          progress) -> tuple[list[dict], float, dict]:
    """Keep the resumed run's finished episodes, play the others (written as they finish); the records, wall, stats."""
    writer = None
    stats: dict = {}
    try:
        if run.keep is not None:
            run.kept, run.history = keep_only(out, run.keys, run.keep)
            if run.keyed:
                for record, key in zip(run.kept, [k for k in run.keys if k in run.keep]):
                    record["ordinal"] = key
        started = time.perf_counter()
        todo = [run.goals[i] for i in run.todo]
        if out is not None:
            keys = [run.keys[i] for i in run.todo] if run.keyed else None
            writer = RunWriter(out, run.shop, run.goals if run.keyed else todo, append=run.keep is not None,
                               keys=keys, **run.settings)
        stop.check()
        extra: dict = {}
        if run.keyed:  # each episode its plan's seed and price seed's shop
            planned = [run.planned[i] for i in run.todo]
            extra["shops"] = [run.plan.shops[e.price_seed] for e in planned]
            extra["seeds"] = [episode_seed(seed, e.goal, e.sample) for e in planned]
            on_episode = _planned_episode(run, planned, extra["shops"], extra["seeds"], writer)
        else:
            on_episode = mark_reachability(run.shop, None if writer is None else writer.add)
        played = play(agent, run.shop, todo, concurrency=concurrency, seed=seed, max_steps=max_steps,
                      observation_mode=observation_mode, on_episode=on_episode,
                      progress="eval" if progress else None, stats=stats, stop=stop.asked,
                      turns=None if run.plan is None else TurnRule.of(run.plan.protocol.data), **extra)
    except BaseException as exc:
        if writer is not None:
            writer.close(stopped=stopped_by(exc))  # every finished episode stays in the file; no summary line
        raise
    run.writer = writer
    return played, time.perf_counter() - started, stats


def _planned_episode(run: _Run, planned: list, shops: list, seeds: list, writer):
    """The callback of a protocol's finished episode: its ordinal, protocol fields and reachability, then the file."""
    def finished(episode: dict) -> None:
        entry = episode.pop("entry")
        episode["ordinal"] = planned[entry].ordinal
        episode["protocol"] = {**planned[entry].as_dict(), "policy_seed": seeds[entry]}
        episode["reachable"], episode["reason"] = shops[entry].reachable(int(episode["goal_index"]))
        if run.plan.reports_progress:
            episode["protocol"]["progress"] = round(progress_rate(shops[entry], episode), 6)
        if writer is not None:
            writer.add(episode, shop=shops[entry])

    return finished


def _summarize(run: _Run, played: list[dict], wall: float, stats: dict, *, concurrency, seed, max_steps, shard,
               resume) -> dict:
    """The run's figures over every entry (kept and played), checked to cover each exactly once."""
    key = "ordinal" if run.keyed else "goal_index"
    run.episodes = sorted(run.kept + played, key=lambda e: e[key])
    if [e[key] for e in run.episodes] != run.keys:
        if run.writer is not None:
            run.writer.close()
        what = "episodes" if run.keyed else "goals"
        raise RuntimeError(f"evaluation covered {len(run.episodes)} {what}, expected each of {len(run.keys)} exactly "
                           "once")
    result = summarize(run.episodes, protocol=run.record)
    shop = run.shop
    played_steps = sum(int(e["steps"]) for e in played)
    result.update(
        policy=run.settings["policy"], shop=str(shop.path), fingerprint=shop.fingerprint(), goal_kind=shop.goals.kind,
        split=run.settings["split"], goals=[min(run.goals), max(run.goals) + 1] if run.goals else [0, 0],
        num_envs=concurrency, concurrency=concurrency, seed=seed, max_steps=max_steps, wall_s=wall,
        steps_per_s=played_steps / wall if wall > 0 else None, env_steps=stats.get("engine_steps", 0),
        requests_max_in_flight=stats.get("requests_max_in_flight", 0),
        requests_mean_in_flight=stats.get("requests_mean_in_flight"),
    )
    if run.keyed:
        result["protocol_record"] = run.record
    if run.history:  # a resumed run: every session's time, and what the whole run cost
        result["sessions"] = [*run.history["sessions"], {"wall_s": wall, "finished": True, "episodes": len(played)}]
        result["billed"] = billed(result, run.history["dropped"])
    if shard is not None:
        result["shard"] = list(shard)
    if resume:
        result["resumed"] = {"kept": len(run.kept), "played": len(played)}
    return result


def _record(run: _Run, result: dict, out) -> None:
    """Close the run file with its summary; a resumed (or out-of-order) file is rewritten in plan order."""
    if run.writer is None:
        return
    run.writer.close(result if not run.kept else None)
    if run.keyed:
        if run.kept:
            rewrite_in_goal_order(out, [f"e{o}" for o in run.keys], result)
    elif run.kept or not in_goal_order(out):
        rewrite_in_goal_order(out, run.goals, result)
    result["run_file"] = str(out)


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
