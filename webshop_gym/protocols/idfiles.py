"""Goal-id files that a protocol's family keeps on a data hub (``--protocol-file FILE``).

Each reader takes the file in the family's own format and returns the ids in file order and the
file's SHA-256.  Reading is bounded (:data:`MAX_BYTES`) and checked: a wrong format, a wrong
count, a duplicate id or (when the protocol pins one) a wrong digest is one
:class:`~webshop_gym.error.ProtocolError` line naming the file.

* ``agentgym-item-ids``: AgentGym's AgentEval test file, a JSON list of objects whose
  ``item_id`` is ``"webshop_<n>"`` (``agentenv/examples/basic/base_eval.py`` reads it the same way).
* ``seed-fairness-jsonl``: the SEED/SDAR fairness files, one JSON object per line with
  ``metadata.goal_idx`` (``agent_system/environments/fairness.py``).
* ``agentboard-goals-jsonl``: AgentBoard's ``data/webshop/test.jsonl``, one goal per line (``goal``,
  ``additional_info.product_id``, ``additional_info.price_upper``, ``difficulty``): the file holds
  goals, not ids; :func:`read_goal_records` reads them and the protocol matches each to the shop's
  goal list (:meth:`webshop_gym.protocols.Protocol.resolve`'s ``goal_lookup``).

Every id is an integer in ``[0, MAX_ID]``: a longer digit string, a deeper nesting than JSON
files of ids have, or a number past ``int64`` is one line naming the file and the item, never
an internal error.  Two files that hold the same ids (CRLF line ends, blank lines, another
indentation) resolve to the same goals, and a protocol fingerprint digests the goals, not the
file's bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from webshop_gym.error import ProtocolError
from webshop_gym.protocols.idlists import id_list

__all__ = ["FORMATS", "GOAL_FORMATS", "MAX_BYTES", "MAX_ID", "instruction_stem", "read_goal_records", "read_id_file"]

MAX_BYTES = 64 * 1024 * 1024
"""Largest goal-id file read (the known ones are a few kilobytes to a few megabytes)."""

MAX_ID = 2**63 - 1
"""Largest goal id read (``int64``); no shop has this many goals, so larger ones name no goal anywhere."""

MAX_DIGITS = len(str(MAX_ID))

_ITEM_ID = re.compile(r"webshop_(\d+)")


def _shown(value) -> str:
    """A value for a one-line message: long digit strings and texts cut with their length."""
    text = repr(value) if not isinstance(value, int) or isinstance(value, bool) else None
    if text is None:
        digits = len(str(abs(value))) if abs(value) < 10 ** 40 else None
        text = str(value) if digits is not None and digits <= 24 else f"an integer of {digits or 'over 40'} digits"
    return text if len(text) <= 60 else text[:40] + f"... ({len(text):,} characters)"


def _loads(path: Path, text: str, what: str):
    """``json.loads`` whose every failure is one :class:`ProtocolError` line (too deep, too many digits)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"{path}: {what}: not JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ProtocolError(f"{path}: {what}: nested deeper than any goal-id file (a list of ids or of items)") from None
    except ValueError as exc:  # a number of more than 4,300 digits (Python's int conversion limit)
        raise ProtocolError(f"{path}: {what}: holds a number too long to be a goal id ({_one(exc)})") from None


def _one(exc: BaseException) -> str:
    return str(exc).split(";")[0].strip()


