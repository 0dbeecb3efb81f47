"""AgentGym's WebShop environment-server API under ``/agentgym``.

AgentGym's client (``agentenv.envs.webshop.WebshopEnvClient``) talks to an env server over HTTP;
pointing its ``env_server_base`` at ``http://HOST:PORT/agentgym`` makes it play this server's
shop.  Routes, methods, JSON shapes and status codes are those of ``agentenv-webshop``:

=====================  =============================================  ==========================
route                  body / query                                   answer
=====================  =============================================  ==========================
``GET /``                                                             ``"ok"``
``POST /create``                                                      the new env id (an int)
``POST /step``         ``{"env_idx": int, "action": str}``            ``{state, reward, done, info}``
``POST /reset``        ``{"env_idx": int, "session_id": int|null}``   ``[observation, null]``
``GET /observation``   ``?env_idx=``                                  the observation (a string)
``GET /available_actions``  ``?env_idx=``                             ``{has_search_bar, clickables}``
``GET /instruction_text``   ``?env_idx=``                             the instruction (a string)
``GET /state``         ``?env_idx=``                                  ``{url, html, instruction_text}``
``POST /close``        ``{"env_idx": int}``                           ``true``
``GET /list_envs``                                                    the live env ids
=====================  =============================================  ==========================

Each env is a :class:`~webshop_gym.compat.WebAgentTextEnv` (text observations) on a slot of one
shared engine, so answers are the reference text env's.  Each route is defined once
(:data:`ROUTES`: validate a request into a :class:`Step` or a call); this blueprint serves them
through Flask, stepping each request alone, and ``webshop-gym serve``'s ASGI front
(:mod:`webshop_gym.server.asgi`) serves the same routes on an event loop, stepping the steps that
arrive together as one batch of the engine (:meth:`AgentGymEnvs.step_many`).  Bad bodies get FastAPI's 422 answer
(``{"detail": [{"loc", "msg", "type"}]}``); an unknown env id 404; a full server 503 with
``Retry-After`` (AgentGym's client retries a 503); every error is JSON, never a traceback.  Every
body is strict JSON: a NaN or infinite number echoed from a request (``NaN``, ``1e400``) is sent
as the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``.  The
number of live envs is bounded (``AGENTGYM_MAX_ENVS``); envs idle longer than
``AGENTGYM_ENV_TTL`` seconds are evicted when room is needed.
"""

from __future__ import annotations

import json
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, current_app, request
from werkzeug.exceptions import HTTPException

from webshop_gym.compat import SimServer, WebAgentTextEnv
from webshop_gym.compat.text_env import step_envs
from webshop_gym.error import GoalNotFound
from webshop_gym.utils.strict_json import finite

__all__ = ["ROUTES", "AgentGymEnvs", "Step", "bp", "encode", "error_answer", "init_app", "run_job"]

bp = Blueprint("agentgym", __name__, url_prefix="/agentgym")

EXTENSION = "webshop_gym_agentgym"
MAX_ID = 48950076
"""AgentGym's server draws env ids from ``randint(0, 48950076)``; so do we."""


class Unprocessable(Exception):
    """A request body or query that does not validate (FastAPI answers 422)."""

    def __init__(self, errors: list[dict]):
        super().__init__(errors)
        self.errors = errors


class Unavailable(Exception):
    """No room for another env (503)."""


class UnknownEnv(LookupError):
    """An env id that is not alive (404)."""


