"""Runs on disk: ``webshop-gym eval --out RUN.jsonl`` writes every episode of an evaluation.

A run file is a trajectory log (:mod:`webshop_gym.runs.log`, format 2) that starts with a
``run`` line (what was evaluated, on which shop and goal set, with which settings), has one
``episode`` line and one ``step`` line per action for every goal, in goal order, and ends with a
``summary`` line holding the evaluation's figures.  ``webshop-gym replay RUN.jsonl`` replays
and checks it, ``webshop-gym serve --runs DIR`` shows it in the browser and ``webshop-gym
report`` turns it into an evaluation report.  The layout and the failure-cause rules are in
``docs/runs.md``.

:class:`RunWriter` is fed the episode records of :func:`webshop_gym.evaluation.local.rollout`
(``record=True``); :func:`load_run` reads a run back into :class:`RunEpisode` rows with the
figures :func:`webshop_gym.evaluation.local.summarize` computes.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webshop_gym import __version__
from webshop_gym.analysis.figures import summarize
from webshop_gym.analysis.taxonomy import failure_causes
from webshop_gym.runs.log import (
    FORMAT_VERSION,
    Episode,
    Log,
    LogError,
    TrajectoryWriter,
    action_fields,
    dumps_line,
    read_log,
    shop_record,
)
from webshop_gym.utils import surrogates

__all__ = [
    "Run",
    "RunEpisode",
    "RunWriter",
    "load_run",
    "model_outputs",
    "planned_episodes",
    "summary_difference",
]

#: The figures of an evaluation kept in a run's summary line.
SUMMARY_KEYS = ("episodes", "score", "sr", "mean_reward", "mean_steps", "valid_rate", "breakdown", "counts",
                "unreachable", "sr_reachable", "policy", "wall_s", "steps_per_s", "env_steps",
                "errored", "tokens", "requests", "retries", "concurrency", "shard", "resumed", "sessions", "billed",
                "protocol")
#: The figures :func:`summary_difference` checks (everything the episodes determine).
CHECKED_KEYS = ("episodes", "score", "sr", "mean_reward", "mean_steps", "valid_rate", "breakdown", "counts",
                "unreachable", "sr_reachable", "errored", "tokens", "requests", "retries", "protocol")
#: A served model's episode totals (episode line) and per-step accounting (step lines).
EPISODE_ACCOUNTING = ("errored", "error", "tokens", "requests", "retries", "latency_s")
STEP_ACCOUNTING = ("usage", "latency_s", "retries", "reasoning", "finish_reason")


def now_iso() -> str:
    """The current time, UTC, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def model_outputs(policy, slots: Sequence[int]) -> dict[int, dict]:
    """What an LLM batch policy said for each of ``slots`` at its last ``act_batch`` call.

    Reads ``last_responses`` (raw text) and ``last`` (:class:`~webshop_gym.agents.parse.ParsedAction`)
    as :class:`~webshop_gym.agents.hf.HFPolicy` keeps them; other policies give ``{}``.
    """
    responses = getattr(policy, "last_responses", None)
    if policy is None or responses is None:
        return {}
    parsed = getattr(policy, "last", None) or [None] * len(responses)
    out = {}
    for slot in slots:
        if slot >= len(responses) or responses[slot] is None:
            continue
        entry: dict[str, Any] = {"response": responses[slot]}
        p = parsed[slot] if slot < len(parsed) else None
        if p is not None:
            entry.update(action=p.action, valid=bool(p.valid), format_ok=bool(p.format_ok), mapped=bool(p.mapped),
                         reason=p.reason)
        out[slot] = entry
    return out


# -- writing ------------------------------------------------------------------------------------


