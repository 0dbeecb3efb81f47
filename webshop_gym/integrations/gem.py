"""WebShop as GEM environments: ``gem.make("webshop:test")`` after ``import webshop_gym.integrations.gem``.

GEM (``pip install 'webshop-gym[gem]'``, gem-llm 0.1.0, which declares Python <= 3.12) has no plugin entry points: an environment
is known to ``gem.make``/``gem.make_vec`` once ``gem.register`` has been called in the process, so
importing this module registers :data:`ENV_IDS`:

* ``webshop:train``, ``webshop:eval``, ``webshop:test`` (the first 500 goals: the published
  evaluation) over the synthetic goals;
* ``webshop:train-human``, ``webshop:eval-human``, ``webshop:test-human`` over the human
  instructions (the embedded shop has 510: test and eval).

:class:`WebShopGemEnv` is a ``gem.Env`` over :class:`~webshop_gym.WebShopEnv`.  An observation is
the prompt of the step in one of ``eval``'s formats as one string (``verl-agent`` by default: one
user message with the task, the last two steps and the admissible actions; or ``think-answer``,
``react``); the action is the model's raw reply, parsed with ``eval``'s parser and stepped (an
inadmissible one as an invalid action).  The reward is WebShop's, paid at the purchase;
``terminated`` at the purchase, ``truncated`` after ``max_steps`` actions (15).

GEM's GRPO (``collect_experience_multiple`` in GEM's ``examples/train_oat_grpo.py``) plays a group on
one goal by resetting one env, storing ``env.get_state()`` once per member and ``set_state``-ing a
copy into each vector slot; :meth:`WebShopGemEnv.get_state` is the episode (its goal and the
replies so far) and :meth:`~WebShopGemEnv.set_state` replays it, so every member starts on the
same goal and page.  ``spawn(same_state=True)`` does the same for a new env.

Goals: each ``reset()`` draws one from the split with the env's own generator (seeded by the
``seed`` argument that ``gem.make_vec`` passes each env; GEM's global seeding is not touched);
``reset(goal_index=i)`` plays goal ``i`` (for an evaluation over every test goal).

Importing GEM configures the root logger (``logging.basicConfig(level=INFO)`` in ``gem/__init__.py``);
this module restores the logging configuration it found, so importing it leaves a program's
logging as it was.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from webshop_gym.error import DependencyNotInstalled, GoalNotFound, InvalidArgument


def _import_gem():
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        import gem
    finally:  # gem/__init__.py calls logging.basicConfig(level=INFO) on import
        root.setLevel(level)
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
    return gem


try:
    gem = _import_gem()
except ImportError as exc:
    raise DependencyNotInstalled(f"the GEM environments need gem-llm ({exc}): pip install 'webshop-gym[gem]'") from exc

import numpy as np  # noqa: E402

from webshop_gym import WebShopEnv  # noqa: E402
from webshop_gym.integrations.text_episode import TextEpisode  # noqa: E402
from webshop_gym.integrations.trl import shared_shop  # noqa: E402
from webshop_gym.protocols import goal_ids  # noqa: E402
from webshop_gym.utils.checks import check_bool  # noqa: E402

__all__ = ["ENV_IDS", "WebShopGemEnv", "register"]

ENV_IDS = {f"webshop:{split}{suffix}": {"split": split, "human_goals": human}
           for suffix, human in (("", False), ("-human", True)) for split in ("train", "eval", "test")}
"""The ids this module registers, with the settings each one gives."""


class WebShopGemEnv(gem.Env):
    """WebShop episodes for GEM: the observation is the step's prompt, the action the model's reply.

    Args:
        split: ``train``, ``eval``, ``test`` (the first 500 goals), ``None`` (all) or a protocol
            split (``"verl-agent-500:train"``): the goals ``reset()`` draws from.
        human_goals: human instructions instead of synthetic goals.
        shop: a reference-format shop directory (``None``: the embedded 1,000-product shop).
        goals: a frozen goal-set file.
        price_seed: seeds product prices and price caps (0: the reference's run).
        max_steps: actions (invalid ones included) after which an episode is truncated.
        prompt: the prompt format of observations: ``verl-agent`` (default), ``think-answer`` or ``react``.
        closest: map an inadmissible reply to the closest admissible action.
        seed: seeds the draw of goals (``gem.make_vec`` passes ``seed + i`` to its ``i``-th env).
        search_backend: ``bm25`` or ``pyserini`` (identical rankings).
    """

    def __init__(self, split: str | None = "test", *, human_goals: bool = False, shop: str | os.PathLike | None = None,
                 goals: str | os.PathLike | None = None, price_seed: int = 0, max_steps: int | None = 15,
                 prompt: str = "verl-agent", closest: bool = False, seed: int | None = 0,
                 search_backend: str = "bm25"):
        super().__init__()
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
            raise InvalidArgument(f"seed must be an integer >= 0 or None, got {seed!r}")
        self.config = {"split": split, "human_goals": check_bool("human_goals", human_goals), "shop": shop,
                       "goals": goals, "price_seed": price_seed, "max_steps": max_steps, "prompt": prompt,
                       "closest": check_bool("closest", closest), "search_backend": search_backend}
        loaded = shared_shop(shop, goals=goals, human_goals=human_goals, price_seed=price_seed,
                             search_backend=search_backend)
        self.goal_range = goal_ids(loaded, split)
        if len(self.goal_range) == 0:
            raise GoalNotFound(f"split {str(split)!r} holds no goals in this goal set ({len(loaded.goals)} "
                               f"{loaded.goals.kind} goals)")
        self.env = WebShopEnv(shop=loaded, split=None, max_steps=max_steps)
        TextEpisode(self.env, int(self.goal_range[0]), prompt)  # checks the format before any reset
        self.seed = None if seed is None else int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.episode: TextEpisode | None = None

    def __repr__(self) -> str:
        where = "not reset" if self.episode is None else f"goal {self.episode.goal_index}, step {len(self.episode.actions)}"
        return f"WebShopGemEnv(split={self.config['split']!r}, {where})"

    def reset(self, seed: int | None = None, goal_index: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode: goal ``goal_index``, else one drawn from the split; return its first prompt and info.

        Args:
            seed: reseeds this env's draw of goals (GEM's global seeding is left alone).
            goal_index: the goal to play (an index into the goal set).
        """
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
                raise InvalidArgument(f"seed must be an integer >= 0 or None, got {seed!r}")
            self.rng = np.random.default_rng(int(seed))
        if goal_index is None:
            goal_index = int(self.goal_range[int(self.rng.integers(len(self.goal_range)))])
        else:
            goal_index = self.env.engine.check_goal(goal_index)
        self.episode = TextEpisode(self.env, goal_index, self.config["prompt"], self.config["closest"])
        return self.episode.prompt(), self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Parse the reply, take its action; return the next prompt, the reward, terminated, truncated, info."""
        if self.episode is None:
            raise InvalidArgument("no episode yet: call reset() first")
        step = self.episode.act(action)
        return self.episode.prompt(), step.reward, step.done and not step.truncated, step.truncated, self._info(step)

    def _info(self, step=None) -> dict[str, Any]:
        info = dict(self.episode.info)
        info["goal_index"] = self.episode.goal_index
        if step is not None:
            info.update(action=step.action, action_is_valid=step.valid, format_ok=step.format_ok)
        return info

    def sample_random_action(self) -> str:
        """A random admissible action, written in the prompt format's answer."""
        if self.episode is None:
            raise InvalidArgument("no episode yet: call reset() first")
        admissible = [a for a in self.episode.info["valid_actions"] if a != "search[<query>]"]
        if "search[<query>]" in self.episode.info["valid_actions"]:
            admissible.append("search[" + " ".join(self.episode.info["instruction"].split()[:5]) + "]")
        return self.episode.format.format_response(admissible[int(self.rng.integers(len(admissible)))])

    # -- what GEM's GRPO uses to give a group one goal ----------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """The episode: its goal and the replies so far (plain data: deep copies are cheap)."""
        if self.episode is None:
            return {"goal_index": None, "replies": []}
        return {"goal_index": self.episode.goal_index, "replies": [t.response for t in self.episode.turns]}

    def set_state(self, state: dict[str, Any]) -> None:
        """Put this env where ``state``'s episode is: its goal reset and its replies replayed."""
        if not isinstance(state, dict) or "goal_index" not in state or "replies" not in state:
            raise InvalidArgument(f"state must be a dict from get_state() (goal_index, replies), got {state!r:.80}")
        if state["goal_index"] is None:
            self.episode = None
            return
        self.reset(goal_index=state["goal_index"])
        for reply in state["replies"]:
            self.episode.act(reply)

    def spawn(self, same_state: bool = False, **kwargs: Any) -> WebShopGemEnv:
        """A new env with this one's settings (``kwargs`` override them), on this env's episode when ``same_state``."""
        child = WebShopGemEnv(**{**self.config, "seed": self.seed, **kwargs})
        if same_state:
            child.set_state(self.get_state())
        return child


def register() -> None:
    """Register :data:`ENV_IDS` with GEM (done on import; a second call changes nothing)."""
    from gem.envs.registration import ENV_REGISTRY

    for env_id, settings in ENV_IDS.items():
        if env_id not in ENV_REGISTRY:
            gem.register(env_id, f"{__name__}:WebShopGemEnv", **settings)


register()
