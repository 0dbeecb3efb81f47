"""Playing a protocol: the episodes an evaluation plays, and the protocol record a run keeps.

* :func:`adhoc_protocol`: what a run without ``--protocol`` plays (a range of the goal list, a
  step cap, a price seed), written as a protocol in the same format, so every run has a protocol
  fingerprint.  When its rules equal a shipped protocol's (``eval`` on the 500 test goals with
  cap 15 is ``webshop-gym``), the record says so and the fingerprints are equal.
* :func:`with_samples`: the protocol played ``K`` times per episode (``eval --samples K``);
  ``samples_per_goal`` is part of the definition, so the fingerprint changes.
* :func:`plan`: the episodes in play order, each with its canonical goal, price seed, the
  family's position, worker and draw, its item (the resolved episode it samples) and sample.
* :func:`protocol_record` / :func:`recorded_protocol`: the run line's ``protocol`` object and the
  :class:`~webshop_gym.protocols.Protocol` rebuilt from it (for the figures of a run read back).
* :func:`protocol_difference`: why two recorded protocols are not the same, in words.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from webshop_gym.error import InvalidArgument
from webshop_gym.protocols.comparable import episode_set_digest, goals_text
from webshop_gym.protocols.decoding import decoding_text, normalized
from webshop_gym.protocols.definition import (
    FORMAT,
    FORMAT_VERSION,
    Protocol,
    Resolution,
    get_protocol,
    prompt_text,
    protocol_names,
)
from webshop_gym.protocols.steps import steps_of

__all__ = ["ADHOC", "PlannedEpisode", "adhoc_protocol", "plan", "played_parts", "protocol_difference", "protocol_record",
           "recorded_protocol", "with_samples"]

ADHOC = "ad-hoc"
"""The name of the protocol a run without ``--protocol`` records."""

MAX_SAMPLES = 1000
"""Most samples per goal ``eval --samples`` takes."""


def adhoc_protocol(*, start: int, stop: int, max_steps: int, price_seed: int, goal_kind: str,
                   observation_mode: str = "text") -> Protocol:
    """The protocol a run without ``--protocol`` plays: goals ``start .. stop - 1`` of our goal order.

    It fixes no prompt (``prompt.format`` null): the run's record carries the prompt its policy
    read (:meth:`~webshop_gym.protocols.Protocol.played`).

    Args:
        start: the first goal (the split's, cut to ``--num-goals``).
        stop: one past the last goal.
        max_steps: the step cap.
        price_seed: the seed of prices and price caps.
        goal_kind: ``"synthetic"`` or ``"human"`` (the shop's goals).
        observation_mode: the env's observation mode.
    """
    data = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "name": ADHOC, "version": 1,
        "title": f"goals {start}-{stop - 1} of the reference's order, step cap {max_steps}",
        "family": "an evaluation run without --protocol", "reports": "Score and SR with intervals",
        "shop": {"release": "any"}, "goal_kind": goal_kind, "seed": None,
        "test": {"list": {"shuffle_seed": 233}, "indices": {"range": [int(start), int(stop)]}},
        "train": None, "price_seed": int(price_seed), "step_cap": int(max_steps),
        "reward": {"transform": "raw"}, "success": {"raw_at_least": 1.0, "needs_purchase": True},
        "metrics": [{"name": "score", "label": "Score", "of": "raw_reward", "scale": 100},
                    {"name": "success_rate", "label": "SR", "of": "success", "scale": 100}],
        "aggregate": {"over": "episodes"}, "samples_per_goal": 1, "sources": [], "notes": [],
        "observation": {"mode": observation_mode}, "prompt": {"format": None, "history": None}, "aliases": [],
    }
    return Protocol(data, "")


def with_samples(protocol: Protocol, samples: int) -> Protocol:
    """``protocol`` with every episode played ``samples`` times (``samples_per_goal``; 1: itself)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise InvalidArgument(f"samples must be an integer in 1-{MAX_SAMPLES}, got {samples!r}")
    if samples == 1:
        return protocol
    data = copy.deepcopy(protocol.data)
    data["samples_per_goal"] = int(samples)
    return Protocol(data, protocol.path)


def equivalent(protocol: Protocol) -> str | None:
    """The shipped protocol whose rules equal ``protocol``'s (its name), if any.

    A shipped protocol that fixes no prompt (``webshop-gym``) equals a played one whatever
    prompt the run's policy read.
    """
    mine = protocol.definition()
    for name in protocol_names():
        other = get_protocol(name)
        theirs = other.definition()
        if other.prompt.get("format") is None:
            theirs = {**theirs, "prompt": mine.get("prompt")}
        if other.data.get("decoding") is None:
            theirs = {**theirs, "decoding": mine.get("decoding")}
        if theirs == mine:
            return name
    return None


@dataclass(frozen=True)
class PlannedEpisode:
    """One episode an evaluation plays.

    Attributes:
        ordinal: its place in the plan (0-based).
        item: the resolved episode it plays (index into ``resolution.episodes``).
        sample: how many earlier episodes of the plan played the same goal at the same price seed.
        goal, price_seed, position, worker, draw: as the resolved episode
            (:class:`~webshop_gym.protocols.Episode`).
    """

    ordinal: int
    item: int
    sample: int
    goal: int
    price_seed: int
    position: int
    worker: int | None = None
    draw: int | None = None

    def as_dict(self) -> dict:
        """The episode line's ``protocol`` object (``None`` fields left out)."""
        out = {"item": self.item, "sample": self.sample, "price_seed": self.price_seed, "position": self.position}
        if self.worker is not None:
            out["worker"] = self.worker
        if self.draw is not None:
            out["draw"] = self.draw
        return out


def plan(resolution: Resolution, samples: int = 1) -> list[PlannedEpisode]:
    """The episodes to play: each resolved episode ``samples`` times, in play order.

    Episodes are grouped by price seed (one shop each) in order of first appearance; within a
    group they keep the protocol's order, each resolved episode's samples together.  ``sample``
    counts the earlier plays of the same (goal, price seed), so repeated goals (``--samples``, or
    a verl-agent worker drawing a position twice) get their own policy seeds.
    """
    order: dict[int, list[int]] = {}
    for i, e in enumerate(resolution.episodes):
        order.setdefault(e.price_seed, []).append(i)
    seen: Counter = Counter()
    out = []
    for items in order.values():
        for i in items:
            e = resolution.episodes[i]
            for _ in range(int(samples)):
                key = (e.goal, e.price_seed)
                out.append(PlannedEpisode(len(out), i, seen[key], e.goal, e.price_seed, e.position, e.worker, e.draw))
                seen[key] += 1
    return out


def protocol_record(protocol: Protocol, resolution: Resolution, shop, samples: int = 1,
                    deviations: list[str] | tuple[str, ...] = (), played_prompt: dict | None = None,
                    played_decoding: dict | None = None) -> dict:
    """The run line's ``protocol`` object: name, fingerprint, digests, seed, validation and the definition.

    Args:
        protocol: the protocol as played (:meth:`~webshop_gym.protocols.Protocol.played`).
        resolution: its episodes.
        shop: the shop of the first episode.
        samples: plays per episode.
        deviations: how the play differs from the protocol's own observation mode or prompt
            (one line each; a run with any is not the protocol's published setting).
        played_prompt: the prompt the policy read (``None``: a policy that reads none).
        played_decoding: the decoding the policy played (``None``: a policy that decodes nothing,
            recorded and shown as "no decoding").
    """
    return {
        "name": protocol.name, "version": protocol.version, "fingerprint": protocol.fingerprint(resolution, shop),
        "definition_digest": protocol.definition_digest(), "ids_digest": resolution.ids_digest(),
        "equivalent": equivalent(protocol), "seed": resolution.seed, "validation": resolution.validation,
        "samples": int(samples), "episodes": len(resolution.episodes) * int(samples),
        "ids_file_sha256": resolution.ids_file_sha256, "definition": protocol.data,
        "deviations": list(deviations), "played_prompt": played_prompt, "played_decoding": played_decoding,
        "notes": list(resolution.notes),
        "episode_set": episode_set_digest([(e.goal, e.price_seed) for e in resolution.episodes], samples),
        "price_seeds": sorted({int(e.price_seed) for e in resolution.episodes}),
    }


def recorded_protocol(record: Mapping | None) -> Protocol | None:
    """The :class:`~webshop_gym.protocols.Protocol` a run line's ``protocol`` object holds (``None``: none)."""
    if not isinstance(record, Mapping) or not isinstance(record.get("definition"), Mapping):
        return None
    return Protocol(dict(record["definition"]), "")


def played_parts(record: Mapping) -> list[str]:
    """How a recorded protocol was drawn, in words: its seed, validation and samples per goal (those that apply)."""
    parts = []
    if record.get("seed") is not None:
        parts.append(f"seed {record['seed']}")
    if record.get("validation"):
        parts.append(f"validation {record['validation']}")
    if int(record.get("samples") or 1) > 1:
        parts.append(f"{record['samples']} samples per goal")
    return parts


def display_name(record: Mapping | None) -> str:
    """A recorded protocol's name for people: ``ad-hoc (= webshop-gym)``, ``verl-agent (seed 0, validation 1)``."""
    if not isinstance(record, Mapping):
        return "-"
    name = str(record.get("name") or "?")
    if name == ADHOC and record.get("equivalent"):
        name += f" (= {record['equivalent']})"
    extra = played_parts(record)
    if record.get("deviations"):
        extra.append("not its published setting: " + "; ".join(record["deviations"]))
    return name + (f" ({', '.join(extra)})" if extra else "")


_FIELD_WORDS = {
    "shop": "the shop it needs", "goal_kind": "the goal kind", "test": "the test goals", "price_seed": "the price seed",
    "step_cap": "the step cap", "reward": "the reward transform", "success": "the success rule",
    "metrics": "the metrics", "aggregate": "the aggregation", "samples_per_goal": "the samples per goal",
    "observation": "the observation mode", "prompt": "the prompt", "steps": "the steps", "decoding": "the decoding",
}


def _field(definition: Mapping, key: str):
    """A recorded definition's field, the optional ones (steps, decoding) in their one normal form."""
    if key == "steps":
        return steps_of(definition)
    if key == "decoding":
        return normalized(definition.get("decoding"))
    return definition.get(key)


def _value_text(key: str, value) -> str:
    if key == "steps" and isinstance(value, Mapping):
        turns = "one reply a step" if value.get("turns") is None else f"{value['turns']} turns"
        return f"{turns}, {value.get('actions_per_turn')} action(s) a reply"
    if key == "test" and isinstance(value, Mapping):
        return goals_text({"test": value})
    if key == "reward" and isinstance(value, Mapping):
        return "raw" if value.get("transform") == "raw" else f"{value.get('success_value')}/{value.get('failure_value')}"
    if key == "success" and isinstance(value, Mapping):
        return f"raw reward >= {value.get('raw_at_least')}"
    if key == "metrics" and isinstance(value, list):
        return "/".join(str(m.get("label", m.get("name"))) for m in value if isinstance(m, Mapping))
    if key == "aggregate" and isinstance(value, Mapping):
        return f"mean over {value.get('over')}"
    if key == "shop" and isinstance(value, Mapping):
        return str(value.get("release"))
    if key == "observation" and isinstance(value, Mapping):
        return str(value.get("mode"))
    if key == "prompt" and isinstance(value, Mapping):
        return prompt_text(value)
    if key == "decoding":
        return decoding_text(value)
    return str(value)


def protocol_difference(a: Mapping | None, b: Mapping | None) -> str:
    """Why runs recorded under protocols ``a`` and ``b`` cannot be compared, in words (``""``: same fingerprint).

    Args:
        a: a run line's ``protocol`` object (:func:`protocol_record`); ``None`` for a run
            written before protocols were recorded (compared by its shop fingerprint only: ``""``).
        b: the other run's.
    """
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return ""
    if a.get("fingerprint") == b.get("fingerprint"):
        return ""
    names = f"protocol {display_name(a)} vs {display_name(b)}"
    da, db = a.get("definition") or {}, b.get("definition") or {}
    parts = []
    for key, words in _FIELD_WORDS.items():
        va, vb = _field(da, key), _field(db, key)
        if va != vb:
            parts.append(f"{words} {_value_text(key, va)} vs {_value_text(key, vb)}")
    if not parts:
        if a.get("ids_digest") != b.get("ids_digest"):
            parts.append("the same rules resolved to other goals or price seeds (another seed, validation or goal-id file)")
        else:
            parts.append("the same rules and goals on another shop")
    return f"{names}: " + "; ".join(parts)
