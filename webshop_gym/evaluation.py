"""Evaluate a policy over a split: Score, SR, mean steps, valid-action rate, reward breakdown.

:func:`evaluate` runs every goal of a split exactly once through a
:class:`~webshop_gym.vector_env.WebShopVectorEnv` in ``eval_mode`` (goals handed out in split
order, each to one slot, until every slot is idle) and returns the figures papers report
(SPEC section 7):

* ``score``: 100 x mean final reward (an episode that never buys scores 0);
* ``sr``: 100 x share of episodes with reward exactly 1.0;
* ``mean_steps``: actions per episode (invalid ones count, as they do towards the step cap);
* ``valid_rate``: 100 x share of actions the env accepted;
* ``breakdown``: mean ``r_type``, ``r_att``, ``r_option`` and ``r_price`` over the episodes that
  bought something (``r_option`` over those whose goal has options), with ``purchase_rate``;
* ``unreachable``: for the oracle, goals whose target cannot score 1.0 (``sr_reachable`` is the
  SR over the others).

Policies: a name (``random``, ``rule``, ``oracle``, ``hf:PATH`` for a local Hugging Face model
directory), a zero-argument factory returning a per-slot policy (``reset(info)``,
``act(obs, info)``: one object per slot, reset whenever its slot starts an episode, i.e.
``info["steps"] == 0``), or a batch policy (``act_batch(observations, infos)``, e.g.
:class:`~webshop_gym.adapters.hf.HFPolicy`).  A policy with a ``seed_episode(seed)`` method is
reseeded per episode from ``(seed, goal_index)``, so results do not depend on ``num_envs``.

The command line is ``webshop-gym eval``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["BREAKDOWN", "add_arguments", "episode_seed", "evaluate", "format_table", "make_policy_factory", "rollout", "run"]

BREAKDOWN = ("r_type", "r_att", "r_option", "r_price")
_SLIM_KEYS = ("goal_index", "instruction", "page", "steps", "invalid_action", "available_actions", "valid_actions")


def episode_seed(seed: int, goal_index: int) -> int:
    """The seed of one episode's policy: a function of the run seed and the goal only."""
    return int(np.random.SeedSequence([int(seed), int(goal_index)]).generate_state(1)[0])


def make_policy_factory(policy, shop=None, seed: int = 0, **hf_kwargs: Any):
    """Resolve a policy spec into a per-slot factory or a batch policy.

    Args:
        policy: ``"random"``, ``"rule"``, ``"oracle"``, ``"hf:PATH"``, a factory, or a batch
            policy (an object with ``act_batch``).
        shop: the shop (the oracle reads goals from it).
        seed: the random policy's seed.
        **hf_kwargs: :class:`~webshop_gym.adapters.hf.HFPolicy` arguments for ``hf:PATH``.

    Returns:
        A zero-argument callable returning a per-slot policy, or a batch policy.
    """
    if hf_kwargs and not (isinstance(policy, str) and policy.startswith("hf:")):
        raise TypeError(f"arguments {sorted(hf_kwargs)} only apply to hf:PATH policies, not {policy!r}")
    if hasattr(policy, "act_batch"):
        return policy
    if callable(policy):
        return policy
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a name, a factory or a batch policy, got {type(policy).__name__}")
    if policy.startswith("hf:"):
        from webshop_gym.adapters.hf import HFPolicy

        return HFPolicy.from_pretrained(policy[3:], **{"seed": seed, **hf_kwargs})
    from webshop_gym.policies import make_policy

    if policy == "oracle":
        return lambda: make_policy("oracle", shop=shop)
    if policy == "random":
        return lambda: make_policy("random", seed=seed)
    make_policy(policy)  # validates the name (with a hint)
    return lambda: make_policy(policy)