class AgentGymEnvs:
    """The live AgentGym envs: id -> :class:`WebAgentTextEnv`, bounded, evicted when idle.

    Args:
        store: the app's :class:`~webshop_gym.server.sessions.SessionStore` (shop and engine thread).
        max_envs: envs alive at once.
        ttl: idle seconds after which an env may be evicted to make room (``None``: never).
        clock: monotonic clock (tests inject one).
    """

    def __init__(self, store, max_envs: int = 1024, ttl: float | None = 3600.0,
                 clock: Callable[[], float] = time.monotonic):
        if int(max_envs) < 1:
            raise ValueError(f"max_envs must be at least 1, got {max_envs!r}")
        self.store = store
        self.max_envs = int(max_envs)
        self.ttl = None if not ttl else float(ttl)
        self.clock = clock
        self.server: SimServer | None = None
        self._envs: OrderedDict[int, list] = OrderedDict()  # id -> [env, last used]; least recent first
        self._lock = threading.Lock()
        self.stats = {"created": 0, "closed": 0, "evicted": 0, "steps": 0, "batches": 0}

    def _sim_server(self) -> SimServer:
        if self.server is None:
            # One engine with a slot per allowed env: one set of page caches for all of them.
            self.server = SimServer(shop=self.store.shop, show_attrs=self.store.engine.ctx.show_attrs,
                                    slots=self.max_envs)
        return self.server

    def __len__(self) -> int:
        with self._lock:
            return len(self._envs)

    def ids(self) -> list[int]:
        """The ids of the live envs (oldest first)."""
        with self._lock:
            return list(self._envs)

    def create(self) -> int:
        """Make a new env (reset on a random goal) and return its id.

        Raises:
            Unavailable: ``max_envs`` envs are alive and none has been idle longer than the TTL.
        """
        with self._lock:
            now = self.clock()
            if len(self._envs) >= self.max_envs:
                self._evict_idle(now)
            if len(self._envs) >= self.max_envs:
                raise Unavailable(
                    f"all {self.max_envs} environments are in use: close one (POST /close) or try again later"
                    + (f" (idle environments are evicted after {self.ttl:g} s)" if self.ttl else ""))
            env_id = secrets.randbelow(MAX_ID + 1)
            while env_id in self._envs:  # pragma: no cover - 49 million ids
                env_id = secrets.randbelow(MAX_ID + 1)
            self._envs[env_id] = [None, now]  # reserved while the env is built
        try:
            env = self.store.run(lambda: WebAgentTextEnv(observation_mode="text", server=self._sim_server()))
        except BaseException:
            with self._lock:
                self._envs.pop(env_id, None)
            raise
        with self._lock:
            self._envs[env_id][0] = env
            self.stats["created"] += 1
        return env_id

    def _evict_idle(self, now: float) -> None:
        if self.ttl is None:
            return
        for env_id, (env, used) in list(self._envs.items()):
            if env is not None and now - used > self.ttl:
                del self._envs[env_id]
                self.stats["evicted"] += 1

    def _live(self, env_id: int) -> list:
        """The ``[env, last used]`` entry of a live env (the caller holds the lock).

        Raises:
            UnknownEnv: no live env has this id.
        """
        entry = self._envs.get(env_id)
        if entry is None or entry[0] is None:
            raise UnknownEnv(env_id)
        return entry

    def _use(self, env_id: int) -> WebAgentTextEnv:
        """A live env, marked as used now.

        Raises:
            UnknownEnv: no live env has this id.
        """
        with self._lock:
            entry = self._live(env_id)
            entry[1] = self.clock()
            self._envs.move_to_end(env_id)
            return entry[0]

    def call(self, env_id: int, method: Callable[[WebAgentTextEnv], Any]) -> Any:
        """Run ``method(env)`` on the engine thread for a live env.

        Raises:
            UnknownEnv: no live env has this id.
        """
        return self.store.run(method, self._use(env_id))

    def step(self, env_id: int, action: str) -> dict:
        """Step one env; its answer (``{state, reward, done, info}``).

        Raises:
            UnknownEnv: no live env has this id.
        """
        [answer] = self.step_many([(env_id, action)])
        if isinstance(answer, Exception):
            raise answer
        return answer

    def step_many(self, steps: list[tuple[int, str]]) -> list[dict | Exception]:
        """Step several envs by one action each, as one batch of the shared engine (on the engine thread).

        Each answer is the one the env alone would give (``{state, reward, done, info}``), or the
        :class:`UnknownEnv` error of an id that is not alive; an env listed twice steps twice, in order.
        """
        out: list[dict | Exception | None] = [None] * len(steps)
        live, actions, where = [], [], []
        for k, (env_id, action) in enumerate(steps):
            try:
                live.append(self._use(env_id))
            except UnknownEnv as exc:
                out[k] = exc
                continue
            actions.append(action)
            where.append(k)
        if live:
            results = self.store.run(step_envs, live, actions)
            for k, (obs, reward, done, _) in zip(where, results):
                out[k] = {"state": obs, "reward": float(reward), "done": bool(done), "info": None}
            with self._lock:
                self.stats["steps"] += len(live)
                self.stats["batches"] += 1
        return out

    def close(self, env_id: int) -> None:
        """Drop an env (its slot is given back).

        Raises:
            UnknownEnv: no live env has this id.
        """
        with self._lock:
            self._live(env_id)
            del self._envs[env_id]
            self.stats["closed"] += 1


