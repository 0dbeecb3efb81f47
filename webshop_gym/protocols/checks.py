"""Checks of a protocol file: every field's type and range, one :class:`~webshop_gym.error.ProtocolError` line each.

:func:`validate` is what :func:`webshop_gym.protocols.load_protocol` runs on every file (shipped
or the user's) before a :class:`~webshop_gym.protocols.Protocol` is built from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from webshop_gym.error import ProtocolError
from webshop_gym.protocols import scoring
from webshop_gym.protocols.decoding import check_decoding
from webshop_gym.protocols.idlists import id_list
from webshop_gym.protocols.steps import check_steps

__all__ = ["FORMAT", "FORMAT_VERSION", "OBSERVATION_MODES", "PROMPT_FORMATS", "fail", "validate"]

FORMAT = "webshop-gym/protocol"
FORMAT_VERSION = 1

OBSERVATION_MODES = ("text", "text_rich", "html", "url")
"""The env's observation modes (``webshop_gym.engine.OBSERVATION_MODES``; this layer does not import the engine)."""

PROMPT_FORMATS = ("think-answer", "verl-agent", "react", "tools")
"""The prompt formats of this package's LLM adapters (``webshop_gym.agents.prompts`` and the served ``tools``)."""


def fail(path, message: str):
    """Raise the one-line :class:`~webshop_gym.error.ProtocolError` of a malformed protocol file."""
    raise ProtocolError(f"{path}: {message}")


