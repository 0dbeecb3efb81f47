"""Replaying logged episodes in ``WebShopEnv`` and comparing every step (``webshop-gym replay``).

A log or run file (:mod:`webshop_gym.runs.log`) names its shop and fingerprint; :func:`replay`
reopens that shop, replays each episode's actions and compares rewards, pages, observations and
breakdowns step by step.
"""

from __future__ import annotations

import json
import os
from typing import Any

from webshop_gym.error import ShopNotFound
from webshop_gym.runs.log import Episode, Log, LogError, logged_action, read_log

__all__ = ["fingerprint_difference", "load_logged_shop", "replay", "replay_episode", "replay_log"]

_COMPARED = ("reward", "terminated", "truncated", "invalid_action", "page", "observation", "reward_info",
             "purchased_asin", "purchased_options")


def load_logged_shop(record: dict, shop_path: str | None = None):
    """Load the shop a log's shop record names (or ``shop_path`` instead of its folder)."""
    from webshop_gym.shop import load_shop

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
    base = env.unwrapped
    same = mode is None or mode == base.observation_mode

    def view(obs: str) -> str:
        return obs if same else base.engine.observe(0, mode)

    obs, _ = env.reset(options={"goal_index": episode.goal_index})
    if on_state is not None:
        on_state(obs)
    problem = ""
    if "observation" in episode.record and episode.record["observation"] != view(obs):
        problem = "the first observation differs"
        if on_state is None:
            return 0.0, problem
    reward, ended = 0.0, False
    for record in episode.steps:
        if ended:
            return reward, problem or (f"step {record['step']}: the log goes on after the episode ended at "
                                       f"step {record['step'] - 1}")
        obs, reward, terminated, truncated, info = env.step(logged_action(record))
        if on_state is not None:
            on_state(obs)
        ended = terminated or truncated
        if problem:
            continue
        replayed = {"reward": reward, "terminated": terminated, "truncated": truncated,
                    "invalid_action": info["invalid_action"], "page": info["page"],
                    "reward_info": info.get("reward_info"), "purchased_asin": info.get("purchased_asin"),
                    "purchased_options": info.get("purchased_options")}
        for key in _COMPARED:
            if key not in record:
                continue
            value = view(obs) if key == "observation" else replayed[key]
            if record[key] != value:
                shown = "" if key in ("observation", "reward_info") else f": logged {record[key]!r}, replayed {value!r}"
                problem = f"step {record['step']}: {key} differs{shown}"
                break
        if problem and on_state is None:
            return reward, problem
    return reward, problem


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
    from webshop_gym.envs.env import WebShopEnv

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
