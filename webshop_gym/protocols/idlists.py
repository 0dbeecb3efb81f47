"""Goal-id lists that stand in a family's public repository, shipped as data and checked at load.

Each list is one file ``data/ids/<name>.json`` (format ``webshop-gym/id-list`` version 1): the ids,
their count and where they come from (``source``: repository, commit, path, the file's git blob
id, size and SHA-256, and its ``layout``).  The family's file is a plain rendering of its ids (ETO's
``json.dumps(list)``, AgentGym's ``json.dumps(items, indent=4)``), so :func:`id_list` renders the
ids again and checks the count, the byte size, the SHA-256 and the git blob id of the family's
own file: a list edited by hand, or a layout read wrong, fails at load.

A protocol names a list in its goal spec (``indices.ids.list``, or a ``file`` rule's ``shipped``
and ``starts_with``); :mod:`.resolve` plays it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from webshop_gym.error import ProtocolError
from webshop_gym.utils.shipped import bytes_problem, folder_damage
from webshop_gym.utils.shipped_digests import ID_LISTS

__all__ = ["FORMAT", "LAYOUTS", "IdList", "id_list", "id_list_damage", "id_list_names", "id_lists_folder", "render"]

FORMAT = "webshop-gym/id-list"
FORMAT_VERSION = 1


def _json_list(ids: list[int]) -> bytes:
    return json.dumps(ids).encode("ascii")


def _agentgym_items(ids: list[int]) -> bytes:
    return json.dumps([{"item_id": f"webshop_{i}"} for i in ids], indent=4).encode("ascii")


LAYOUTS = {"json-list": _json_list, "agentgym-items": _agentgym_items}
"""How each family's file renders its ids: ``json-list`` (``[2853, 5934, ...]``, ETO and IPR) and
``agentgym-items`` (``[{"item_id": "webshop_5238"}, ...]`` indented by 4, AgentGym's AgentEval)."""


def render(layout: str, ids: list[int]) -> bytes:
    """The bytes of the family's file that holds ``ids`` in ``layout`` (:data:`LAYOUTS`)."""
    if layout not in LAYOUTS:
        raise ProtocolError(f"unknown id-list layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    return LAYOUTS[layout](ids)


@dataclass(frozen=True)
class IdList:
    """A shipped goal-id list.

    Attributes:
        name: the file's name (``eto-test``).
        description: what the list is, in words.
        source: ``repo``, ``commit``, ``path``, ``git_blob``, ``bytes``, ``sha256``, ``layout``.
        ids: the ids in the family's order (read-only int64).
    """

    name: str
    description: str
    source: dict
    ids: np.ndarray

    def cite(self) -> str:
        """``repo path @ commit (sha256 ...)`` for cards and messages."""
        s = self.source
        return f"{s['repo']} {s['path']} @ {s['commit'][:12]} (SHA-256 {s['sha256'][:16]}, {len(self.ids)} ids)"


def _data_dir():
    return resources.files("webshop_gym.protocols").joinpath("data").joinpath("ids")


@functools.lru_cache(maxsize=1)
def id_list_names() -> tuple[str, ...]:
    """Names of the shipped id lists, sorted."""
    return tuple(sorted(p.name[: -len(".json")] for p in _data_dir().iterdir() if p.name.endswith(".json")))


def id_list_damage() -> list[tuple[Path, str]]:
    """The shipped id lists that are not as pinned in the package's code (``data verify``): ``(path, problem)``."""
    return folder_damage(id_lists_folder(), ID_LISTS, "*.json")


def id_lists_folder() -> Path:
    """The folder of the shipped id lists."""
    return Path(str(_data_dir()))


def _fail(name: str, message: str):
    raise ProtocolError(f"id list {name!r} (webshop_gym/protocols/data/ids/{name}.json): {message}")


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@functools.cache  # one entry per shipped list (a few small files)
def id_list(name: str) -> IdList:
    """The shipped id list ``name``, checked (count, size, SHA-256 and git blob of the family's file).

    The file itself is first checked against its size and SHA-256 pinned in the package's code
    (:mod:`webshop_gym.utils.shipped_digests`), so an edited list fails even when its own ``source``
    digests were edited to match.

    Raises:
        ProtocolError: no such list, a file that is not the one this version shipped (or not
            JSON), or a list that does not render to its family's file.
    """
    if not isinstance(name, str) or re.fullmatch(r"[a-z0-9][a-z0-9.-]*", name) is None or name not in id_list_names():
        raise ProtocolError(f"unknown id list {name!r}; shipped lists: {', '.join(id_list_names())}")
    raw = _data_dir().joinpath(f"{name}.json").read_bytes()
    problem = bytes_problem(raw, ID_LISTS.get(f"{name}.json"))
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError is one too
        data, problem = None, f"is not JSON ({exc})" + (f" and {problem}" if problem else "")
    if problem is not None:
        _fail(name, f"the file {problem}: not the file this version shipped (reinstall webshop-gym: "
                    "`pip install --force-reinstall --no-deps webshop-gym`)")
    if not isinstance(data, dict):
        _fail(name, f"not a {FORMAT} version {FORMAT_VERSION} file (a JSON object)")
    if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION or data.get("name") != name:
        _fail(name, f"not a {FORMAT} version {FORMAT_VERSION} file named {name!r}")
    ids, source = data.get("ids"), data.get("source") or {}
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        _fail(name, "ids must be a list of integers >= 0")
    if len(ids) != data.get("count"):
        _fail(name, f"{len(ids)} ids, the file says {data.get('count')}")
    rendered = render(source.get("layout"), ids)
    checks = (("bytes", len(rendered)), ("sha256", hashlib.sha256(rendered).hexdigest()), ("git_blob", _git_blob(rendered)))
    for key, got in checks:
        if got != source.get(key):
            _fail(name, f"the ids render to a file with {key} {got}, not the family's {source.get(key)} "
                        f"({source.get('repo')} {source.get('path')})")
    out = np.asarray(ids, dtype=np.int64)
    out.flags.writeable = False
    return IdList(name, str(data.get("description", "")), dict(source), out)
