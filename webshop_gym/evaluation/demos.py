"""SFT-ready demonstrations: teacher trajectories as chat transcripts, verified by replay.

:func:`make_demos` runs a teacher policy (the oracle by default, or the rule policy) over the
first ``n`` goals of a split (``train`` by default) in an eval-mode vector env, and turns each
trajectory into chat messages in a prompt format of :mod:`webshop_gym.agents.prompts`:

* ``think-answer`` (default) and ``react``: one multi-turn transcript per trajectory (system,
  then a user turn per observation and an assistant turn per action);
* ``verl-agent``: one single-turn sample per step (the format carries its history inside the
  prompt), with ``"step"`` giving the step number.

Each assistant turn carries a short rationale written from the situation (the page, the
instruction, the product and option clicked), e.g. ``<think>Selecting size: large as
requested.</think><answer>click[large]</answer>``.  Every trajectory is replayed in a fresh
:class:`~webshop_gym.envs.env.WebShopEnv` on the same goal: each observation and the final reward must
match, or the trajectory is dropped.  Trajectories scoring below ``min_reward`` (1.0 by default:
successes only) are dropped too.  The kept ones are split into ``train`` and ``eval`` by target
product: the distinct target asins, sorted, are permuted by a seeded generator and the first
``eval_fraction`` of them go to ``eval``, so no product is in both.

The command line is ``webshop-gym demos``; it writes JSONL, one sample per line:
``{"messages": [...], "goal_index", "asin", "reward", "split", "format", "steps"}``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from webshop_gym.agents.prompts import Turn, admissible_actions, make_prompt
from webshop_gym.envs.env import WebShopEnv
from webshop_gym.envs.vector_env import WebShopVectorEnv
from webshop_gym.evaluation.local import make_policy_factory, rollout
from webshop_gym.shop import Shop, load_shop

__all__ = ["DemoSet", "make_demos", "rationale", "split_by_product", "verify_trajectory", "write_demos"]

_PRICE_CAP = re.compile(r"price lower than ([0-9]+(?:\.[0-9]+)?) dollars")
_PRICE = re.compile(r"^Price: \$([0-9.]+)(?: to \$([0-9.]+))?$")
_REQUEST = re.compile(
    r"^(?:(?:can|could|would) you (?:please )?(?:find|get|show|buy)(?: me)?|(?:i am|i'm|im) (?:looking|searching|shopping) for|i(?: would|'d)? (?:like|want|need)(?: to (?:buy|get|find|order))?"
    r"|(?:please )?(?:get|find|show|buy) me|looking for|search for|i am in need of|i need)\s+(?:an?\s+|some\s+)?",
    re.IGNORECASE,
)
_NAV = {"back to search", "< prev", "next >", "description", "features", "reviews", "attributes", "buy now"}


@dataclass
class DemoSet:
    """Demonstrations and what happened on the way.

    Attributes:
        records: the JSONL records (``messages``, ``goal_index``, ``asin``, ``reward``,
            ``split``, ``format``, ``steps``; ``step`` for per-step formats).
        counts: goals run, kept, dropped (replay mismatch / below ``min_reward``), records and
            products per split, wall time.
    """

    records: list[dict] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)


# -- rationales ------------------------------------------------------------------------------


def _parts(observation: str) -> list[str]:
    return [p.strip() for p in observation.split(" [SEP] ")]


def _short(title: str, words: int = 10) -> str:
    split = title.split()
    return " ".join(split[:words]) + (" ..." if len(split) > words else "")


def _option_group(observation: str, value: str, clickables: Sequence[str]) -> str | None:
    """The option group a value belongs to on an item page (the name shown before its values)."""
    parts = _parts(observation)
    lowered = [p.lower() for p in parts]
    if "< prev" not in lowered:
        return None
    labels = set(clickables)
    group = None
    for part in lowered[lowered.index("< prev") + 1 :]:
        if part == value:
            return group
        if part not in labels:
            if group is not None and part.startswith("price:"):
                return None
            group = part
    return None


def _price_note(observation: str, instruction: str) -> str:
    cap = _PRICE_CAP.search(instruction)
    price = next((m for m in map(_PRICE.match, _parts(observation)) if m), None)
    if cap is None or price is None:
        return ""
    high = float(price.group(2) or price.group(1))
    if high < float(cap.group(1)):
        return f" and its price (${price.group(1)}) is below the ${cap.group(1)} budget"
    return ""


def rationale(observation: str, info: dict, action: str, chosen: Sequence[str] = ()) -> str:
    """A one-sentence reason for ``action`` written from the situation.

    Args:
        observation: the ``text`` observation the action was taken on.
        info: that step's info (``page``, ``instruction``, ``available_actions``).
        action: the action.
        chosen: option values already selected on this item page.

    Example:
        >>> rationale("...", {"page": "item", "instruction": "x", "available_actions": {"clickables": []}}, "click[buy now]")
        'The product matches the request; buying it.'
    """
    page = info.get("page")
    instruction = info.get("instruction", "")
    name, _, arg = action.partition("[")
    arg = arg[:-1] if arg.endswith("]") else arg
    clickables = (info.get("available_actions") or {}).get("clickables", [])
    if name == "search":
        query = _REQUEST.sub("", arg.strip())
        return f"The instruction asks for {query}; searching for it."
    if arg == "back to search":
        return "This is not what the instruction asks for; going back to search."
    if page == "results":
        if arg == "next >":
            return "No result on this page matches the request; checking the next page."
        if arg == "< prev":
            return "Going back to the previous page of results."
        parts = _parts(observation)
        upper = [p.upper() for p in parts]
        if arg.upper() in upper:
            k = upper.index(arg.upper())
            title = parts[k + 1] if k + 1 < len(parts) else ""
            price = parts[k + 2] if k + 2 < len(parts) else ""
            return f"{arg.upper()} ({_short(title)}, {price}) matches the requested product; opening it."
        return f"{arg.upper()} matches the requested product; opening it."
    if page == "item":
        if arg == "buy now":
            note = _price_note(observation, instruction)
            if chosen:
                return f"All requested options are set ({', '.join(chosen)}){note}; buying."
            return f"The product matches the request{note}; buying it."
        if arg in ("description", "features", "reviews", "attributes"):
            return f"Checking the {arg} for details."
        if arg == "< prev":
            return "This product does not fit; going back to the results."
        group = _option_group(observation, arg, clickables)
        if group:
            return f"Selecting {group}: {arg} as requested."
        return f"Selecting {arg} as requested."
    if arg == "< prev":
        return "Going back to the product page."
    return f"Taking the action {action}."


# -- verification and splitting ----------------------------------------------------------------


def verify_trajectory(env, goal_index: int, trajectory: Sequence[dict], reward: float, seed: int = 0) -> bool:
    """Replay a trajectory on its goal in ``env`` (a :class:`~webshop_gym.envs.env.WebShopEnv`).

    Every observation and the final reward must match what was recorded.
    """
    obs, _ = env.reset(seed=seed, options={"goal_index": int(goal_index)})
    final = 0.0
    done = False
    for step in trajectory:
        if done or obs != step["observation"]:
            return False
        obs, final, terminated, truncated, _ = env.step(step["action"])
        done = terminated or truncated
    return done and abs(float(final) - float(reward)) < 1e-12


def split_by_product(asins: Sequence[str], eval_fraction: float, seed: int = 0) -> set[str]:
    """The asins that go to ``eval``.

    The sorted distinct asins are permuted with ``seed``; the first ``ceil(eval_fraction x
    count)`` of them (none when the fraction is 0, never all of them) are held out.
    """
    if not 0.0 <= eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in [0, 1), got {eval_fraction}")
    distinct = sorted(set(asins))
    if not distinct or eval_fraction == 0.0:
        return set()
    count = min(len(distinct) - 1, math.ceil(eval_fraction * len(distinct))) if len(distinct) > 1 else 0
    order = np.random.default_rng(seed).permutation(len(distinct))
    return {distinct[i] for i in order[:count]}


# -- transcripts -----------------------------------------------------------------------------


def _transcripts(fmt, trajectory: Sequence[dict]) -> list[tuple[int | None, list[dict]]]:

    turns: list[Turn] = []
    chosen: list[str] = []
    responses = []
    for step in trajectory:
        info = step["info"]
        if info.get("page") != "item":
            chosen = []
        action = step["action"]
        thought = rationale(step["observation"], info, action, chosen)
        name, _, arg = action.partition("[")
        arg = arg[:-1]
        if info.get("page") == "item" and arg not in _NAV and name == "click":
            group = _option_group(step["observation"], arg, (info.get("available_actions") or {}).get("clickables", []))
            chosen = [c for c in chosen if not (group and c.startswith(group + ": "))] + [f"{group}: {arg}" if group else arg]
        response = fmt.format_response(action, thought)
        responses.append(response)
        turns.append(Turn(step["observation"], action, response, tuple(admissible_actions(info))))
    if fmt.name == "verl-agent":
        out = []
        for t, step in enumerate(trajectory):
            messages = fmt.messages(step["observation"], step["info"], turns[:t])
            out.append((t, messages + [{"role": "assistant", "content": responses[t]}]))
        return out
    last = trajectory[-1]
    messages = fmt.messages(last["observation"], last["info"], turns[:-1])
    return [(None, messages + [{"role": "assistant", "content": responses[-1]}])]


def make_demos(
    shop=None,
    policy: str = "oracle",
    n: int | None = None,
    split: str | None = "train",
    fmt: str = "think-answer",
    eval_fraction: float = 0.1,
    seed: int = 0,
    num_envs: int = 32,
    max_steps: int = 15,
    min_reward: float = 1.0,
    history: int | None = -1,
    goals=None,
    human_goals: bool = False,
    price_seed: int = 0,
    progress: bool = False,
    **policy_kwargs: Any,
) -> DemoSet:
    """Run a teacher over goals and return replay-verified chat demonstrations.

    Args:
        shop: a :class:`~webshop_gym.shop.Shop`, a shop directory or None (the embedded shop).
        policy: ``oracle`` or ``rule`` (or any policy :func:`~webshop_gym.evaluation.local.evaluate` takes).
        n: the first ``n`` goals of the split (None: all of them).
        split: ``train`` (default), ``eval``, ``test`` or ``all``.
        fmt: ``think-answer``, ``react`` or ``verl-agent``.
        eval_fraction: share of target products held out for the ``eval`` split of the demos.
        seed: run seed and seed of the product split.
        num_envs: slots of the vector env.
        max_steps: step cap per episode.
        min_reward: keep trajectories scoring at least this.
        history: earlier turns a prompt shows (-1: the format's default).
        goals: a frozen goal-set file (when ``shop`` is not a Shop).
        human_goals: human instructions instead of synthetic goals (idem).
        price_seed: seed of prices and price caps (idem).
        progress: progress bar on stderr.
        **policy_kwargs: the teacher's arguments (:class:`~webshop_gym.agents.openai.OpenAIPolicy`'s
            for ``openai:MODEL``: ``base_url``, ``prompt``, ...).

    Returns:
        A :class:`DemoSet`.
    """
    started = time.perf_counter()
    if not isinstance(shop, Shop):
        shop = load_shop(shop, goals=goals, human_goals=human_goals, seed=price_seed, progress=False)
    prompt = make_prompt(fmt, history=history)
    split = None if split == "all" else split
    teacher = make_policy_factory(policy, shop=shop, seed=seed, **policy_kwargs)
    env = WebShopVectorEnv(num_envs, shop=shop, split=split, max_steps=max_steps, eval_mode=True)
    available = len(env.engine.goal_range)
    total = available if n is None else min(int(n), available)
    try:
        episodes = rollout(env, teacher, seed=seed, num_goals=total, record=True,
                           progress=f"demos ({policy})" if progress else None)
    finally:
        env.close()
    replay_env = WebShopEnv(shop=shop, max_steps=max_steps)
    kept, mismatched, low = [], 0, 0
    for episode in episodes:
        if episode["reward"] < min_reward:
            low += 1
            continue
        if not verify_trajectory(replay_env, episode["goal_index"], episode["trajectory"], episode["reward"], seed=seed):
            mismatched += 1
            continue
        kept.append(episode)
    held_out = split_by_product([shop.goals.asin[e["goal_index"]] for e in kept], eval_fraction, seed)
    records = []
    for episode in kept:
        goal = episode["goal_index"]
        asin = shop.goals.asin[goal]
        for step, messages in _transcripts(prompt, episode["trajectory"]):
            record = {"messages": messages, "goal_index": goal, "asin": asin, "reward": episode["reward"],
                      "split": "eval" if asin in held_out else "train", "format": prompt.name,
                      "steps": len(episode["trajectory"])}
            if step is not None:
                record["step"] = step
            records.append(record)
    train_products = {r["asin"] for r in records if r["split"] == "train"}
    eval_products = {r["asin"] for r in records if r["split"] == "eval"}
    counts = {
        "policy": policy if isinstance(policy, str) else getattr(policy, "name", "custom"),
        "format": prompt.name,
        "split": split or "all",
        "goals_available": available,
        "goals_run": len(episodes),
        "below_min_reward": low,
        "replay_mismatches": mismatched,
        "trajectories_kept": len(kept),
        "records": len(records),
        "records_train": sum(r["split"] == "train" for r in records),
        "records_eval": sum(r["split"] == "eval" for r in records),
        "trajectories_train": sum(shop.goals.asin[e["goal_index"]] not in held_out for e in kept),
        "trajectories_eval": sum(shop.goals.asin[e["goal_index"]] in held_out for e in kept),
        "products_train": len(train_products),
        "products_eval": len(eval_products),
        "mean_reward_kept": float(np.mean([e["reward"] for e in kept])) if kept else None,
        "mean_steps_kept": float(np.mean([len(e["trajectory"]) for e in kept])) if kept else None,
        "wall_s": time.perf_counter() - started,
    }
    return DemoSet(records, counts)


def write_demos(path: str | Path, records: Sequence[dict]) -> None:
    """Write demonstration records as JSONL (one record per line, UTF-8)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot write {str(path)!r}: folder {str(path.parent)!r} does not exist")
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
