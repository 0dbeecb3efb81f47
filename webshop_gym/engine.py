"""The engine shared by the env, the vector env and the server.

An :class:`Engine` owns a batch of episode slots over one shop: the simulator state, the goal
selection, the step cap, observations in every mode and the per-slot ``info`` dicts.  The
Gymnasium classes are thin facades over it (:class:`~webshop_gym.envs.env.WebShopEnv` is an engine
with one slot), so every front end behaves the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from webshop_gym.core.actions import INVALID
from webshop_gym.core.pages import SUB, SUB_PAGES
from webshop_gym.core.sim import BatchState, SimContext, reset_slots, slot_index, step, step_one
from webshop_gym.error import GoalNotFound, expect_one_of
from webshop_gym.protocols.splits import goal_ids
from webshop_gym.render.text import Renderer, action_lists_of
from webshop_gym.shop import Shop
from webshop_gym.utils.checks import check_goal_index, check_int

__all__ = ["OBSERVATION_MODES", "Engine"]

OBSERVATION_MODES = ("text", "text_rich", "html", "url")


# ``info["page"]``: the page kind's name, or on a tab page the tab's (description, features, ...)
_PAGE_NAMES = ("start", "results", "item", "sub", "done")
_SUB_NAMES = tuple(name.lower() for name in SUB_PAGES)
_NAMES_BY_CODE = np.array(_PAGE_NAMES + _SUB_NAMES, dtype=object)  # page code, or len(_PAGE_NAMES) + tab


class Engine:
    """Episodes of one shop in ``num_slots`` slots.

    Args:
        shop: the shop.
        num_slots: number of slots.
        observation_mode: ``text`` (default), ``text_rich``, ``html`` or ``url``.
        max_steps: steps after which an episode is truncated (``None``: never).
        show_attrs: show the ``Attributes`` tab on item pages.
        split: ``"test"``, ``"eval"``, ``"train"``, ``None`` (all goals) or a protocol's goals
            (``"verl-agent-500:train"``, :func:`webshop_gym.protocols.goal_ids`) for sampled goals.
        allow_test_goals: let a protocol split hold the protocol's test goals.
        html_images: let HTML pages load product images.
    """

    def __init__(
        self,
        shop: Shop,
        num_slots: int,
        observation_mode: str = "text",
        max_steps: int | None = 15,
        show_attrs: bool = False,
        split: str | None = None,
        html_images: bool = False,
        allow_test_goals: bool = False,
    ):
        expect_one_of("observation_mode", observation_mode, OBSERVATION_MODES)
        max_steps = check_int("max_steps", max_steps, low=1, allow_none=True)
        num_slots = check_int("num_slots", num_slots, low=1)
        self.shop = shop
        self.observation_mode = observation_mode
        self.max_steps = None if max_steps is None else int(max_steps)
        self.ctx = SimContext(shop, show_attrs=show_attrs)
        max_groups = int(np.diff(np.asarray(shop.catalog.option_groups.offsets)).max(initial=1))
        self.state = BatchState.empty(num_slots, max_groups)
        self.renderer = Renderer(self.ctx)
        self.html_images = html_images
        self._html = None
        self.goal_range = goal_ids(shop, split, allow_test_goals=allow_test_goals)
        if len(self.goal_range) == 0:
            raise GoalNotFound(f"split {split!r} holds no goals in this goal set ({len(shop.goals)} goals)")
        self.split = split
        self.instructions: list[str] = [""] * num_slots
        self.invalid = np.zeros(num_slots, bool)
        self.truncated = np.zeros(num_slots, bool)
        # slot -> why its last action failed (a search the engine failed on: the action was invalid)
        self.invalid_reasons: dict[int, str] = {}
        # each slot's text observation, kept until its page changes: an invalid action or an
        # option selection changes nothing a text observation shows.  Kept for this state
        # object: a state put in its place (a run viewer's restore) starts them afresh.
        self._text: list[str | None] = [None] * num_slots
        # and its page's actions, ``(has_search_bar, clickables, valid actions)`` as tuples: no
        # option selection changes them either
        self._acts: list[tuple | None] = [None] * num_slots
        self._text_of = self.state

    @property
    def num_slots(self) -> int:
        """Number of slots."""
        return len(self.state)

    # -- goals and resets ---------------------------------------------------------------------

    def set_rng(self, slot: int, rng: np.random.Generator) -> None:
        """Give a slot its random generator (goal sampling, ``<r>`` searches)."""
        self.state.rng[slot] = rng

    def sample_goal(self, slot: int) -> int:
        """Draw a goal for ``slot`` in proportion to weight (within the split) from its generator."""
        return self.sample_goal_with(self.state.rng[slot])

    def sample_goal_with(self, rng: np.random.Generator) -> int:
        """Draw a goal in proportion to weight (within the split) from ``rng``."""
        return self.shop.goals.sample(rng, self.goal_range)

    def check_goal(self, goal: int) -> int:
        """Validate a goal index (an integer in ``[0, len(goals))``; see :func:`~webshop_gym.utils.checks.check_goal_index`)."""
        return check_goal_index(goal, len(self.shop.goals))

    def reset(self, slots: Sequence[int], goals: Sequence[int]) -> None:
        """Start episodes in ``slots`` with ``goals``."""
        goals = [self.check_goal(g) for g in goals]
        reset_slots(self.ctx, self.state, slots, goals)
        instruction = self.shop.goals.instruction
        invalid, truncated, text, acts = self.invalid, self.truncated, self._text, self._acts
        reasons = self.invalid_reasons
        for slot, goal in zip(slots, goals):
            if reasons:
                reasons.pop(slot, None)
            self.instructions[slot] = instruction[goal]  # once per episode, not per info
            invalid[slot] = truncated[slot] = False  # scalar stores: no list-to-index conversion
            text[slot] = acts[slot] = None

    # -- stepping -----------------------------------------------------------------------------

    def finished(self, slot: int) -> bool:
        """Whether the slot's episode ended (purchase or step cap)."""
        return bool(self.state.done[slot] or self.truncated[slot])

    def step(self, slots: Sequence[int], actions: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Advance ``slots`` by one action each; return (rewards, terminated, truncated)."""
        index, slots = slot_index(slots)
        out = step(self.ctx, self.state, index, actions)
        self.invalid[index] = out.invalid
        reasons = self.invalid_reasons
        if reasons:
            for slot in slots:
                reasons.pop(slot, None)
        if out.errors:
            reasons.update(out.errors)
        text, acts = self._text, self._acts
        for slot, same in zip(slots, out.same_page.tolist()):
            if not same:  # (the text observation does not show which options are selected)
                text[slot] = acts[slot] = None
        terminated = out.done
        if self.max_steps is None:
            truncated = np.zeros(len(slots), bool)
        else:
            truncated = ~terminated & (self.state.steps[index] >= self.max_steps)
        self.truncated[index] = truncated
        return out.reward, terminated, truncated

    def step_one(self, slot: int, action) -> tuple[float, bool, bool]:
        """:meth:`step` for one slot, with Python scalars: ``(reward, terminated, truncated)``."""
        kind, reward, terminated, same_page, error = step_one(self.ctx, self.state, slot, action)
        self.invalid[slot] = kind == INVALID
        if error is not None:
            self.invalid_reasons[slot] = error
        elif self.invalid_reasons:
            self.invalid_reasons.pop(slot, None)
        if not same_page:  # (the text observation does not show which options are selected)
            self._text[slot] = self._acts[slot] = None
        truncated = not terminated and self.max_steps is not None and int(self.state.steps[slot]) >= self.max_steps
        self.truncated[slot] = truncated
        return reward, terminated, truncated

    # -- observations and infos ---------------------------------------------------------------

    @property
    def html(self):
        """The HTML renderer (built on first use)."""
        if self._html is None:
            from webshop_gym.render.html import HtmlRenderer

            self._html = HtmlRenderer(self.renderer, images=self.html_images)
        return self._html

    def observe(self, slot: int, mode: str | None = None) -> str:
        """The observation of a slot in ``mode`` (default: the engine's mode)."""
        mode = mode or self.observation_mode
        if mode == "text":
            self._kept_for_state()
            text = self._text[slot]
            if text is None:
                text = self._text[slot] = self.renderer.text(self.state, slot)
            return text
        if mode == "text_rich":
            return self.renderer.text_rich(self.state, slot)
        if mode == "url":
            return self.renderer.url(self.state, slot)
        return self.html.render(self.state, slot)

    def observe_all(self) -> list[str]:
        """Every slot's observation in the engine's mode, slot ``i`` at ``i`` (text: the kept texts, rendered where missing)."""
        if self.observation_mode != "text":
            return [self.observe(slot) for slot in range(len(self.state))]
        self._kept_for_state()
        text, render, state = self._text, self.renderer.text, self.state
        for slot, kept in enumerate(text):
            if kept is None:
                text[slot] = render(state, slot)
        return list(text)

    def forget(self, slot: int) -> None:
        """Drop the slot's kept text and page actions.

        Call it after changing the slot's state in place other than through :meth:`step` and
        :meth:`reset` (an undone step, say).
        """
        if self._text_of is self.state:
            self._text[slot] = self._acts[slot] = None

    def _kept_for_state(self) -> None:
        """Drop every slot's kept text and actions if they were made from another state object."""
        if self._text_of is not self.state:
            n = len(self.state)
            self._text, self._acts, self._text_of = [None] * n, [None] * n, self.state

    def page_actions(self, slot: int) -> tuple[bool, tuple, tuple]:
        """``(has_search_bar, clickables, valid_actions)`` of the slot's page, as kept tuples (do not copy)."""
        self._kept_for_state()
        acts = self._acts[slot]
        if acts is None:
            acts = self._acts[slot] = self.renderer.page_actions(self.state, slot)
        return acts

    def info(self, slot: int, actions: bool = True) -> dict:
        """The info dict of a slot (deterministic: no timings).

        Keys: ``goal_index``, ``instruction``, ``page``, ``steps``, ``invalid_action``,
        ``available_actions`` (the reference's ``{has_search_bar, clickables}``) and
        ``valid_actions`` (complete action strings valid now); ``invalid_reason`` after an action
        that failed in the engine (a search it could not run: the action was invalid); after a purchase also
        ``success``, ``reward_info`` (the reward breakdown), ``purchased_asin``,
        ``purchased_options`` and ``purchased_price``.  With ``actions=False`` the two action keys
        are left out (the cheap part, for replays that only compare outcomes).
        """
        state = self.state
        page = state.page.item(slot)  # ``item``: a Python number at once, no numpy scalar in between
        info = {
            "goal_index": state.goal.item(slot),
            "instruction": self.instructions[slot],
            "page": _SUB_NAMES[state.sub.item(slot)] if page == SUB else _PAGE_NAMES[page],
            "steps": state.steps.item(slot),
            "invalid_action": self.invalid.item(slot),
        }
        if actions:
            info["available_actions"], info["valid_actions"] = action_lists_of(self.page_actions(slot))
        if self.invalid_reasons and slot in self.invalid_reasons:
            info["invalid_reason"] = self.invalid_reasons[slot]
        if state.purchase[slot] is not None:
            info.update(self.purchase_info(slot))
        return info

    def purchase_info(self, slot: int) -> dict:
        """The purchase keys of a slot's :meth:`info` (``{}`` before a purchase)."""
        state = self.state
        purchase = state.purchase[slot]
        if purchase is None:
            return {}
        return {
            "success": bool(state.reward[slot] == 1.0),
            "reward_info": dict(purchase["reward_info"]),
            "purchased_asin": purchase["asin"],
            "purchased_options": dict(purchase["options"]),
            "purchased_price": purchase["price"],
        }

    def info_columns(self, slots: Sequence[int] | None = None) -> tuple[dict[str, np.ndarray], list[int]]:
        """The :meth:`info` of ``slots`` (default: every slot), key by key: the columns a vector env's ``info`` holds.

        Returns ``{key: array}`` for the keys every slot reports, one entry per slot of the engine
        (slot ``i`` at ``i``; slots not asked for hold ``0``/``False``/``None``), typed as
        Gymnasium types a column by its first value (``int64``, ``bool`` or ``object``; a dict
        value, ``available_actions``, as a dict of such columns); and the slots asked for whose
        episode ended in a purchase (their extra keys: :meth:`purchase_info`).  The same values as
        :meth:`info` slot by slot, without a dict per slot, but for ``invalid_reason``
        (:attr:`invalid_reasons`, which the caller adds).
        """
        state = self.state
        n = len(state)
        if slots is None:
            index, listed = slice(None), range(n)
        else:
            index, listed = slot_index(slots)
        m = len(listed)

        def full(values: np.ndarray) -> np.ndarray:  # the slots' values in an array of every slot
            if slots is None:
                return values
            out = np.full(n, None, dtype=object) if values.dtype == object else np.zeros(n, dtype=values.dtype)
            out[index] = values
            return out

        self._kept_for_state()
        kept, page_actions = self._acts, self.renderer.page_actions
        for slot in listed:
            if kept[slot] is None:
                kept[slot] = page_actions(state, slot)
        acts = kept if slots is None else [kept[slot] for slot in listed]
        page = state.page[index]
        codes = np.where(page == SUB, len(_PAGE_NAMES) + state.sub[index].astype(np.intp), page)
        instructions = self.instructions
        columns = {
            "goal_index": full(state.goal[index].astype(int)),
            "instruction": full(np.fromiter([instructions[slot] for slot in listed], dtype=object, count=m)),
            "page": full(_NAMES_BY_CODE[codes]),
            "steps": full(state.steps[index].astype(int)),
            "invalid_action": full(self.invalid[index].copy()),
            "available_actions": {  # a dict value: a dict of columns
                "has_search_bar": full(np.fromiter([bar for bar, _, _ in acts], dtype=bool, count=m)),
                "clickables": full(np.fromiter([list(labels) for _, labels, _ in acts], dtype=object, count=m)),
            },
            "valid_actions": full(np.fromiter([list(valid) for _, _, valid in acts], dtype=object, count=m)),
        }
        purchase = state.purchase
        purchased = [slot for slot in listed if purchase[slot] is not None]
        return columns, purchased
