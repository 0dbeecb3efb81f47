r"""Trajectory logs: one JSON line per event, flushed as it happens, replayable in ``WebShopEnv``.

The env's :class:`RecordTrajectory` wrapper, the play server and ``webshop-gym eval --out``
(:mod:`webshop_gym.runs.run`) write the same format (``docs/runs.md``):

* ``{"type": "run", "format": 2, ...}``: optional, first line of a run written by ``eval``
  (policy, split, seed, ``max_steps``, the shop and its fingerprint, ...);
* ``{"type": "episode", "episode": ID, "goal_index": i, "instruction": ..., "shop": {...},
  "max_steps": n, "time": t}`` when an episode starts (``shop`` may be left out when a ``run``
  line gives it; a run's episode adds its first ``observation``, ``category`` and ``target``);
* ``{"type": "step", "episode": ID, "step": k, "action": ..., "page": ..., "reward": r,
  "terminated": b, "truncated": b, "invalid_action": b, "time": t}`` after every action (the
  purchase step adds ``reward_info``, ``purchased_asin``, ``purchased_options`` and
  ``purchased_price``; a run's steps add the ``observation`` the action led to and, for an LLM
  policy, the ``model``'s raw output and how it was parsed);
* ``{"type": "summary", ...}``: optional, last line of a finished run (the evaluation's figures).

An action that is not a string (the env treats every one as an invalid no-op) is logged as
``"action": null`` with ``action_type`` and ``action_repr``.  Lines are UTF-8 JSON with every
character that :meth:`str.splitlines` splits on, and lone surrogates, written as ``\uXXXX``
escapes, so that a line is always one record.  Format 1 logs (no ``run`` line, no
``max_steps``) still read and replay.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from webshop_gym.error import DataError
from webshop_gym.runs.liveness import hold_writer_lock
from webshop_gym.utils import surrogates

__all__ = [
    "episode_lines",
    "FORMAT_VERSION",
    "Episode",
    "Log",
    "LogError",
    "RecordTrajectory",
    "TrajectoryWriter",
    "action_fields",
    "check_run_record",
    "decode_record",
    "dumps_line",
    "logged_action",
    "read_episodes",
    "read_log",
    "shop_record",
]

FORMAT_VERSION = 2
#: Characters JSON leaves raw (``ensure_ascii=False``) that must not appear raw in a line:
#: those ``str.splitlines()`` splits on besides ``\n``/``\r`` and the control characters JSON
#: already escapes, and lone surrogates (not encodable as UTF-8).
_UNSAFE = re.compile("[\x85\u2028\u2029\ud800-\udfff]")
#: Longest ``action_repr`` kept for a non-string action (the env ignores its content).
MAX_REPR = 10_000


class LogError(DataError):
    """A trajectory log is malformed: the message names the file and the line."""

    def __init__(self, path: str | os.PathLike, line: int | None, message: str):
        where = str(path) if line is None else f"{path}, line {line}"
        ValueError.__init__(self, f"{where}: {message}")
        self.path, self.record, self.field, self.line = str(path), line, None, line


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(map(repr, value))
    return _safe_repr(value)


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not lose the line
        text = object.__repr__(value)
    if not isinstance(text, str):
        text = object.__repr__(value)
    return text if len(text) <= MAX_REPR else text[:MAX_REPR] + "..."


def dumps_line(record: dict) -> str:
    """Serialise one event as a single line of JSON (never raises for odd values).

    Non-ASCII text stays readable; U+0085, U+2028, U+2029 and lone surrogates are escaped, so
    that ``text.splitlines()`` of a log counts its records and every line is valid UTF-8.
    Values JSON cannot hold (numpy scalars aside) are written as their ``repr``.
    """
    text = json.dumps(record, ensure_ascii=False, default=_json_default)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def action_fields(action: Any) -> dict:
    """The fields that log ``action``: ``{"action": str}`` or, for a non-string, ``null`` + type + repr."""
    if isinstance(action, str):
        return {"action": str(action)}
    return {"action": None, "action_type": type(action).__qualname__, "action_repr": _safe_repr(action)}


def logged_action(record: dict) -> Any:
    """The action of a step record as it is replayed (a non-string replays as ``None``: also invalid)."""
    return record.get("action")


def shop_record(shop, human_goals: bool | None = None, price_seed: int | None = None) -> dict:
    """Describe a shop so that :func:`replay` can load it again."""
    goals = shop.goals
    return {
        "path": str(shop.path),
        "catalog": shop.catalog.key,
        "goals": goals.source or None,
        "human_goals": (goals.kind == "human") if human_goals is None else bool(human_goals),
        "price_seed": goals.seed if price_seed is None else int(price_seed),
        "format": FORMAT_VERSION,
    }


class TrajectoryWriter:
    """Writes event lines to a JSONL file, flushing after every line (thread-safe).

    The file stays locked as its writer's until :meth:`close` (or the process's end): readers
    tell a log being written from a stopped one (:func:`webshop_gym.runs.liveness.writer_state`).

    Args:
        path: the log file (created with its folder when ``append``).
        fsync: also ask the OS to write each line to disk (survives a machine crash).
        append: add to an existing file (logs) or start it afresh (runs: ``eval --out``).
    """

    def __init__(self, path: str | os.PathLike, fsync: bool = False, append: bool = True):
        self.path = Path(path)
        if append:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a" if append else "w", encoding="utf-8")  # noqa: SIM115
        hold_writer_lock(self._handle)
        self._lock = threading.Lock()
        self.fsync = fsync

    def write(self, record: dict) -> None:
        """Append one event."""
        self.write_line(dumps_line(record))

    def write_line(self, line: str) -> None:
        """Append one already serialised event (see :func:`dumps_line`)."""
        with self._lock:
            self._handle.write(line + "\n")
            self._handle.flush()
            if self.fsync:
                os.fsync(self._handle.fileno())

    def episode(self, episode: str, goal_index: int, instruction: str, shop: dict, **extra: Any) -> None:
        """Log the start of an episode."""
        self.write({"type": "episode", "episode": episode, "goal_index": int(goal_index),
                    "instruction": instruction, "shop": shop, "time": time.time(), **extra})

    def step(self, episode: str, step: int, action, info: dict, reward: float, terminated: bool,
             truncated: bool, **extra: Any) -> None:
        """Log one action and its outcome."""
        self.write(step_record(episode, step, action, info, reward, terminated, truncated,
                               time=time.time(), **extra))

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if not self._handle.closed:
                self._handle.close()


def step_record(episode: str, step: int, action, info: dict, reward: float, terminated: bool,
                truncated: bool, **extra: Any) -> dict:
    """A ``step`` event from the env's outcome (the purchase's details copied from ``info``)."""
    record = {"type": "step", "episode": episode, "step": int(step), **action_fields(action),
              "page": info.get("page"), "reward": float(reward), "terminated": bool(terminated),
              "truncated": bool(truncated), "invalid_action": bool(info.get("invalid_action", False))}
    record.update(extra)
    for key in ("reward_info", "purchased_asin", "purchased_options", "purchased_price"):
        if key in info:
            record[key] = info[key]
    return record


class RecordTrajectory(gym.Wrapper):
    """Logs every episode of a :class:`~webshop_gym.envs.env.WebShopEnv` to a JSONL file.

    Every step the env takes is logged, whatever the action (a non-string is logged by type and
    ``repr``; a string exactly, lone surrogates included); the only error after a step is the
    operating system refusing the write (a full disk, say).

    Args:
        env: the env (or a wrapper around it).
        path: the log file (created with its folder; appended to).
        fsync: ask the OS to write each line through to disk.
        observations: also log each observation (lets :func:`replay` check them).

    Example:
        >>> import webshop_gym, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "log.jsonl")
        >>> env = RecordTrajectory(webshop_gym.WebShopEnv(), path)
        >>> _ = env.reset(options={"goal_index": 3})
        >>> _ = env.step("search[shoes]")
        >>> [e.goal_index for e in read_episodes(path)]
        [3]
    """

    def __init__(self, env: gym.Env, path: str | os.PathLike, fsync: bool = False, observations: bool = False):
        super().__init__(env)
        self.writer = TrajectoryWriter(path, fsync=fsync)
        self.observations = bool(observations)
        self.episode_id: str | None = None
        self._step = 0

    def reset(self, *, seed=None, options=None):
        """Reset and log the new episode."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._start(info, obs)
        return obs, info

    def _start(self, info: dict, obs: str | None) -> None:
        self.episode_id = uuid.uuid4().hex
        self._step = 0
        base = self.env.unwrapped
        extra: dict[str, Any] = {"max_steps": base.engine.max_steps, "observation_mode": base.observation_mode}
        if self.observations and obs is not None:
            extra["observation"] = obs
        self.writer.episode(self.episode_id, info["goal_index"], info["instruction"], shop_record(base.shop), **extra)

    def step(self, action):
        """Step and log the action (every step the env takes is logged)."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        step = int(info.get("steps", self._step + 1))
        if self.episode_id is None or step != self._step + 1:
            # The env was reset behind the wrapper's back: log what is known of that episode.
            self._start(info, None)
        self._step = step
        extra = {"observation": obs} if self.observations else {}
        self.writer.step(self.episode_id, step, action, info, reward, terminated, truncated, **extra)
        return obs, reward, terminated, truncated, info

    def close(self):
        """Close the log and the env."""
        self.writer.close()
        super().close()


# -- reading ------------------------------------------------------------------------------------


@dataclass
class Episode:
    """One logged episode.

    Attributes:
        episode: its id.
        goal_index: the goal.
        shop: the shop record (from the episode line, or the run line).
        instruction: the instruction.
        actions: the logged actions (``None`` for a non-string action).
        steps: the step records.
        record: the episode line.
        line: the episode line's number in the file (1-based).
        step_lines: the step lines' numbers.
        outcome: read without its steps (``read_log(..., steps=False)``): ``{"steps": number of
            steps, "invalid": invalid actions, "last": the last step record}`` (``None`` otherwise);
            ``actions``, ``steps`` and ``step_lines`` are then empty and the episode line has no
            ``observation``.
    """

    episode: str
    goal_index: int
    shop: dict
    instruction: str = ""
    actions: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    record: dict = field(default_factory=dict)
    line: int = 0
    step_lines: list = field(default_factory=list)
    outcome: dict | None = None

    @property
    def last_step(self) -> dict | None:
        """The last step record (``None`` before the first step)."""
        if self.outcome is not None:
            return self.outcome["last"]
        return self.steps[-1] if self.steps else None

    @property
    def reward(self) -> float:
        """The last logged reward (the purchase's, if any)."""
        last = self.last_step
        return float(last["reward"]) if last else 0.0

    @property
    def finished(self) -> bool:
        """Whether the log shows the episode ending."""
        last = self.last_step
        return bool(last) and bool(last["terminated"] or last["truncated"])

    @property
    def max_steps(self) -> int | None:
        """The step cap the episode ran under (``None``: none).

        Logged since format 2 (and by the play server before); a format 1 log of the env's
        recorder lacks it, and then a logged truncation tells it (else no cap is known).
        """
        if "max_steps" in self.record:
            return self.record["max_steps"]
        return next((int(s["step"]) for s in self.steps if s["truncated"]), None)


@dataclass
class Log:
    """A read log: the run line (if any), the episodes in file order, the summary line (if any)."""

    path: Path
    header: dict | None
    episodes: list[Episode]
    summary: dict | None = None


OBSERVATION_MODES = ("text", "text_rich", "html", "url")
_NONE = type(None)
_EPISODE_FIELDS = {"episode": (str,), "goal_index": (int,)}
_STEP_FIELDS = {"episode": (str,), "step": (int,), "reward": (int, float), "terminated": (bool,),
                "truncated": (bool,), "invalid_action": (bool,)}
_OPTIONAL = {"instruction": (str,), "shop": (dict,), "max_steps": (int, _NONE), "observation": (str,),
             "observation_mode": (str,), "page": (str, _NONE), "reward_info": (dict,),
             "purchased_options": (dict,), "model": (dict, _NONE), "target": (dict,),
             "category": (str, _NONE),
             # a protocol whose replies are turns (RAGEN, AgentBench): replies taken, those without an action,
             # and what ended an episode that a reply without an action ended (AgentBench)
             "turns": (int,), "turns_without_action": (list,), "ended": (str,),
             # a served model's accounting (eval --policy openai:MODEL)
             "errored": (bool,), "error": (str,), "usage": (dict, _NONE), "tokens": (dict,), "requests": (int,),
             "retries": (int,), "latency_s": (int, float), "reasoning": (str, _NONE)}
#: The largest token, request or retry count a run file may hold (a bigger one is a corrupt field:
#: the client records an absurd ``usage`` from a server as unknown).
MAX_COUNT = 10**12
_COUNT_FIELDS = {"tokens": ("prompt", "completion"), "usage": ("prompt_tokens", "completion_tokens")}
_SHOP_FIELDS = {"path": (str, _NONE), "goals": (str, _NONE), "human_goals": (bool,), "price_seed": (int, _NONE)}
_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
          dict: "an object", _NONE: "null"}