class RunWriter:
    """Writes an evaluation run: the ``run`` line now, each episode once it and all before it are done.

    Episodes finish out of order in a vector env; they are written in goal order (held back
    only while an earlier goal is still running, i.e. about ``num_envs`` episodes), so that the
    same seed gives the same file whatever ``num_envs`` is.  Each trajectory is dropped from
    memory once written.  A protocol's episodes (``keys``: repeated goals, several price seeds)
    are written in play order, keyed by their ``ordinal``, with ids ``e<ordinal>``.

    Args:
        path: the run file (overwritten).
        shop: the :class:`~webshop_gym.shop.Shop` evaluated (the run line's shop).
        goals: the goal indices of the run, in order.
        append: add the episodes to an existing run file (``--resume``: its run line is kept).
        keys: the episodes' ``ordinal`` in writing order (``None``: one episode per goal, keyed by goal).
        settings: the run line's other fields (policy, split, seed, max_steps, protocol, ...).
    """

    def __init__(self, path: str | os.PathLike, shop, goals: Sequence[int], append: bool = False,
                 keys: Sequence[int] | None = None, **settings: Any):
        self.shop = shop
        self.path = Path(path)
        goals = [int(g) for g in goals]
        self.keyed = keys is not None
        self.order = [int(k) for k in keys] if keys is not None else goals
        self._position = 0
        self._held: dict[int, list[str]] = {}
        self.run_id = uuid.uuid4().hex
        self.mode = settings.get("observation_mode", "text")
        self.max_steps = settings.get("max_steps")

        header = {"type": "run", "format": FORMAT_VERSION, "run": self.run_id, "created": now_iso(),
                  "package": f"webshop-gym {__version__}", **settings,
                  "goals": [min(goals), max(goals) + 1] if goals else [0, 0],
                  "num_goals": len(goals), "shop": shop_record(shop), "fingerprint": shop.fingerprint()}
        self.writer = TrajectoryWriter(self.path, append=append)
        if append:
            with open(self.path, encoding="utf-8") as handle:
                self.run_id = surrogates.loads(handle.readline() or "{}").get("run", self.run_id)
        else:
            self.writer.write(header)
        self.written = 0

    def add(self, episode: dict, shop=None) -> None:
        """Take one finished episode record of :func:`~webshop_gym.evaluation.local.rollout` (``record=True``).

        Args:
            episode: the record (with ``ordinal`` when the writer has ``keys``).
            shop: the shop the episode played when it is not the run line's (another price seed).
        """
        goal = int(episode["ordinal"]) if self.keyed else int(episode["goal_index"])
        self._held[goal] = self._lines(episode, shop)
        for key in ("trajectory", "final_observation", "final_info"):
            episode.pop(key, None)
        while self._position < len(self.order) and self.order[self._position] in self._held:
            self._emit(self._held.pop(self.order[self._position]))
            self._position += 1
        if goal not in self.order:  # not expected: written at once
            self._emit(self._held.pop(goal))

    def _emit(self, lines: list[str]) -> None:
        # one write per episode: Ctrl-C (raised between Python calls) never leaves half an episode
        self.writer.write_line("\n".join(lines))
        self.written += 1

    def _lines(self, e: dict, shop=None) -> list[str]:
        own = shop is not None and shop is not self.shop
        goals = (shop if own else self.shop).goals
        g = int(e["goal_index"])
        trajectory = e.get("trajectory") or []
        eid = f"e{int(e['ordinal'])}" if self.keyed else f"g{g}"
        options = goals.options[g]
        head = {"type": "episode", "episode": eid, "goal_index": g, "instruction": goals.instruction[g],
                "max_steps": self.max_steps, "observation_mode": self.mode,
                "category": goals.category[g],
                "target": {"asin": goals.asin[g], "title": goals.name[g], "attributes": list(goals.attributes[g]),
                           "options": dict(options) if isinstance(options, dict) else list(options),
                           "price_upper": float(goals.price_upper[g])}}
        if own:  # another price seed than the run line's shop: its own shop record (replay, viewer)
            head["shop"] = shop_record(shop)
        if "protocol" in e:
            head["protocol"] = e["protocol"]
        if trajectory:
            head["observation"] = trajectory[0]["observation"]
        for key in ("reachable", "reason", "turns", "turns_without_action", "ended", *EPISODE_ACCOUNTING):
            if key in e and (key != "error" or e.get("errored")):
                head[key] = e[key]
        lines = [dumps_line(head)]
        n = len(trajectory)
        for k, entry in enumerate(trajectory, 1):
            last = k == n
            after_obs = e.get("final_observation", "") if last else trajectory[k]["observation"]
            after = (e.get("final_info") or {}) if last else trajectory[k]["info"]
            record: dict[str, Any] = {"type": "step", "episode": eid, "step": k, **action_fields(entry["action"]),
                                      "observation": after_obs, "page": after.get("page"),
                                      "reward": float(e["reward"]) if last else 0.0,
                                      "terminated": bool(last and e.get("purchased")),
                                      "truncated": bool(last and e.get("truncated")),
                                      "invalid_action": bool(after.get("invalid_action", False))}
            if last:
                for key in ("reward_info", "purchased_asin", "purchased_options", "purchased_price"):
                    if key in e:
                        record[key] = e[key]
            if "model" in entry:
                record["model"] = entry["model"]
            for key in STEP_ACCOUNTING:
                if key in entry:
                    record[key] = entry[key]
            lines.append(dumps_line(record))
        return lines

    def close(self, result: dict | None = None, stopped: str | None = None) -> None:
        """Write what is held back and, after a complete evaluation, the ``summary`` line; close.

        ``stopped``: the evaluation was stopped (the signal's name, e.g. ``"SIGTERM"``): a
        ``stopped`` line says so after the finished episodes (``--resume`` plays the others).
        """
        if self.writer is None:
            return
        try:
            for goal in sorted(self._held):
                self._emit(self._held.pop(goal))
            if stopped is not None:
                self.writer.write({"type": "stopped", "run": self.run_id, "stopped": now_iso(), "signal": stopped,
                                   "episodes": self.written})
            if result is not None:
                summary = {k: result[k] for k in SUMMARY_KEYS if k in result}
                self.writer.write({"type": "summary", "run": self.run_id, "finished": now_iso(), "result": summary})
        finally:
            self.writer.close()
            self.writer = None


