"""A run's figures, defined once: Score, SR, their intervals, and every count beside them.

Every reader of a run (``eval``'s printout and JSON, the run file's summary line, ``report``
and its exports, the viewer's pages, the protocols) computes a run's figures here, from the same
episode records, and never again elsewhere.  The rules:

* **Scored episodes.**  An *errored* episode (a served model's calls failed: ``errored`` true)
  is not the agent's result: it is left out of every figure and counted apart (``errored``).
* **Score** = 100 x mean final reward; **SR** = % of episodes with reward exactly 1.0;
  ``mean_steps``, ``valid_rate`` (% of steps whose action was valid), the mean reward
  ``breakdown`` over purchases and the ``purchase_rate``; ``counts`` of episodes, successes,
  purchases, truncations, steps and invalid actions.
* **Reachable goals.**  When episodes say whether their goal can be solved at all
  (``reachable``: a property of the goal, every run written by ``eval`` records it),
  ``unreachable`` counts the others and ``sr_reachable`` is SR on the rest.
* **Model calls.**  A served model's episodes add ``tokens`` (prompt, completion, total, per
  episode, episodes without usage), ``requests`` and ``retries`` (:func:`accounting`; errored
  episodes included: they were paid for) and, at given prices, the :func:`cost`.
* **Intervals.**  :func:`intervals` gives the 95% intervals of Score and SR over the scored
  episodes (:mod:`webshop_gym.analysis.intervals`); :func:`summarize` gives them as
  ``intervals``: ``{"score": {"low", "high"}, "sr": {...}}`` (10,000 resamples, seed 0: the
  viewer's and ``eval``'s); a withheld one (a binomial count no interval can stand behind:
  :mod:`webshop_gym.analysis.withheld`) is ``null`` there with its reason in ``intervals_withheld``.  A run that played each goal K times (``eval --samples K``) is
  resampled by **goals** (:func:`goal_keys`: the protocol's resolved episode), not episodes;
  its counts of goals (``counts.goals``, ``unreachable``) count goals.
* **A protocol's metrics.**  :func:`protocol_figures` gives the metrics a run's protocol
  reports, aggregated as its family does (verl-agent: the mean of each reset's batch, then over
  the draws), and ``mean@K`` / ``pass@K`` when each goal was played K times (``eval --samples``);
  the rules are the protocol's data (:meth:`webshop_gym.protocols.Protocol.figures`), the scored
  episodes are chosen here.  :func:`sample_figures` gives such a run goal by goal (how many of
  its K samples succeeded, which goals flip between samples) with the 95% intervals of mean@K
  and pass@K, bootstrapped over goals.
* **Pairing two runs.**  A comparison (``report``'s paired table, the viewer's comparison pages)
  pairs each episode of one run with the other run's episode of the same :func:`pairing_key`, its
  identity ``(goal, price seed, sample)``; :func:`paired_positions` keeps per key the last
  episode that is not errored.  Runs that played each goal K times are paired by **goal**, each
  with all its scored samples (:func:`pairing_goals`, :func:`compare_goals`: the paired
  statistics of :func:`~webshop_gym.analysis.stats.paired_goals`).  Whether two runs may be
  paired at all is decided from what they played (:mod:`webshop_gym.protocols.comparable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from webshop_gym.analysis.intervals import (
    RESAMPLES,
    Interval,
    NoInterval,
    goal_intervals,
    sampled_intervals,
)
from webshop_gym.analysis.stats import Goals, PairedComparison, paired_goals
from webshop_gym.protocols import Protocol
from webshop_gym.protocols.decoding import decoding_text
from webshop_gym.protocols.naming import bare_name, setting_note
from webshop_gym.protocols.play import recorded_protocol
from webshop_gym.protocols.scoring import samples_by_goal

__all__ = ["BREAKDOWN", "SampleFigures", "accounting", "interval_records", "add_accounting", "billed", "compare_goals", "cost", "goal_key",
           "goal_keys", "intervals", "pairing_goal", "pairing_goals", "paired_positions", "pairing_key", "pairing_order", "protocol_figures",
           "sample_figures", "samples_of", "scored", "summarize"]

#: The reward parts whose means over purchases a run's figures give.
BREAKDOWN = ("r_type", "r_att", "r_option", "r_price")


def pairing_key(goal: int, protocol: Mapping | None, price_seed: int | None = None) -> tuple:
    """What pairs an episode with the other run's in a comparison (see the module docstring): its identity.

    ``(goal, price seed, sample)``: the episode's own price seed and sample when it records them
    (``--protocol``, ``--samples``), else the run's price seed and sample 0, so a plain run and
    a protocol run of the same episodes pair (``eval`` on goals 0-499 and ``verl-agent-500``).

    Example:
        >>> pairing_key(7, None, 0), pairing_key(7, {"item": 3, "sample": 1, "price_seed": 2})
        ((7, 0, 0), (7, 2, 1))
    """
    if isinstance(protocol, Mapping):
        return (int(goal), protocol.get("price_seed", price_seed), int(protocol.get("sample") or 0))
    return (int(goal), price_seed, 0)


def paired_positions(keys: Sequence, errored: Sequence[bool]) -> dict:
    """Per pairing key, the position of its last episode that is not errored (an errored one is no loss).

    Example:
        >>> paired_positions([5, 6, 5], [False, False, True])
        {5: 0, 6: 1}
    """
    return {key: i for i, (key, bad) in enumerate(zip(keys, errored, strict=True)) if not bad}


def pairing_goal(key):
    """The goal of a :func:`pairing_key`: the key without its last part, the sample, else the key (the goal).

    Example:
        >>> pairing_goal((3, 0, 1)), pairing_goal(7)
        ((3, 0), 7)
    """
    return key[:-1] if isinstance(key, tuple) else key


def pairing_goals(keys: Sequence, rewards: Sequence[float] | np.ndarray, errored: Sequence[bool], samples: int) -> Goals:
    """A run's goals as a comparison pairs them, from each episode's :func:`pairing_key`, reward and errored flag.

    One sample per goal (``samples`` 1): per key, its last scored episode (:func:`paired_positions`),
    as comparisons always paired.  Several (``eval --samples K``): per goal (:func:`pairing_goal`:
    the key without its sample), all its scored samples: the goal is the unit.
    """
    rewards = np.asarray(rewards, float)
    if samples <= 1:
        positions = paired_positions(keys, errored)
        return Goals.of(rewards[list(positions.values())], list(positions))
    kept = [i for i, bad in enumerate(errored) if not bad]
    return Goals.of(rewards[kept], [pairing_goal(keys[i]) for i in kept])


def compare_goals(a: Goals, b: Goals, resamples: int = RESAMPLES, seed: int = 0,
                  samples: int = 1) -> tuple[list, PairedComparison] | None:
    """Run ``b`` against run ``a`` on the goals both played (:func:`pairing_goals`, ``samples`` per goal).

    Returns:
        The common keys in order and :func:`~webshop_gym.analysis.stats.paired_goals`; ``None``
        without a common goal.
    """
    common = sorted(set(a.keys) & set(b.keys), key=pairing_order)
    if not common:
        return None
    return common, paired_goals(a.take(common), b.take(common), resamples, seed, samples)


def pairing_order(key) -> tuple:
    """A sort key for pairing keys (goals, or ``(goal, price seed, sample)`` with ``None`` first)."""
    parts = key if isinstance(key, tuple) else (key,)
    return tuple((0, 0) if v is None else (1, v) for v in parts)


def scored(episodes: Sequence[dict]) -> list[dict]:
    """The episodes that count in the figures: every one but the errored and the unfinished.

    ``unfinished``: an episode of a run file without its terminal record (a purchase or the step
    cap: the file was cut mid-episode); ``eval --resume`` replays it, so no reader scores it.
    """
    return [e for e in episodes if not e.get("errored") and not e.get("unfinished")]


def samples_of(protocol: Protocol | Mapping | None) -> int:
    """The samples per goal of a run's protocol (a :class:`~webshop_gym.protocols.Protocol` or a run line's record; 1 without)."""
    if protocol is None:
        return 1
    if isinstance(protocol, Mapping):
        return int(protocol.get("samples") or protocol.get("samples_per_goal") or 1)
    return int(protocol.samples_per_goal)


def goal_key(goal: int | None, protocol: Mapping | None):
    """The goal an episode of a sampled run plays: the protocol's resolved episode (``item``), else its goal index.

    Example:
        >>> goal_key(7, {"item": 3, "sample": 1}), goal_key(7, None)
        (3, 7)
    """
    if isinstance(protocol, Mapping) and protocol.get("item") is not None:
        return protocol["item"]
    return None if goal is None else int(goal)


def goal_keys(samples: int, goals: Sequence, protocols: Sequence[Mapping | None]) -> list | None:
    """Per episode, its goal as the unit of the run's intervals: ``None`` (the episode is the unit) unless ``samples`` > 1."""
    if samples <= 1:
        return None
    return [goal_key(g, p) for g, p in zip(goals, protocols, strict=True)]