def _type_name(value: Any) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def _check_types(path: Path, line: int, what: str, record: dict, fields: dict) -> None:
    for key, types in fields.items():
        if key not in record:
            continue
        value = record[key]
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            expected = " or ".join(_NAMES[t] for t in types)
            raise LogError(path, line, f"{what}: {key!r} must be {expected}, got {_type_name(value)}")


def _check(path: Path, line: int, record: dict, required: dict) -> None:
    kind = record["type"]
    for key in required:
        if key not in record:
            raise LogError(path, line, f"{kind} record has no {key!r}")
    _check_types(path, line, f"{kind} record", record, {**required, **_OPTIONAL})
    if record.get("max_steps") is not None and record["max_steps"] < 1:
        raise LogError(path, line, f"{kind} record: 'max_steps' must be >= 1 or null, got {record['max_steps']}")
    mode = record.get("observation_mode")
    if mode is not None and mode not in OBSERVATION_MODES:
        raise LogError(path, line, f"{kind} record: unknown observation_mode {mode!r}; expected one of "
                                   f"{', '.join(OBSERVATION_MODES)}")
    if "shop" in record:
        _check_types(path, line, f"{kind} record's shop", record["shop"], _SHOP_FIELDS)
    for key in ("requests", "retries"):
        if key in record and not 0 <= record[key] <= MAX_COUNT:
            raise LogError(path, line, f"{kind} record: {key!r} must be in [0, {MAX_COUNT:,}], got {record[key]}")
    for key, parts in _COUNT_FIELDS.items():
        counts = record.get(key)
        for part in parts if isinstance(counts, dict) else ():
            value = counts.get(part)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 0 <= value <= MAX_COUNT):
                shown = f"{value}" if isinstance(value, int) and not isinstance(value, bool) else _type_name(value)
                raise LogError(path, line, f"{kind} record: '{key}.{part}' must be an integer in [0, {MAX_COUNT:,}] "
                                           f"or null, got {shown[:40]}")