# -- reading ------------------------------------------------------------------------------------


@dataclass
class RunEpisode:
    """One episode of a run, with what the report and the viewer show.

    Attributes:
        position: its place in the file (0-based): the viewer's ``/runs/<run>/<position>``.
        log: the logged episode (records of its lines).
        reward: the final reward (0 without a purchase).
        success: reward exactly 1.0.
        purchased: it ended with ``buy now``.
        truncated: the step cap ended it.
        steps: actions taken (invalid ones included).
        invalid_actions: actions the env refused.
        causes: :func:`failure_causes`; ``cause`` is the first (``""`` for a success).
    """

    position: int
    log: Episode
    reward: float
    success: bool
    purchased: bool
    truncated: bool
    steps: int
    invalid_actions: int
    causes: list[str] = field(default_factory=list)

    @property
    def goal_index(self) -> int:
        """The goal."""
        return self.log.goal_index

    @property
    def instruction(self) -> str:
        """The instruction."""
        return self.log.instruction

    @property
    def category(self) -> str:
        """The target product's category (``"unknown"`` when the log lacks it)."""
        return self.log.record.get("category") or "unknown"

    @property
    def cause(self) -> str:
        """The main failure cause (``""`` for a success)."""
        return self.causes[0] if self.causes else ""

    @property
    def last(self) -> dict:
        """The last step record (``{}`` when there is none)."""
        return self.log.last_step or {}

    @property
    def reward_info(self) -> dict | None:
        """The purchase's reward breakdown."""
        return self.last.get("reward_info") if self.purchased else None

    def record(self) -> dict:
        """The episode as :func:`~webshop_gym.evaluation.local.rollout` reports it (for ``summarize``)."""
        out: dict[str, Any] = {"goal_index": self.goal_index, "reward": self.reward, "success": self.success,
                               "steps": self.steps, "invalid_actions": self.invalid_actions,
                               "purchased": self.purchased, "truncated": self.truncated}
        for key in ("reward_info", "purchased_asin", "purchased_options", "purchased_price"):
            if self.purchased and key in self.last:
                out[key] = self.last[key]
        for key in ("reachable", "reason", "protocol", *EPISODE_ACCOUNTING):
            if key in self.log.record:
                out[key] = self.log.record[key]
        if self.unfinished:
            out["unfinished"] = True
        return out

    @property
    def unfinished(self) -> bool:
        """No terminal record (neither a purchase nor the step cap: the file was cut): ``--resume`` replays it, not scored.

        An episode that ended before the engine ended it (its ``ended``: a reply without an action
        under AgentBench's rule, or RAGEN's turns spent) is finished without one.
        """
        return not (self.purchased or self.truncated or self.errored or self.log.record.get("ended"))

    @property
    def scored(self) -> bool:
        """The episode counts in Score and SR: neither errored nor unfinished (what ``eval --resume`` keeps)."""
        return not (self.errored or self.unfinished)

    @property
    def errored(self) -> bool:
        """The model's calls failed (a served model): the episode is counted apart, not scored."""
        return bool(self.log.record.get("errored"))