def _expect(path, data: Mapping, key: str, kind, check=None, what: str | None = None):
    if key not in data:
        fail(path, f"missing field {key!r}")
    value = data[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, (int, float)))
    if not ok or (check is not None and not check(value)):
        fail(path, f"field {key!r} must be {what or getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _check_spec(path, spec, part: str) -> None:
    if not isinstance(spec, dict):
        fail(path, f"field {part!r} must be a goal spec (an object), got {spec!r}")
    order = _expect(path, spec, "list", dict)
    shuffle = order.get("shuffle_seed", 233)
    if shuffle != "worker" and (isinstance(shuffle, bool) or not isinstance(shuffle, int)):
        fail(path, f"{part}.list.shuffle_seed must be an integer or 'worker', got {shuffle!r}")
    indices = _expect(path, spec, "indices", dict)
    rules = [k for k in ("range", "draw", "seeds", "file", "ids") if k in indices]
    if len(rules) != 1 or len(indices) != 1:
        fail(path, f"{part}.indices must hold exactly one of range, draw, seeds, file, ids; got {sorted(indices)}")
    rule = indices[rules[0]]
    if rules[0] == "range" and not (isinstance(rule, list) and len(rule) == 2 and isinstance(rule[0], int)
                                    and (rule[1] is None or (isinstance(rule[1], int) and rule[1] > rule[0]))):
        fail(path, f"{part}.indices.range must be [start, stop] with stop > start (or null: to the end), got {rule!r}")
    if rules[0] == "draw":
        for key in ("population", "size"):
            if key not in rule:
                fail(path, f"{part}.indices.draw needs {key!r}")
    if rules[0] == "seeds":
        for key in ("count", "mod", "add"):
            if not isinstance(rule.get(key), int):
                fail(path, f"{part}.indices.seeds needs an integer {key!r}")
    if rules[0] == "file" and not isinstance(rule.get("format"), str):
        fail(path, f"{part}.indices.file needs a 'format'")
    for key in ("shipped", "starts_with") if rules[0] == "file" else ("list",) if rules[0] == "ids" else ():
        if rule.get(key) is not None or key == "list":
            _check_id_list(path, f"{part}.indices.{rules[0]}.{key}", rule.get(key),
                           rule.get("count") if key != "starts_with" else None)
    if (shuffle == "worker" or rules[0] == "draw") and not isinstance(spec.get("workers"), dict):
        fail(path, f"{part} reads per-worker goal lists: it needs 'workers' (seed_offset, count)")


def _check_id_list(path, where: str, name, count) -> None:
    try:
        ids = id_list(name).ids
    except ProtocolError as exc:
        fail(path, f"{where}: {exc}")
    if count is not None and len(ids) != count:
        fail(path, f"{where}: list {name!r} holds {len(ids)} ids, the protocol expects {count}")


def _check_source(path, s) -> None:
    if not (isinstance(s, dict) and all(isinstance(s.get(k), str) for k in ("field", "repo", "file", "commit", "read"))
            and re.fullmatch(r"[0-9a-f]{40}", s["commit"])):
        fail(path, f"each source needs field, repo, file, a 40-hex commit and read; got {s!r}")
    line = s.get("line")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
        fail(path, f"a source's line must be an integer >= 1, got {line!r}")


def _check_played(path, data) -> None:
    """``observation`` ({mode}) and ``prompt`` ({format, history}): what the family's agents read."""
    observation = _expect(path, data, "observation", dict)
    if observation.get("mode") not in OBSERVATION_MODES or set(observation) != {"mode"}:
        fail(path, f"field 'observation' must be {{\"mode\": one of {', '.join(OBSERVATION_MODES)}}}, got {observation!r}")
    prompt = _expect(path, data, "prompt", dict)
    fmt, history = prompt.get("format"), prompt.get("history")
    if (fmt is not None and fmt not in PROMPT_FORMATS) or set(prompt) - {"format", "history"} or "format" not in prompt:
        fail(path, f"field 'prompt' must be {{\"format\": null or one of {', '.join(PROMPT_FORMATS)}, \"history\": "
                    f"null or turns}}, got {prompt!r}")
    if history is not None and (isinstance(history, bool) or not isinstance(history, int) or history < 0):
        fail(path, f"prompt.history must be null (every earlier turn) or an integer >= 0, got {history!r}")


def validate(path, data) -> None:
    """Raise :class:`~webshop_gym.error.ProtocolError` (one line: the file and the field) unless ``data`` is a valid protocol."""
    if not isinstance(data, dict):
        fail(path, "a protocol file is a JSON object")
    if data.get("format") != FORMAT:
        fail(path, f"not a protocol file: format {data.get('format')!r}, expected {FORMAT!r}")
    if data.get("format_version") != FORMAT_VERSION:
        fail(path, f"format_version {data.get('format_version')!r} is not supported (expected {FORMAT_VERSION})")
    _expect(path, data, "name", str, lambda v: re.fullmatch(r"[a-z0-9][a-z0-9.-]*", v) is not None, "a lowercase name")
    _expect(path, data, "version", int, lambda v: v >= 1, "an integer >= 1")
    for key in ("title", "family", "reports"):
        _expect(path, data, key, str)
    shop = _expect(path, data, "shop", dict)
    if shop.get("release") not in ("1k", "full", "any"):
        fail(path, f"shop.release must be '1k', 'full' or 'any', got {shop.get('release')!r}")
    _expect(path, data, "goal_kind", str, lambda v: v in ("synthetic", "human", "any"), "'synthetic', 'human' or 'any'")
    seed = data.get("seed", None)
    if seed is not None and not (isinstance(seed, dict) and isinstance(seed.get("default"), int) and isinstance(seed.get("name"), str)):
        fail(path, f"field 'seed' must be null or {{name, default}}, got {seed!r}")
    _check_spec(path, data.get("test"), "test")
    if data.get("train") is not None:
        _check_spec(path, data["train"], "train")
    price = data.get("price_seed", 0)
    if price != "worker" and (isinstance(price, bool) or not isinstance(price, int)):
        fail(path, f"field 'price_seed' must be an integer or 'worker', got {price!r}")
    _expect(path, data, "step_cap", int, lambda v: v >= 1, "an integer >= 1")
    problem = check_steps(data.get("steps", {}), data["step_cap"])
    if problem is not None:
        fail(path, problem)
    reward = _expect(path, data, "reward", dict)
    if reward.get("transform") not in ("raw", "indicator"):
        fail(path, f"reward.transform must be 'raw' or 'indicator', got {reward.get('transform')!r}")
    if reward["transform"] == "indicator" and not all(isinstance(reward.get(k), (int, float)) for k in ("success_value", "failure_value")):
        fail(path, "reward.transform 'indicator' needs success_value and failure_value")
    success = _expect(path, data, "success", dict)
    if not isinstance(success.get("raw_at_least"), (int, float)):
        fail(path, "success needs raw_at_least (a number)")
    metrics = _expect(path, data, "metrics", list, lambda v: len(v) > 0, "a non-empty list")
    for m in metrics:
        if not (isinstance(m, dict) and isinstance(m.get("name"), str) and m.get("of") in scoring.METRIC_INPUTS):
            fail(path, f"each metric needs a name and of ({', '.join(map(repr, scoring.METRIC_INPUTS))}), got {m!r}")
    aggregate = _expect(path, data, "aggregate", dict)
    if aggregate.get("over") not in ("episodes", "draws", "trials"):
        fail(path, f"aggregate.over must be 'episodes', 'draws' or 'trials', got {aggregate.get('over')!r}")
    _expect(path, data, "samples_per_goal", int, lambda v: v >= 1, "an integer >= 1")
    _check_played(path, data)
    problem = check_decoding(data.get("decoding"))
    if problem is not None:
        fail(path, problem)
    sources = _expect(path, data, "sources", list, lambda v: len(v) > 0, "a non-empty list")
    for source in sources:
        _check_source(path, source)
    notes = _expect(path, data, "notes", list, lambda v: all(isinstance(n, str) and n.strip() for n in v),
                    "a list of non-empty strings")
    repeated = sorted({n for n in notes if notes.count(n) > 1})
    if repeated:
        fail(path, f"a note is given {notes.count(repeated[0])} times (each note once): {repeated[0][:60]!r}...")
    aliases = _expect(path, data, "aliases", list)
    for alias in aliases:
        if not isinstance(alias, str) or re.fullmatch(r"[a-z0-9][a-z0-9.-]*", alias) is None or alias == data["name"]:
            fail(path, f"each alias must be a lowercase name other than the protocol's, got {alias!r}")