def intervals(rewards: Sequence[float] | np.ndarray, errored: Sequence[bool] | np.ndarray | None = None,
              resamples: int = RESAMPLES, seed: int = 0,
              goals: Sequence | None = None) -> dict[str, Interval | NoInterval | None]:
    """``{"score", "sr"}``: the 95% intervals of Score and SR over the scored episodes (``None`` without any).

    Args:
        rewards: every episode's final reward (errored ones included).
        errored: per episode, whether it errored (left out); ``None``: none did.
        resamples: the Score bootstrap's resamples.
        seed: the bootstrap's seed.
        goals: per episode, its goal (:func:`goal_keys`) when the run played each goal several
            times: the goals are the unit (:func:`~webshop_gym.analysis.intervals.goal_intervals`);
            ``None``: every episode is.
    """
    rewards = np.asarray(rewards, float)
    keep = np.ones(len(rewards), bool) if errored is None else ~np.asarray(errored, bool)
    kept = rewards[keep]
    keys = None if goals is None else [k for k, ok in zip(goals, keep.tolist(), strict=True) if ok]
    found = goal_intervals(Goals.of(kept, keys), resamples, seed)
    if keys is not None and len(kept):  # the values: the episodes' means, as every figure of the run
        found = {"score": replace(found["score"], value=100.0 * float(kept.mean())),
                 "sr": replace(found["sr"], value=100.0 * float((kept == 1.0).mean()))}
    return found


