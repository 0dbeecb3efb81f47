"""Protocol definitions: one versioned JSON file per protocol, loaded and checked.

A protocol file (``webshop_gym/protocols/data/<name>.json``, format ``webshop-gym/protocol``
version 1) holds the shop it needs, the goal kind, its ``test`` and ``train`` goal specs
(:mod:`.resolve`), the seed it takes, the price seed, the step cap, the reward transform, the
success rule, the metrics and their aggregation (:mod:`.scoring`), samples per goal, and the
source (repository, file, commit, what was read) of each value.  :func:`get_protocol` loads one
by name; :class:`Protocol` resolves its goals, checks a shop and computes the fingerprint.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from webshop_gym.error import ProtocolError, ShopMismatch, UnknownProtocol, close_match
from webshop_gym.protocols import scoring
from webshop_gym.protocols.idfiles import read_id_file
from webshop_gym.protocols.resolve import Episode, reachable_ids, resolve_episodes, spec_ids

__all__ = ["FORMAT", "Protocol", "Resolution", "get_protocol", "load_protocol", "protocol_names", "shop_identity"]

FORMAT = "webshop-gym/protocol"
FORMAT_VERSION = 1
SEMANTIC_FIELDS = ("shop", "goal_kind", "test", "price_seed", "step_cap", "reward", "success", "metrics",
                   "aggregate", "samples_per_goal")
"""The fields a number depends on: the protocol fingerprint digests these (not names, citations or notes)."""

SHOP_IDENTITY = ("catalog", "files", "products", "goals", "goal_kind")
"""The parts of a shop's fingerprint a protocol fingerprint includes (prices enter per episode, as price seeds)."""


def _fail(path, message: str):
    raise ProtocolError(f"{path}: {message}")


