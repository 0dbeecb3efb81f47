"""Whether two runs can be paired episode by episode: decided from what they played, not from names.

Two runs are comparable when they played the same episodes under the same rules of play:

* **episodes**: the same (goal, price seed) pairs, each as many times (order aside: a plain
  ``eval`` of goals 0-499 and ``--protocol verl-agent-500`` play the same 500 episodes);
* **step cap** and **success rule**;
* **shop**: the same canonical content, product and goal counts, goal kind, and goal set (every
  goal and price of the first episode's price seed);
* **observation mode**, and the **prompt** when both runs' policies read one (a rule policy reads
  none: it pairs with any model, as a baseline).

Not compared: the protocol's name, reward transform, metrics and their aggregation (how a
family reports the same episodes), nor the policy, model or sampling.  :func:`comparison` lists
every field once with both runs' values; :func:`refusal` is the one line a report or the viewer
prints when a field differs.  Runs written before protocol records existed are compared by
their shop fingerprints only (``None`` here: the caller falls back).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from webshop_gym.protocols.definition import prompt_text, shop_identity

__all__ = ["FIELDS", "Field", "comparison", "episode_set_digest", "goals_text", "refusal"]

FIELDS = ("episodes", "step cap", "success rule", "shop", "observation mode", "prompt")
"""The fields two runs must share to be paired, in the order they are shown."""


def episode_set_digest(pairs: Iterable[tuple[int, int]], samples: int = 1) -> str:
    """SHA-256 (16 hex) of a multiset of (goal, price seed) pairs, each played ``samples`` times (order aside)."""
    counts = Counter((int(g), int(p)) for g, p in pairs)
    payload = sorted([g, p, n * int(samples)] for (g, p), n in counts.items())
    return hashlib.sha256(json.dumps(payload, separators=(",", ":")).encode("ascii")).hexdigest()[:16]


@dataclass(frozen=True)
class Field:
    """One compared field: its name, both runs' values in words, and whether they differ."""

    name: str
    a: str
    b: str
    differs: bool


def goals_text(definition: Mapping) -> str:
    """A definition's test goals in words: ``0-499``, ``drawn per validation``, ``in list eto-test``, ..."""
    indices = (definition.get("test") or {}).get("indices") or {}
    if "range" in indices:
        a, b = indices["range"]
        return f"{a}-{'end' if b is None else b - 1}"
    if "draw" in indices:
        return "drawn per validation"
    if "seeds" in indices:
        return "from env seeds"
    if "ids" in indices:
        return f"in list {indices['ids'].get('list')}"
    return "from a file"


def _episodes(record: Mapping) -> tuple[str | None, str]:
    count = int(record.get("episodes") or 0)
    samples = int(record.get("samples") or 1)
    played = count // samples if samples else count
    seeds = record.get("price_seeds") or []
    shown = ", ".join(map(str, seeds[:3])) + (f" ... ({len(seeds):,} in all)" if len(seeds) > 3 else "")
    text = (f"{played:,} episodes" + (f" x {samples} samples" if samples > 1 else "")
            + f" of goals {goals_text(record.get('definition') or {})} at price seed{'s' if len(seeds) > 1 else ''} {shown or '?'}")
    return record.get("episode_set"), text


def _success(definition: Mapping) -> str:
    rule = definition.get("success") or {}
    need = rule.get("raw_at_least")
    return ("any purchase" if need is not None and float(need) <= 0 else f"raw reward >= {need}") + (
        " on a purchase" if rule.get("needs_purchase", True) and need is not None and float(need) > 0 else "")


def _shop(header: Mapping, with_goal_set: bool) -> tuple[dict | None, str]:
    """A run's shop identity and its words.

    The goal set counts only where the episodes are the same: their price seeds already name
    the prices, so another goal set then says nothing new.
    """
    fp = header.get("fingerprint")
    if not isinstance(fp, Mapping):
        return None, "not recorded"
    identity = shop_identity(fp)
    content = hashlib.sha256(json.dumps(identity.get("content"), sort_keys=True).encode()).hexdigest()[:8]
    path = str((header.get("shop") or {}).get("path") or "")
    name = f"`{path.rstrip('/').rsplit('/', 1)[-1]}`: " if path else ""
    text = f"{name}{fp.get('products') or 0:,} products, {fp.get('goals') or 0:,} {fp.get('goal_kind')} goals, content {content}"
    if with_goal_set:
        identity = {**identity, "goal_set": fp.get("goal_set")}
        text += f", goal set {fp.get('goal_set')}"
    return identity, text


def _prompt(header: Mapping, record: Mapping) -> dict | None:
    played = record.get("played_prompt")
    if played is None and header.get("prompt"):  # a run whose record predates played_prompt
        played = {"format": header["prompt"], "history": None}
    return played


def comparison(header_a: Mapping, header_b: Mapping) -> list[Field] | None:
    """The fields two runs must share, each once with both values (``None``: a run without a protocol record).

    Args:
        header_a: a run file's ``run`` line (its ``protocol`` record, ``fingerprint``,
            ``observation_mode`` and ``prompt``).
        header_b: the other run's.
    """
    ra, rb = header_a.get("protocol"), header_b.get("protocol")
    if not isinstance(ra, Mapping) or not isinstance(rb, Mapping) or not ra.get("episode_set") or not rb.get("episode_set"):
        return None
    da, db = ra.get("definition") or {}, rb.get("definition") or {}
    out = []
    (ea, ta), (eb, tb) = _episodes(ra), _episodes(rb)
    same_episodes = ea == eb and ra.get("samples") == rb.get("samples")
    out.append(Field("episodes", ta, tb, not same_episodes))
    out.append(Field("step cap", str(da.get("step_cap")), str(db.get("step_cap")), da.get("step_cap") != db.get("step_cap")))
    out.append(Field("success rule", _success(da), _success(db), (da.get("success") or {}) != (db.get("success") or {})))
    (sa, ta), (sb, tb) = _shop(header_a, same_episodes), _shop(header_b, same_episodes)
    out.append(Field("shop", ta, tb, sa != sb))
    oa = (da.get("observation") or {}).get("mode") or header_a.get("observation_mode") or "text"
    ob = (db.get("observation") or {}).get("mode") or header_b.get("observation_mode") or "text"
    out.append(Field("observation mode", oa, ob, oa != ob))
    pa, pb = _prompt(header_a, ra), _prompt(header_b, rb)
    shown = [("none (the policy reads no prompt)" if p is None else prompt_text(p)) for p in (pa, pb)]
    out.append(Field("prompt", shown[0], shown[1], pa is not None and pb is not None and pa != pb))
    return out


def refusal(fields: list[Field] | None) -> str:
    """Why two runs cannot be paired, in one line (``""``: they can, or ``fields`` is ``None``)."""
    differ = [f for f in fields or () if f.differs]
    if not differ:
        return ""
    return "they played different " + "; ".join(f"{f.name} ({f.a} vs {f.b})" for f in differ)
