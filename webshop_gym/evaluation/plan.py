"""What an evaluation plays: a protocol's episodes (or the ad-hoc equivalent), their shops, the run's record.

:func:`prepare` turns ``evaluate``'s arguments into an :class:`EvaluationPlan`: the protocol
(``protocol="verl-agent"``, or the ad-hoc protocol of a split, a goal count, a step cap and a
price seed), its resolved episodes (:meth:`webshop_gym.protocols.Protocol.resolve`), the planned
plays (:func:`webshop_gym.protocols.play.plan`: ``samples`` per episode), one shop per price seed,
and the run line's ``protocol`` object with the protocol fingerprint.  The local and the served
loops both play a plan; a served one can be shared by several processes, each playing one
contiguous block of its goals or planned episodes (``--shard i/n``: :func:`parse_shard`,
:func:`shard_goals`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from webshop_gym.agents.prompts import FORMATS
from webshop_gym.error import InvalidArgument
from webshop_gym.protocols import Protocol, Resolution, get_protocol
from webshop_gym.protocols.definition import goal_lookup
from webshop_gym.protocols.play import (
    PlannedEpisode,
    adhoc_protocol,
    plan,
    protocol_record,
    with_samples,
)
from webshop_gym.shop import Shop, load_shop

__all__ = ["EvaluationPlan", "choose_decoding", "choose_prompt", "parse_shard", "played_prompt", "prepare", "protocol_of",
           "shard_goals"]


@dataclass
class EvaluationPlan:
    """An evaluation's episodes and their shops.

    Attributes:
        protocol: the protocol played (``samples_per_goal`` = ``samples``).
        resolution: its resolved episodes.
        episodes: the plays, in play order (grouped by price seed).
        shops: the shop of each price seed.
        record: the run line's ``protocol`` object.
        named: the protocol was asked for by name (``--protocol``), not the ad-hoc one of a split.
    """

    protocol: Protocol
    resolution: Resolution
    episodes: list[PlannedEpisode]
    shops: dict[int, Shop] = field(repr=False)
    record: dict = field(repr=False)
    named: bool = False

    @property
    def samples(self) -> int:
        """Plays per resolved episode."""
        return int(self.protocol.samples_per_goal)

    @property
    def reports_progress(self) -> bool:
        """Whether a metric of the protocol averages AgentBoard's progress rate (the loops then record it per episode)."""
        return any(m.get("of") == "progress" for m in self.protocol.metrics)

    @property
    def shop(self) -> Shop:
        """The shop of the first episode (the run line's shop and fingerprint)."""
        return self.shops[self.episodes[0].price_seed] if self.episodes else next(iter(self.shops.values()))

    def groups(self, episodes: list[PlannedEpisode] | None = None) -> list[tuple[Shop, list[PlannedEpisode]]]:
        """The plays (``episodes``: those of them, default all) by price seed, one shop each, in play order."""
        out: dict[int, list[PlannedEpisode]] = {}
        for e in self.episodes if episodes is None else episodes:
            out.setdefault(e.price_seed, []).append(e)
        return [(self.shops[seed], eps) for seed, eps in out.items()]

    @property
    def simple(self) -> bool:
        """One play per goal of one shop, in goal order: the plain loop (and its file layout) applies."""
        goals = [e.goal for e in self.episodes]
        return len(self.shops) == 1 and goals == sorted(set(goals))


def protocol_of(protocol: str | Protocol | None) -> Protocol | None:
    """The :class:`~webshop_gym.protocols.Protocol` a name (or alias) names; ``None`` stays ``None``."""
    return protocol if protocol is None or isinstance(protocol, Protocol) else get_protocol(protocol)


def choose_prompt(policy, given: str | None, protocol: Protocol | None) -> str | None:
    """The prompt format a policy spec reads: the one given, else the protocol's own, else ``think-answer``.

    Only ``hf:PATH`` and ``openai:MODEL`` specs read a prompt format by name (``None`` for the
    others).  A protocol whose format this kind of policy cannot read (``tools``, the served
    models' function calling, for ``hf:``) falls back to ``think-answer``; the run then
    records the difference (:meth:`~webshop_gym.protocols.Protocol.played`).
    """
    if not (isinstance(policy, str) and policy.startswith(("hf:", "openai:"))):
        return None
    if given is not None:
        return given
    own = None if protocol is None else protocol.prompt.get("format")
    if own is None or (own == "tools" and not policy.startswith("openai:")):
        return "think-answer"
    return own