class _Driver:
    """Feeds a vector env's slots to per-slot policies or one batch policy."""

    def __init__(self, policy, num_envs: int, seed: int):
        self.batch = policy if hasattr(policy, "act_batch") else None
        self.policies = None if self.batch is not None else [policy() for _ in range(num_envs)]
        if self.policies is not None and hasattr(self.policies[0], "act_batch"):
            self.batch, self.policies = self.policies[0], None
        self.seed = seed

    @property
    def name(self) -> str:
        target = self.batch if self.batch is not None else self.policies[0]
        return str(getattr(target, "name", type(target).__name__))

    def start(self, slot: int, info: dict) -> dict:
        """A slot starts an episode; return what the policy reports about it."""
        if self.batch is not None:
            return {}
        policy = self.policies[slot]
        reseed = getattr(policy, "seed_episode", None)
        if callable(reseed):
            reseed(episode_seed(self.seed, info["goal_index"]))
        policy.reset(info)
        out = {}
        if hasattr(policy, "reachable"):
            out["reachable"] = bool(policy.reachable)
            out["reason"] = str(getattr(policy, "reason", ""))
        return out

    def act(self, active: Sequence[int], observations: Sequence[str], infos: Sequence[dict]) -> list[str]:
        n = len(observations)
        actions = [""] * n
        if self.batch is not None:
            live = set(active)
            obs = [observations[i] if i in live else "" for i in range(n)]
            inf = [infos[i] if i in live else {"idle": True} for i in range(n)]
            out = self.batch.act_batch(obs, inf)
            for i in active:
                actions[i] = out[i]
            return actions
        for i in active:
            actions[i] = self.policies[i].act(observations[i], infos[i])
        return actions


def _slim(info: dict) -> dict:
    return {k: info[k] for k in _SLIM_KEYS if k in info}


def rollout(
    env,
    policy,
    seed: int = 0,
    num_goals: int | None = None,
    record: bool = False,
    on_episode: Callable[[dict], None] | None = None,
    stats: dict | None = None,
    progress: str | None = None,
) -> list[dict]:
    """Run an eval-mode vector env until its goals (or the first ``num_goals``) are done.

    Args:
        env: a :class:`~webshop_gym.vector_env.WebShopVectorEnv` with ``eval_mode=True``.
        policy: a per-slot factory or a batch policy (see :func:`make_policy_factory`).
        seed: reset seed of the env and base seed of per-episode policy seeds.
        num_goals: stop once the first ``num_goals`` goals of the split are done.
        record: keep each episode's ``trajectory``: per step ``{"observation", "info",
            "action"}`` (the info the action was chosen on; ``model``: an LLM policy's output,
            see :func:`webshop_gym.runs.model_outputs`), and its ``final_observation`` and
            ``final_info``.
        on_episode: called with each finished episode.
        stats: a dict to fill with facts of the run (``policy``: the policy's name,
            ``env_steps``: vector-env steps taken).
        progress: show a progress bar (on stderr) with this description.

    Returns:
        One record per goal, sorted by goal index: ``goal_index``, ``reward``, ``success``,
        ``steps``, ``invalid_actions``, ``purchased``, ``truncated`` and, after a purchase,
        ``reward_info``, ``purchased_asin``, ``purchased_options``, ``purchased_price``; the
        oracle adds ``reachable`` and ``reason``.
    """
    if progress is None:
        return _rollout(env, policy, seed, num_goals, record, on_episode, stats)
    from tqdm import tqdm

    from webshop_gym import _progress

    goals = len(env.engine.goal_range)
    total = goals if num_goals is None else min(int(num_goals), goals)
    with tqdm(disable=_progress.disable(), total=total, desc=progress, unit="goal", file=sys.stderr, dynamic_ncols=True) as bar:

        def tick(episode: dict) -> None:
            bar.update(1)
            if on_episode is not None:
                on_episode(episode)

        return _rollout(env, policy, seed, num_goals, record, tick, stats)


