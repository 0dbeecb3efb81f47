"""``WebShopEnv``: the WebShop benchmark as a Gymnasium environment (one episode at a time)."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym

from webshop_gym.core.actions import MAX_ACTION_LENGTH
from webshop_gym.engine import OBSERVATION_MODES, Engine
from webshop_gym.envs.spaces import UnicodeText
from webshop_gym.error import EpisodeFinished, expect_one_of
from webshop_gym.shop import Shop, load_shop
from webshop_gym.utils.checks import check_bool, check_int, check_options, check_seed

__all__ = ["WebShopEnv"]


class WebShopEnv(gym.Env[str, str]):
    """Shop for the product an instruction describes: search, click, buy.

    ## Description
    WebShop (Yao et al., 2022) is a simulated online shop.  Each episode gives the agent an
    instruction ("i need a gluten free smoked bacon, 4 ounce, and price lower than 40.00
    dollars"); the agent searches, opens products, picks options and buys.  This env reproduces
    the reference implementation's pages, observations and reward exactly; it is the one-slot
    case of the batched engine that also drives :class:`~webshop_gym.envs.vector_env.WebShopVectorEnv`.

    ## Action Space
    A string (:class:`~webshop_gym.envs.spaces.UnicodeText`, Gymnasium's ``Text`` over every
    Unicode character): ``search[<keywords>]`` or
    ``click[<label>]`` with a label from ``info["available_actions"]["clickables"]``.
    ``info["valid_actions"]`` lists every complete action valid now.  Anything else (also an
    action longer than the space's ``max_length``, 100,000 characters) is a no-op with reward 0
    and ``info["invalid_action"] = True``; it never raises.

    ## Observation Space
    A string: the page as ``text`` (visible strings joined by ``" [SEP] "``, what papers use),
    ``text_rich`` (one line per string with button marks), ``html`` (a standalone page) or
    ``url``.

    ## Rewards
    0 until ``click[buy now]``; then the reference's reward in [0, 1] (type, attributes,
    options and price matched; ``info["reward_info"]`` holds the breakdown).  Success means
    reward 1.0.

    ## Starting State
    The search page of a goal: ``reset(options={"goal_index": i})`` picks goal ``i``;
    otherwise a goal is drawn in proportion to the goals' weights (within ``split``).

    ## Episode End
    Terminated by buying; truncated after ``max_steps`` actions (invalid ones count).
    Stepping a finished episode raises :class:`~webshop_gym.error.EpisodeFinished`.

    ## Arguments
    ``shop`` (a reference-format directory or a :class:`~webshop_gym.shop.Shop`; default: the
    embedded shop), ``goals`` (a frozen goal-set file), ``human_goals``, ``price_seed`` (seeds
    product prices and price caps), ``observation_mode``, ``split`` (also a protocol's train goals,
    ``"verl-agent-500:train"``, with ``allow_test_goals`` to allow its test goals), ``max_steps``,
    ``show_attrs``, ``render_mode`` (``"ansi"`` text or ``"html"``), ``search_backend``
    (``"bm25"``, default, or ``"pyserini"``: the same ranking, see :mod:`webshop_gym.search`).

    ## Example
        >>> import gymnasium as gym
        >>> import webshop_gym
        >>> env = gym.make("webshop_gym:WebShop-v0")
        >>> obs, info = env.reset(seed=0, options={"goal_index": 0})
        >>> obs.startswith("WebShop [SEP] Instruction:")
        True
        >>> obs, reward, terminated, truncated, info = env.step("click[no such button]")
        >>> info["invalid_action"], reward
        (True, 0.0)
    """

    metadata = {"render_modes": ["ansi", "html"], "render_fps": 1, "observation_modes": list(OBSERVATION_MODES)}

    def __init__(
        self,
        shop: str | os.PathLike | Shop | None = None,
        goals: str | os.PathLike | None = None,
        human_goals: bool = False,
        observation_mode: str = "text",
        split: str | None = None,
        max_steps: int | None = 15,
        show_attrs: bool = False,
        price_seed: int = 0,
        num_products: int | None = None,
        search_backend: str = "bm25",
        render_mode: str | None = None,
        allow_test_goals: bool = False,
    ):
        if render_mode is not None:
            expect_one_of("render_mode", render_mode, self.metadata["render_modes"])
        self.shop = shop if isinstance(shop, Shop) else load_shop(
            shop, goals=goals, human_goals=check_bool("human_goals", human_goals), seed=check_int("price_seed", price_seed, low=0),
            num_products=num_products, progress=False, search_backend=search_backend,
        )
        self.engine = Engine(
            self.shop, 1, observation_mode=observation_mode, max_steps=max_steps, show_attrs=show_attrs, split=split,
            allow_test_goals=check_bool("allow_test_goals", allow_test_goals),
        )
        self.observation_mode = observation_mode
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText(max_length=MAX_ACTION_LENGTH)
        self._started = False

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Take one action; return (observation, reward, terminated, truncated, info)."""
        if not self._started:
            raise gym.error.ResetNeeded("call reset() before step()")
        if self.engine.finished(0):
            raise EpisodeFinished("the episode has finished (bought or truncated); call reset() to start a new one")
        reward, terminated, truncated = self.engine.step_one(0, action)
        return self.engine.observe(0), reward, terminated, truncated, self.engine.info(0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode.

        Args:
            seed: seeds the env's generator (goal sampling).
            options: ``{"goal_index": i}`` to pick goal ``i``.
        """
        seed = check_seed(seed)
        options = check_options(options, ("goal_index",))
        goal = options.get("goal_index")
        if goal is not None:
            goal = self.engine.check_goal(goal)
        super().reset(seed=seed)  # only once every argument is known to be good
        self.engine.set_rng(0, self.np_random)
        if goal is None:
            goal = self.engine.sample_goal(0)
        self.engine.reset([0], [goal])
        self._started = True
        return self.engine.observe(0), self.engine.info(0)

    def render(self) -> str | None:
        """Return the current page as text (``"ansi"``) or HTML (``"html"``)."""
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'html'")
            return None
        if not self._started:
            return None
        return self.engine.observe(0, "text" if self.render_mode == "ansi" else "html")

    def close(self) -> None:
        """Nothing to release per env (the shop is shared by the process)."""

    @property
    def goal_index(self) -> int:
        """The current episode's goal."""
        return int(self.engine.state.goal[0])
