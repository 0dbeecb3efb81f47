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

import json
import os
import threading
from pathlib import Path
from typing import Any

from webshop_gym import Shop, WebShopEnv, load_shop
from webshop_gym.agents.prompts import strip_instruction
from webshop_gym.core.actions import MAX_ACTION_LENGTH
from webshop_gym.error import (
    DependencyNotInstalled,
    EpisodeFinished,
    GoalNotFound,
    InvalidAction,
    InvalidArgument,
    close_match,
)

__all__ = ["TASK_PROMPT", "InadmissibleAction", "WebShopToolEnv", "shared_shop", "webshop_dataset"]

TASK_PROMPT = (
    "You are shopping on WebShop, an online store. Find and buy the product that the instruction "
    "below describes, with the options it asks for, within its price limit. Call the tool "
    "search(query) on a page with a search bar to search by keywords, and click(label) to click "
    "one of the labels a page lists: a product id on a results page, an option value on a "
    "product page, 'buy now' to buy the product on the page (this ends the episode), 'next >', "
    "'< prev', 'back to search'. Call one tool at a time."
)
"""The user message of :func:`webshop_dataset`'s rows; ``reset`` appends the instruction and the page."""

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
            first 500 goals) or ``None`` (all).  A row's ``goal_index`` outside it is an error;
            a row without one gets a goal drawn from it.
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
    ):
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InvalidArgument(f"seed must be an integer >= 0 or None, got {seed!r}")
        loaded = shared_shop(shop, goals=goals, human_goals=human_goals, price_seed=price_seed, search_backend=search_backend)
        self._env = WebShopEnv(shop=loaded, split=split, max_steps=max_steps)
        self._max_steps = max_steps
        self._split = split
        self._goal_range = loaded.goals.split_range(split)
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
                raise GoalNotFound(
                    f"goal_index {goal} is not in this env's split {self._split!r} (goals "
                    f"{self._goal_range.start}..{self._goal_range.stop - 1}); build the dataset and the env "
                    "with the same split, or pass split=None to the env"
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
        self._started = True
        self._over = False
        self._reward = 0.0
        self.reward_info = {}
        self.invalid_actions = 0
        self.actions = []
        self.info = info
        page = strip_instruction(obs, info["instruction"])
        return f"\n\nInstruction: {info['instruction']}\n\n{self._describe(page, info)}"

    def get_reward(self) -> float:
        """The episode's WebShop reward: that of the purchase in [0, 1], 0.0 without one."""
        return self._reward

    # -- tools ----------------------------------------------------------------------------------

    def search(self, query: str) -> str:
        """Search the shop for products matching some keywords.

        Args:
            query: the keywords to search for, e.g. "gluten free smoked bacon 4 ounce".

        Returns:
            The first page of results (ten products, each with its id, title and price) and the actions admissible on it.
        """
        if not isinstance(query, str):
            raise InvalidArgument(f"search(query): query must be a string, got {query!r}")
        return self._act("search", " ".join(query.split()))

    def click(self, label: str) -> str:
        """Click a button, link or option on the current page.

        Args:
            label: what to click, as the page's admissible actions list it: a product id from the results (e.g. "b09qkp7xqq"), an option value on a product page (e.g. "large"), "buy now", "next >", "< prev", "description", "back to search".

        Returns:
            The page the click leads to and the actions admissible on it; after "buy now", the purchase confirmation (the episode is then over).
        """
        if not isinstance(label, str):
            raise InvalidArgument(f"click(label): label must be a string, got {label!r}")
        return self._act("click", label)

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

    def _act(self, kind: str, argument: str) -> str:
        call = f"{kind}({_shown(argument)})"
        if not self._started:
            raise EpisodeFinished(f"{call}: no episode yet; reset() starts one")
        if self._over:
            raise EpisodeFinished(f"{call}: the episode is over ({self._ending()}); no further actions are possible")
        action = f"{kind}[{argument}]"
        obs, reward, terminated, truncated, info = self._env.step(action)
        self.actions.append(action)
        admissible_before = self.info.get("valid_actions", [])
        self.info = info
        self._over = terminated or truncated
        if terminated:
            self._reward = float(reward)
            self.reward_info = dict(info.get("reward_info", {}))
        if info["invalid_action"]:
            self.invalid_actions += 1
            why = "on this page" if len(action) <= MAX_ACTION_LENGTH else (
                f"anywhere: the action has {len(action):,} characters, at most {MAX_ACTION_LENGTH:,}")
            message = (
                f"{call} is not admissible {why} (invalid action {self.invalid_actions}; "
                f"{self._step_text()}). {self._admissible(admissible_before, argument if kind == 'click' else None)}"
            )
            if self._over:
                message += f" The episode is over: {self._ending()}."
            raise InadmissibleAction(message)
        return self._describe(strip_instruction(obs, info["instruction"]), info)

    def _step_text(self) -> str:
        limit = self._max_steps
        return f"step {self.steps}" + ("" if limit is None else f" of {limit}")

    def _ending(self) -> str:
        if self.info.get("purchased_asin") is not None:
            return f"{self.info['purchased_asin'].lower()} was bought"
        return f"the limit of {self._max_steps} actions was reached without a purchase"

    @staticmethod
    def _admissible(valid: list[str], tried: str | None = None) -> str:
        parts = []
        if "search[<query>]" in valid:
            parts.append("search(query)")
        labels = [a[len("click["):-1] for a in valid if a.startswith("click[")]
        if labels:
            parts.append(f"click(label) with label one of {json.dumps(labels)}")
        if not parts:
            return "Admissible actions: none."
        text = "Admissible actions: " + "; ".join(parts)
        hint = close_match(tried.lower(), labels) if tried and labels else None
        return text + (f" (did you mean {hint!r}?)" if hint else "")

    def _describe(self, page: str, info: dict) -> str:
        text = f"Page: {page}\n"
        if self._over:
            return text + f"The episode is over: {self._ending()}."
        return text + self._admissible(info["valid_actions"])


def webshop_dataset(
    split: str | None = "train",
    *,
    shop: str | os.PathLike | Shop | None = None,
    goals: str | os.PathLike | None = None,
    human_goals: bool = False,
    price_seed: int = 0,
    limit: int | None = None,
    prompt: str = TASK_PROMPT,
    as_dataset: bool | None = None,
):
    """The goals of a split as TRL rows: ``prompt``, ``goal_index`` and ``instruction``.

    ``prompt`` is a conversational prompt (one user message, the same for every row);
    :meth:`WebShopToolEnv.reset` appends the goal's instruction and start page to it.  Build the
    env with the same shop settings (``shop``, ``goals``, ``human_goals``, ``price_seed``) and
    split: ``reset`` checks the row's ``instruction`` against its own goal.

    Args:
        split: ``"train"`` (default), ``"eval"``, ``"test"`` (the first 500 goals: the published
            evaluation) or ``None`` (every goal).
        shop: a shop directory, a loaded :class:`~webshop_gym.Shop`, or ``None`` (embedded shop).
        goals: a frozen goal-set file.
        human_goals: human instructions instead of synthetic goals.
        price_seed: seeds product prices and price caps.
        limit: keep only the split's first ``limit`` goals.
        prompt: the user message of every row.
        as_dataset: ``True``: a ``datasets.Dataset`` (raises when ``datasets`` is missing);
            ``False``: a list of dicts; ``None`` (default): a ``Dataset`` when ``datasets`` is
            installed, else the list.

    Returns:
        A ``datasets.Dataset`` or a list of row dicts, in goal order.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgument(f"limit must be an integer >= 0 or None, got {limit!r}")
    if not isinstance(prompt, str):
        raise InvalidArgument(f"prompt must be a string, got {prompt!r}")
    loaded = shared_shop(shop, goals=goals, human_goals=human_goals, price_seed=price_seed)
    goal_range = loaded.goals.split_range(split)
    if len(goal_range) == 0:
        raise GoalNotFound(f"split {split!r} holds no goals in this goal set ({len(loaded.goals)} goals)")
    if limit is not None:
        goal_range = goal_range[:limit]
    instructions = loaded.goals.instruction
    rows = [
        {"prompt": [{"role": "user", "content": prompt}], "goal_index": int(i), "instruction": instructions[i]}
        for i in goal_range
    ]
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


def _shown(argument: str) -> str:
    """A tool argument as the error shows it: its repr, cut after 200 characters with its length."""
    text = repr(argument)
    return text if len(text) <= 200 else f"{text[:200]}... [{len(argument):,} characters]"