def interval_records(found: Mapping[str, Interval | NoInterval | None]) -> tuple[dict, dict]:
    """Intervals as the JSON forms write them: ``{key: {"low", "high"} or None}`` and ``{key: reason}`` of the withheld.

    A withheld interval (:class:`~webshop_gym.analysis.stats.NoInterval`) is ``null`` in the
    first, with its one-line reason in the second (``intervals_withheld``; empty when none is).
    """
    bounds = {k: {"low": float(v.low), "high": float(v.high)} if isinstance(v, Interval) else None
              for k, v in found.items()}
    return bounds, {k: v.reason for k, v in found.items() if isinstance(v, NoInterval)}


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _protocol_of(protocol: Protocol | Mapping | None) -> Protocol | None:
    """A :class:`~webshop_gym.protocols.Protocol`, from itself or a run line's ``protocol`` object."""
    return recorded_protocol(protocol) if isinstance(protocol, Mapping) else protocol


def _protocol_rows(protocol: Protocol, episodes: Sequence[dict]) -> tuple[list[dict], list[int]]:
    """The scored episodes as the protocol's rows (:meth:`~webshop_gym.protocols.Protocol.figures`), and their positions."""
    samples = int(protocol.samples_per_goal)
    rows, positions = [], []
    for i, e in enumerate(episodes):
        if e.get("errored") or e.get("unfinished"):
            continue  # as scored(): an errored episode is not the agent's result, an unfinished one not yet one
        extra = e.get("protocol") or {}
        row = {"raw_reward": float(e["reward"]), "purchased": bool(e.get("purchased", False)),
               "goal": goal_key(e.get("goal_index"), extra), "trial": 0}
        if extra.get("draw") is not None:
            row["draw"] = extra["draw"]
        if extra.get("progress") is not None:  # AgentBoard's progress rate, recorded by the loop that played it
            row["progress"] = float(extra["progress"])
        if samples > 1:
            row["sample"] = extra.get("sample", 0)
        rows.append(row)
        positions.append(i)
    return rows, positions