@dataclass
class Run:
    """A run (or any trajectory log) read back: its run line, episodes and figures."""

    path: Path
    header: dict
    episodes: list[RunEpisode]
    summary: dict | None
    figures: dict

    @property
    def name(self) -> str:
        """The file's name without ``.jsonl``."""
        name = self.path.name
        return name[: -len(".jsonl")] if name.endswith(".jsonl") else self.path.stem

    @property
    def policy(self) -> str:
        """The policy evaluated (``"?"`` for a log without a run line)."""
        return str(self.header.get("policy") or ("human" if self._source == "server" else "?"))

    @property
    def _source(self) -> str | None:
        return self.episodes[0].log.record.get("source") if self.episodes else None

    @property
    def split(self) -> str:
        """The split evaluated (``"?"`` when unknown)."""
        return str(self.header.get("split") or "?")

    @property
    def created(self) -> str:
        """When the run started (ISO 8601; ``""`` when unknown)."""
        return str(self.header.get("created") or "")

    @property
    def goal_set(self) -> str | None:
        """The goal set's digest (``None`` without a fingerprint)."""
        return (self.header.get("fingerprint") or {}).get("goal_set")

    @property
    def protocol(self) -> dict | None:
        """The run line's ``protocol`` object (``None`` for a run written before protocols were recorded)."""
        found = self.header.get("protocol")
        return found if isinstance(found, dict) else None

    @property
    def complete(self) -> bool:
        """The evaluation finished (its summary line is there)."""
        return self.summary is not None

    @property
    def planned(self) -> int | None:
        """The episodes its evaluation planned (:func:`planned_episodes`; ``None``: the run line does not say)."""
        return planned_episodes(self.header)

    def by_goal(self) -> dict[int, RunEpisode]:
        """Episodes by goal index (the last one when a goal repeats)."""
        return {e.goal_index: e for e in self.episodes}


def planned_episodes(header: dict | None) -> int | None:
    """How many episodes a run's evaluation planned (``None``: its run line does not say).

    The protocol's plan when the run line records one (every goal, price seed and sample; the
    whole plan in every shard of it), else the run line's ``num_goals`` (runs written before
    protocols were recorded).
    """
    header = header or {}
    record = header.get("protocol")
    for value in ((record or {}).get("episodes") if isinstance(record, dict) else None, header.get("num_goals")):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _episode(position: int, ep: Episode) -> RunEpisode:
    last = ep.last_step or {}
    purchased = bool(last.get("terminated"))
    truncated = bool(last.get("truncated"))
    reward = float(last.get("reward", 0.0)) if purchased else 0.0
    if ep.outcome is not None:
        invalid, steps = ep.outcome["invalid"], ep.outcome["steps"]
    else:
        invalid, steps = sum(bool(s["invalid_action"]) for s in ep.steps), len(ep.steps)
    causes = failure_causes(purchased, truncated, steps, invalid, last.get("reward_info"), reward)
    if ep.record.get("errored"):
        causes = []  # not the agent's failure: the model's calls failed (its tag says so)
    return RunEpisode(position, ep, reward, purchased and reward == 1.0, purchased, truncated, steps, invalid, causes)


def run_from_log(log: Log) -> Run:
    """A :class:`Run` of a read log."""
    episodes = [_episode(i, ep) for i, ep in enumerate(log.episodes)]
    header = log.header or {}
    return Run(log.path, header, episodes, log.summary, summarize([e.record() for e in episodes],
                                                                  protocol=header.get("protocol")))


def load_run(path: str | os.PathLike, require_episodes: bool = True, steps: bool = True) -> Run:
    """Read a run file (or any trajectory log) and compute its figures.

    Args:
        path: the file.
        require_episodes: raise for a file without episodes.
        steps: keep every step record; ``False`` keeps each episode's outcome only (see
            :func:`~webshop_gym.runs.log.read_log`), for figures of runs of any size.

    Raises:
        LogError: the file is malformed, or holds no episode (with ``require_episodes``).
    """
    log = read_log(path, steps=steps, exact=False)  # what is shown and exported: lone surrogates replaced
    if require_episodes and not log.episodes:
        raise LogError(path, None, "no episode in this file (an episode line starts each one)")
    return run_from_log(log)


def summary_difference(run: Run) -> str | None:
    """How the run's summary line differs from the figures of its episodes (``None``: it agrees)."""
    if run.summary is None:
        return None
    logged = run.summary.get("result")
    if not isinstance(logged, dict):
        return "the summary line has no 'result' object"
    for key in CHECKED_KEYS:
        if key not in logged and key not in run.figures:
            continue
        a, b = logged.get(key), run.figures.get(key)
        if not _close(a, b):
            return f"{key}: summary {a!r}, episodes {b!r}"
    return None


def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12)
    return a == b