def _goal_id(value, where: str) -> int:
    """``value`` as a goal id (an int in [0, MAX_ID]), else a ProtocolError naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ID:
        raise ProtocolError(f"{where}: expected a goal index, an integer in 0-{MAX_ID:,}, got {_shown(value)}")
    return value


def _agentgym(path: Path, text: str) -> list[int]:
    items = _loads(path, text, "not AgentGym's test file")
    if not isinstance(items, list):
        raise ProtocolError(f"{path}: not AgentGym's test file: expected a JSON list of items, got {type(items).__name__}")
    ids = []
    for k, item in enumerate(items):
        item_id = item.get("item_id") if isinstance(item, dict) else None
        match = _ITEM_ID.fullmatch(item_id) if isinstance(item_id, str) else None
        if match is None:
            raise ProtocolError(f"{path}, item {k}: expected an item_id 'webshop_<n>', got {_shown(item_id)}")
        digits = match.group(1)
        if len(digits) > MAX_DIGITS:
            raise ProtocolError(f"{path}, item {k}: item_id 'webshop_<{len(digits):,} digits>' is not a goal index "
                                f"(at most {MAX_ID:,})")
        ids.append(_goal_id(int(digits), f"{path}, item {k}"))
    _refuse_repeats(path, [(k, i) for k, i in enumerate(ids)], "item", "this goal id", "agentgym")
    return ids


def _refuse_repeats(path: Path, keys: list, place: str, what: str, protocol: str) -> None:
    """One line naming the first key the file gives twice (``place``: ``item`` or ``line``, numbered as the file's)."""
    seen: dict = {}
    for where, key in keys:
        if key in seen:
            raise ProtocolError(f"{path}, {place} {where}: {what} again ({place} {seen[key]} gave it); protocol "
                                f"{protocol!r} plays each goal of its file once: not that file")
        seen[key] = where


def _json_lines(path: Path, text: str):
    """``(line number, parsed line)`` of a JSON-lines text, blank lines skipped."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, _loads(path, line, f"line {number}: not a JSON object per line")


def _seed_fairness(path: Path, text: str) -> list[int]:
    ids, lines = [], []
    for number, row in _json_lines(path, text):
        goal = row.get("metadata", {}).get("goal_idx") if isinstance(row, dict) and isinstance(row.get("metadata"), dict) else None
        if isinstance(goal, bool) or not isinstance(goal, int) or goal < 0:
            raise ProtocolError(f"{path}, line {number}: expected metadata.goal_idx, a goal index >= 0, got {_shown(goal)}")
        ids.append(_goal_id(goal, f"{path}, line {number}: metadata.goal_idx"))
        lines.append(number)
    _refuse_repeats(path, list(zip(lines, ids)), "line", "this metadata.goal_idx", "seed-fairness")
    return ids


FORMATS = {"agentgym-item-ids": _agentgym, "seed-fairness-jsonl": _seed_fairness}
"""Readers by format name (a protocol file's ``indices.file.format``)."""

GOAL_FORMATS = ("agentboard-goals-jsonl",)
"""File formats that hold goals rather than ids (:func:`read_goal_records`)."""

_PRICE_TEXT = re.compile(r",? and price lower than \d+(?:\.\d+)? dollars\s*$")


def instruction_stem(text: str) -> str:
    """An instruction without its price phrase (``", and price lower than 30.00 dollars"``), lowercased and trimmed.

    The reference appends the phrase to a human instruction from a price cap it draws at load
    time, so the same goal of two processes differs only there.

    >>> instruction_stem("i need a red scarf, and price lower than 30.00 dollars")
    'i need a red scarf'
    """
    return _PRICE_TEXT.sub("", str(text).strip()).strip().lower()


def _agentboard(path: Path, text: str) -> list[dict]:
    """AgentBoard's goal lines: ``{"asin", "stem", "instruction", "price_upper", "difficulty"}`` per line, in order."""
    out = []
    for number, row in _json_lines(path, text):
        info = row.get("additional_info") if isinstance(row, dict) else None
        goal = row.get("goal") if isinstance(row, dict) else None
        asin = info.get("product_id") if isinstance(info, dict) else None
        if not isinstance(goal, str) or not goal.strip() or not isinstance(asin, str) or not asin.strip():
            raise ProtocolError(f"{path}, line {number}: expected an AgentBoard goal line with 'goal' (the instruction) "
                                f"and 'additional_info.product_id'; got keys {sorted(row) if isinstance(row, dict) else _shown(row)}")
        cap = info.get("price_upper")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))):
            raise ProtocolError(f"{path}, line {number}: additional_info.price_upper must be a number, got {_shown(cap)}")
        out.append({"asin": asin.strip().upper(), "stem": instruction_stem(goal), "instruction": goal,
                    "price_upper": None if cap is None else float(cap), "difficulty": row.get("difficulty"), "line": number})
    _refuse_repeats(path, [(r["line"], (r["asin"], r["stem"])) for r in out], "line",
                    "this goal (the same product and instruction)", "agentboard")
    return out