def _sample_goals(protocol: Protocol, rows: list[dict]) -> Goals:
    """The protocol's rows of a sampled run as goals (grouped as ``samples_by_goal`` does, the protocol's success rule)."""
    return Goals.of([r["raw_reward"] for r in rows], [r["goal"] for r in rows],
                    [protocol.is_success(r["raw_reward"], r["purchased"]) for r in rows])


def _sampled(protocol: Protocol, goals: Goals, values: dict) -> dict[str, Interval | NoInterval | None]:
    """mean@K and pass@K of a sampled run (the protocol's ``values``) with their intervals over its ``goals``.

    ``{}``: one sample per goal, or no goal played K times.
    """
    k = int(protocol.samples_per_goal)
    if k < 2 or f"mean@{k}" not in values:
        return {}
    found = sampled_intervals(goals, k)
    return {key: None if found[key] is None else replace(found[key], value=values[key]) for key in found}


def protocol_figures(protocol: Protocol | Mapping | None, episodes: Sequence[dict]) -> dict | None:
    """The metrics of a run's protocol over its scored episodes, as the family aggregates them.

    Args:
        protocol: a :class:`~webshop_gym.protocols.Protocol`, or a run line's ``protocol``
            object (:func:`webshop_gym.protocols.play.protocol_record`); ``None``: no protocol.
        episodes: episode records (``reward``, ``purchased``, ``errored``) whose ``protocol``
            object gives the ``draw``, ``item`` (the resolved episode) and ``sample``.

    Returns:
        ``None`` without a protocol; else ``{"name"`` (the bare name: ``verl-agent``), ``"setting"``
        (seed, validation, samples and deviations in words: :func:`~webshop_gym.protocols.naming.setting_note`;
        ``""`` when there is nothing to say), ``"deviations"`` (the list), ``"fingerprint"``, ``"decoding"``
        (the decoding the run's policy played, in words: ``no decoding`` for rule, random, oracle),
        ``"metrics": [{"name",
        "label", "of", "value"}], "samples"}`` and, with several samples per goal, ``mean@K`` and
        ``pass@K`` (:func:`webshop_gym.protocols.scoring.figures`) with ``intervals``: ``{"mean@K":
        {"low", "high"}, "pass@K": {...}}`` (95%, over goals:
        :func:`~webshop_gym.analysis.intervals.sampled_intervals`).  Values are on the metric's
        scale (x 100 for rates); ``None`` without a scored episode.
    """
    record = protocol if isinstance(protocol, Mapping) else None
    protocol = _protocol_of(protocol)
    if protocol is None:
        return None
    samples = int(protocol.samples_per_goal)
    rows, _ = _protocol_rows(protocol, episodes)
    values = protocol.figures(rows) if rows else {}
    out: dict = {"name": bare_name(record) if record is not None else protocol.name,
                 "setting": setting_note(record), "deviations": list((record or {}).get("deviations") or ()),
                 "fingerprint": None if record is None else record.get("fingerprint"), "samples": samples,
                 "metrics": [{"name": m["name"], "label": m.get("label", m["name"]), "of": m["of"],
                              "value": values.get(m["name"])} for m in protocol.metrics]}
    if record is not None and "played_decoding" in record:  # runs written before decoding was recorded have none
        out["decoding"] = decoding_text(record["played_decoding"])
    if samples > 1:
        for key in (f"mean@{samples}", f"pass@{samples}"):
            out[key] = values.get(key)
        found = _sampled(protocol, _sample_goals(protocol, rows), values)
        out["intervals"], reasons = interval_records(found)
        if reasons:
            out["intervals_withheld"] = reasons
    return out