def played_prompt(policy, prompt: str | None) -> dict | None:
    """``{"format", "history"}`` of the prompt a policy reads (``None``: it reads none: rule, random, oracle).

    Args:
        policy: the policy spec or object (an object's ``prompt`` attribute is read).
        prompt: the format name an ``hf:``/``openai:`` spec reads (:func:`choose_prompt`).
    """
    if isinstance(policy, str):
        if prompt is None or not policy.startswith(("hf:", "openai:")):
            return None
        fmt = FORMATS.get(prompt)
        return {"format": prompt, "history": None if fmt is None else fmt.default_history}
    found = getattr(policy, "prompt", None)
    name = getattr(found, "name", None)
    return None if not isinstance(name, str) else {"format": name, "history": getattr(found, "history", None)}


#: Tokens per answer when neither the caller nor the protocol says (``eval --max-new-tokens``' default).
DEFAULT_MAX_NEW_TOKENS = 128


def choose_decoding(policy, kwargs: dict, protocol: Protocol | None) -> tuple[dict, dict | None]:
    """The decoding an ``hf:``/``openai:`` policy plays: what the caller gave, else the protocol's, else greedy.

    ``kwargs`` holds the caller's ``do_sample``, ``temperature``, ``top_p`` and ``max_new_tokens``
    (``None`` or absent: not given).  A served model (``openai:``) decodes greedily at temperature
    0: its ``do_sample`` is taken out and a temperature given without it means sampling when above
    0.  Values the protocol leaves open (``null``) take the policy's defaults: temperature and
    top-p 1, 128 new tokens.

    A policy object (an :class:`~webshop_gym.agents.openai.OpenAIPolicy` or
    :class:`~webshop_gym.agents.hf.HFPolicy` made by the caller) decodes as it was made: its
    ``decoding`` property is what the run records and checks against the protocol's.

    Returns:
        ``(kwargs for the policy, the decoding played)``: the played decoding is ``None`` for a
        policy that decodes nothing (rule, random, oracle, a callable).
    """
    if not (isinstance(policy, str) and policy.startswith(("hf:", "openai:"))):
        own = None if isinstance(policy, (str, type)) else getattr(policy, "decoding", None)
        return kwargs, (dict(own) if isinstance(own, dict) else None)
    own = (None if protocol is None else protocol.data.get("decoding")) or {}
    out = dict(kwargs)
    served = policy.startswith("openai:")
    sample = out.pop("do_sample", None)
    temperature, top_p, tokens = out.get("temperature"), out.get("top_p"), out.get("max_new_tokens")
    if served and "request_options" in out and (out["request_options"] or {}).get("max_completion_tokens"):
        tokens = out["request_options"]["max_completion_tokens"]
    if sample is None and served and temperature is not None:
        sample = float(temperature) > 0
    if sample is None:
        sample = bool(own.get("do_sample", False))
    if sample:
        temperature = temperature if temperature is not None else own.get("temperature") or 1.0
        top_p = top_p if top_p is not None else own.get("top_p") or 1.0
    tokens = tokens if tokens is not None else own.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS
    if served:
        out.update(temperature=float(temperature) if sample else 0.0, top_p=float(top_p) if sample else 1.0)
    else:
        out.update(do_sample=bool(sample), temperature=1.0 if temperature is None else float(temperature),
                   top_p=1.0 if top_p is None else float(top_p))
    out["max_new_tokens"] = int(out.get("max_new_tokens") or tokens)
    played = {"do_sample": bool(sample), "temperature": float(temperature) if sample else None,
              "top_p": float(top_p) if sample else None, "max_new_tokens": int(tokens)}
    return out, played


def _shop_at(shop: Shop, price_seed: int) -> Shop:
    return shop.at_price_seed(price_seed)  # one catalog and search index for every price seed


