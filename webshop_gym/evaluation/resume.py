"""Resuming a served run: check that a run file was written by this evaluation, keep its finished episodes.

``eval --resume`` reads ``out``, checks that its ``run`` line matches this evaluation (shop
fingerprint, goals, split, prompt, model, sampling settings, protocol; :class:`ResumeMismatch`
otherwise) and keeps its finished, not errored episodes: by goal (:func:`resume_plan`), or by
plan ordinal for a protocol's plan (:func:`resume_planned`).  :func:`keep_only` rewrites the file
with only those (the dropped attempts' cost goes to the run line), and
:func:`rewrite_in_goal_order` puts the finished file in goal order, so that it reads like an
uninterrupted run's.  Every rewrite is atomic.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from webshop_gym.analysis.figures import accounting, add_accounting
from webshop_gym.error import Error
from webshop_gym.protocols.play import ADHOC, display_name, protocol_difference
from webshop_gym.runs.log import dumps_line, episode_lines
from webshop_gym.runs.replay import fingerprint_difference
from webshop_gym.runs.run import SUMMARY_KEYS, load_run, now_iso

__all__ = ["RESUME_KEYS", "ResumeMismatch", "in_goal_order", "keep_only", "resume_plan", "resume_planned",
           "rewrite_in_goal_order"]

#: The run line's fields that must match for ``--resume`` (with the fingerprint and the policy settings).
RESUME_KEYS = ("policy", "prompt", "split", "goals", "num_goals", "shard", "seed", "max_steps", "observation_mode")


class ResumeMismatch(Error):
    """``--resume`` was given a run file written by another evaluation."""


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


def resume_plan(path, shop, goals: list[int], settings: dict) -> dict[int, Any]:
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
        if episode.scored:  # neither errored nor cut before its terminal record: what every reader scores
            keep[episode.goal_index] = episode
        else:
            keep.pop(episode.goal_index, None)
    wanted = set(goals)
    return {g: e for g, e in keep.items() if g in wanted}


def _ordinal(episode_id: str) -> int | None:
    """The plan ordinal of an episode id ``e<ordinal>`` (``None`` for a goal-keyed id ``g<goal>``)."""
    return int(episode_id[1:]) if episode_id[:1] == "e" and episode_id[1:].isdigit() else None


def resume_planned(path, plan, chosen: list, settings: dict) -> dict[int, Any]:
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
        if episode.scored:  # what every reader scores
            keep[ordinal] = episode
        else:
            keep.pop(ordinal, None)
    return {o: e for o, e in keep.items() if o in wanted}


def keep_only(path, goals: list[int], keep: dict[int, Any]) -> tuple[list[dict], dict]:
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


def in_goal_order(path) -> bool:
    """Whether the episodes of the run file at ``path`` are in goal order."""
    last = -1
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if '"type": "episode"' in line[:40]:
                goal = json.loads(line)["goal_index"]
                if goal < last:
                    return False
                last = goal
    return True


def rewrite_in_goal_order(path, goals: list, result: dict) -> None:
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
