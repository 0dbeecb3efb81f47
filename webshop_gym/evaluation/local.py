"""Evaluate a policy over a split: Score, SR, mean steps, valid-action rate, reward breakdown.

:func:`evaluate` runs every goal of a split exactly once through a
:class:`~webshop_gym.envs.vector_env.WebShopVectorEnv` in ``eval_mode`` (goals handed out in split
order, each to one slot, until every slot is idle) and returns the figures papers report
(SPEC section 7):

* ``score``: 100 x mean final reward (an episode that never buys scores 0);
* ``sr``: 100 x share of episodes with reward exactly 1.0;
* ``mean_steps``: actions per episode (invalid ones count, as they do towards the step cap);
* ``valid_rate``: 100 x share of actions the env accepted;
* ``breakdown``: mean ``r_type``, ``r_att``, ``r_option`` and ``r_price`` over the episodes that
  bought something (``r_option`` over those whose goal has options), with ``purchase_rate``;
* ``unreachable``: goals on which no purchase of the target scores 1.0 (a property of the goal,
  :meth:`~webshop_gym.shop.Shop.reachability`, marked on every episode as ``reachable`` and
  ``reason``); ``sr_reachable`` is the SR over the others.

Policies: a name (``random``, ``rule``, ``oracle``, ``hf:PATH`` for a local Hugging Face model
directory, ``openai:MODEL`` for a model behind an OpenAI-compatible endpoint, played with many
episodes in flight by :mod:`webshop_gym.evaluation.served`), a zero-argument factory returning a per-slot policy (``reset(info)``,
``act(obs, info)``: one object per slot, reset whenever its slot starts an episode, i.e.
``info["steps"] == 0``), or a batch policy (``act_batch(observations, infos)``, e.g.
:class:`~webshop_gym.agents.hf.HFPolicy`).  A policy with a ``seed_episode(seed)`` method is
reseeded per episode from ``(seed, goal_index)``, so results do not depend on ``num_envs``.

The command line is ``webshop-gym eval``.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from webshop_gym.agents.policies import make_policy
from webshop_gym.agents.turns import TurnRule
from webshop_gym.analysis.figures import BREAKDOWN, summarize
from webshop_gym.envs.vector_env import WebShopVectorEnv
from webshop_gym.error import InvalidArgument
from webshop_gym.evaluation.accounting import accounting_rows
from webshop_gym.evaluation.episode import episode_seed, mark_reachability, progress_rate
from webshop_gym.evaluation.lanes import Driver, Lane, play_lanes
from webshop_gym.evaluation.plan import (
    choose_decoding,
    choose_prompt,
    played_prompt,
    prepare,
    protocol_of,
)
from webshop_gym.evaluation.served import evaluate_served, is_served, make_served_policy
from webshop_gym.protocols import Protocol
from webshop_gym.runs.run import RunWriter
from webshop_gym.utils import progress as _progress

__all__ = ["evaluate", "format_table", "make_policy_factory", "rollout"]



def make_policy_factory(policy, shop=None, seed: int = 0, **hf_kwargs: Any):
    """Resolve a policy spec into a per-slot factory or a batch policy.

    Args:
        policy: ``"random"``, ``"rule"``, ``"oracle"``, ``"hf:PATH"``, a factory, or a batch
            policy (an object with ``act_batch``).
        shop: the shop (the oracle reads goals from it).
        seed: the random policy's seed.
        **hf_kwargs: :class:`~webshop_gym.agents.hf.HFPolicy` arguments for ``hf:PATH``.

    Returns:
        A zero-argument callable returning a per-slot policy, or a batch policy.
    """
    if isinstance(policy, str) and policy.startswith("openai:"):  # a batch policy here; evaluate() runs it concurrently

        return make_served_policy(policy, seed=seed, **hf_kwargs)
    if hf_kwargs and not (isinstance(policy, str) and policy.startswith("hf:")):
        raise TypeError(f"arguments {sorted(hf_kwargs)} only apply to hf:PATH policies, not {policy!r}")
    if hasattr(policy, "act_batch"):
        return policy
    if callable(policy):
        return policy
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a name, a factory or a batch policy, got {type(policy).__name__}")
    if policy.startswith("hf:"):
        from webshop_gym.agents.hf import HFPolicy

        return HFPolicy.from_pretrained(policy[3:], **{"seed": seed, **hf_kwargs})

    if policy == "oracle":
        return lambda: make_policy("oracle", shop=shop)
    if policy == "random":
        return lambda: make_policy("random", seed=seed)
    make_policy(policy)  # validates the name (with a hint)
    return lambda: make_policy(policy)


def rollout(
    env,
    policy,
    seed: int = 0,
    num_goals: int | None = None,
    record: bool = False,
    on_episode: Callable[[dict], None] | None = None,
    stats: dict | None = None,
    progress: str | None = None,
    goals: Sequence[int] | None = None,
    seeds: Sequence[int] | None = None,
) -> list[dict]:
    """Run an eval-mode vector env until its goals (or the first ``num_goals``) are done.

    Args:
        env: a :class:`~webshop_gym.envs.vector_env.WebShopVectorEnv` with ``eval_mode=True``.
        policy: a per-slot factory or a batch policy (see :func:`make_policy_factory`).
        seed: reset seed of the env and base seed of per-episode policy seeds.
        num_goals: stop once the first ``num_goals`` goals of the split are done.
        record: keep each episode's ``trajectory``: per step ``{"observation", "info",
            "action"}`` (the info the action was chosen on; ``model``: an LLM policy's output,
            see :func:`webshop_gym.runs.run.model_outputs`), and its ``final_observation`` and
            ``final_info``.
        on_episode: called with each finished episode.
        stats: a dict to fill with facts of the run (``policy``: the policy's name,
            ``env_steps``: vector-env steps taken).
        progress: show a progress bar (on stderr) with this description.
        goals: the env's ``eval_goals`` (repeats allowed): one record per entry, in this order,
            with ``entry``: its index in ``goals``.
        seeds: with ``goals``, each episode's policy seed (default: from the run seed and the goal).

    Returns:
        One record per goal, sorted by goal index (per entry of ``goals``, in order): ``goal_index``, ``reward``, ``success``,
        ``steps``, ``invalid_actions``, ``purchased``, ``truncated`` and, after a purchase,
        ``reward_info``, ``purchased_asin``, ``purchased_options``, ``purchased_price``
        (:func:`evaluate` adds the goal's ``reachable`` and ``reason``).
    """
    if progress is None:
        return _rollout(env, policy, seed, num_goals, record, on_episode, stats, goals, seeds)
    from tqdm import tqdm

    available = len(env.engine.goal_range) if goals is None else len(goals)
    total = available if num_goals is None or goals is not None else min(int(num_goals), available)
    with tqdm(disable=_progress.disable(), total=total, desc=progress, unit="goal", file=sys.stderr, dynamic_ncols=True) as bar:

        def tick(episode: dict) -> None:
            bar.update(1)
            if on_episode is not None:
                on_episode(episode)

        return _rollout(env, policy, seed, num_goals, record, tick, stats, goals, seeds)


def _rollout(env, policy, seed, num_goals, record, on_episode, stats, listed=None, seeds=None) -> list[dict]:
    lane = Lane(env, Driver(policy, env.num_envs, seed), seed, record=record, on_episode=on_episode,
                num_goals=num_goals, listed=listed, seeds=seeds)
    while not lane.done:
        lane.step()
    if stats is not None:
        stats.update(policy=lane.driver.name, env_steps=lane.env_steps)
    return lane.episodes()


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
    observation_mode: str | None = None,
    num_workers: int = 0,
    progress: bool = False,
    keep_episodes: bool = True,
    out: str | os.PathLike | None = None,
    run_settings: dict | None = None,
    concurrency: int | None = None,
    resume: bool = False,
    shard: tuple[int, int] | None = None,
    protocol: str | Protocol | None = None,
    validation: int = 0,
    protocol_file: str | os.PathLike | None = None,
    samples: int = 1,
    **hf_kwargs: Any,
) -> dict:
    """Run every goal of ``split`` (or of a protocol) and report Score, SR and the rest.

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
        observation_mode: what the policy sees (``None``: the protocol's observation mode, ``text``
            without a protocol).
        num_workers: processes stepping the vector env (``W >= 2``: this one and ``W - 1`` workers).
        progress: show a progress bar (stderr).
        keep_episodes: include the per-goal records under ``"episodes_detail"``.
        out: write the run (every episode, every step) to this JSONL file (:mod:`webshop_gym.runs.run`).
        run_settings: extra fields for the run file's ``run`` line (e.g. the command's arguments).
        concurrency: a served policy's episodes in flight (``openai:MODEL``; default: its own).
        resume: a served policy: continue the run in ``out`` (:mod:`webshop_gym.evaluation.served`).
        shard: a served policy: ``(i, n)``, play the ``i``-th of ``n`` blocks of the goals.
        protocol: play this protocol (a name of :func:`webshop_gym.protocols.protocol_names` or a
            :class:`~webshop_gym.protocols.Protocol`): its goals, price seeds, step cap and metrics
            (``split``, ``num_goals``, ``max_steps``, ``goals``, ``human_goals`` and
            ``price_seed`` are then the protocol's; ``seed`` is its seed when it takes one).
            ``None``: the run records the ad-hoc protocol of its split (:mod:`.plan`).
        validation: the K-th validation of a protocol that draws goals per validation (verl-agent).
        protocol_file: the goal-id file of a protocol that reads one (agentgym, seed-fairness).
        samples: play each episode this many times (sampling policies), each with its own seed;
            the figures add ``mean@K`` and ``pass@K``.
        **hf_kwargs: :class:`~webshop_gym.agents.hf.HFPolicy` arguments for ``hf:PATH``, or
            :class:`~webshop_gym.agents.openai.OpenAIPolicy` arguments for ``openai:MODEL``.
            Decoding (``do_sample``, ``temperature``, ``top_p``, ``max_new_tokens``) not given
            is the protocol's (:func:`~webshop_gym.evaluation.plan.choose_decoding`); another
            is recorded as a deviation.

    Returns:
        A JSON-ready dict: ``score``, ``sr``, ``mean_steps``, ``valid_rate``, ``breakdown``,
        ``counts``, (``unreachable``, ``sr_reachable``), ``protocol`` (the protocol's metrics and
        fingerprint), ``protocol_record`` (the run line's protocol object), and the run's
        settings and wall time.

    Example:
        >>> result = evaluate("rule", split="test", num_envs=8, num_goals=8)  # doctest: +SKIP
        >>> round(result["score"], 1), result["counts"]["episodes"]  # doctest: +SKIP
    """
    chosen = protocol_of(protocol)
    prompt_name = choose_prompt(policy_factory, hf_kwargs.get("prompt"), chosen)
    if prompt_name is not None:
        hf_kwargs["prompt"] = prompt_name
    hf_kwargs, decoding = choose_decoding(policy_factory, hf_kwargs, chosen)  # the protocol's unless given
    if observation_mode is None:
        observation_mode = "text" if chosen is None else chosen.observation["mode"]
    plan = prepare(shop, protocol=chosen, seed=seed, validation=validation, protocol_file=protocol_file,
                   samples=samples, split=split, num_goals=num_goals, max_steps=max_steps, goals=goals,
                   human_goals=human_goals, price_seed=price_seed, observation_mode=observation_mode,
                   prompt=played_prompt(policy_factory, prompt_name), decoding=decoding)
    if plan.named:
        max_steps = int(plan.protocol.step_cap)
    shop = plan.shop

    if is_served(policy_factory):  # a model behind an API: episodes in flight, not a vector env
        return evaluate_served(policy_factory, shop, split=split, seed=seed, max_steps=max_steps, num_goals=num_goals,
                               observation_mode=observation_mode, progress=progress, keep_episodes=keep_episodes,
                               out=out, run_settings=run_settings, concurrency=concurrency, resume=resume,
                               shard=shard, protocol_plan=plan, **hf_kwargs)
    if resume or shard is not None or concurrency is not None:

        raise InvalidArgument("concurrency, resume and shard apply to served policies (openai:MODEL) only")
    groups = plan.groups()
    if len(groups) > 1 and num_workers:
        raise InvalidArgument(f"num_workers applies to one shop; protocol {plan.protocol.name!r} plays "
                              f"{len(groups)} price seeds (one shop each), stepped in this process")
    split = None if split == "all" else split
    expected = [e.goal for e in plan.episodes]
    # Never more slots than episodes to play: spare slots would only sit idle (and cost memory per
    # slot before the first step).  Results do not depend on num_envs (per-goal reseeding).
    asked = int(num_envs)
    num_envs = max(1, min(asked, sum(len(g) for _, g in groups)))
    policy = make_policy_factory(policy_factory, shop=shop, seed=seed, **hf_kwargs)
    tagged = plan.named or not plan.simple  # episodes carry their protocol fields (ad-hoc runs: implied)
    started = time.perf_counter()
    stats: dict = {"env_steps": 0}
    writer = None
    bar = _progress_bar(len(expected), progress)
    try:
        if out is not None:

            writer = RunWriter(out, shop, expected, keys=None if plan.simple else [e.ordinal for e in plan.episodes],
                               **_run_line(policy_factory, policy, hf_kwargs, split, seed, max_steps, num_envs,
                                           num_workers, observation_mode, run_settings), protocol=plan.record)
        lane_results: list[list[dict]] = [[] for _ in groups]

        def open_lane(k: int, slots: int, batch) -> Lane:
            group_shop, group = groups[k]
            seeds = [episode_seed(seed, e.goal, e.sample) for e in group]

            def finished(episode: dict) -> None:
                entry = episode.pop("entry")
                planned = group[entry]
                if tagged:
                    episode["ordinal"] = planned.ordinal
                    episode["protocol"] = {**planned.as_dict(), "policy_seed": seeds[entry]}
                    if plan.reports_progress:
                        episode["protocol"]["progress"] = round(progress_rate(group_shop, episode), 6)
                if writer is not None:
                    writer.add(episode, shop=group_shop)
                if bar is not None:
                    bar.update(1)

            factory = policy
            if policy_factory == "oracle" and group_shop is not shop:  # the oracle reads its shop's price caps
                factory = make_policy_factory("oracle", shop=group_shop, seed=seed)
            env = WebShopVectorEnv(slots, shop=group_shop, max_steps=max_steps, eval_mode=True,
                                   observation_mode=observation_mode, num_workers=num_workers,
                                   eval_goals=[e.goal for e in group])
            try:
                return Lane(env, Driver(factory, slots, seed, batch=batch), seed,
                            record=writer is not None or plan.reports_progress,
                            on_episode=mark_reachability(group_shop, finished), listed=[e.goal for e in group],
                            seeds=seeds, turns=TurnRule.of(plan.protocol.data))
            except BaseException:
                env.close()
                raise

        def close_lane(k: int, lane: Lane) -> None:
            lane.env.close()
            lane_results[k] = lane.episodes()
            stats["policy"] = lane.driver.name
            stats["env_steps"] += lane.env_steps

        # Lanes (one per price-seed shop) in flight side by side, up to num_envs slots in all: the
        # results are each lane's own, whatever num_envs is (evaluation/lanes.py).
        most = play_lanes([min(num_envs, len(group)) for _, group in groups], open_lane, num_envs, close_lane)
        episodes = [e for part in lane_results for e in part]
    except BaseException:
        if writer is not None:
            writer.close()  # the finished episodes stay readable; no summary line
        raise
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - started
    if tagged:
        episodes.sort(key=lambda e: e["ordinal"])
    got = [e["goal_index"] for e in episodes]
    if got != expected:
        if writer is not None:
            writer.close()
        raise RuntimeError(f"evaluation covered {len(got)} goals, expected each of {len(expected)} exactly once")
    result = summarize(episodes, protocol=plan.record)
    name = policy_factory if isinstance(policy_factory, str) else stats["policy"]
    result.update(
        policy=name,
        shop=str(shop.path),
        fingerprint=shop.fingerprint(),
        goal_kind=shop.goals.kind,
        split=(f"protocol {plan.protocol.name}" if plan.named else split or "all"),
        goals=[min(expected), max(expected) + 1] if expected else [0, 0],
        num_envs=most,
        num_envs_asked=asked,
        seed=seed,
        max_steps=max_steps,
        wall_s=wall,
        steps_per_s=result["counts"]["steps"] / wall if wall > 0 else None,
        env_steps=stats["env_steps"],
        protocol_record=plan.record,
    )
    if writer is not None:
        writer.close(result)
        result["run_file"] = str(out)
    if keep_episodes:
        result["episodes_detail"] = episodes
    return result


def _progress_bar(total: int, show: bool):
    if not show:
        return None
    from tqdm import tqdm  # only with a progress bar

    return tqdm(disable=_progress.disable(), total=total, desc="eval", unit="goal", file=sys.stderr, dynamic_ncols=True)

def _run_line(policy_factory, policy, hf_kwargs, split, seed, max_steps, num_envs, num_workers, observation_mode,
              extra) -> dict:
    """The settings a run file's ``run`` line records (see :mod:`webshop_gym.runs.run`)."""
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


def _interval_text(result: dict, key: str) -> str:
    """`` [low, high]``, or `` (no 95% interval: 2 of 10 episodes)`` where it is withheld (``intervals_withheld``)."""
    found = (result.get("intervals") or {}).get(key)
    reason = (result.get("intervals_withheld") or {}).get(key)
    if reason:
        return f" ({reason.split(';')[0]})"
    return "" if not found else f" [{found['low']:.1f}, {found['high']:.1f}]"


def protocol_rows(result: dict) -> list[tuple[str, str]]:
    """``eval``'s rows naming the protocol, its fingerprint and its metrics where they differ from Score and SR."""
    figures = result.get("protocol")
    if not figures:
        return []
    rows = [("protocol", f"{figures['name']}, fingerprint {figures.get('fingerprint') or '-'}")]
    if figures.get("setting"):
        rows.append(("protocol as played", figures["setting"]))
    if figures.get("decoding"):
        rows.append(("decoding", figures["decoding"]))
    plain = {"raw_reward": result.get("score"), "success": result.get("sr")}
    for m in figures["metrics"]:
        same = m["value"] is not None and plain.get(m["of"]) is not None and math.isclose(m["value"], plain[m["of"]])
        if same:  # the family aggregates as Score and SR below do: no second row
            continue
        rows.append((f"{m['label']} ({m['name']}, as the protocol aggregates it)", _fmt(m["value"], 1)))
    k = figures.get("samples", 1)
    if k > 1:
        found = {"intervals": figures.get("intervals") or {}, "intervals_withheld": figures.get("intervals_withheld") or {}}
        cells = [_fmt(figures.get(key), 1) + _interval_text(found, key) for key in (f"mean@{k}", f"pass@{k}")]
        rows.append((f"mean@{k} / pass@{k} (%) [95% CI]", " / ".join(cells)))
        goals = (result.get("counts") or {}).get("goals")
        if goals is not None:
            rows.append(("95% intervals", f"over the {goals:,} goals, each with its {k} samples (docs/runs.md, Intervals)"))
    return rows


def _in_flight(result: dict) -> str:
    """A served run's requests in flight: the most there were, their time average, and the ``--concurrency`` asked when more."""
    most, asked, mean = result.get("requests_max_in_flight"), result["concurrency"], result.get("requests_mean_in_flight")
    shown = f"{asked if most is None else most} in flight" if mean is None else \
        f"max {asked if most is None else most}, average {mean:.0f} in flight"
    return shown if most is None or most == asked else f"{shown} (--concurrency {asked})"


def _envs(result: dict) -> str:
    """A local run's slots: the most in use at once, and the ``--num-envs`` asked when it differs."""
    most, asked = result["num_envs"], result.get("num_envs_asked")
    return f"{most} envs" if asked is None or asked == most else f"{most} envs (--num-envs {asked})"


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
        # Rounded as the viewer and the report round: percentages to 0.1, steps to 0.01, parts to 0.001.
        ("Score [95% CI]", _fmt(result["score"], 1) + _interval_text(result, "score")),
        ("SR (%) [95% CI]", _fmt(result["sr"], 1) + _interval_text(result, "sr")),
        ("mean steps", _fmt(result["mean_steps"])),
        ("valid actions (%)", _fmt(result["valid_rate"], 1)),
        ("purchased (%)", _fmt(b["purchase_rate"], 1)),
        ("r_type / r_att / r_option / r_price", " / ".join(_fmt(b[k], 3) for k in BREAKDOWN)),
    ]
    rows[4:4] = protocol_rows(result)
    if "unreachable" in result:
        episodes = f", {result['unreachable_episodes']} episodes" if result.get("unreachable") and "unreachable_episodes" in result else ""
        rows.append(("SR on reachable goals (%)", f"{_fmt(result['sr_reachable'], 1)} ({result['unreachable']} "
                                                  f"unreachable goals{episodes}: no purchase of the target scores 1.0)"))
    if result.get("tags"):
        rows.append(("failure tags (episodes)", " · ".join(f"{t} {c}" for t, c in result["tags"].items() if c)))
    if "tokens" in result:

        rows += accounting_rows(result)
    slots = _in_flight(result) if "concurrency" in result else _envs(result)
    if result.get("sessions"):  # a resumed run: the rate is this session's own; every session's time beside it
        times = " + ".join("?" if x.get("wall_s") is None else f"{x['wall_s']:.1f}" for x in result["sessions"])
        rows.append(("wall time", f"{result['wall_s']:.1f} s this session ({_fmt(result.get('steps_per_s'), 0)} steps/s "
                                  f"over its {result['sessions'][-1]['episodes']} episodes, {slots}); sessions: {times} s "
                                  "(? = interrupted)"))
    else:
        rows.append(("wall time", f"{result['wall_s']:.1f} s ({_fmt(result.get('steps_per_s'), 0)} steps/s, {slots})"))
    if result.get("run_file"):
        rows.append(("run file", f"{result['run_file']} (webshop-gym replay / report / serve --runs)"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