def prepare(
    shop,
    *,
    protocol: str | Protocol | None = None,
    seed: int = 0,
    validation: int = 0,
    protocol_file: str | os.PathLike | None = None,
    samples: int = 1,
    split: str | None = "test",
    num_goals: int | None = None,
    max_steps: int = 15,
    goals=None,
    human_goals: bool = False,
    price_seed: int = 0,
    observation_mode: str | None = None,
    prompt: dict | None = None,
    decoding: dict | None = None,
) -> EvaluationPlan:
    """The plan of an evaluation (see the module docstring).

    Args:
        shop: a :class:`~webshop_gym.shop.Shop`, a shop directory or ``None`` (the embedded shop).
        protocol: a protocol name or object; ``None``: the ad-hoc protocol of ``split``,
            ``num_goals``, ``max_steps`` and ``price_seed``.
        seed: the run's seed, and the protocol's seed when it takes one (verl-agent's ``env.seed``).
        validation: the K-th validation (protocols that draw goals per validation).
        protocol_file: the goal-id file of a protocol that reads one.
        samples: plays per episode.
        split: the ad-hoc protocol's split (without a protocol only, as the next five).
        num_goals: only the first ``num_goals`` goals of the split.
        max_steps: the step cap.
        goals: a frozen goal-set file (when ``shop`` is not a Shop).
        human_goals: human instructions (idem).
        price_seed: the seed of prices and price caps (idem).
        observation_mode: the env's observation mode the run plays (``None``: the protocol's).
        prompt: ``{"format", "history"}`` of the prompt the policy reads (:func:`played_prompt`;
            ``None``: a policy that reads none).  Both enter the fingerprint; where they differ
            from the protocol's own, the record lists the differences (``deviations``).
        decoding: the decoding the policy plays (:func:`choose_decoding`; ``None``: a policy that
            decodes nothing); idem.

    Raises:
        UnknownProtocol, ShopMismatch, ProtocolError: a bad protocol, shop or goal-id file.
        InvalidArgument: ``validation`` or ``protocol_file`` without a protocol.
    """
    if protocol is None:
        if validation:
            raise InvalidArgument("validation applies to a protocol that draws goals per validation (protocol=...)")
        if protocol_file is not None:
            raise InvalidArgument("protocol_file applies to a protocol that reads its goal ids from a file (protocol=...)")
        if not isinstance(shop, Shop):
            shop = load_shop(shop, goals=goals, human_goals=human_goals, seed=price_seed, progress=False)
        picked = shop.goals.split_range(None if split == "all" else split)
        stop = picked.start + len(picked) if num_goals is None else picked.start + min(int(num_goals), len(picked))
        # a frozen goal set (goals=FILE) carries its own prices: no seed made them (recorded as 0)
        chosen = adhoc_protocol(start=picked.start, stop=stop, max_steps=max_steps,
                                price_seed=0 if shop.goals.seed is None else shop.goals.seed, goal_kind=shop.goals.kind,
                                observation_mode=observation_mode or "text")
        named = False
    else:
        chosen = protocol if isinstance(protocol, Protocol) else get_protocol(protocol)
        if not isinstance(shop, Shop):
            shop = load_shop(shop, human_goals=chosen.goal_kind == "human", progress=False)
        if shop.goals.seed is None:
            raise InvalidArgument(f"protocol {chosen.name!r} sets the prices by its price seeds; a frozen goal set "
                                  "(goals=FILE) has prices of its own: load the shop without a goal file")
        named = True
    chosen.check_shop(shop)
    chosen, deviations = chosen.played(observation_mode=observation_mode, prompt=prompt, decoding=decoding)
    chosen = with_samples(chosen, samples)
    lookup = goal_lookup(shop.goals) if chosen.reads_goal_file and protocol_file is not None else None
    resolution = chosen.resolve(seed if chosen.seed is not None else None, validation, num_goals=len(shop.goals),
                                ids_file=protocol_file, goal_lookup=lookup)
    episodes = plan(resolution, chosen.samples_per_goal)
    if shop.goals.seed is None:  # the ad-hoc protocol of a frozen goal set: its one shop, its own prices
        shops = {ps: shop for ps in dict.fromkeys(e.price_seed for e in episodes)} or {0: shop}
    else:
        shops = {ps: _shop_at(shop, ps) for ps in dict.fromkeys(e.price_seed for e in episodes)} or {shop.goals.seed: shop}
    record = protocol_record(chosen, resolution, shop, chosen.samples_per_goal, deviations, prompt, decoding)
    return EvaluationPlan(chosen, resolution, episodes, shops, record, named)


# -- shards: one process's block of the plan -------------------------------------------------------


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n`` (raises ``ValueError`` with the reason)."""
    parts = str(text).split("/")
    if len(parts) != 2 or not all(p.isascii() and p.isdigit() for p in parts):  # int() would take "١" or " 1"
        raise ValueError(f"must be i/n with integers 0 <= i < n, got {text!r}")
    i, n = int(parts[0]), int(parts[1])
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"must be i/n with integers 0 <= i < n, got {text!r}")
    return i, n


def shard_goals(goals: Sequence[int], shard: tuple[int, int] | None) -> list[int]:
    """The ``i``-th of ``n`` contiguous, nearly equal blocks of ``goals`` (all of them without a shard)."""
    goals = list(goals)
    if shard is None:
        return goals
    i, n = shard
    return goals[i * len(goals) // n : (i + 1) * len(goals) // n]
