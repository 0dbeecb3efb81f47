"""WebShop as a TRL ``GRPOTrainer`` environment: ``GRPOTrainer(environment_factory=WebShopToolEnv)``.

TRL (``pip install 'webshop-gym[trl]'``, pinned to ``trl==1.16.0``: ``environment_factory`` is
experimental) drives a multi-turn rollout through an environment object: it calls the factory
with no arguments (one pooled instance per rollout), calls ``reset(**row)`` with every column of
the dataset row and appends the text it returns to the prompt, exposes every other public method
as a function-calling tool (the schema comes from the type hints and the Google-style docstring),
and, when the class defines ``get_reward()``, scores each finished rollout with it.  There is no
done signal: once an episode is over, every tool call raises (TRL shows the error to the model).

:class:`WebShopToolEnv` is that object, a thin facade over :class:`~webshop_gym.WebShopEnv`:

* tools ``search(query)`` and ``click(label)``, translated to the env's ``search[...]`` and
  ``click[...]`` actions; each returns the new page and the actions admissible on it;
* an action the page does not admit is stepped like any invalid action (it uses one of the
  ``max_steps`` steps, reward 0, counted in :attr:`~WebShopToolEnv.invalid_actions`) and the tool
  raises :class:`InadmissibleAction` naming what is admissible;
* an action is at most :data:`~webshop_gym.core.actions.MAX_ACTION_LENGTH` (100,000) characters,
  ``search[`` and ``]`` included, as in every WebShop env: a longer query is inadmissible on
  every page, and the error says so and gives its length instead of echoing it;
* ``get_reward()`` is the WebShop reward of the purchase (0.0 without one); the breakdown is
  :attr:`~WebShopToolEnv.reward_info`.

Every instance in a process shares one loaded shop (a module-level cache keyed on the shop
settings), so the trainer's pool of instances costs a few kilobytes each.

:func:`webshop_dataset` returns a split's goals as rows with ``prompt`` and ``goal_index``.  TRL
repeats every row ``num_generations`` times, so each GRPO group plays one goal.

>>> env = WebShopToolEnv(split="test")
>>> text = env.reset(goal_index=0)
>>> "Admissible actions: search(query)" in text
True
>>> env.click("buy now")
Traceback (most recent call last):
  ...
webshop_gym.integrations.trl.InadmissibleAction: click('buy now') is not admissible on this page (invalid action 1; step 1 of 15). Admissible actions: search(query)
>>> env.get_reward()
0.0
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from webshop_gym import Shop, WebShopEnv, load_shop
from webshop_gym.agents.tools import (
    TASK_PROMPT,
    call_text,
    ending_text,
    inadmissible_text,
    page_text,
    reset_text,
    tool_docstring,
)
from webshop_gym.error import (
    DependencyNotInstalled,
    EpisodeFinished,
    GoalNotFound,
    InvalidAction,
    InvalidArgument,
)
from webshop_gym.integrations.remote_session import (
    EpisodeLost,
    RemoteSession,
    ServerFull,
    dropped,
    unpack,
)
from webshop_gym.integrations.remote_tasks import remote_goals
from webshop_gym.protocols import ProtocolSplit, goal_ids
from webshop_gym.utils.checks import check_bool

__all__ = ["TASK_PROMPT", "EpisodeLost", "InadmissibleAction", "ServerFull", "WebShopRemoteToolEnv", "WebShopToolEnv",
           "shared_shop",
           "unfinished_episodes",
           "webshop_dataset"]


_SHOP_LOCK = threading.Lock()
_SHOPS: dict[tuple, Shop] = {}
"""Loaded shops by settings: one per distinct (shop, goals, human_goals, price_seed, search_backend)."""


class InadmissibleAction(InvalidAction):
    """A tool call that the current page does not admit (the message lists what it admits)."""


def _resolved(path: str | os.PathLike | None) -> str | None:
    return None if path is None else str(Path(path).expanduser().resolve())


def shared_shop(
    shop: str | os.PathLike | Shop | None = None,
    *,
    goals: str | os.PathLike | None = None,
    human_goals: bool = False,
    price_seed: int = 0,
    search_backend: str = "bm25",
) -> Shop:
    """The process's one shop for these settings, loaded on first use (a given :class:`Shop` is returned as is).

    Args:
        shop: a reference-format directory, a loaded :class:`~webshop_gym.Shop`, or ``None``
            (the embedded default shop).
        goals: a frozen goal-set file (``None``: goals built from the shop).
        human_goals: human instructions instead of synthetic goals.
        price_seed: seeds product prices and price caps.
        search_backend: ``"bm25"`` or ``"pyserini"`` (:func:`~webshop_gym.load_shop`).
    """
    if isinstance(shop, Shop):
        return shop
    if not isinstance(human_goals, bool):
        raise InvalidArgument(f"human_goals must be True or False, got {human_goals!r}")
    if isinstance(price_seed, bool) or not isinstance(price_seed, int) or price_seed < 0:
        raise InvalidArgument(f"price_seed must be an integer >= 0, got {price_seed!r}")
    key = (_resolved(shop), _resolved(goals), human_goals, price_seed, search_backend)
    with _SHOP_LOCK:
        loaded = _SHOPS.get(key)
        if loaded is None:
            # progress=False as WebShopEnv loads it: the same load_shop cache entry, so the same Shop object
            loaded = load_shop(shop, goals=goals, human_goals=human_goals, seed=price_seed, progress=False,
                               search_backend=search_backend)
            _SHOPS[key] = loaded
    return loaded


class WebShopToolEnv:
    """One WebShop episode at a time, driven by TRL through the tools ``search`` and ``click``.

    Every argument is keyword-only and defaulted, so the class itself is a zero-argument
    ``environment_factory``; ``functools.partial(WebShopToolEnv, shop="...", split="test")`` is
    another.  Methods other than ``search`` and ``click`` are private or properties, because TRL
    turns every public method except ``reset`` and ``get_reward`` into a tool.

    Args:
        shop: a reference-format shop directory, a loaded :class:`~webshop_gym.Shop`, or ``None``
            for the embedded default shop.
        goals: a frozen goal-set file (see :func:`~webshop_gym.load_shop`).
        split: the goals this env serves: ``"train"`` (default), ``"eval"``, ``"test"`` (the
            first 500 goals), ``None`` (all) or a protocol's train goals (``"verl-agent-500:train"``,
            see :mod:`webshop_gym.protocols`).  A row's ``goal_index`` outside it is an error; a
            row without one gets a goal drawn from it.
        allow_test_goals: let a protocol split hold the protocol's test goals (refused otherwise).
        human_goals: human instructions instead of synthetic goals.
        price_seed: seeds product prices and price caps (``0`` is the reference's run).
        max_steps: actions (invalid ones included) after which the episode ends without a
            purchase (``None``: no limit; TRL's ``max_tool_calling_iterations`` and
            ``max_completion_length`` still bound the rollout).
        search_backend: ``"bm25"`` (default) or ``"pyserini"``: identical rankings.
        seed: seeds the draw of goals for rows without a ``goal_index`` (``None``: fresh entropy).

    Attributes:
        reward_info: the reward breakdown of the purchase (empty until one).
        invalid_actions: inadmissible tool calls in this episode.
        actions: the episode's actions as the env's strings (``search[...]``, ``click[...]``).
        info: the env's ``info`` dict after the last reset or action.
    """

    def __init__(
        self,
        *,
        shop: str | os.PathLike | Shop | None = None,
        goals: str | os.PathLike | None = None,
        split: str | None = "train",
        human_goals: bool = False,
        price_seed: int = 0,
        max_steps: int | None = 15,
        search_backend: str = "bm25",
        seed: int | None = None,
        allow_test_goals: bool = False,
    ):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InvalidArgument(f"seed must be an integer >= 0 or None, got {seed!r}")
        loaded = shared_shop(shop, goals=goals, human_goals=human_goals, price_seed=price_seed, search_backend=search_backend)
        self._env = WebShopEnv(shop=loaded, split=split, max_steps=max_steps, allow_test_goals=allow_test_goals)
        self._max_steps = max_steps
        self._split = split
        self._goal_range = self._env.engine.goal_range
        self._seed = seed
        self._seeded = False
        self._over = True
        self._started = False
        self._reward = 0.0
        self.reward_info: dict[str, Any] = {}
        self.invalid_actions = 0
        self.actions: list[str] = []
        self.info: dict[str, Any] = {}

    def __repr__(self) -> str:
        state = "not reset" if not self._started else f"goal {self.goal_index}, step {self.steps}"
        return f"WebShopToolEnv({self.shop!r}, split={self._split!r}, {state})"

    # -- TRL's episode hooks --------------------------------------------------------------------

    def reset(self, **row: Any) -> str:
        """Start an episode on the row's goal; return the instruction, the page and the admissible actions.

        Args:
            **row: the dataset row (TRL passes every column).  ``goal_index`` picks the goal
                (one of this env's split); without it a goal is drawn from the split.  An
                ``instruction`` column, when present with ``goal_index``, must be that goal's
                instruction (it catches a dataset built with other shop settings than the
                env).  Other columns (``prompt``, ...) are ignored.  A bad row raises before
                anything changes.

        Returns:
            Text that TRL appends to the row's last user message.
        """
        goal = row.get("goal_index")
        if goal is not None:
            goal = self._env.engine.check_goal(goal)
            if goal not in self._goal_range:
                held = (f"goals {self._goal_range.start}..{self._goal_range.stop - 1}" if isinstance(self._goal_range, range)
                        else f"{len(self._goal_range):,} goals")
                raise GoalNotFound(
                    f"goal_index {goal} is not in this env's split {str(self._split)!r} ({held}); build the dataset "
                    "and the env with the same split, or pass split=None to the env"
                )
            expected, actual = row.get("instruction"), self.shop.goals.instruction[goal]
            if expected is not None and expected != actual:
                raise ValueError(
                    f"the row's instruction {expected!r} is not goal {goal}'s in this env's goal set ({actual!r}): "
                    "build the dataset and the env with the same shop, goals, human_goals and price_seed"
                )
        seed = None if self._seeded else self._seed
        options = None if goal is None else {"goal_index": goal}
        obs, info = self._env.reset(seed=seed, options=options)
        self._seeded = True
        return self._begin(obs, info)

    def _begin(self, obs: str, info: dict[str, Any]) -> str:
        """Start the episode's bookkeeping on its first page; return what ``reset`` returns."""
        self._started = True
        self._over = False
        self._reward = 0.0
        self.reward_info = {}
        self.invalid_actions = 0
        self.actions = []
        self.info = info
        return reset_text(obs, info, self._max_steps)

    def get_reward(self) -> float:
        """The episode's WebShop reward: that of the purchase in [0, 1], 0.0 without one."""
        return self._reward

    # -- tools ----------------------------------------------------------------------------------

    def search(self, query: str) -> str:  # noqa: D102 (the docstring is the tool's, from agents.tools)
        if not isinstance(query, str):
            raise InvalidArgument(f"search(query): query must be a string, got {query!r}")
        return self._act("search", " ".join(query.split()))

    def click(self, label: str) -> str:  # noqa: D102 (the docstring is the tool's, from agents.tools)
        if not isinstance(label, str):
            raise InvalidArgument(f"click(label): label must be a string, got {label!r}")
        return self._act("click", label)

    search.__doc__ = tool_docstring("search")  # TRL builds the tool's schema from it: one definition with eval's
    click.__doc__ = tool_docstring("click")

    # -- state ------------------------------------------------------------------------------------

    @property
    def shop(self) -> Shop:
        """The shop (shared by every instance with the same shop settings)."""
        return self._env.shop

    @property
    def env(self) -> WebShopEnv:
        """The underlying :class:`~webshop_gym.WebShopEnv`."""
        return self._env

    @property
    def goal_index(self) -> int | None:
        """The episode's goal (``None`` before the first reset)."""
        return self._env.goal_index if self._started else None

    @property
    def instruction(self) -> str | None:
        """The episode's instruction (``None`` before the first reset)."""
        return self.info.get("instruction")

    @property
    def steps(self) -> int:
        """Actions taken in this episode (invalid ones included)."""
        return int(self.info.get("steps", 0))

    @property
    def done(self) -> bool:
        """Whether the episode is over (bought, or out of steps); also True before the first reset."""
        return self._over

    # -- internals --------------------------------------------------------------------------------

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Step the episode's env (the remote subclass steps its server)."""
        return self._env.step(action)

    def _act(self, kind: str, argument: str) -> str:
        call = call_text(kind, argument)
        if not self._started:
            raise EpisodeFinished(f"{call}: no episode yet; reset() starts one")
        if self._over:
            raise EpisodeFinished(f"{call}: the episode is over ({self._ending()}); no further actions are possible")
        action = f"{kind}[{argument}]"
        obs, reward, terminated, truncated, info = self._step(action)
        self.actions.append(action)
        admissible_before = self.info.get("valid_actions", [])
        self.info = info
        self._over = terminated or truncated
        if terminated:
            self._reward = float(reward)
            self.reward_info = dict(info.get("reward_info", {}))
        if info["invalid_action"]:
            self.invalid_actions += 1
            raise InadmissibleAction(inadmissible_text(call, argument if kind == "click" else None, self.invalid_actions,
                                                       info, admissible_before, self._over, self._max_steps,
                                                       action_length=len(action)))
        return page_text(obs, info, self._over, self._max_steps)

    def _ending(self) -> str:
        return ending_text(self.info, self._max_steps)


class WebShopRemoteToolEnv(WebShopToolEnv):
    """:class:`WebShopToolEnv` played on a remote ``webshop-gym openenv`` server: TRL on the GPU host, the shop elsewhere.

    The same tools (``search``, ``click``), ``reset`` and ``get_reward``, and the same texts, as
    the in-process class; each instance holds one OpenEnv WebSocket session
    (:class:`~webshop_gym.integrations.remote_session.RemoteSession`; all instances of a process
    share one background event-loop thread).  The server's settings (shop, goals,
    ``--max-steps``) are the episode's; build the dataset with the same shop settings (``reset``
    checks each row's instruction against the server's goal).

    A dropped connection (the server restarted, a proxy cut the socket, the session was evicted
    as idle) is repaired inside the call that finds it: a new session resets the same goal and
    replays the episode's actions, and the call goes on only when the replay lands on the page
    the episode was on; otherwise (or after ``reconnects`` tries) the call raises
    :class:`EpisodeLost` and the episode is over with reward 0.0: never a reward from another
    state.

    Args:
        url: the server (``http://host:8000``); ``None``: the ``WEBSHOP_GYM_OPENENV_URL``
            environment variable, so the class itself is a zero-argument factory.
        split: the split goals are drawn from for rows without a ``goal_index`` (``None``: all
            goals); a row's ``goal_index`` is played as given (the server checks its range).
        seed: seeds the server-side draw of goals for rows without a ``goal_index``.
        reconnects: attempts to re-establish an episode after a dropped connection.
        timeout: seconds to wait for each answer of the server.
    """

    def __init__(self, *, url: str | None = None, split: str | None = "train", seed: int | None = None,
                 reconnects: int = 3, timeout: float = 60.0):
        url = url if url is not None else os.environ.get("WEBSHOP_GYM_OPENENV_URL")
        if not isinstance(url, str) or not url.startswith(("http://", "https://", "ws://", "wss://")):
            raise InvalidArgument(
                f"url must be the http:// address of a webshop-gym openenv server (or set WEBSHOP_GYM_OPENENV_URL), got {url!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InvalidArgument(f"seed must be an integer >= 0 or None, got {seed!r}")
        if split is not None and (not isinstance(split, str) or (split not in ("train", "eval", "test")
                                                                 and not split.endswith((":train", ":test")))):
            raise InvalidArgument(f"split must be train, eval, test, a protocol's NAME:train or None, got {split!r}")
        if isinstance(reconnects, bool) or not isinstance(reconnects, int) or reconnects < 0:
            raise InvalidArgument(f"reconnects must be an integer >= 0, got {reconnects!r}")
        try:  # OpenEnv's client is an optional dependency of this class only
            from webshop_gym.integrations.openenv.client import WebShopEnvClient
        except ImportError as exc:
            raise DependencyNotInstalled(
                f"WebShopRemoteToolEnv needs OpenEnv's client ({exc}): pip install 'webshop-gym[openenv]'") from exc
        self._reconnects = reconnects
        # TRL never calls close(): a collected instance, or one alive when the process exits, closes
        # its socket through the session's finalizer, so the server frees its session at once.
        self._session = RemoteSession(url.rstrip("/"), timeout, WebShopEnvClient)
        self._max_steps = None
        self._split = split
        self._seed = seed
        self._seeded = False
        self._over = True
        self._started = False
        self._reward = 0.0
        self._page = ""
        self.reconnections = 0
        self.reward_info = {}
        self.invalid_actions = 0
        self.actions = []
        self.info = {}

    def __repr__(self) -> str:
        state = "not reset" if not self._started else f"goal {self.goal_index}, step {self.steps}"
        return f"WebShopRemoteToolEnv({self.url!r}, split={self._split!r}, {state})"

    def reset(self, **row: Any) -> str:
        """Start an episode on the server: the row's ``goal_index``, else a goal drawn from ``split``.

        See :meth:`WebShopToolEnv.reset`; the text returned is the same.
        """
        goal = row.get("goal_index")
        if goal is not None and (isinstance(goal, bool) or not isinstance(goal, int | np.integer) or goal < 0):
            raise InvalidArgument(f"goal_index must be an integer >= 0, got {goal!r}")
        if goal is not None:
            arguments: dict[str, Any] = {"goal_index": int(goal)}
        else:
            arguments = {} if self._split is None else {"split": self._split}
            if not self._seeded and self._seed is not None:
                arguments["seed"] = self._seed
        result = self._session.call("reset", arguments, retry=True)
        self._seeded = True
        obs, _, _, _, info = unpack(result)
        expected = row.get("instruction")
        if expected is not None and expected != info["instruction"]:
            raise ValueError(
                f"the row's instruction {expected!r} is not goal {info['goal_index']}'s on the server "
                f"({info['instruction']!r}): build the dataset with the server's shop, goals, human_goals and price_seed")
        if self._max_steps is None:
            self._max_steps = self._session.call("state", {}, retry=True).max_steps
        self._page = obs
        return self._begin(obs, info)

    @property
    def shop(self):
        """No local shop: the episode is played on :attr:`url`."""
        raise AttributeError(f"WebShopRemoteToolEnv has no local shop: it plays on {self.url}")

    @property
    def env(self):
        """No local env: the episode is played on :attr:`url`."""
        raise AttributeError(f"WebShopRemoteToolEnv has no local env: it plays on {self.url}")

    @property
    def goal_index(self) -> int | None:
        """The episode's goal (``None`` before the first reset)."""
        return self.info.get("goal_index") if self._started else None

    @property
    def url(self) -> str:
        """The server; the next session opens there."""
        return self._session.url

    @url.setter
    def url(self, url: str) -> None:
        self._session.url = url

    @property
    def _client(self):
        """This instance's OpenEnv client (``None`` until the first request, and after :meth:`close`)."""
        return self._session.client

    def close(self) -> None:
        """Close the session.

        TRL never calls it: an instance closes its session by itself when it is collected or when
        the process exits, and the server evicts idle sessions too.
        """
        self._session.close()

    def _run(self, coroutine):
        """Run a coroutine on the event-loop thread that holds the session's socket."""
        return self._session.run(coroutine)

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        for attempt in range(self._reconnects + 1):
            try:
                if attempt:
                    self._reestablish()
                out = unpack(self._session.call("step", {"action": action}))
                self._page = out[0]
                return out
            except EpisodeLost:
                raise
            except Exception as exc:
                if not dropped(exc):
                    raise
                self.close()
                error = exc
        self._lose(f"the connection to {self.url} dropped {self._reconnects + 1} times ({error})")

    def _reestablish(self) -> None:
        """A new session on the same goal, the episode's actions replayed; it must land on the page the episode was on."""
        goal = self.info.get("goal_index")
        result = self._session.call("reset", {"goal_index": goal})
        for action in self.actions:
            result = self._session.call("step", {"action": action})
        obs, _, terminated, truncated, info = unpack(result)
        if obs != self._page or info["steps"] != len(self.actions) or terminated or truncated:
            self._lose(f"replaying the episode's {len(self.actions)} actions on goal {goal} at {self.url} did not "
                       "reach the page the episode was on (was the server restarted with other settings?)")
        self.reconnections += 1

    def _lose(self, why: str):
        self._over = True
        self._reward = 0.0
        raise EpisodeLost(f"the episode is lost: {why}; its reward is 0.0")


def unfinished_episodes(environments=None, **kwargs: Any) -> list[float | None]:
    """A TRL reward function that logs the share of episodes cut short: 1.0 for an episode not over.

    An episode is over when the model bought something or used every step; one whose completion
    budget (``max_completion_length``, ``max_tool_calling_iterations``) ran out first scores 0
    WebShop reward without having failed at the task, and a falling score can hide a rising
    share of them.  Give it weight 0 to log it without training on it::

        GRPOTrainer(..., environment_factory=WebShopToolEnv, reward_funcs=[unfinished_episodes],
                    args=GRPOConfig(..., reward_weights=[0.0]))

    ``reward_weights`` weighs the functions given; TRL appends the environment's ``get_reward``
    with weight 1 and logs ``rewards/unfinished_episodes/mean`` beside
    ``rewards/WebShopToolEnv/mean``.

    Args:
        environments: the rollouts' environment instances (TRL passes them).
        **kwargs: TRL's other columns (ignored).

    Returns:
        Per rollout, 1.0 when its episode is not over, 0.0 when it is (``None`` for another
        environment class, which TRL leaves out of the mean).
    """
    return [float(not e.done) if isinstance(e, WebShopToolEnv) else None for e in environments or []]


def webshop_dataset(
    split: str | None = "train",
    *,
    protocol: str | None = None,
    allow_test_goals: bool = False,
    shop: str | os.PathLike | Shop | None = None,
    goals: str | os.PathLike | None = None,
    human_goals: bool = False,
    price_seed: int = 0,
    limit: int | None = None,
    prompt: str = TASK_PROMPT,
    as_dataset: bool | None = None,
    url: str | None = None,
):
    """The goals of a split as TRL rows: ``prompt``, ``goal_index`` and ``instruction``.

    ``prompt`` is a conversational prompt (one user message, the same for every row);
    :meth:`WebShopToolEnv.reset` appends the goal's instruction and start page to it.  Build the
    env with the same shop settings (``shop``, ``goals``, ``human_goals``, ``price_seed``) and
    split: ``reset`` checks the row's ``instruction`` against its own goal.

    Args:
        split: ``"train"`` (default), ``"eval"``, ``"test"`` (the first 500 goals: the published
            evaluation) or ``None`` (every goal); with ``protocol``, ``"train"`` or ``"test"``.
        protocol: a protocol's name (:func:`webshop_gym.protocols.protocol_names`): the rows are
            its train goals (``split="train"``) or its test goals (``split="test"``, with
            ``allow_test_goals=True``), and the shop must be the protocol's.  The env then takes
            ``split=f"{protocol}:train"``.
        allow_test_goals: allow rows that are the protocol's test goals (refused otherwise).
        shop: a shop directory, a loaded :class:`~webshop_gym.Shop`, or ``None`` (embedded shop).
        goals: a frozen goal-set file.
        human_goals: human instructions instead of synthetic goals.
        price_seed: seeds product prices and price caps.
        limit: keep only the split's first ``limit`` goals.
        prompt: the user message of every row.
        as_dataset: ``True``: a ``datasets.Dataset`` (raises when ``datasets`` is missing);
            ``False``: a list of dicts; ``None`` (default): a ``Dataset`` when ``datasets`` is
            installed, else the list.
        url: a ``webshop-gym openenv`` server: the goals are read from it (OpenEnv's task API),
            with its shop settings, and no shop is loaded here; for :class:`WebShopRemoteToolEnv`
            on the same server.  ``shop``, ``goals``, ``human_goals`` and ``price_seed`` are then
            the server's and must not be given.

    Returns:
        A ``datasets.Dataset`` or a list of row dicts, in goal order.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgument(f"limit must be an integer >= 0 or None, got {limit!r}")
    if not isinstance(prompt, str):
        raise InvalidArgument(f"prompt must be a string, got {prompt!r}")
    if url is not None:
        if shop is not None or goals is not None or human_goals or price_seed != 0:
            raise InvalidArgument("with url=..., the shop settings are the server's: leave shop, goals, human_goals "
                                  "and price_seed out (start `webshop-gym openenv` with them instead)")
        chosen = remote_goals(url, split, protocol=protocol, allow_test_goals=check_bool(
            "allow_test_goals", allow_test_goals), limit=limit)
        return _rows(chosen, prompt, as_dataset)
    loaded = shared_shop(shop, goals=goals, human_goals=human_goals, price_seed=price_seed)
    if protocol is not None:
        if split not in ("train", "test"):
            raise InvalidArgument(f"with protocol={protocol!r}, split must be 'train' or 'test', got {split!r}")
        split = ProtocolSplit(str(protocol), split)
    goal_range = goal_ids(loaded, split, allow_test_goals=check_bool("allow_test_goals", allow_test_goals))
    if len(goal_range) == 0:
        raise GoalNotFound(f"split {str(split)!r} holds no goals in this goal set ({len(loaded.goals)} goals)")
    if limit is not None:
        goal_range = goal_range[:limit]
    instructions = loaded.goals.instruction
    return _rows([(int(i), instructions[i]) for i in goal_range], prompt, as_dataset)


def _rows(goals: list[tuple[int, str]], prompt: str, as_dataset: bool | None):
    """TRL rows of ``(goal_index, instruction)`` pairs: a ``datasets.Dataset`` or a list (see :func:`webshop_dataset`)."""
    rows = [{"prompt": [{"role": "user", "content": prompt}], "goal_index": goal, "instruction": instruction}
            for goal, instruction in goals]
    if as_dataset is False:
        return rows
    try:
        import datasets
    except ImportError:
        if as_dataset:
            raise DependencyNotInstalled(
                "webshop_dataset(as_dataset=True) needs the datasets package: pip install 'webshop-gym[trl]'"
            ) from None
        return rows
    return datasets.Dataset.from_list(rows)