def decode_record(path: Path, number: int, text: str | bytes, partial_ok: bool = False,
                  exact: bool = False) -> dict | None:
    r"""One line of a log as a record: a JSON object with a ``type``, or :class:`LogError` naming the line.

    With ``partial_ok`` a line that is not complete JSON (the last line, cut by a crash) gives
    ``None`` instead.  A lone surrogate (an agent's broken escape, logged as ``\udXXX``) comes back
    as U+FFFD, which pages and exports can write, unless ``exact`` (a replay sends what was sent).
    """
    try:
        record = json.loads(text) if exact else surrogates.loads(text)
    except UnicodeDecodeError as exc:
        raise LogError(path, number, f"not UTF-8 text (byte {exc.start + 1} of the line)") from None
    except json.JSONDecodeError as exc:
        if partial_ok:
            return None
        raise LogError(path, number, f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise LogError(path, number, "JSON nested too deeply") from None
    if not isinstance(record, dict):
        raise LogError(path, number, f"expected a JSON object, got {_type_name(record)}")
    if record.get("type") is None:
        raise LogError(path, number, "record has no 'type'")
    return record


def check_run_record(path: Path, number: int, record: dict) -> None:
    """A ``run`` record's format version (one this webshop-gym reads) and its ``shop`` field, or :class:`LogError`."""
    version = record.get("format")
    if not isinstance(version, int) or isinstance(version, bool):
        raise LogError(path, number, f"run record: 'format' must be an integer, got {_type_name(version)}")
    if version > FORMAT_VERSION:
        raise LogError(path, number, f"written in log format {version}; this webshop-gym reads up to "
                                     f"{FORMAT_VERSION} (upgrade webshop-gym)")
    _check(path, number, record, {"shop": (dict,)})


def _lines(path: Path):
    """Yield (number, text, last) per line, streaming; a last line cut off by a crash (no newline) comes with ``last``.

    The file is read line by line, so memory does not grow with its size.
    """
    with open(path, "rb") as handle:
        for number, chunk in enumerate(handle, 1):
            torn = not chunk.endswith(b"\n")
            try:
                text = (chunk if torn else chunk[:-1]).decode("utf-8")
            except UnicodeDecodeError as exc:
                if torn:
                    return
                raise LogError(path, number, f"not UTF-8 text (byte {exc.start + 1} of the line)") from None
            yield number, text, torn


def read_log(path: str | os.PathLike, steps: bool = True, exact: bool = True) -> Log:
    """Read and check a log (a line cut off by a crash at the end is ignored).

    ``exact``: every string as logged, lone surrogates included, so that a replay sends the
    agent's very actions; ``False`` replaces them by U+FFFD (:func:`decode_record`), as the
    figures, the report and the viewer read a run.

    With ``steps=False`` every line is still checked, but an episode keeps only its outcome
    (:attr:`Episode.outcome`: step and invalid-action counts, the last step record) and its
    episode line without the first observation: memory grows with the episodes, not their steps
    (what ``report`` needs of a 50,000-episode run).

    Raises:
        LogError: a line is not UTF-8 or not a JSON object, a record lacks a field or has one
            of the wrong type, a step names an unknown episode or skips a step number.
        OSError: the file cannot be read.
    """
    path = Path(path)
    header: dict | None = None
    summary: dict | None = None
    episodes: dict[str, Episode] = {}
    for number, text, last in _lines(path):
        if not text.strip():
            continue
        record = decode_record(path, number, text, partial_ok=last, exact=exact)
        if record is None:  # the write a crash interrupted
            break
        kind = record["type"]
        if kind == "run":
            if header is not None or episodes:
                raise LogError(path, number, "a run record must be the first line")
            check_run_record(path, number, record)
            header = record
        elif kind == "episode":
            _check(path, number, record, _EPISODE_FIELDS)
            if record["goal_index"] < 0:
                raise LogError(path, number, f"goal_index must be >= 0, got {record['goal_index']}")
            shop = record.get("shop", header.get("shop") if header else None)
            if not isinstance(shop, dict):
                raise LogError(path, number, "episode record has no 'shop' (and no run record gives one)")
            if record["episode"] in episodes:
                raise LogError(path, number, f"episode {record['episode']!r} starts twice")
            if not steps:
                record.pop("observation", None)
            episodes[record["episode"]] = Episode(record["episode"], record["goal_index"], shop,
                                                  record.get("instruction", ""), record=record, line=number,
                                                  outcome=None if steps else {"steps": 0, "invalid": 0, "last": None})
        elif kind == "step":
            _check(path, number, record, _STEP_FIELDS)
            episode = episodes.get(record["episode"])
            if episode is None:
                raise LogError(path, number, f"step of an episode that has not started: {record['episode']!r}")
            outcome = episode.outcome
            taken = len(episode.steps) if outcome is None else outcome["steps"]
            if record["step"] != taken + 1:
                raise LogError(path, number, f"step {record['step']} of episode {record['episode']!r}; "
                                             f"expected step {taken + 1}")
            if outcome is not None:
                record.pop("observation", None)
                outcome["steps"] += 1
                outcome["invalid"] += bool(record["invalid_action"])
                outcome["last"] = record
                continue
            episode.actions.append(logged_action(record))
            episode.steps.append(record)
            episode.step_lines.append(number)
        elif kind == "summary":
            summary = record
        # other types: written by a newer minor version; skipped
    return Log(path, header, list(episodes.values()), summary)


def read_episodes(path: str | os.PathLike) -> list[Episode]:
    """Read a log into episodes (see :func:`read_log`)."""
    return read_log(path).episodes


# -- replaying ----------------------------------------------------------------------------------


def episode_lines(path) -> dict[str, list[str]]:
    """A run file's lines by episode id (``"run"``: the run line); later episodes of an id replace earlier ones."""
    out: dict[str, list[str]] = {}
    with open(path, encoding="utf-8") as handle:
        for text in handle:
            if not text.endswith("\n"):
                break  # a write cut off by a crash
            line = text.rstrip("\n")
            if not line.strip():
                continue
            record = surrogates.loads(line)
            kind = record.get("type")
            if kind == "run":
                out["run"] = [line]
            elif kind == "episode":
                out[record["episode"]] = [line]
            elif kind == "step" and record.get("episode") in out:
                out[record["episode"]].append(line)
    return out
