"""Replaying logged episodes in ``WebShopEnv`` and comparing every step (``webshop-gym replay``).

A log or run file (:mod:`webshop_gym.runs.log`) names its shop and fingerprint; :func:`replay`
reopens that shop, replays each episode's actions and compares rewards, pages, observations and
breakdowns step by step.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from webshop_gym.envs.env import WebShopEnv
from webshop_gym.error import ShopNotFound
from webshop_gym.runs.log import Episode, Log, LogError, logged_action, read_log
from webshop_gym.shop import load_shop

__all__ = ["Replayer", "fingerprint_difference", "load_logged_shop", "replay", "replay_episode", "replay_log"]

_COMPARED = ("reward", "terminated", "truncated", "invalid_action", "page", "observation", "reward_info",
             "purchased_asin", "purchased_options")


def load_logged_shop(record: dict, shop_path: str | None = None):
    """Load the shop a log's shop record names (or ``shop_path`` instead of its folder)."""
    price_seed = record.get("price_seed") or 0
    return load_shop(shop_path or record.get("path"), goals=record.get("goals"),
                     human_goals=bool(record.get("human_goals")), seed=int(price_seed), progress=False)


def fingerprint_difference(recorded: dict, shop) -> str | None:
    """How ``shop`` differs from a recorded :meth:`~webshop_gym.shop.Shop.fingerprint` (``None``: same).

    The catalog's cache key is left out: it changes with the compiler version, not the data.
    """
    current = shop.fingerprint()
    for key in sorted(set(recorded) | set(current)):
        if key == "catalog":
            continue
        if recorded.get(key) != current.get(key):
            return f"{key}: recorded {recorded.get(key)!r}, this shop {current.get(key)!r}"
    return None


def replay_episode(env, episode: Episode, mode: str | None = None, on_state=None) -> tuple[float, str]:
    """Replay one episode in ``env`` and compare it with the log.

    Args:
        env: a :class:`~webshop_gym.envs.env.WebShopEnv` (any observation mode) under the episode's cap.
        episode: the logged episode.
        mode: the mode of the logged observations (default: the env's).
        on_state: called with the env's observation after the reset and after every step; when
            given, the replay goes on after a difference (as far as the env allows).

    Returns:
        (replayed reward, the first difference or ``""``).
    """
    engine = env.unwrapped.engine
    seen = None if on_state is None else (lambda: on_state(engine.observe(0)))
    replayer = Replayer(engine, episode, mode)
    replayer.start(seen)
    if replayer.problem and on_state is None:
        return 0.0, replayer.problem
    replayer.advance(len(episode.steps), seen, stop_at_problem=on_state is None)
    return replayer.reward, replayer.problem


class Replayer:
    """Steps a logged episode through slot 0 of an engine, comparing every step with the log.

    It can stop after any step and go on later (the run viewer replays a long episode only up to
    the page shown), and :meth:`snapshot` / :meth:`restore` save and bring back the env's state.
    The comparison covers every logged field (reward, flags, page, observation, purchase); the
    log may not go on after the env ended the episode.

    Attributes:
        made: states reached so far (the state after ``i`` actions is state ``i``; at most
            ``len(steps) + 1``).
        problem: the first difference from the log (``""``: none so far).
        reward: the reward of the last step taken.
        done: no further step can be taken (the log's end, or the env ended the episode).
    """

    def __init__(self, engine, episode: Episode, mode: str | None = None):
        self.engine = engine
        self.episode = episode
        self.mode = mode or engine.observation_mode  # the mode of the logged observations
        self.made = 0
        self.problem = ""
        self.reward = 0.0
        self.done = False

    def start(self, on_state=None) -> None:
        """Reset to the episode's goal (state 0) and compare the first observation.

        Args:
            on_state: called (without arguments) once state 0 is there.
        """
        engine, episode = self.engine, self.episode
        engine.reset([0], [engine.check_goal(episode.goal_index)])
        self.made, self.problem, self.reward, self.done = 1, "", 0.0, not episode.steps
        if on_state is not None:
            on_state()
        if "observation" in episode.record and episode.record["observation"] != engine.observe(0, self.mode):
            self.problem = "the first observation differs"

    def advance(self, stop: int, on_state=None, stop_at_problem: bool = False) -> None:
        """Take logged actions until state ``stop`` is reached (or the episode cannot go on).

        Args:
            stop: the state to reach (``len(steps)``: the end of the log).
            on_state: called (without arguments) once each new state is there.
            stop_at_problem: stop at the first difference.
        """
        engine, steps = self.engine, self.episode.steps
        while not self.done and self.made <= stop:
            record = steps[self.made - 1]
            if engine.finished(0):
                self.done = True
                self.problem = self.problem or (f"step {record['step']}: the log goes on after the episode ended at "
                                                f"step {record['step'] - 1}")
                return
            rewards, terminated, truncated = engine.step([0], [logged_action(record)])
            self.made += 1
            self.reward = float(rewards[0])
            self.done = self.made > len(steps)
            if on_state is not None:
                on_state()
            if not self.problem:
                self.problem = self._difference(record, float(rewards[0]), bool(terminated[0]), bool(truncated[0]))
                if self.problem and stop_at_problem:
                    self.done = True
                    return

    def _difference(self, record: dict, reward: float, terminated: bool, truncated: bool) -> str:
        info = self.engine.info(0, actions=False)
        replayed = {"reward": reward, "terminated": terminated, "truncated": truncated,
                    "invalid_action": info["invalid_action"], "page": info["page"],
                    "reward_info": info.get("reward_info"), "purchased_asin": info.get("purchased_asin"),
                    "purchased_options": info.get("purchased_options")}
        for key in _COMPARED:
            if key not in record:
                continue
            value = self.engine.observe(0, self.mode) if key == "observation" else replayed[key]
            if record[key] != value:
                shown = "" if key in ("observation", "reward_info") else f": logged {record[key]!r}, replayed {value!r}"
                return f"step {record['step']}: {key} differs{shown}"
        return ""

    def snapshot(self) -> tuple:
        """The env's state and the replay's progress now (for :meth:`restore`)."""
        engine = self.engine
        return copy.deepcopy((engine.state, engine.invalid, engine.truncated, engine.instructions,
                              self.made, self.reward, self.done))

    def restore(self, snapshot: tuple) -> None:
        """Go back (or forward) to a :meth:`snapshot`; the first difference found so far is kept."""
        engine = self.engine
        (engine.state, engine.invalid, engine.truncated, engine.instructions,
         self.made, self.reward, self.done) = copy.deepcopy(snapshot)