def init_app(app, store) -> AgentGymEnvs:
    """Attach the AgentGym envs to ``app``."""
    envs = AgentGymEnvs(store, max_envs=int(app.config.get("AGENTGYM_MAX_ENVS") or 1024),
                        ttl=app.config.get("AGENTGYM_ENV_TTL"), clock=app.config.get("CLOCK") or time.monotonic)
    app.extensions[EXTENSION] = envs
    return envs


def _envs() -> AgentGymEnvs:
    return current_app.extensions[EXTENSION]


# -- JSON in and out, FastAPI style -----------------------------------------------------------------


def encode(value: Any) -> bytes:
    """A JSON body: strict JSON always (a NaN or infinity echoed from a request becomes a string)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:
        value = finite(value)
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (sent escaped by a client): keep it escaped
        return json.dumps(value, ensure_ascii=True, allow_nan=False).encode("ascii")


def _json(value: Any, status: int = 200, headers: dict | None = None) -> Response:
    """A JSON response (see :func:`encode`)."""
    response = Response(encode(value), status=status, mimetype="application/json")
    for key, val in (headers or {}).items():
        response.headers[key] = val
    return response


def _error(status: int, detail: Any, headers: dict | None = None) -> Response:
    return _json({"detail": detail}, status, headers)


def _as_int(value: Any, loc: list) -> int:
    """Validate an int as pydantic's lax mode does (ints, bools, whole floats, digit strings)."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise Unprocessable([{"type": "finite_number", "loc": loc, "msg": "Input should be a finite number",
                              "input": value}])
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and len(value) <= 64:
        try:
            return int(value.strip())
        except ValueError:
            pass
        raise Unprocessable([{"type": "int_parsing", "loc": loc,
                              "msg": "Input should be a valid integer, unable to parse string as an integer",
                              "input": value}])
    if isinstance(value, float):
        raise Unprocessable([{"type": "int_from_float", "loc": loc,
                              "msg": "Input should be a valid integer, got a number with a fractional part",
                              "input": value}])
    raise Unprocessable([{"type": "int_type", "loc": loc, "msg": "Input should be a valid integer",
                          "input": value if isinstance(value, int | float | str | type(None)) else str(value)[:200]}])


def parse_body(raw: bytes) -> dict:
    """A request body as FastAPI validates it: a JSON object.

    Raises:
        Unprocessable: not JSON, or not an object.
    """
    try:
        body = json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        raise Unprocessable([{"type": "json_invalid", "loc": ["body", 0], "msg": "JSON decode error"}]) from None
    if not isinstance(body, dict):
        raise Unprocessable([{"type": "model_attributes_type", "loc": ["body"],
                              "msg": "Input should be a valid dictionary or object to extract fields from",
                              "input": body if isinstance(body, int | float | str | type(None)) else str(body)[:200]}])
    return body


def _field(body: dict, name: str, kind: str, required: bool = True) -> Any:
    if name not in body or (not required and body[name] is None):
        if required:
            raise Unprocessable([{"type": "missing", "loc": ["body", name], "msg": "Field required",
                                  "input": {k: body[k] for k in list(body)[:20]}}])
        return None
    value = body[name]
    if kind == "int":
        return _as_int(value, ["body", name])
    if not isinstance(value, str):
        raise Unprocessable([{"type": "string_type", "loc": ["body", name], "msg": "Input should be a valid string",
                              "input": value if isinstance(value, int | float | bool | type(None)) else str(value)[:200]}])
    return value


def query_env(value: str | None) -> int:
    """The ``env_idx`` of a query string (``None``: missing).

    Raises:
        Unprocessable: missing or not an integer.
    """
    if value is None:
        raise Unprocessable([{"type": "missing", "loc": ["query", "env_idx"], "msg": "Field required", "input": None}])
    return _as_int(value, ["query", "env_idx"])


def error_answer(envs: AgentGymEnvs, exc: Exception) -> tuple[int, Any, dict | None] | None:
    """``(status, detail, headers)`` of one of the API's own errors (``None``: not one of them)."""
    if isinstance(exc, Unprocessable):
        return 422, exc.errors, None
    if isinstance(exc, UnknownEnv):
        ttl = f", or was evicted after {envs.ttl:g} s idle" if envs.ttl else ""
        return 404, (f"no environment with env_idx {exc.args[0]}: it was never created, was closed{ttl}; "
                     "create one with POST /create"), None
    if isinstance(exc, Unavailable):
        return 503, str(exc), {"Retry-After": "1"}
    if isinstance(exc, GoalNotFound):
        return 404, str(exc), None
    return None