def _read_text(path: Path, rule: Mapping, protocol: str) -> tuple[str, str]:
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ProtocolError(f"{path}: {size:,} bytes is not a goal-id file for protocol {protocol!r} "
                            f"(at most {MAX_BYTES:,}); expected {rule.get('where')}")
    data = path.read_bytes()
    try:
        return data.decode("utf-8"), hashlib.sha256(data).hexdigest()
    except UnicodeDecodeError:
        raise ProtocolError(f"{path}: not UTF-8 text; protocol {protocol!r} expects {rule.get('where')}") from None


def _check_count(path: Path, found: int, rule: Mapping, protocol: str, what: str = "goal ids") -> None:
    expected = rule.get("count")
    if expected is not None and found != int(expected):
        raise ProtocolError(f"{path}: {found} {what}, protocol {protocol!r} expects {int(expected)} "
                            f"({rule.get('where')})")


def read_goal_records(path: str | os.PathLike, rule: Mapping, protocol: str) -> tuple[list[dict], str]:
    """Read a file that holds goals, not ids (:data:`GOAL_FORMATS`): the records in order and the file's SHA-256.

    Raises:
        ProtocolError: wrong format or count (one line, naming the file).
    """
    path = Path(path)
    if rule.get("format") not in GOAL_FORMATS:
        raise ProtocolError(f"protocol {protocol!r}: {rule.get('format')!r} is not a goal file format")
    text, digest = _read_text(path, rule, protocol)
    records = _agentboard(path, text)
    _check_count(path, len(records), rule, protocol, "goals")
    return records, digest


def _check_prefix(path: Path, ids: list[int], rule: Mapping, protocol: str) -> None:
    """A file must start with the ids a family published (``starts_with``: a shipped id list)."""
    name = rule.get("starts_with")
    if not name:
        return
    published = id_list(name)
    head = published.ids.tolist()
    if ids[: len(head)] != head:
        got = ", ".join(str(i) for i in ids[: len(head)])
        raise ProtocolError(f"{path}: its first {len(head)} ids ({got}) are not the {len(head)} published first ids "
                            f"of {rule.get('where')} ({', '.join(map(str, head))}; {published.cite()}): not that file")


def read_id_file(path: str | os.PathLike, rule: Mapping, protocol: str) -> tuple[np.ndarray, str]:
    """Read and check a protocol's goal-id file.

    Args:
        path: the file.
        rule: the protocol's ``indices.file`` (``format``, ``count``, optional ``sha256``, ``where``,
            ``starts_with``: a shipped id list the file must begin with).
        protocol: the protocol's name (for messages).

    Returns:
        ``(ids, sha256)``: the ids in file order (read-only int64) and the file's SHA-256 (hex).

    Raises:
        ProtocolError: wrong format, count or digest (one line, naming the file and where to get it).
        OSError: the file cannot be read.
    """
    path = Path(path)
    reader = FORMATS.get(rule.get("format"))
    if reader is None:
        raise ProtocolError(f"protocol {protocol!r}: unknown goal-id file format {rule.get('format')!r}")
    text, digest = _read_text(path, rule, protocol)
    ids = reader(path, text)
    _check_count(path, len(ids), rule, protocol)
    _check_prefix(path, ids, rule, protocol)
    pinned = rule.get("sha256")
    if pinned and digest != pinned:
        raise ProtocolError(f"{path}: SHA-256 {digest[:16]}... is not the file protocol {protocol!r} was defined on "
                            f"({str(pinned)[:16]}...; {rule.get('where')})")
    out = np.asarray(ids, dtype=np.int64)
    out.flags.writeable = False
    return out, digest