def _rollout(env, policy, seed, num_goals, record, on_episode, stats) -> list[dict]:
    from webshop_gym.adapters.batch import unbatch_infos

    if not getattr(env, "eval_mode", False):
        raise ValueError("rollout needs a WebShopVectorEnv created with eval_mode=True")
    n = env.num_envs
    goal_range = env.engine.goal_range
    total = len(goal_range) if num_goals is None else min(int(num_goals), len(goal_range))
    wanted = set(goal_range[:total])
    driver = _Driver(policy, n, seed)
    env_steps = 0
    observations, infos = env.reset(seed=seed)
    per = unbatch_infos(infos, n)
    current: list[dict | None] = [None] * n
    pending = [False] * n
    results: dict[int, dict] = {}

    def start(slot: int, info: dict) -> None:
        episode = {"goal_index": int(info["goal_index"]), "invalid_actions": 0}
        episode.update(driver.start(slot, info))
        if record:
            episode["trajectory"] = []
        current[slot] = episode

    for i in range(n):
        if not per[i].get("idle"):
            start(i, per[i])
    while len(results) < total:
        active = [i for i in range(n) if current[i] is not None and not pending[i]]
        if not active and not any(pending):
            raise RuntimeError(f"every slot is idle but only {len(results)} of {total} goals finished")
        actions = driver.act(active, observations, per)
        if record:
            from webshop_gym.runs import model_outputs

            said = model_outputs(driver.batch, active)
            for i in active:
                entry = {"observation": observations[i], "info": _slim(per[i]), "action": actions[i]}
                if i in said:
                    entry["model"] = said[i]
                current[i]["trajectory"].append(entry)
        observations, rewards, terminated, truncated, infos = env.step(actions)
        env_steps += 1
        per = unbatch_infos(infos, n)
        for i in range(n):
            if pending[i]:
                pending[i] = False
                if not per[i].get("idle"):
                    start(i, per[i])
                continue
            episode = current[i]
            if episode is None:
                continue
            info = per[i]
            episode["invalid_actions"] += int(bool(info.get("invalid_action")))
            if not (terminated[i] or truncated[i]):
                continue
            reward = float(rewards[i]) if terminated[i] else 0.0
            episode.update(reward=reward, success=bool(reward == 1.0), steps=int(info["steps"]),
                           purchased=bool(terminated[i]), truncated=bool(truncated[i]))
            for key in ("reward_info", "purchased_asin", "purchased_options", "purchased_price"):
                if key in info:
                    episode[key] = info[key]
            if record:
                episode.update(final_observation=observations[i], final_info=_slim(info))
            current[i] = None
            pending[i] = True
            goal = episode["goal_index"]
            if goal in wanted:
                if goal in results:
                    raise RuntimeError(f"goal {goal} ran twice")
                results[goal] = episode
                if on_episode is not None:
                    on_episode(episode)
    if stats is not None:
        stats.update(policy=driver.name, env_steps=env_steps)
    return [results[g] for g in sorted(results)]


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def summarize(episodes: Sequence[dict]) -> dict:
    """Score, SR and the other figures of a list of episode records (see the module docstring)."""
    n = len(episodes)
    rewards = np.array([e["reward"] for e in episodes], float)
    steps = np.array([e["steps"] for e in episodes], float)
    invalid = int(sum(e["invalid_actions"] for e in episodes))
    total_steps = int(steps.sum())
    bought = [e for e in episodes if e.get("purchased")]
    breakdown = {}
    for key in BREAKDOWN:
        values = [float(e["reward_info"][key]) for e in bought if key in e.get("reward_info", {})]
        breakdown[key] = _mean(values)
    breakdown["purchase_rate"] = 100.0 * len(bought) / n if n else None
    out = {
        "episodes": n,
        "score": 100.0 * float(rewards.mean()) if n else None,
        "sr": 100.0 * float((rewards == 1.0).mean()) if n else None,
        "mean_reward": float(rewards.mean()) if n else None,
        "mean_steps": float(steps.mean()) if n else None,
        "valid_rate": 100.0 * (1 - invalid / total_steps) if total_steps else None,
        "breakdown": breakdown,
        "counts": {
            "episodes": n,
            "successes": int((rewards == 1.0).sum()),
            "purchased": len(bought),
            "truncated": int(sum(e.get("truncated", False) for e in episodes)),
            "steps": total_steps,
            "invalid_actions": invalid,
        },
    }
    if any("reachable" in e for e in episodes):
        reachable = [e for e in episodes if e.get("reachable", True)]
        out["unreachable"] = n - len(reachable)
        out["sr_reachable"] = 100.0 * float(np.mean([e["reward"] == 1.0 for e in reachable])) if reachable else None
    return out