@bp.errorhandler(Unprocessable)
@bp.errorhandler(UnknownEnv)
@bp.errorhandler(Unavailable)
@bp.errorhandler(GoalNotFound)
def _api_error(exc: Exception):
    status, detail, headers = error_answer(_envs(), exc)
    return _error(status, detail, headers)


@bp.errorhandler(HTTPException)
def _http(exc: HTTPException):
    return _error(exc.code or 500, exc.description or exc.name)


# -- routes: one definition each, served by Flask (below) and by the ASGI front (asgi.py) ---------------


@dataclass(frozen=True)
class Step:
    """A step to take: the ASGI front batches these with the steps of other envs."""

    env_idx: int
    action: str


Query = Callable[[str], "str | None"]
Job = Step | Callable[[], Any]
"""What a request asks for: a :class:`Step`, or a call that returns the answer (run on the engine thread)."""


def _ok(envs: AgentGymEnvs, query: Query, raw: bytes) -> Job:
    """Connectivity check: ``"ok"``."""
    return lambda: "ok"


def _list_envs(envs: AgentGymEnvs, query: Query, raw: bytes) -> Job:
    """The ids of the live envs."""
    return envs.ids


def _create(envs: AgentGymEnvs, query: Query, raw: bytes) -> Job:
    """Create an env (a random goal, as AgentGym's server does) and return its id."""
    return envs.create


def _step(envs: AgentGymEnvs, query: Query, raw: bytes) -> Job:
    """Take one action: ``{"state", "reward", "done", "info": null}``."""
    body = parse_body(raw)
    env_idx = _field(body, "env_idx", "int")
    return Step(env_idx, _field(body, "action", "str"))


def _reset(envs: AgentGymEnvs, query: Query, raw: bytes) -> Job:
    """Reset an env on goal ``session_id`` (``null``: a random goal): ``[observation, null]``."""
    body = parse_body(raw)
    env_idx = _field(body, "env_idx", "int")
    session = _field(body, "session_id", "int", required=False)
    return lambda: list(envs.call(env_idx, lambda env: env.reset(session=session)))


def _getter(method: Callable[[WebAgentTextEnv], Any]):
    def job(envs: AgentGymEnvs, query: Query, raw: bytes) -> Job:
        env_idx = query_env(query("env_idx"))
        return lambda: envs.call(env_idx, method)

    return job


def _close(envs: AgentGymEnvs, query: Query, raw: bytes) -> Job:
    """Drop an env and free its slot (AgentGym's client calls it; its own server lacks it): ``true``."""
    env_idx = _field(parse_body(raw), "env_idx", "int")

    def close() -> bool:
        envs.close(env_idx)
        return True

    return close


ROUTES: dict[str, tuple[str, Callable[[AgentGymEnvs, Query, bytes], Job]]] = {
    "/": ("GET", _ok),
    "/list_envs": ("GET", _list_envs),
    "/create": ("POST", _create),
    "/step": ("POST", _step),
    "/reset": ("POST", _reset),
    "/observation": ("GET", _getter(lambda env: env.observation)),  # the env's current observation
    "/available_actions": ("GET", _getter(lambda env: env.get_available_actions())),  # {has_search_bar, clickables}
    "/instruction_text": ("GET", _getter(lambda env: env.get_instruction_text())),  # as the reference reads it
    "/state": ("GET", _getter(lambda env: env.state)),  # {url, html, instruction_text}
    "/close": ("POST", _close),
}
"""Route (under ``/agentgym``) -> (method, the function that validates a request into a :class:`Job`)."""


def run_job(envs: AgentGymEnvs, job: Job) -> Any:
    """The answer of a job, stepped alone (the Flask path; the ASGI front batches steps)."""
    if isinstance(job, Step):
        return envs.step(job.env_idx, job.action)
    return job()


def _view(route: str):
    prepare = ROUTES[route][1]

    def view():
        envs = _envs()
        return _json(run_job(envs, prepare(envs, request.args.get, request.get_data(cache=True))))

    view.__doc__ = prepare.__doc__
    return view


for _route, (_method, _prepare) in ROUTES.items():
    bp.add_url_rule(_route, endpoint=_route.strip("/") or "ok", view_func=_view(_route), methods=[_method])