def summarize(episodes: Sequence[dict], protocol: Protocol | Mapping | None = None) -> dict:
    """Score, SR and the other figures of a list of episode records (see the module docstring).

    Errored episodes (a served model's calls failed: ``errored`` true) are left out of every
    figure and counted apart; a served model's records also give the token, request and retry
    totals (:func:`accounting`).  With the run's ``protocol``, ``protocol`` holds its metrics
    (:func:`protocol_figures`).
    """
    everything = episodes
    episodes = scored(episodes)
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
    keys = goal_keys(samples_of(protocol), [e.get("goal_index") for e in episodes],
                     [e.get("protocol") for e in episodes])
    found = intervals(rewards, goals=keys)
    out["intervals"], reasons = interval_records(found)
    if reasons:  # a binomial count whose interval cannot stand: null above, the reason here
        out["intervals_withheld"] = reasons
    if keys is not None:  # a sampled run: its goals, each played several times
        out["counts"]["goals"] = len(set(keys))
    if any("reachable" in e for e in episodes):
        reachable = [e for e in episodes if e.get("reachable", True)]
        out["unreachable"] = n - len(reachable)  # a goal (its reward tables) is reachable or not, whatever the sample
        if keys is not None:
            out["unreachable"] = len({k for k, e in zip(keys, episodes, strict=True) if not e.get("reachable", True)})
            out["unreachable_episodes"] = n - len(reachable)
        out["sr_reachable"] = 100.0 * float(np.mean([e["reward"] == 1.0 for e in reachable])) if reachable else None
    unfinished = sum(bool(e.get("unfinished")) and not e.get("errored") for e in everything)
    if unfinished:
        out["counts"]["unfinished"] = unfinished
    if any("errored" in e or "tokens" in e for e in everything):
        out.update(accounting(everything))
        out["counts"]["errored"] = out["errored"]
    if protocol is not None:
        out["protocol"] = protocol_figures(protocol, everything)
    return out


def accounting(episodes: Sequence[dict]) -> dict:
    """Errored episodes, tokens, requests and retries over episode records (errored ones included).

    Returns:
        ``errored`` (episodes), ``tokens``: ``prompt``, ``completion``, ``total`` (sums of what
        the server reported), ``per_episode`` (total / episodes), ``unknown`` (episodes whose
        server sent no usage for some turn); ``requests`` and ``retries``.
    """
    prompt = completion = unknown = 0
    for e in episodes:
        tokens = e.get("tokens") or {}
        if tokens.get("prompt") is None or tokens.get("completion") is None:
            unknown += 1
        prompt += int(tokens.get("prompt") or 0)
        completion += int(tokens.get("completion") or 0)
    n = len(episodes)
    return {
        "errored": sum(bool(e.get("errored")) for e in episodes),
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion,
                   "per_episode": (prompt + completion) / n if n else None, "unknown": unknown},
        "requests": sum(int(e.get("requests") or 0) for e in episodes),
        "retries": sum(int(e.get("retries") or 0) for e in episodes),
    }


def add_accounting(a: dict | None, b: dict | None) -> dict:
    """Two totals of :func:`accounting`'s ``tokens``, ``requests``, ``retries`` (and ``episodes``) added up."""
    out: dict = {"tokens": {"prompt": 0, "completion": 0}, "requests": 0, "retries": 0, "episodes": 0}
    for part in (a or {}, b or {}):
        tokens = part.get("tokens") or {}
        for key in ("prompt", "completion"):
            out["tokens"][key] += int(tokens.get(key) or 0)
        for key in ("requests", "retries", "episodes"):
            out[key] += int(part.get(key) or 0)
    out["tokens"]["total"] = out["tokens"]["prompt"] + out["tokens"]["completion"]
    return out


