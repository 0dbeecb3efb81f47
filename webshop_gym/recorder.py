"""Trajectory logs: one JSON line per event, flushed as it happens, replayable in ``WebShopEnv``.

The env's :class:`RecordTrajectory` wrapper and the play server write the same format:

* ``{"type": "episode", "episode": ID, "goal_index": i, "instruction": ..., "shop": {...},
  "time": t}`` when an episode starts;
* ``{"type": "step", "episode": ID, "step": k, "action": ..., "page": ..., "reward": r,
  "terminated": b, "truncated": b, "invalid_action": b, "time": t}`` after every action (the
  purchase step adds ``reward_info``, ``purchased_asin`` and ``purchased_options``).

``shop`` names what :func:`webshop_gym.load_shop` needs to rebuild the same episode (``path``,
``goals``, ``human_goals``, ``price_seed``) plus the catalog key, so a log replays to the
same reward (:func:`replay`).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

__all__ = ["Episode", "RecordTrajectory", "TrajectoryWriter", "read_episodes", "replay", "shop_record"]

FORMAT_VERSION = 1


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
    """Appends event lines to a JSONL file, flushing after every line (thread-safe).

    Args:
        path: the log file (created with its folder).
        fsync: also ask the OS to write each line to disk (survives a machine crash).
    """

    def __init__(self, path: str | os.PathLike, fsync: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self.fsync = fsync

    def write(self, record: dict) -> None:
        """Append one event."""
        line = json.dumps(record, ensure_ascii=False)
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
        record = {
            "type": "step", "episode": episode, "step": int(step), "action": action, "page": info.get("page"),
            "reward": float(reward), "terminated": bool(terminated), "truncated": bool(truncated),
            "invalid_action": bool(info.get("invalid_action", False)), "time": time.time(), **extra,
        }  # fmt: skip
        for key in ("reward_info", "purchased_asin", "purchased_options"):
            if key in info:
                record[key] = info[key]
        self.write(record)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            if not self._handle.closed:
                self._handle.close()


class RecordTrajectory(gym.Wrapper):
    """Logs every episode of a :class:`~webshop_gym.env.WebShopEnv` to a JSONL file.

    Args:
        env: the env (or a wrapper around it).
        path: the log file.
        fsync: ask the OS to write each line through to disk.

    Example:
        >>> import webshop_gym, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "log.jsonl")
        >>> env = RecordTrajectory(webshop_gym.WebShopEnv(), path)
        >>> _ = env.reset(options={"goal_index": 3})
        >>> _ = env.step("search[shoes]")
        >>> [e.goal_index for e in read_episodes(path)]
        [3]
    """

    def __init__(self, env: gym.Env, path: str | os.PathLike, fsync: bool = False):
        super().__init__(env)
        self.writer = TrajectoryWriter(path, fsync=fsync)
        self.episode_id: str | None = None
        self._steps = 0

    def reset(self, *, seed=None, options=None):
        """Reset and log the new episode."""
        obs, info = self.env.reset(seed=seed, options=options)
        self.episode_id = uuid.uuid4().hex
        self._steps = 0
        self.writer.episode(self.episode_id, info["goal_index"], info["instruction"], shop_record(self.env.unwrapped.shop))
        return obs, info

    def step(self, action):
        """Step and log the action."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._steps += 1
        self.writer.step(self.episode_id, self._steps, action, info, reward, terminated, truncated)
        return obs, reward, terminated, truncated, info

    def close(self):
        """Close the log and the env."""
        self.writer.close()
        super().close()


@dataclass
class Episode:
    """One logged episode."""

    episode: str
    goal_index: int
    shop: dict
    instruction: str = ""
    actions: list = field(default_factory=list)
    steps: list = field(default_factory=list)

    @property
    def reward(self) -> float:
        """The last logged reward (the purchase's, if any)."""
        return float(self.steps[-1]["reward"]) if self.steps else 0.0

    @property
    def finished(self) -> bool:
        """Whether the log shows the episode ending."""
        return bool(self.steps) and bool(self.steps[-1]["terminated"] or self.steps[-1]["truncated"])


def read_episodes(path: str | os.PathLike) -> list[Episode]:
    """Read a log into episodes (a torn last line, from a crash, is ignored)."""
    episodes: dict[str, Episode] = {}
    for record in _records(Path(path)):
        kind = record.get("type")
        if kind == "episode":
            episodes[record["episode"]] = Episode(
                record["episode"], int(record["goal_index"]), record.get("shop", {}), record.get("instruction", "")
            )
        elif kind == "step" and record.get("episode") in episodes:
            ep = episodes[record["episode"]]
            ep.actions.append(record["action"])
            ep.steps.append(record)
    return list(episodes.values())


def _records(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as handle:
        lines = handle.readlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):  # the write a crash interrupted
                return
            raise ValueError(f"{path}: line {number} is not JSON") from None


def replay(path: str | os.PathLike, shop_path: str | None = None) -> list[dict]:
    """Replay every episode of a log in ``WebShopEnv``.

    Args:
        path: the log.
        shop_path: override the shop directory recorded in the log.

    Returns:
        Per episode: ``episode``, ``goal_index``, ``logged_reward``, ``replayed_reward``,
        ``match`` (rewards equal and the replay ended where the log did), ``steps``.
    """
    from webshop_gym.env import WebShopEnv
    from webshop_gym.shop import load_shop

    results = []
    for ep in read_episodes(path):
        record = ep.shop
        shop = load_shop(
            shop_path or record.get("path"), goals=record.get("goals"), human_goals=bool(record.get("human_goals")),
            seed=int(record.get("price_seed") or 0), progress=False,
        )
        env = WebShopEnv(shop=shop, max_steps=None)
        env.reset(options={"goal_index": ep.goal_index})
        reward, done = 0.0, False
        for action in ep.actions:
            if done:
                break
            _, reward, terminated, truncated, _ = env.step(action)
            done = terminated
        logged = ep.reward
        results.append({
            "episode": ep.episode, "goal_index": ep.goal_index, "steps": len(ep.actions),
            "logged_reward": logged, "replayed_reward": reward,
            "match": reward == logged and (done == bool(ep.steps and ep.steps[-1]["terminated"])),
        })  # fmt: skip
    return results