def evaluate(
    policy_factory,
    shop=None,
    split: str | None = "test",
    num_envs: int = 16,
    seed: int = 0,
    max_steps: int = 15,
    goals=None,
    human_goals: bool = False,
    price_seed: int = 0,
    num_goals: int | None = None,
    observation_mode: str = "text",
    num_workers: int = 0,
    progress: bool = False,
    keep_episodes: bool = True,
    out: str | os.PathLike | None = None,
    run_settings: dict | None = None,
    **hf_kwargs: Any,
) -> dict:
    """Run every goal of ``split`` exactly once and report Score, SR and the rest.

    Args:
        policy_factory: a policy name (``random``, ``rule``, ``oracle``, ``hf:PATH``), a
            zero-argument factory of per-slot policies, or a batch policy.
        shop: a :class:`~webshop_gym.shop.Shop`, a shop directory or None (the embedded shop).
        split: ``"test"``, ``"eval"``, ``"train"`` or ``"all"``/None.
        num_envs: slots of the vector env.
        seed: the run's seed (env reset, random policy, sampling).
        max_steps: step cap per episode.
        goals: a frozen goal-set file (when ``shop`` is not a Shop).
        human_goals: human instructions instead of synthetic goals (idem).
        price_seed: seed of prices and price caps (idem).
        num_goals: only the first ``num_goals`` goals of the split.
        observation_mode: what the policy sees (``text`` for every baseline).
        num_workers: processes stepping the vector env (``W >= 2``: this one and ``W - 1`` workers).
        progress: show a progress bar (stderr).
        keep_episodes: include the per-goal records under ``"episodes_detail"``.
        out: write the run (every episode, every step) to this JSONL file (:mod:`webshop_gym.runs`).
        run_settings: extra fields for the run file's ``run`` line (e.g. the command's arguments).
        **hf_kwargs: :class:`~webshop_gym.adapters.hf.HFPolicy` arguments for ``hf:PATH``.

    Returns:
        A JSON-ready dict: ``score``, ``sr``, ``mean_steps``, ``valid_rate``, ``breakdown``,
        ``counts``, (``unreachable``, ``sr_reachable``), and the run's settings and wall time.

    Example:
        >>> result = evaluate("rule", split="test", num_envs=8, num_goals=8)  # doctest: +SKIP
        >>> round(result["score"], 1), result["counts"]["episodes"]  # doctest: +SKIP
    """
    from webshop_gym.shop import Shop, load_shop
    from webshop_gym.vector_env import WebShopVectorEnv

    if not isinstance(shop, Shop):
        shop = load_shop(shop, goals=goals, human_goals=human_goals, seed=price_seed, progress=False)
    split = None if split == "all" else split
    policy = make_policy_factory(policy_factory, shop=shop, seed=seed, **hf_kwargs)
    env = WebShopVectorEnv(num_envs, shop=shop, split=split, max_steps=max_steps, eval_mode=True,
                           observation_mode=observation_mode, num_workers=num_workers)
    total = len(env.engine.goal_range) if num_goals is None else min(num_goals, len(env.engine.goal_range))
    started = time.perf_counter()
    stats: dict = {}
    writer = None
    try:
        if out is not None:
            from webshop_gym.runs import RunWriter

            writer = RunWriter(out, shop, list(env.engine.goal_range)[:total], **_run_line(
                policy_factory, policy, hf_kwargs, split, seed, max_steps, num_envs, num_workers, observation_mode,
                run_settings))
        episodes = rollout(env, policy, seed=seed, num_goals=num_goals, stats=stats, record=writer is not None,
                           on_episode=None if writer is None else writer.add, progress="eval" if progress else None)
    except BaseException:
        if writer is not None:
            writer.close()  # the finished episodes stay readable; no summary line
        raise
    finally:
        env.close()
    wall = time.perf_counter() - started
    expected = list(env.engine.goal_range)[:total]
    got = [e["goal_index"] for e in episodes]
    if got != expected:
        if writer is not None:
            writer.close()
        raise RuntimeError(f"evaluation covered {len(got)} goals, expected each of {len(expected)} exactly once")
    result = summarize(episodes)
    name = policy_factory if isinstance(policy_factory, str) else stats["policy"]
    result.update(
        policy=name,
        shop=str(shop.path),
        fingerprint=shop.fingerprint(),
        goal_kind=shop.goals.kind,
        split=split or "all",
        goals=[expected[0], expected[-1] + 1] if expected else [0, 0],
        num_envs=num_envs,
        seed=seed,
        max_steps=max_steps,
        wall_s=wall,
        steps_per_s=result["counts"]["steps"] / wall if wall > 0 else None,
        env_steps=stats["env_steps"],
    )
    if writer is not None:
        writer.close(result)
        result["run_file"] = str(out)
    if keep_episodes:
        result["episodes_detail"] = episodes
    return result