def billed(figures: dict, dropped: dict | None) -> dict:
    """What the whole run cost: the figures' accounting (the episodes kept) plus the attempts ``--resume`` dropped.

    Returns:
        ``tokens`` (``prompt``, ``completion``, ``total``), ``requests``, ``retries`` and
        ``episodes`` (every episode played, the dropped ones included).
    """
    kept = {"tokens": figures.get("tokens"), "requests": figures.get("requests"), "retries": figures.get("retries"),
            "episodes": figures["counts"]["episodes"] + int(figures.get("errored") or 0)}
    return add_accounting(kept, dropped)


def cost(tokens: dict | None, price_input: float | None, price_output: float | None) -> float | None:
    """The cost of ``tokens`` at prices per million prompt / completion tokens (``None`` without prices)."""
    if not tokens or (price_input is None and price_output is None):
        return None
    return (tokens.get("prompt", 0) * (price_input or 0.0) + tokens.get("completion", 0) * (price_output or 0.0)) / 1e6


@dataclass(frozen=True)
class SampleFigures:
    """A run that played each goal K times (``eval --samples K``), goal by goal.

    Attributes:
        samples: K, the samples per goal the run's protocol asks for.
        goals: each goal's key (the resolved episode, ``protocol.item``), in order of appearance.
        members: per goal, the positions (in the episodes given) of its scored samples, in order.
        successes: per goal, its samples that succeeded (the protocol's success rule).
        mean_at_k, pass_at_k: mean@K and pass@K (x 100; the values :func:`protocol_figures`
            gives) with their 95% intervals over goals (``None``: no goal, or no goal played K times).
    """

    samples: int
    goals: list
    members: list[list[int]]
    successes: np.ndarray
    mean_at_k: Interval | None
    pass_at_k: Interval | None

    @property
    def played(self) -> np.ndarray:
        """Per goal, its scored samples."""
        return np.array([len(m) for m in self.members], np.int64)

    @property
    def flipping(self) -> np.ndarray:
        """Per goal, whether its samples disagree: some succeeded, some did not."""
        return (self.successes > 0) & (self.successes < self.played)

    def nbytes(self) -> int:
        """Bytes held, roughly."""
        return 120 * len(self.goals) + 8 * sum(len(m) for m in self.members)


def sample_figures(protocol: Protocol | Mapping | None, episodes: Sequence[dict]) -> SampleFigures | None:
    """Goal by goal, the samples of a run that played each goal several times, with mean@K and pass@K.

    The goals are grouped as the protocol groups them for mean@K and pass@K
    (:func:`webshop_gym.protocols.scoring.samples_by_goal`, over the scored episodes); the values
    and intervals are :func:`protocol_figures`' (the intervals over goals:
    :func:`~webshop_gym.analysis.intervals.sampled_intervals`).

    Args:
        protocol: the run's protocol (a :class:`~webshop_gym.protocols.Protocol` or a run line's
            ``protocol`` object).
        episodes: episode records, as for :func:`protocol_figures`.

    Returns:
        ``None`` without a protocol or with one sample per goal.
    """
    protocol = _protocol_of(protocol)
    if protocol is None or int(protocol.samples_per_goal) < 2:
        return None
    k = int(protocol.samples_per_goal)
    rows, positions = _protocol_rows(protocol, episodes)
    groups = samples_by_goal(rows)
    goals = _sample_goals(protocol, rows)
    found = _sampled(protocol, goals, protocol.figures(rows) if rows else {})
    mean_at_k, pass_at_k = found.get(f"mean@{k}"), found.get(f"pass@{k}")
    return SampleFigures(k, list(groups), [[positions[i] for i in members] for members in groups.values()],
                         goals.solved, mean_at_k, pass_at_k)
