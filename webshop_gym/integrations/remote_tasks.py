"""The goals of a remote ``webshop-gym openenv`` server, read through OpenEnv's task API (no shop files here).

The server answers ``POST /webshop/task_range`` with ``{"tasks": [{"goal_index", "instruction", ...}]}``
for a split (``test``, ``eval``, ``train``, or a protocol's ``NAME:train``/``NAME:test``, whose goals
the server computes from its own shop).  :func:`remote_goals` reads them with the standard
library only, so a trainer that plays on a remote shop builds its dataset without loading one.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from webshop_gym.error import Error, GoalNotFound, InvalidArgument, TestGoalsRefused

__all__ = ["RemoteShopError", "remote_goals"]


class RemoteShopError(Error, ConnectionError):
    """The server could not be reached, or answered something that is not its task API."""


def _post(url: str, path: str, body: dict[str, Any], timeout: float) -> Any:
    request = urllib.request.Request(f"{url}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read()).get("detail")
        except (ValueError, AttributeError):
            detail = None
        message = detail if isinstance(detail, str) else exc.reason
        raise InvalidArgument(f"{url} refused split {body.get('split')!r}: {message}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RemoteShopError(f"cannot read the goals of {url} (is `webshop-gym openenv` running there?): {reason}") from None


def _tasks(url: str, split: str, stop: int | None, timeout: float) -> list[dict[str, Any]]:
    answer = _post(url, "/webshop/task_range", {"split": split, "start": 0, "stop": stop}, timeout)
    tasks = answer.get("tasks") if isinstance(answer, dict) else None
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "goal_index" in t and "instruction" in t
                                              for t in tasks):
        raise RemoteShopError(f"{url} did not answer with WebShop tasks (is it a webshop-gym openenv server?)")
    return tasks


def remote_goals(url: str, split: str | None = "train", *, protocol: str | None = None,
                 allow_test_goals: bool = False, limit: int | None = None,
                 timeout: float = 60.0) -> list[tuple[int, str]]:
    """A split's goals on the server, in order, as ``(goal_index, instruction)``.

    Args:
        url: the server (``http://host:8000``).
        split: ``train``, ``eval``, ``test``; with ``protocol``, ``train`` or ``test``.
        protocol: a protocol's name: its train or test goals, as the server's shop gives them.
        allow_test_goals: allow goals the protocol tests on (refused otherwise, as locally).
        limit: the first ``limit`` goals only.
        timeout: seconds to wait for the server.

    Raises:
        TestGoalsRefused: the goals include the protocol's test goals and ``allow_test_goals`` is False.
        GoalNotFound: the split holds no goals.
        InvalidArgument: the server refused the split (unknown protocol, another shop, ...).
        RemoteShopError: the server could not be reached.
    """
    if split is None:
        raise InvalidArgument("a remote split must be named (train, eval or test): the task API has no 'all goals'")
    url = url.rstrip("/")
    name = split
    if protocol is not None:
        if split not in ("train", "test"):
            raise InvalidArgument(f"with protocol={protocol!r}, split must be 'train' or 'test', got {split!r}")
        name = f"{protocol}:{split}"
        if not allow_test_goals:
            if split == "test":
                raise TestGoalsRefused(f"split {name!r} is protocol {protocol!r}'s test goals: pass "
                                       "allow_test_goals=True to use them anyway")
            train = _tasks(url, name, None, timeout)
            tested = {t["goal_index"] for t in _tasks(url, f"{protocol}:test", None, timeout)}
            overlap = sum(t["goal_index"] in tested for t in train)
            if overlap:
                raise TestGoalsRefused(f"split {name!r} holds {overlap:,} of the {len(train):,} goals that protocol "
                                       f"{protocol!r} can test on; pass allow_test_goals=True to train on them anyway")
            tasks = train if limit is None else train[:limit]
            return [(int(t["goal_index"]), str(t["instruction"])) for t in tasks]
    tasks = _tasks(url, name, limit, timeout)
    if not tasks and limit != 0:
        raise GoalNotFound(f"split {name!r} holds no goals on {url}")
    return [(int(t["goal_index"]), str(t["instruction"])) for t in tasks]
