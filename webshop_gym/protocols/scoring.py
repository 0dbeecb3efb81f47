"""A protocol's reward transform, success rule and metrics, interpreted from its data.

The protocol file says (``reward``, ``success``, ``metrics``, ``aggregate``):

* ``reward.transform``: ``"raw"`` (the WebShop reward in [0, 1]) or ``"indicator"``
  (``success_value`` on success, else ``failure_value``: verl-agent's 10/0, RAGEN's 1/0);
* ``success``: ``raw_at_least`` (the raw reward an episode needs; every family uses 1.0) and
  ``needs_purchase`` (an episode that ended without buying never succeeds);
* ``metrics``: each a ``name``, a ``label``, what it averages (``of``: ``"success"``,
  ``"raw_reward"`` or ``"progress"``, AgentBoard's progress rate: an episode's ``progress``, the
  third-weighted best reward seen on a results page, on a product page and bought) and a
  ``scale`` (100: printed as a percentage);
* ``aggregate.over``: ``"episodes"`` (one mean), ``"draws"`` (the mean of each reset's batch,
  then the mean over the validation's draws: verl-agent) or ``"trials"`` (an episode solved in
  an earlier trial stays solved: Reflexion).

These functions are the definition the evaluation layer calls; they do not read runs.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping

__all__ = ["METRIC_INPUTS", "figures", "is_success", "pass_at_k", "samples_by_goal", "transform_reward"]

METRIC_INPUTS = ("success", "raw_reward", "progress")
"""What a metric can average (its ``of``)."""


def is_success(protocol, raw_reward: float, purchased: bool) -> bool:
    """Whether an episode with this final raw reward succeeded under the protocol."""
    rule = protocol.success
    if rule.get("needs_purchase", True) and not purchased:
        return False
    return float(raw_reward) >= float(rule.get("raw_at_least", 1.0))


def transform_reward(protocol, raw_reward: float, purchased: bool) -> float:
    """The reward the family's trainer sees for an episode's last step (its reward transform)."""
    rule = protocol.reward
    if rule["transform"] == "raw":
        return float(raw_reward)
    won = is_success(protocol, raw_reward, purchased)
    return float(rule["success_value"] if won else rule["failure_value"])


def _value(protocol, episode: Mapping, of: str) -> float:
    raw = float(episode.get("raw_reward", 0.0))
    if of == "success":
        return 1.0 if is_success(protocol, raw, bool(episode.get("purchased", True))) else 0.0
    if of == "raw_reward":
        return raw
    if of == "progress":  # AgentBoard's progress rate of the episode (recorded when the protocol asks for it)
        value = episode.get("progress")
        return float("nan") if value is None else float(value)
    raise ValueError(f"unknown metric input {of!r}")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def pass_at_k(successes: int, samples: int, k: int) -> float:
    """The unbiased estimate of a goal's pass@k from ``samples`` plays of which ``successes`` succeeded.

    ``1 - C(n - c, k) / C(n, k)``: the chance that ``k`` of the ``n`` plays drawn without
    replacement hold a success (Chen et al. 2021, "Evaluating Large Language Models Trained on
    Code", eq. 1).  With ``n = k`` it is 1 when any play succeeded; a goal with fewer plays than
    ``k`` (errored samples left out) has no unbiased estimate and counts with its plays' own
    value (1 when any of its ``n`` succeeded: a lower bound of its pass@k).

    Example:
        >>> pass_at_k(1, 4, 4), pass_at_k(1, 4, 2), pass_at_k(0, 16, 4)
        (1.0, 0.5, 0.0)
    """
    n, c, k = int(samples), int(successes), int(k)
    if not 0 <= c <= n or n < 1 or k < 1:
        raise ValueError(f"pass@k needs 0 <= successes <= samples, samples >= 1 and k >= 1, got {c}, {n}, {k}")
    if n <= k or c == 0:
        return 1.0 if c else 0.0
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def samples_by_goal(episodes: list[Mapping]) -> dict:
    """The samples of each goal: ``{goal: [indices into episodes]}``, goals and samples in order of appearance.

    Only the episodes with a ``sample`` (a goal played several times) count; ``goal`` is the
    resolved episode a sample plays (the run's ``protocol.item``).  ``mean@K`` and ``pass@K``
    (:func:`figures`) and their intervals over goals are computed on these groups.
    """
    out: dict = defaultdict(list)
    for i, e in enumerate(episodes):
        if "sample" in e:
            out[e.get("goal")].append(i)
    return dict(out)


def figures(protocol, episodes: Iterable[Mapping]) -> dict:
    """The protocol's metrics over episodes, aggregated as the family does.

    Args:
        protocol: a :class:`~webshop_gym.protocols.Protocol`.
        episodes: dicts with ``raw_reward`` (the final WebShop reward), ``purchased`` (bool, default True);
            ``draw`` (verl-agent's reset) for ``aggregate.over == "draws"``; ``trial`` and
            ``goal`` for ``"trials"``; ``goal`` and ``sample`` when a goal is played several
            times (``samples_per_goal``).

    Returns:
        ``{metric name: value}`` (on the metric's scale); with several samples per goal also
        ``mean@K`` and ``pass@K`` (K: the protocol's ``samples_per_goal``, else the most samples of
        a goal; none before some goal has K; pass@K: the mean over
        goals of :func:`pass_at_k`, the unbiased estimate, which is the share of goals with a
        success among their K samples when each has K, x 100); for ``"trials"`` also
        ``{name}_by_trial``, the value after each trial.
    """
    episodes = list(episodes)
    over = protocol.aggregate.get("over", "episodes")
    out: dict = {}
    for metric in protocol.metrics:
        of, scale = metric["of"], float(metric.get("scale", 1))
        if over == "draws":
            batches: dict = defaultdict(list)
            for e in episodes:
                batches[e.get("draw", 0)].append(_value(protocol, e, of))
            value = _mean([_mean(b) for _, b in sorted(batches.items())])
        elif over == "trials":
            solved: dict = {}
            by_trial = []
            for trial in sorted({int(e.get("trial", 0)) for e in episodes}):
                for e in episodes:
                    if int(e.get("trial", 0)) == trial:
                        goal = e.get("goal")
                        solved[goal] = max(solved.get(goal, 0.0), _value(protocol, e, of))
                by_trial.append(_mean(list(solved.values())) * scale)
            out[f"{metric['name']}_by_trial"] = by_trial
            value = by_trial[-1] / scale if by_trial else float("nan")
        else:
            value = _mean([_value(protocol, e, of) for e in episodes])
        out[metric["name"]] = value * scale
    samples = {goal: [_value(protocol, episodes[i], "success") for i in members]
               for goal, members in samples_by_goal(episodes).items()}
    most = max((len(v) for v in samples.values()), default=0)
    k = int(getattr(protocol, "samples_per_goal", 1) or 1)
    k = k if k > 1 else most  # episodes given with samples of a protocol of one: K is what they hold
    if k > 1 and most >= k:  # a run cut before any goal's K-th: none
        out[f"mean@{k}"] = _mean([_mean(v) for v in samples.values()]) * 100
        out[f"pass@{k}"] = _mean([pass_at_k(int(sum(v)), len(v), k) for v in samples.values()]) * 100
    return out
