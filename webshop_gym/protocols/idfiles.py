"""Goal-id files that a protocol's family keeps on a data hub (``--protocol-file FILE``).

Each reader takes the file in the family's own format and returns the ids in file order and the
file's SHA-256.  Reading is bounded (:data:`MAX_BYTES`) and checked: a wrong format, a wrong
count, a duplicate id or (when the protocol pins one) a wrong digest is one
:class:`~webshop_gym.error.ProtocolError` line naming the file.

* ``agentgym-item-ids``: AgentGym's AgentEval test file, a JSON list of objects whose
  ``item_id`` is ``"webshop_<n>"`` (``agentenv/examples/basic/base_eval.py`` reads it the same way).
* ``seed-fairness-jsonl``: the SEED/SDAR fairness files, one JSON object per line with
  ``metadata.goal_idx`` (``agent_system/environments/fairness.py``).
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

__all__ = ["FORMATS", "MAX_BYTES", "read_id_file"]

MAX_BYTES = 64 * 1024 * 1024
"""Largest goal-id file read (the known ones are a few kilobytes to a few megabytes)."""

_ITEM_ID = re.compile(r"webshop_(\d+)")


def _agentgym(path: Path, text: str) -> list[int]:
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"{path}: not AgentGym's test file: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(items, list):
        raise ProtocolError(f"{path}: not AgentGym's test file: expected a JSON list of items, got {type(items).__name__}")
    ids = []
    for k, item in enumerate(items):
        item_id = item.get("item_id") if isinstance(item, dict) else None
        match = _ITEM_ID.fullmatch(item_id) if isinstance(item_id, str) else None
        if match is None:
            raise ProtocolError(f"{path}, item {k}: expected an item_id 'webshop_<n>', got {item_id!r}")
        ids.append(int(match.group(1)))
    return ids


def _seed_fairness(path: Path, text: str) -> list[int]:
    ids = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"{path}, line {number}: not a JSON object per line ({exc.msg})") from None
        goal = row.get("metadata", {}).get("goal_idx") if isinstance(row, dict) and isinstance(row.get("metadata"), dict) else None
        if isinstance(goal, bool) or not isinstance(goal, int) or goal < 0:
            raise ProtocolError(f"{path}, line {number}: expected metadata.goal_idx, a goal index >= 0, got {goal!r}")
        ids.append(goal)
    if len(set(ids)) != len(ids):
        raise ProtocolError(f"{path}: duplicate metadata.goal_idx values (the fairness files list each goal once)")
    return ids


FORMATS = {"agentgym-item-ids": _agentgym, "seed-fairness-jsonl": _seed_fairness}
"""Readers by format name (a protocol file's ``indices.file.format``)."""


def read_id_file(path: str | os.PathLike, rule: Mapping, protocol: str) -> tuple[np.ndarray, str]:
    """Read and check a protocol's goal-id file.

    Args:
        path: the file.
        rule: the protocol's ``indices.file`` (``format``, ``count``, optional ``sha256``, ``where``).
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
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ProtocolError(f"{path}: {size:,} bytes is not a goal-id file for protocol {protocol!r} "
                            f"(at most {MAX_BYTES:,}); expected {rule.get('where')}")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(f"{path}: not UTF-8 text; protocol {protocol!r} expects {rule.get('where')}") from None
    ids = reader(path, text)
    expected = rule.get("count")
    if expected is not None and len(ids) != int(expected):
        raise ProtocolError(f"{path}: {len(ids)} goal ids, protocol {protocol!r} expects {int(expected)} "
                            f"({rule.get('where')})")
    pinned = rule.get("sha256")
    if pinned and digest != pinned:
        raise ProtocolError(f"{path}: SHA-256 {digest[:16]}... is not the file protocol {protocol!r} was defined on "
                            f"({str(pinned)[:16]}...; {rule.get('where')})")
    out = np.asarray(ids, dtype=np.int64)
    out.flags.writeable = False
    return out, digest