def _run_line(policy_factory, policy, hf_kwargs, split, seed, max_steps, num_envs, num_workers, observation_mode,
              extra) -> dict:
    """The settings a run file's ``run`` line records (see :mod:`webshop_gym.runs`)."""
    if isinstance(policy_factory, str):
        name = policy_factory
    else:
        name = str(getattr(policy_factory, "name", None) or getattr(policy_factory, "__name__", None)
                   or type(policy_factory).__name__)
    prompt = hf_kwargs.get("prompt")
    if prompt is None and hasattr(policy, "act_batch"):
        prompt = getattr(getattr(policy, "prompt", None), "name", None)
    settings = {"policy": name, "prompt": prompt, "split": split or "all", "seed": seed, "max_steps": max_steps,
                "num_envs": num_envs, "num_workers": num_workers, "observation_mode": observation_mode,
                "policy_settings": {k: v for k, v in hf_kwargs.items() if k != "prompt"}}
    settings.update(extra or {})
    return settings


def _fmt(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _fingerprint_text(fingerprint: dict | None) -> str:
    if not fingerprint:
        return "-"
    return (f"catalog {fingerprint['catalog']}, {fingerprint['products']} products, goal set {fingerprint['goal_set']} "
            f"({fingerprint['goals']} {fingerprint['goal_kind']} goals, price seed {fingerprint['price_seed']})")


def format_table(result: dict) -> str:
    """A readable table of an :func:`evaluate` result."""
    b = result["breakdown"]
    c = result["counts"]
    rows = [
        ("policy", str(result.get("policy"))),
        ("shop", f"{result.get('shop')} ({result.get('goal_kind')} goals)"),
        ("fingerprint", _fingerprint_text(result.get("fingerprint"))),
        ("split", f"{result.get('split')}: goals [{result['goals'][0]}, {result['goals'][1]}), "
                  f"{c['episodes']} episodes, max_steps {result.get('max_steps')}, seed {result.get('seed')}"),
        ("Score", _fmt(result["score"])),
        ("SR (%)", _fmt(result["sr"])),
        ("mean steps", _fmt(result["mean_steps"])),
        ("valid actions (%)", _fmt(result["valid_rate"])),
        ("purchased (%)", _fmt(b["purchase_rate"])),
        ("r_type / r_att / r_option / r_price", " / ".join(_fmt(b[k], 3) for k in BREAKDOWN)),
    ]
    if "unreachable" in result:
        rows.append(("unreachable goals", f"{result['unreachable']} (SR on the others {_fmt(result['sr_reachable'])})"))
    rows.append(("wall time", f"{result['wall_s']:.1f} s ({_fmt(result.get('steps_per_s'), 0)} steps/s, {result['num_envs']} envs)"))
    if result.get("run_file"):
        rows.append(("run file", f"{result['run_file']} (webshop-gym replay / report / serve --runs)"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


# -- command line ------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``webshop-gym eval``."""
    from webshop_gym import _argtypes as types
    from webshop_gym.cli import add_shop_arguments

    parser.add_argument("--policy", default="rule", metavar="NAME", type=policy_spec,
                        help="random, rule, oracle, or hf:PATH (a local Hugging Face model folder) (default rule)")
    add_shop_arguments(parser)
    parser.add_argument("--split", default="test", choices=["test", "eval", "train", "all"], help="goal split (default test)")
    parser.add_argument("--num-envs", type=types.at_most(types.positive_int, types.MAX_ENVS), default=16, metavar="N",
                        help=f"parallel slots of the vector env (default 16; at most {types.MAX_ENVS:,})")
    parser.add_argument("-n", "--num-goals", type=types.at_most(types.positive_int, types.MAX_COUNT), metavar="N",
                        help=f"only the first N goals of the split (at most {types.MAX_COUNT:,})")
    parser.add_argument("--seed", type=types.seed, default=0, metavar="SEED", help="run seed (default 0)")
    parser.add_argument("--max-steps", type=types.at_most(types.positive_int, types.MAX_STEPS), default=15, metavar="N",
                        help=f"step cap per episode (default 15; at most {types.MAX_STEPS:,})")
    parser.add_argument("--num-workers", type=types.at_most(types.non_negative_int, types.MAX_WORKERS), default=0,
                        metavar="N", help="processes stepping the vector env: W >= 2 steps one shard here and the "
                                          "others in W - 1 spawned workers (default 0: all in this process; at most "
                                          f"{types.MAX_WORKERS})")
    parser.add_argument("--json", metavar="FILE", type=_json_target,
                        help="write the result as JSON ('-': to stdout, the table goes to stderr)")
    parser.add_argument("--episodes", action="store_true", help="include per-goal records in the JSON")
    parser.add_argument("--out", metavar="FILE", type=types.output_file,
                        help="write the run to this file: settings, shop fingerprint, every episode and step "
                             "(observations, model outputs, rewards); view with `serve --runs`, check with "
                             "`replay`, summarise with `report`")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    hf = parser.add_argument_group("hf:PATH policies")
    hf.add_argument("--prompt", default="think-answer", choices=["think-answer", "verl-agent", "react"], help="prompt format (default think-answer)")
    hf.add_argument("--max-new-tokens", type=types.at_most(types.positive_int, types.MAX_TOKENS), default=128, metavar="N",
                    help=f"tokens per answer (default 128; at most {types.MAX_TOKENS:,})")
    hf.add_argument("--sample", action="store_true", help="sample instead of greedy decoding")
    hf.add_argument("--temperature", type=types.temperature, default=1.0, metavar="T",
                    help="sampling temperature > 0, at most 100 (default 1.0)")
    hf.add_argument("--top-p", type=types.probability, default=1.0, metavar="P",
                    help="nucleus sampling mass in [0, 1] (default 1.0)")
    hf.add_argument("--top-k", type=types.at_most(types.non_negative_int, types.MAX_TOKENS), default=0, metavar="K",
                    help=f"sample among the k likeliest tokens (default 0: all; at most {types.MAX_TOKENS:,})")
    hf.add_argument("--closest", action="store_true", help="map inadmissible answers to the closest admissible action")
    hf.add_argument("--device", metavar="DEVICE", help="cuda, cpu, ... (default: cuda when available)")
    hf.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float16", "float32", "none"],
                    help="weights' dtype (default auto)")
    hf.add_argument("--max-prompt-tokens", type=types.at_most(types.positive_int, types.MAX_TOKENS), metavar="N",
                    help=f"left-truncate prompts to N tokens (at most {types.MAX_TOKENS:,})")
    hf.add_argument("--batch-size", type=types.at_most(types.positive_int, types.MAX_ENVS), metavar="N",
                    help=f"prompts per forward batch (default: all slots; at most {types.MAX_ENVS:,})")


def policy_spec(text: str) -> str:
    """``--policy``: a baseline name or ``hf:PATH`` with PATH a local folder (checked at the parser)."""
    from webshop_gym.error import close_match
    from webshop_gym.policies.base import BASELINES

    if text.startswith("hf:"):
        from webshop_gym import _argtypes as types

        types.model_dir(text[3:])  # says what the folder lacks
        return text
    if text not in BASELINES:
        hint = close_match(text, BASELINES)
        raise argparse.ArgumentTypeError(
            f"unknown policy {text!r}; expected one of {', '.join(BASELINES)} or hf:PATH"
            + (f" (did you mean {hint!r}?)" if hint else ""))
    return text


def _json_target(text: str) -> str:
    from webshop_gym import _argtypes as types

    return text if text == "-" else types.output_file(text)


def run(args: argparse.Namespace) -> int:
    """Run ``webshop-gym eval``."""
    hf_kwargs: dict[str, Any] = {}
    if args.policy.startswith("hf:"):
        hf_kwargs = dict(prompt=args.prompt, max_new_tokens=args.max_new_tokens, do_sample=args.sample,
                         temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                         closest=args.closest, device=args.device, dtype=None if args.dtype == "none" else args.dtype,
                         max_prompt_tokens=args.max_prompt_tokens, batch_size=args.batch_size)
    result = evaluate(
        args.policy, shop=args.shop, split=args.split, num_envs=args.num_envs, seed=args.seed,
        max_steps=args.max_steps, goals=args.goals, human_goals=args.human_goals, price_seed=args.price_seed,
        num_goals=args.num_goals, num_workers=args.num_workers, progress=not args.quiet,
        keep_episodes=args.episodes, out=args.out, run_settings={"arguments": _arguments(args)}, **hf_kwargs,
    )
    table = format_table(result)
    text = json.dumps(result, indent=1, default=_json_default)
    if args.json == "-":
        print(table, file=sys.stderr)
        print(text)
        return 0
    print(table)
    summary = {k: result[k] for k in ("policy", "split", "score", "sr", "mean_steps", "valid_rate", "breakdown")}
    print("json: " + json.dumps(summary, default=_json_default))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 0


def _arguments(args: argparse.Namespace) -> dict:
    """The command's parsed arguments (JSON-ready) for the run file."""
    return {k: v for k, v in sorted(vars(args).items()) if k not in ("func", "debug") and not callable(v)}


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