def replay(path: str | os.PathLike, shop_path: str | None = None) -> list[dict]:
    """Replay every episode of a log in ``WebShopEnv`` and compare every step with the log.

    Each episode runs under its logged ``max_steps`` (none when the log predates it) and in the
    logged observation mode; every logged field of every step (reward, flags, page, observation,
    purchase) must equal the replay's, and the log must not go on after the episode ended.

    Args:
        path: the log.
        shop_path: override the shop directory recorded in the log.

    Returns:
        Per episode: ``episode``, ``goal_index``, ``steps``, ``logged_reward``, ``replayed_reward``,
        ``match`` and ``problem`` (the first difference, ``""`` when it matches).

    Raises:
        LogError: the log is malformed, holds no episode, was recorded on another shop or goal
            set (its fingerprint), or names a goal the shop does not have.
    """
    return replay_log(read_log(path), shop_path)


def replay_log(log: Log, shop_path: str | None) -> list[dict]:
    """Replay every episode of an already read log (see :func:`replay`)."""
    path = log.path
    if not log.episodes:
        raise LogError(path, None, "no episode in this log (an episode line starts each one)")
    shops: dict[str, Any] = {}
    envs: dict[tuple, WebShopEnv] = {}
    results = []
    for ep in log.episodes:
        key = json.dumps(ep.shop, sort_keys=True)
        if key not in shops:
            try:
                shops[key] = shop = load_logged_shop(ep.shop, shop_path)
            except (ShopNotFound, FileNotFoundError) as exc:
                raise LogError(path, ep.line, f"cannot load the log's shop: {exc}"
                                            + ("" if shop_path else " (pass --shop DIR)")) from exc
            recorded = (log.header or {}).get("fingerprint")
            if recorded is not None and ep.shop == log.header.get("shop"):
                problem = fingerprint_difference(recorded, shop)
                if problem is not None:
                    raise LogError(path, 1, f"the run was recorded on another shop or goal set ({problem}); "
                                            "pass --shop with the run's shop")
        shop = shops[key]
        if ep.goal_index >= len(shop.goals):
            raise LogError(path, ep.line, f"goal_index {ep.goal_index} is out of range: the shop has "
                                          f"{len(shop.goals)} goals")
        mode = ep.record.get("observation_mode") or (log.header or {}).get("observation_mode") or "text"
        env_key = (key, ep.max_steps, mode)
        if env_key not in envs:
            envs[env_key] = WebShopEnv(shop=shop, max_steps=ep.max_steps, observation_mode=mode)
        replayed, problem = replay_episode(envs[env_key], ep)
        results.append({
            "episode": ep.episode, "goal_index": ep.goal_index, "steps": len(ep.steps),
            "logged_reward": ep.reward, "replayed_reward": replayed, "match": not problem, "problem": problem,
        })  # fmt: skip
    return results