def _expect(path, data: Mapping, key: str, kind, check=None, what: str | None = None):
    if key not in data:
        _fail(path, f"missing field {key!r}")
    value = data[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, (int, float)))
    if not ok or (check is not None and not check(value)):
        _fail(path, f"field {key!r} must be {what or getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _check_spec(path, spec, part: str) -> None:
    if not isinstance(spec, dict):
        _fail(path, f"field {part!r} must be a goal spec (an object), got {spec!r}")
    order = _expect(path, spec, "list", dict)
    shuffle = order.get("shuffle_seed", 233)
    if shuffle != "worker" and (isinstance(shuffle, bool) or not isinstance(shuffle, int)):
        _fail(path, f"{part}.list.shuffle_seed must be an integer or 'worker', got {shuffle!r}")
    indices = _expect(path, spec, "indices", dict)
    rules = [k for k in ("range", "draw", "seeds", "file") if k in indices]
    if len(rules) != 1 or len(indices) != 1:
        _fail(path, f"{part}.indices must hold exactly one of range, draw, seeds, file; got {sorted(indices)}")
    rule = indices[rules[0]]
    if rules[0] == "range" and not (isinstance(rule, list) and len(rule) == 2 and isinstance(rule[0], int)
                                    and (rule[1] is None or (isinstance(rule[1], int) and rule[1] > rule[0]))):
        _fail(path, f"{part}.indices.range must be [start, stop] with stop > start (or null: to the end), got {rule!r}")
    if rules[0] == "draw":
        for key in ("population", "size"):
            if key not in rule:
                _fail(path, f"{part}.indices.draw needs {key!r}")
    if rules[0] == "seeds":
        for key in ("count", "mod", "add"):
            if not isinstance(rule.get(key), int):
                _fail(path, f"{part}.indices.seeds needs an integer {key!r}")
    if rules[0] == "file" and not isinstance(rule.get("format"), str):
        _fail(path, f"{part}.indices.file needs a 'format'")
    if (shuffle == "worker" or rules[0] == "draw") and not isinstance(spec.get("workers"), dict):
        _fail(path, f"{part} reads per-worker goal lists: it needs 'workers' (seed_offset, count)")


def _validate(path, data) -> None:
    if not isinstance(data, dict):
        _fail(path, "a protocol file is a JSON object")
    if data.get("format") != FORMAT:
        _fail(path, f"not a protocol file: format {data.get('format')!r}, expected {FORMAT!r}")
    if data.get("format_version") != FORMAT_VERSION:
        _fail(path, f"format_version {data.get('format_version')!r} is not supported (expected {FORMAT_VERSION})")
    _expect(path, data, "name", str, lambda v: re.fullmatch(r"[a-z0-9][a-z0-9.-]*", v) is not None, "a lowercase name")
    _expect(path, data, "version", int, lambda v: v >= 1, "an integer >= 1")
    for key in ("title", "family", "reports"):
        _expect(path, data, key, str)
    shop = _expect(path, data, "shop", dict)
    if shop.get("release") not in ("1k", "full", "any"):
        _fail(path, f"shop.release must be '1k', 'full' or 'any', got {shop.get('release')!r}")
    _expect(path, data, "goal_kind", str, lambda v: v in ("synthetic", "human", "any"), "'synthetic', 'human' or 'any'")
    seed = data.get("seed", None)
    if seed is not None and not (isinstance(seed, dict) and isinstance(seed.get("default"), int) and isinstance(seed.get("name"), str)):
        _fail(path, f"field 'seed' must be null or {{name, default}}, got {seed!r}")
    _check_spec(path, data.get("test"), "test")
    if data.get("train") is not None:
        _check_spec(path, data["train"], "train")
    price = data.get("price_seed", 0)
    if price != "worker" and (isinstance(price, bool) or not isinstance(price, int)):
        _fail(path, f"field 'price_seed' must be an integer or 'worker', got {price!r}")
    _expect(path, data, "step_cap", int, lambda v: v >= 1, "an integer >= 1")
    reward = _expect(path, data, "reward", dict)
    if reward.get("transform") not in ("raw", "indicator"):
        _fail(path, f"reward.transform must be 'raw' or 'indicator', got {reward.get('transform')!r}")
    if reward["transform"] == "indicator" and not all(isinstance(reward.get(k), (int, float)) for k in ("success_value", "failure_value")):
        _fail(path, "reward.transform 'indicator' needs success_value and failure_value")
    success = _expect(path, data, "success", dict)
    if not isinstance(success.get("raw_at_least"), (int, float)):
        _fail(path, "success needs raw_at_least (a number)")
    metrics = _expect(path, data, "metrics", list, lambda v: len(v) > 0, "a non-empty list")
    for m in metrics:
        if not (isinstance(m, dict) and isinstance(m.get("name"), str) and m.get("of") in ("success", "raw_reward")):
            _fail(path, f"each metric needs a name and of ('success' or 'raw_reward'), got {m!r}")
    aggregate = _expect(path, data, "aggregate", dict)
    if aggregate.get("over") not in ("episodes", "draws", "trials"):
        _fail(path, f"aggregate.over must be 'episodes', 'draws' or 'trials', got {aggregate.get('over')!r}")
    _expect(path, data, "samples_per_goal", int, lambda v: v >= 1, "an integer >= 1")
    sources = _expect(path, data, "sources", list, lambda v: len(v) > 0, "a non-empty list")
    for s in sources:
        if not (isinstance(s, dict) and all(isinstance(s.get(k), str) for k in ("field", "repo", "file", "commit", "read"))
                and re.fullmatch(r"[0-9a-f]{40}", s["commit"])):
            _fail(path, f"each source needs field, repo, file, a 40-hex commit and read; got {s!r}")
    _expect(path, data, "notes", list)


def _canonical_json(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def shop_identity(shop) -> dict:
    """The parts of a shop's fingerprint that a protocol checks and digests.

    Args:
        shop: a :class:`~webshop_gym.shop.Shop` or its ``fingerprint()`` dict.
    """
    fp = shop.fingerprint() if hasattr(shop, "fingerprint") else dict(shop)
    return {k: fp.get(k) for k in SHOP_IDENTITY}


@dataclass(frozen=True)
class Resolution:
    """The episodes one evaluation under a protocol plays.

    Attributes:
        protocol: the protocol's name.
        seed: the seed used (``None`` for protocols that take none).
        validation: which validation of a run (verl-agent), else 0.
        episodes: the episodes in the family's order.
        ids_file_sha256: SHA-256 of the goal-id file (``--protocol-file``), when the protocol reads one.
    """

    protocol: str
    seed: int | None
    validation: int
    episodes: tuple[Episode, ...]
    ids_file_sha256: str | None = None

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
        return {k: self.data.get(k) for k in SEMANTIC_FIELDS}

    def definition_digest(self) -> str:
        """SHA-256 (16 hex) of :meth:`definition`: the same rules under another name give the same digest."""
        return hashlib.sha256(_canonical_json(self.definition())).hexdigest()[:16]

    def fingerprint(self, resolution: Resolution, shop) -> str:
        """The protocol fingerprint: a digest of the definition, the resolved goals and the shop.

        Two numbers are comparable exactly when their protocol fingerprints are equal.

        Args:
            resolution: the episodes played (:meth:`resolve`).
            shop: the :class:`~webshop_gym.shop.Shop` (or its fingerprint dict) they were played on.
        """
        payload = {
            "definition": self.definition(),
            "episodes": [[e.goal, e.price_seed] for e in resolution.episodes],
            "ids_file_sha256": resolution.ids_file_sha256,
            "shop": shop_identity(shop),
        }
        return hashlib.sha256(_canonical_json(payload)).hexdigest()[:16]

    # -- goals --------------------------------------------------------------------------------

    @property
    def needs_file(self) -> bool:
        """Whether the test goal ids come from a file the user supplies (``--protocol-file``)."""
        return "file" in self.data["test"]["indices"]

    @property
    def draws_per_validation(self) -> int | None:
        """Resets per validation for per-validation draws (verl-agent), else ``None``."""
        draw = self.data["test"]["indices"].get("draw")
        return None if draw is None else int(draw.get("draws_per_validation", 1))

    def _seed(self, seed: int | None) -> int | None:
        spec = self.data.get("seed")
        if spec is None:
            if seed is not None:
                raise ProtocolError(f"protocol {self.name!r} plays fixed goals and takes no seed (got seed {seed})")
            return None
        if seed is None:
            return int(spec["default"])
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ProtocolError(f"the seed of protocol {self.name!r} ({spec['name']}) must be an integer >= 0, got {seed!r}")
        return int(seed)

    def _num_goals(self, num_goals: int | None) -> int | None:
        return int(num_goals) if num_goals is not None else self.data["shop"].get("goals")

    def _file_ids(self, spec: Mapping, ids_file) -> tuple[np.ndarray | None, str | None]:
        rule = spec["indices"].get("file")
        if rule is None:
            if ids_file is not None:
                raise ProtocolError(f"protocol {self.name!r} does not read a goal-id file (--protocol-file is for "
                                    f"{', '.join(n for n in protocol_names() if get_protocol(n).needs_file)})")
            return None, None
        if ids_file is None:
            raise ProtocolError(f"protocol {self.name!r} reads its goal ids from a file that is not shipped: pass your "
                                f"copy with --protocol-file FILE ({rule.get('where')})")
        return read_id_file(ids_file, rule, self.name)

    def resolve(self, seed: int | None = None, validation: int = 0, *, num_goals: int | None = None,
                ids_file: str | os.PathLike | None = None) -> Resolution:
        """The episodes of one evaluation: canonical goals, price seeds, the family's positions.

        Args:
            seed: the protocol's seed (``protocol.seed["name"]``: verl-agent's ``env.seed``,
                RAGEN's ``seed.val``); ``None``: its default.  Protocols with fixed goals take none.
            validation: the K-th validation of a run (verl-agent draws new goals each time).
            num_goals: goals in the shop (default: the count the protocol's shop has).
            ids_file: the goal-id file, for protocols that read one.
        """
        seed = self._seed(seed)
        if isinstance(validation, bool) or not isinstance(validation, (int, np.integer)) or validation < 0:
            raise ProtocolError(f"validation must be an integer >= 0, got {validation!r}")
        if validation and self.draws_per_validation is None:
            raise ProtocolError(f"protocol {self.name!r} plays the same goals at every validation; --validation is for "
                                "protocols that draw goals per validation (verl-agent)")
        spec = self.data["test"]
        ids, digest = self._file_ids(spec, ids_file)
        episodes = resolve_episodes(spec, name=self.name, seed=seed, validation=int(validation),
                                    n=self._num_goals(num_goals), file_ids=ids, default_price_seed=self.data.get("price_seed", 0))
        return Resolution(self.name, seed, int(validation), tuple(episodes), digest)

    def test_ids(self, seed: int | None = None, *, num_goals: int | None = None,
                 ids_file: str | os.PathLike | None = None) -> np.ndarray:
        """Every canonical goal the protocol's test can play (any validation), sorted."""
        ids, _ = self._file_ids(self.data["test"], ids_file)
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
        ids, _ = self._file_ids(spec, ids_file)
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
        files = ", ".join(f"{name} {digest}" for name, digest in sorted(shop.get("files", {}).items()))
        return f"the {shop['release']} release ({', '.join(parts)}{'; ' + files if files else ''})"

    def check_shop(self, shop) -> None:
        """Raise :class:`~webshop_gym.error.ShopMismatch` unless ``shop`` is the protocol's shop.

        Args:
            shop: a :class:`~webshop_gym.shop.Shop` or its ``fingerprint()`` dict.
        """
        fp = shop_identity(shop)
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
        for name, digest in sorted(spec.get("files", {}).items()):
            got = (fp.get("files") or {}).get(name)
            if got != digest:
                problems.append(f"{name} {got or 'missing'}, not {digest}")
        if problems:
            raise ShopMismatch(
                f"protocol {self.name!r} needs {self.describe_shop()}, but this shop has {'; '.join(problems)} "
                f"(shop fingerprint: catalog {fp['catalog']}, {fp['products']:,} products, {fp['goals']:,} {fp['goal_kind']} goals)"
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
        else:
            n = test["file"].get("count")
        first = self.data["sources"][0]
        return {"name": self.name, "shop": self.data["shop"]["release"], "goals": self.goal_kind, "n": n,
                "step_cap": self.step_cap, "metrics": [m.get("label", m["name"]) for m in self.metrics],
                "source": f"{first['repo']}@{first['commit'][:7]}"}


def load_protocol(path: str | os.PathLike) -> Protocol:
    """Load and check a protocol file (one JSON object in the ``webshop-gym/protocol`` format).

    Raises:
        ProtocolError: malformed (one line naming the file and the field).
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, dict):
        for key, default in (("seed", None), ("train", None), ("price_seed", 0), ("samples_per_goal", 1), ("notes", [])):
            data.setdefault(key, default)
    _validate(path, data)
    return Protocol(data, str(path))


def _data_dir():
    return resources.files("webshop_gym.protocols").joinpath("data")


@functools.lru_cache(maxsize=1)
def protocol_names() -> tuple[str, ...]:
    """Names of the protocols shipped with the package, sorted."""
    return tuple(sorted(p.name[: -len(".json")] for p in _data_dir().iterdir() if p.name.endswith(".json")))


@functools.cache  # one entry per shipped protocol (13 small files)
def _shipped(name: str) -> Protocol:
    resource = _data_dir().joinpath(f"{name}.json")
    with resources.as_file(resource) as path:
        protocol = load_protocol(path)
    if protocol.name != name:
        raise ProtocolError(f"{resource}: the file's name field is {protocol.name!r}")
    return protocol


def get_protocol(name: str) -> Protocol:
    """The shipped protocol called ``name``.

    Raises:
        UnknownProtocol: not a shipped protocol (the message lists them, with a close match).
    """
    names = protocol_names()
    if name not in names:
        hint = close_match(str(name), names)
        raise UnknownProtocol(f"unknown protocol {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
                              + f"; known protocols: {', '.join(names)}")
    return _shipped(name)
