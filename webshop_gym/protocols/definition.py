"""Protocol definitions: one versioned JSON file per protocol, loaded and checked.

A protocol file (``webshop_gym/protocols/data/<name>.json``, format ``webshop-gym/protocol``
version 1) holds the shop it needs, the goal kind, its ``test`` and ``train`` goal specs
(:mod:`.resolve`), the seed it takes, the price seed, the step cap, the reward transform, the
success rule, the metrics and their aggregation (:mod:`.scoring`), samples per goal, the
observation mode and prompt format the family's agents read, and the source (repository, file,
line, commit, what was read) of each value.  A file may name other names it answers to
(``aliases``: AgentTuning's WebShop is ``agentbench``) or build on another protocol
(``extends``: a script variant, with ``set`` giving the values that differ, by dotted path, and
``sources`` citing them).  :func:`get_protocol` loads one by name; :class:`Protocol` resolves its
goals, checks a shop and computes the fingerprint.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from webshop_gym.error import ProtocolError, ShopMismatch, UnknownProtocol, close_match
from webshop_gym.protocols import scoring
from webshop_gym.protocols.checks import FORMAT, FORMAT_VERSION, fail, validate
from webshop_gym.protocols.decoding import decoding_text, deviation, normalized
from webshop_gym.protocols.idfiles import (
    GOAL_FORMATS,
    instruction_stem,
    read_goal_records,
    read_id_file,
)
from webshop_gym.protocols.idlists import id_list
from webshop_gym.protocols.resolve import Episode, reachable_ids, resolve_episodes, spec_ids
from webshop_gym.protocols.steps import played_by_an_llm, step_text, steps_of

__all__ = ["FORMAT", "FORMAT_VERSION", "Protocol", "Resolution", "alias_names", "get_protocol", "goal_lookup", "load_protocol",
           "prompt_text", "protocol_names", "shop_identity"]

SEMANTIC_FIELDS = ("shop", "goal_kind", "test", "price_seed", "step_cap", "steps", "reward", "success", "metrics",
                   "aggregate", "samples_per_goal", "observation", "prompt", "decoding")
"""The fields a number depends on: the protocol fingerprint digests these (not names, citations or notes)."""

SHOP_IDENTITY = ("content", "products", "goals", "goal_kind")
"""The parts of a shop's fingerprint a protocol fingerprint includes: the canonical content of its
data files (formatting does not count), the counts and the goal kind (prices enter per episode,
as price seeds).  A shop fingerprint written before content digests falls back to its file bytes."""

MAX_RANDOMSTATE_SEED = 2**32 - 1
"""numpy's ``RandomState`` takes seeds in 0 .. 2**32 - 1 (verl-agent's per-validation draws use one)."""


def _canonical_json(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def shop_identity(shop) -> dict:
    """The parts of a shop's fingerprint that a protocol checks and digests (:data:`SHOP_IDENTITY`).

    ``content`` is the canonical content digest of each data file (the same products and goals
    written with other indentation, key order or escapes give the same digest); a fingerprint
    recorded before content digests existed gives its byte digests (``files``) instead.

    Args:
        shop: a :class:`~webshop_gym.shop.Shop` or its ``fingerprint()`` dict.
    """
    fp = shop.fingerprint() if hasattr(shop, "fingerprint") else dict(shop)
    out = {k: fp.get(k) for k in SHOP_IDENTITY}
    if out["content"] is None:
        out["content"] = {"bytes": fp.get("files")}
    elif out["goal_kind"] == "synthetic":  # human instructions make no synthetic goal and no page
        out["content"] = {k: v for k, v in out["content"].items() if not k.startswith("items_human_ins")}
    return out


@dataclass(frozen=True)
class Resolution:
    """The episodes one evaluation under a protocol plays.

    Attributes:
        protocol: the protocol's name.
        seed: the seed used (``None`` for protocols that take none).
        validation: which validation of a run (verl-agent), else 0.
        episodes: the episodes in the family's order.
        ids_file_sha256: SHA-256 of the goal-id file (``--protocol-file``), when the protocol reads one
            (shown; the fingerprint digests the goals it names, not its bytes).
        notes: what the resolution found worth saying (a file's goals whose price caps differ
            from the shop's, ...).
    """

    protocol: str
    seed: int | None
    validation: int
    episodes: tuple[Episode, ...]
    ids_file_sha256: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def goals(self) -> np.ndarray:
        """Canonical goal of every episode (int64)."""
        return np.array([e.goal for e in self.episodes], dtype=np.int64)

    @property
    def price_seeds(self) -> np.ndarray:
        """Price seed of every episode (int64)."""
        return np.array([e.price_seed for e in self.episodes], dtype=np.int64)

    def ids_digest(self) -> str:
        """SHA-256 (16 hex) of the resolved (goal, price seed) pairs, in order."""
        pairs = [[e.goal, e.price_seed] for e in self.episodes]
        return hashlib.sha256(_canonical_json(pairs)).hexdigest()[:16]


@dataclass(frozen=True)
class Protocol:
    """A named, versioned evaluation protocol (see :mod:`webshop_gym.protocols`).

    Build one with :func:`get_protocol` (by name) or :func:`load_protocol` (a file); the
    attributes mirror the file's fields.
    """

    data: dict = field(repr=False)
    path: str = ""

    def __getattr__(self, key):
        data = object.__getattribute__(self, "data")
        if key in data:
            return data[key]
        raise AttributeError(key)

    def __repr__(self) -> str:
        return f"Protocol({self.data['name']!r}, version={self.data['version']})"

    # -- identity -----------------------------------------------------------------------------

    def definition(self) -> dict:
        """The fields a number depends on (:data:`SEMANTIC_FIELDS`), as a plain dict."""
        out = {k: self.data.get(k) for k in SEMANTIC_FIELDS}
        out["steps"] = steps_of(self.data)  # a file that leaves the defaults out defines the same steps
        out["decoding"] = normalized(self.data.get("decoding"))
        return out

    def definition_digest(self) -> str:
        """SHA-256 (16 hex) of :meth:`definition`: the same rules under another name give the same digest."""
        return hashlib.sha256(_canonical_json(self.definition())).hexdigest()[:16]

    def fingerprint(self, resolution: Resolution, shop) -> str:
        """The protocol fingerprint: a digest of the definition, the resolved goals and the shop.

        Equal fingerprints played the same episodes under the same rules, on the same shop content;
        whether two runs pair is decided from what they played (:mod:`.comparable`).

        Args:
            resolution: the episodes played (:meth:`resolve`).
            shop: the :class:`~webshop_gym.shop.Shop` (or its fingerprint dict) they were played on.
        """
        payload = {
            "definition": self.definition(),
            "episodes": [[e.goal, e.price_seed] for e in resolution.episodes],
            "shop": shop_identity(shop),
        }
        return hashlib.sha256(_canonical_json(payload)).hexdigest()[:16]

    # -- names and what the agents read ----------------------------------------------------------

    @property
    def aliases(self) -> list[str]:
        """Other names :func:`get_protocol` finds this protocol by (``agenttuning`` for ``agentbench``)."""
        return list(self.data.get("aliases") or [])

    def played(self, *, observation_mode: str | None = None, prompt: dict | None = None,
               decoding: dict | None = None) -> tuple[Protocol, list[str]]:
        """The protocol as a run played it, and how that differs from the protocol's own setting.

        The observation mode and the prompt format are protocol fields (they enter the
        fingerprint).  A run records the ones it used: a policy that reads a prompt (an LLM)
        records its prompt format, one that reads none (rule, random, oracle) plays under the
        protocol's own.  An LLM's reply is played as the protocol's ``steps`` say (ragen-small's
        12 turns for 9 actions, ragen-eval's turns of up to two actions: the loops split each
        reply into its turn's actions, :mod:`webshop_gym.agents.turns`; AgentBench's end of an
        episode on a reply without an action likewise).  Where the loops cannot (the ``tools``
        format's function calls under a rule that is not one action per reply) the run plays one
        action per reply, every reply spending a step, and records that as a deviation (a rule
        policy always sends one action, so the rule is played exactly).

        Args:
            observation_mode: the env's observation mode the run played (``None``: the protocol's).
            prompt: ``{"format", "history"}`` of the prompt the policy read (``None``: it reads none).
            decoding: ``{"do_sample", "temperature", "top_p", "max_new_tokens"}`` the policy decoded
                with (``None``: it decodes nothing: rule, random, oracle, which play under the
                protocol's own).  A decoding that differs from a value the protocol fixes is a
                deviation; a protocol that fixes none records the run's.

        Returns:
            ``(protocol, deviations)``: the played protocol (itself when nothing differs) and one
            line per field that differs from a setting the protocol fixes (a protocol whose
            prompt format is ``null`` fixes none: ``webshop-gym``, ``webshop-paper``).
        """
        data = dict(self.data)
        deviations = []
        if observation_mode is not None and observation_mode != self.observation["mode"]:
            deviations.append(f"observation mode {observation_mode}, the protocol's is {self.observation['mode']}")
            data["observation"] = {"mode": observation_mode}
        if prompt is not None:
            played = {"format": prompt.get("format"), "history": prompt.get("history")}
            own = self.prompt
            if played != {"format": own.get("format"), "history": own.get("history")}:
                if own.get("format") is not None:
                    deviations.append(f"prompt {prompt_text(played)}, the protocol's is {prompt_text(own)}")
                data["prompt"] = played
            if not played_by_an_llm(self.data, played["format"]):
                # function calls under turns or AgentBench's end on a reply without an action:
                # played one action per reply, every reply spending a step
                played_steps = {**steps_of(self.data), "turns": None, "actions_per_turn": 1, "separator": None,
                                "unparsable": "step"}
                deviations.append(f"steps: every reply spends one of the {self.step_cap} steps, the protocol's: "
                                  f"{step_text(self.data)}")
                data["steps"] = played_steps
        if decoding is not None:
            own = self.data.get("decoding")
            if deviation(decoding, own):
                deviations.append(f"decoding {decoding_text(decoding)}, the protocol's is {decoding_text(own)}")
                data["decoding"] = normalized(decoding)
            elif own is None:
                data["decoding"] = normalized(decoding)
        return (self if data == self.data else Protocol(data, self.path)), deviations

    # -- goals --------------------------------------------------------------------------------

    @property
    def reads_file(self) -> bool:
        """Whether the test goal ids can come from a file the user supplies (``--protocol-file``)."""
        return "file" in self.data["test"]["indices"]

    @property
    def reads_goal_file(self) -> bool:
        """Whether the test file holds goals matched to the shop's (AgentBoard), not ids."""
        rule = self.data["test"]["indices"].get("file")
        return rule is not None and rule.get("format") in GOAL_FORMATS

    @property
    def needs_file(self) -> bool:
        """Whether the test goal ids come from a file the user must supply (no shipped copy)."""
        rule = self.data["test"]["indices"].get("file")
        return rule is not None and not rule.get("shipped")

    @property
    def draws_per_validation(self) -> int | None:
        """Resets per validation for per-validation draws (verl-agent), else ``None``."""
        draw = self.data["test"]["indices"].get("draw")
        return None if draw is None else int(draw.get("draws_per_validation", 1))

    @property
    def max_seed(self) -> int | None:
        """The largest seed the family's code accepts (``None``: no seed, or no bound below 2**63).

        verl-agent seeds numpy's ``RandomState`` with ``env.seed + 1000``, which takes seeds
        up to 2**32 - 1: its ``env.seed`` stops at 4,294,966,295.
        """
        if self.data.get("seed") is None:
            return None
        draw = self.data["test"]["indices"].get("draw")
        return None if draw is None else MAX_RANDOMSTATE_SEED - int(draw.get("seed_offset", 0))

    def _seed(self, seed: int | None) -> int | None:
        spec = self.data.get("seed")
        if spec is None:
            if seed is not None:
                raise ProtocolError(f"protocol {self.name!r} plays fixed goals and takes no seed (got seed {seed})")
            return None
        if seed is None:
            return int(spec["default"])
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0 or seed >= 2**63:
            raise ProtocolError(f"the seed of protocol {self.name!r} ({spec['name']}) must be an integer in 0 .. 2**63 - 1, "
                                f"got {seed!r}")
        limit = self.max_seed
        if limit is not None and seed > limit:
            offset = int(self.data["test"]["indices"]["draw"].get("seed_offset", 0))
            raise ProtocolError(f"the seed of protocol {self.name!r} ({spec['name']}) must be at most {limit:,}: the family "
                                f"seeds numpy's RandomState with {spec['name']} + {offset}, which takes 0 .. 2**32 - 1 "
                                f"(got {int(seed):,})")
        return int(seed)

    def _num_goals(self, num_goals: int | None) -> int | None:
        return int(num_goals) if num_goals is not None else self.data["shop"].get("goals")

    def _file_ids(self, spec: Mapping, ids_file, goal_lookup=None) -> tuple[np.ndarray | None, str | None, tuple]:
        """The ids of a ``file`` rule (the user's file, else the shipped copy), its SHA-256 and notes."""
        rule = spec["indices"].get("file")
        if rule is None:
            if ids_file is not None:
                raise ProtocolError(f"protocol {self.name!r} does not read a goal-id file (--protocol-file is for "
                                    f"{', '.join(n for n in protocol_names() if get_protocol(n).reads_file)})")
            return None, None, ()
        if ids_file is None:
            if rule.get("shipped"):
                shipped = id_list(rule["shipped"])
                return shipped.ids, shipped.source["sha256"], (f"goal ids: the shipped copy, {shipped.cite()}",)
            raise ProtocolError(f"protocol {self.name!r} reads its goal ids from a file that is not shipped: pass your "
                                f"copy with --protocol-file FILE ({rule.get('where')})")
        if rule.get("format") in GOAL_FORMATS:
            return self._matched_goals(ids_file, rule, goal_lookup)
        ids, digest = read_id_file(ids_file, rule, self.name)
        return ids, digest, ()

    def _matched_goals(self, ids_file, rule: Mapping, goal_lookup) -> tuple[np.ndarray, str, tuple]:
        """A goal file's goals (AgentBoard's), each matched to the shop's goal of the same product and instruction."""
        records, digest = read_goal_records(ids_file, rule, self.name)
        if goal_lookup is None:
            raise ProtocolError(f"protocol {self.name!r}: the goals of {ids_file} are matched to the shop's goal list; "
                                "give the shop (--shop DIR)")
        ids, caps = [], 0
        for k, record in enumerate(records):
            found = goal_lookup(record["asin"], record["stem"])
            if found is None:
                raise ProtocolError(f"{ids_file}, goal {k}: no goal of this shop asks for product {record['asin']} with "
                                    f"the instruction {record['instruction'][:80]!r}: not this protocol's shop")
            goal, cap = found
            ids.append(int(goal))
            caps += record["price_upper"] is not None and cap is not None and abs(float(cap) - record["price_upper"]) > 1e-9
        notes = (f"{caps} of the file's {len(records)} goals have another price cap than the shop's goal at its price seed "
                 "(the file keeps one draw of the family's unseeded caps)",) if caps else ()
        out = np.asarray(ids, dtype=np.int64)
        out.flags.writeable = False
        return out, digest, notes

    def resolve(self, seed: int | None = None, validation: int = 0, *, num_goals: int | None = None,
                ids_file: str | os.PathLike | None = None, goal_lookup=None) -> Resolution:
        """The episodes of one evaluation: canonical goals, price seeds, the family's positions.

        Args:
            seed: the protocol's seed (``protocol.seed["name"]``: verl-agent's ``env.seed``,
                RAGEN's ``seed.val``); ``None``: its default.  Protocols with fixed goals take none.
            validation: the K-th validation of a run (verl-agent draws new goals each time).
            num_goals: goals in the shop (default: the count the protocol's shop has).
            ids_file: the goal-id file, for protocols that read one.
            goal_lookup: for a file of goals (AgentBoard): ``(asin, instruction stem) -> (goal, price
                cap)`` of the shop's goal list, or ``None`` (:func:`webshop_gym.shop` builds it).
        """
        seed = self._seed(seed)
        if isinstance(validation, bool) or not isinstance(validation, (int, np.integer)) or validation < 0:
            raise ProtocolError(f"validation must be an integer >= 0, got {validation!r}")
        if validation and self.draws_per_validation is None:
            raise ProtocolError(f"protocol {self.name!r} plays the same goals at every validation; --validation is for "
                                "protocols that draw goals per validation (verl-agent)")
        once = self.data["test"]["indices"].get("draw", {}).get("validations")
        if once is not None and validation >= int(once):
            raise ProtocolError(f"protocol {self.name!r} evaluates {'once' if int(once) == 1 else f'{int(once)} times'} "
                                f"(its script runs {'one validation' if int(once) == 1 else f'{int(once)} validations'}): "
                                f"--validation must be {'0' if int(once) == 1 else f'below {int(once)}'}, got {int(validation)}")
        spec = self.data["test"]
        ids, digest, notes = self._file_ids(spec, ids_file, goal_lookup)
        episodes = resolve_episodes(spec, name=self.name, seed=seed, validation=int(validation),
                                    n=self._num_goals(num_goals), file_ids=ids, default_price_seed=self.data.get("price_seed", 0))
        return Resolution(self.name, seed, int(validation), tuple(episodes), digest, notes)

    def test_ids(self, seed: int | None = None, *, num_goals: int | None = None,
                 ids_file: str | os.PathLike | None = None) -> np.ndarray:
        """Every canonical goal the protocol's test can play (any validation), sorted."""
        ids, _, _ = self._file_ids(self.data["test"], ids_file)
        return reachable_ids(self.data["test"], name=self.name, seed=self._seed(seed), n=self._num_goals(num_goals), file_ids=ids)

    def train_ids(self, seed: int | None = None, *, num_goals: int | None = None,
                  ids_file: str | os.PathLike | None = None) -> np.ndarray:
        """The canonical goals the family trains on, sorted.

        Raises:
            ProtocolError: the family defines no train goals.
        """
        spec = self.data.get("train")
        if spec is None:
            raise ProtocolError(f"protocol {self.name!r} defines no train goals "
                                f"(protocols with train goals: {', '.join(n for n in protocol_names() if get_protocol(n).train is not None)})")
        ids, _, _ = self._file_ids(spec, ids_file)
        return spec_ids(spec, name=self.name, seed=self._seed(seed), n=self._num_goals(num_goals), file_ids=ids)

    # -- the shop -----------------------------------------------------------------------------

    def describe_shop(self) -> str:
        """The shop the protocol needs, in words."""
        shop, kind = self.data["shop"], self.data["goal_kind"]
        if shop["release"] == "any":
            return "any shop" + ("" if kind == "any" else f" with {kind} goals")
        parts = []
        if shop.get("products") is not None:
            parts.append(f"{shop['products']:,} products")
        if shop.get("products_at_least") is not None:
            parts.append(f"at least {shop['products_at_least']:,} products")
        parts.append(f"{shop['goals']:,} {kind} goals" if shop.get("goals") is not None else f"{kind} goals")
        files = ", ".join(f"{name} {digest}" for name, digest in sorted(shop.get("content", {}).items()))
        return f"the {shop['release']} release ({', '.join(parts)}{'; content ' + files if files else ''})"

    def check_shop(self, shop) -> None:
        """Raise :class:`~webshop_gym.error.ShopMismatch` unless ``shop`` is the protocol's shop.

        Args:
            shop: a :class:`~webshop_gym.shop.Shop` or its ``fingerprint()`` dict.
        """
        fp = shop.fingerprint() if hasattr(shop, "fingerprint") else dict(shop)
        spec, kind = self.data["shop"], self.data["goal_kind"]
        problems = []
        if kind != "any" and fp["goal_kind"] != kind:
            problems.append(f"{fp['goal_kind']} goals, not {kind}")
        if spec.get("products") is not None and fp["products"] != spec["products"]:
            problems.append(f"{fp['products']:,} products, not {spec['products']:,}")
        if spec.get("products_at_least") is not None and (fp["products"] or 0) < spec["products_at_least"]:
            problems.append(f"{fp['products']:,} products, not at least {spec['products_at_least']:,}")
        if spec.get("goals") is not None and kind == fp["goal_kind"] and fp["goals"] != spec["goals"]:
            problems.append(f"{fp['goals']:,} goals, not {spec['goals']:,}")
        content = fp.get("content") or {}
        for name, digest in sorted(spec.get("content", {}).items()):
            got = content.get(name)
            if got != digest:
                problems.append(f"content {got or 'unknown'} for {name}, not {digest}")
        if problems:
            full = shop.fingerprint() if hasattr(shop, "fingerprint") else dict(shop)
            raise ShopMismatch(
                f"protocol {self.name!r} needs {self.describe_shop()}, but this shop has {'; '.join(problems)} "
                f"(shop fingerprint: catalog {full.get('catalog')}, {fp['products']:,} products, {fp['goals']:,} "
                f"{fp['goal_kind']} goals)"
            )

    # -- scoring --------------------------------------------------------------------------------

    def transform_reward(self, raw_reward: float, purchased: bool) -> float:
        """The reward the family's trainer sees for an episode's last step."""
        return scoring.transform_reward(self, raw_reward, purchased)

    def is_success(self, raw_reward: float, purchased: bool) -> bool:
        """Whether an episode succeeded under the protocol's rule."""
        return scoring.is_success(self, raw_reward, purchased)

    def figures(self, episodes) -> dict:
        """The protocol's metrics over episodes, aggregated as the family does (:func:`.scoring.figures`)."""
        return scoring.figures(self, episodes)

    def summary(self) -> dict:
        """One line's worth: shop, goals, n, step cap, metrics, source."""
        test = self.data["test"]["indices"]
        if "range" in test:
            a, b = test["range"]
            n = (b - a) if b is not None else None
        elif "draw" in test:
            n = int(test["draw"]["size"]) * int(test["draw"].get("draws_per_validation", 1))
        elif "seeds" in test:
            n = int(test["seeds"]["count"])
        elif "ids" in test:
            n = len(id_list(test["ids"]["list"]).ids)
        else:
            n = test["file"].get("count")
        first = self.data["sources"][0]
        return {"name": self.name, "shop": self.data["shop"]["release"], "goals": self.goal_kind, "n": n,
                "step_cap": self.step_cap, "metrics": [m.get("label", m["name"]) for m in self.metrics],
                "source": f"{first['repo']}@{first['commit'][:7]}"}


def goal_lookup(goals):
    """``(asin, instruction stem) -> (goal index, price cap)`` over a goal set, for files that hold goals.

    Args:
        goals: a :class:`~webshop_gym.data.goals.GoalSet` (its ``asin``, ``instruction`` and
            ``price_upper`` columns).
    """
    table: dict[tuple[str, str], tuple[int, float]] = {}
    for index in range(len(goals)):
        key = (str(goals.asin[index]).upper(), instruction_stem(goals.instruction[index]))
        table.setdefault(key, (index, float(goals.price_upper[index])))
    return lambda asin, stem: table.get((str(asin).upper(), stem))


def prompt_text(prompt: Mapping | None) -> str:
    """A prompt field in words: ``verl-agent (2 earlier steps)``, ``react (every earlier step)``, ``none``."""
    if not isinstance(prompt, Mapping) or prompt.get("format") is None:
        return "none (the family fixes no prompt)"
    history = prompt.get("history")
    shown = "every earlier step" if history is None else f"{history} earlier step{'s' if history != 1 else ''}"
    return f"{prompt['format']} ({shown})"


def _set_path(path, data: dict, dotted: str, value) -> None:
    """``data[a][b][c] = value`` for ``dotted = "a.b.c"`` (every part but the last must exist)."""
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        if not isinstance(node, dict) or key not in node:
            fail(path, f"set: {dotted!r} names no field of the protocol it extends ({key!r} is missing)")
        node = node[key]
    if not isinstance(node, dict) or not keys[-1]:
        fail(path, f"set: {dotted!r} names no field of the protocol it extends")
    node[keys[-1]] = copy.deepcopy(value)


def _extended(path, data: dict) -> dict:
    """A variant file merged onto the shipped protocol it ``extends``.

    The variant's own top-level fields replace the base's; ``set`` replaces values by dotted
    path (``"test.indices.draw.draws_per_validation": 1``); its ``sources`` replace the base's
    sources of the same ``field`` and add the others; ``notes`` and ``aliases`` are its own.
    """
    base_name = data["extends"]
    if not isinstance(base_name, str) or base_name not in protocol_names():
        fail(path, f"extends: {base_name!r} is not a shipped protocol")
    base = get_protocol(base_name)
    if base.data.get("extends"):
        fail(path, f"extends: {base_name!r} extends another protocol itself (one level only)")
    merged = copy.deepcopy(base.data)
    own_sources = data.get("sources") or []
    replaced = {s.get("field") for s in own_sources if isinstance(s, dict)}
    for key, value in data.items():
        if key not in ("extends", "set", "sources"):
            merged[key] = copy.deepcopy(value)
    merged.setdefault("aliases", [])
    if "aliases" not in data:
        merged["aliases"] = []
    for dotted, value in (data.get("set") or {}).items():
        _set_path(path, merged, str(dotted), value)
    merged["sources"] = [s for s in base.data["sources"] if s.get("field") not in replaced] + list(own_sources)
    merged["extends"] = base_name
    return merged


def load_protocol(path: str | os.PathLike) -> Protocol:
    """Load and check a protocol file (one JSON object in the ``webshop-gym/protocol`` format).

    A file with ``extends`` is a variant of a shipped protocol (see :func:`_extended`).

    Raises:
        ProtocolError: malformed (one line naming the file and the field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except (RecursionError, ValueError) as exc:
        raise ProtocolError(f"{path}: not a protocol file ({type(exc).__name__})") from None
    if isinstance(data, dict) and "extends" in data:
        if not isinstance(data.get("set", {}), dict):
            fail(path, "set must be an object of dotted field paths and values")
        data = _extended(path, data)
    if isinstance(data, dict):
        for key, default in (("seed", None), ("train", None), ("price_seed", 0), ("samples_per_goal", 1), ("notes", []),
                             ("aliases", []), ("decoding", None)):
            data.setdefault(key, default)
    validate(path, data)
    return Protocol(data, str(path))


def _data_dir():
    return resources.files("webshop_gym.protocols").joinpath("data")


@functools.lru_cache(maxsize=1)
def protocol_names() -> tuple[str, ...]:
    """Names of the protocols shipped with the package, sorted."""
    return tuple(sorted(p.name[: -len(".json")] for p in _data_dir().iterdir() if p.name.endswith(".json")))


@functools.cache  # one entry per shipped protocol (a few dozen small files)
def _shipped(name: str) -> Protocol:
    resource = _data_dir().joinpath(f"{name}.json")
    with resources.as_file(resource) as path:
        protocol = load_protocol(path)
    if protocol.name != name:
        raise ProtocolError(f"{resource}: the file's name field is {protocol.name!r}")
    return protocol


@functools.lru_cache(maxsize=1)
def alias_names() -> dict[str, str]:
    """``{alias: protocol name}`` of the shipped protocols' other names (``agenttuning`` -> ``agentbench``)."""
    names = protocol_names()
    out: dict[str, str] = {}
    for name in names:
        for alias in _shipped(name).aliases:
            if alias in names or alias in out:
                raise ProtocolError(f"protocol {name!r}: alias {alias!r} is already a protocol's name or alias")
            out[alias] = name
    return out


def get_protocol(name: str) -> Protocol:
    """The shipped protocol called ``name`` (or one of its :func:`alias_names`).

    Raises:
        UnknownProtocol: not a shipped protocol (the message lists them, with a close match).
    """
    names = protocol_names()
    if name not in names:
        aliases = alias_names()
        if name in aliases:
            return _shipped(aliases[name])
        hint = close_match(str(name), (*names, *aliases))
        raise UnknownProtocol(f"unknown protocol {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                              + f"; known protocols: {', '.join(names)} (and {', '.join(sorted(aliases))})")
    return _shipped(name)
