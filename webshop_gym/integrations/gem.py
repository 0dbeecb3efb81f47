"""WebShop as GEM environments: ``gem.make("webshop:test")`` after ``import webshop_gym.integrations.gem``.

GEM (``pip install 'webshop-gym[gem]'``, gem-llm 0.1.0, which declares Python <= 3.12) has no plugin entry points: an environment
is known to ``gem.make``/``gem.make_vec`` once ``gem.register`` has been called in the process, so
importing this module registers :data:`ENV_IDS`:

* ``webshop:train``, ``webshop:eval``, ``webshop:test`` (the first 500 goals: the published
  evaluation) over the synthetic goals;
* ``webshop:train-human``, ``webshop:eval-human``, ``webshop:test-human`` over the human
  instructions (the embedded shop has 510: test and eval).

:class:`WebShopGemEnv` is a ``gem.Env`` over :class:`~webshop_gym.WebShopEnv`, with GEM's text-env
conventions: the observation of ``reset`` is the task (the prompt format's instructions and the
goal's first page), and each ``step``'s observation is the step's *new* text only (the page the
reply led to, as the format writes a user turn); GEM's observation wrappers (``concat``,
``concat_with_action``, ``concat_chat``) build the history, with ``info["parsed_action"]`` (the
reply as the conversation keeps it) as the assistant's part.  The formats are those of one growing
conversation, ``eval``'s ``think-answer`` (default) and ``react``: through ``concat_chat`` the model
reads exactly the messages ``webshop-gym eval --prompt <format>`` sends, the system message folded
into the first user message (:meth:`WebShopGemEnv.messages`).  (``verl-agent`` repeats its task
and history in every prompt, which a history wrapper would repeat again: it is refused.)  The
action is the model's raw reply, parsed with ``eval``'s parser and stepped (an inadmissible one as
an invalid action).  The reward is WebShop's, paid at the purchase; ``terminated`` at the
purchase, ``truncated`` after ``max_steps`` actions (15).

Keywords GEM's own environments take and this one does not (``use_mp``, ...) are accepted and
ignored, as GEM's envs do, so GEM's examples make it unchanged.  The shop is ``shop=``, else the
directory ``WEBSHOP_GYM_SHOP`` names (:mod:`webshop_gym.integrations.shop_choice`), else the
embedded shop; ``gem.register("my-shop:test", "webshop_gym.integrations.gem:WebShopGemEnv",
shop=..., split="test")`` registers an id of your own.

GEM's GRPO (``collect_experience_multiple`` in GEM's ``examples/train_oat_grpo.py``) plays a group on
one goal by resetting one env, storing ``env.get_state()`` once per member and ``set_state``-ing a
copy into each vector slot; :meth:`WebShopGemEnv.get_state` is the episode (its goal and the
replies so far) and :meth:`~WebShopGemEnv.set_state` replays it, so every member starts on the
same goal and page.  ``spawn(same_state=True)`` does the same for a new env.

Goals: each ``reset()`` draws one from the split with the env's own generator (seeded by the
``seed`` argument that ``gem.make_vec`` passes each env; GEM's global seeding is not touched).
``eval=True`` (the keyword of GEM's dataset envs) walks the split in order instead: reset ``k``
plays the split's ``k``-th goal, so ``len(env.goal_range)`` resets through any GEM wrapper (which
pass ``reset`` only a ``seed``) evaluate every goal once.  ``reset(goal_index=i)`` on the env
itself plays goal ``i``.

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
from webshop_gym.integrations.shop_choice import environment_shop  # noqa: E402
from webshop_gym.integrations.text_episode import TextEpisode, last_user_turn  # noqa: E402
from webshop_gym.integrations.trl import shared_shop  # noqa: E402
from webshop_gym.protocols import goal_ids  # noqa: E402
from webshop_gym.utils.checks import check_bool  # noqa: E402

__all__ = ["ENV_IDS", "FORMATS", "WebShopGemEnv", "register"]

FORMATS = ("think-answer", "react")
"""The prompt formats of one growing conversation, which GEM's history wrappers can build."""

ENV_IDS = {f"webshop:{split}{suffix}": {"split": split, "human_goals": human}
           for suffix, human in (("", False), ("-human", True)) for split in ("train", "eval", "test")}
"""The ids this module registers, with the settings each one gives."""


class WebShopGemEnv(gem.Env):
    """WebShop episodes for GEM: the observation is the step's new text, the action the model's reply.

    Args:
        split: ``train``, ``eval``, ``test`` (the first 500 goals), ``None`` (all) or a protocol
            split (``"verl-agent-500:train"``): the goals ``reset()`` draws from.
        human_goals: human instructions instead of synthetic goals.
        shop: a reference-format shop directory (``None``: ``WEBSHOP_GYM_SHOP``'s, else the embedded shop).
        goals: a frozen goal-set file.
        price_seed: seeds product prices and price caps (0: the reference's run).
        max_steps: actions (invalid ones included) after which an episode is truncated.
        prompt: the prompt format: ``think-answer`` (default) or ``react`` (:data:`FORMATS`).
        closest: map an inadmissible reply to the closest admissible action.
        seed: seeds the draw of goals (``gem.make_vec`` passes ``seed + i`` to its ``i``-th env).
        search_backend: ``bm25`` or ``pyserini`` (identical rankings).
        eval: walk the split's goals in order, one per reset, instead of drawing them.
        **ignored: other keywords (GEM's ``use_mp``, ...), accepted and ignored as GEM's envs do;
            kept in ``ignored_keywords``.
    """

    def __init__(self, split: str | None = "test", *, human_goals: bool = False, shop: str | os.PathLike | None = None,
                 goals: str | os.PathLike | None = None, price_seed: int = 0, max_steps: int | None = 15,
                 prompt: str = "think-answer", closest: bool = False, seed: int | None = 0,
                 search_backend: str = "bm25", eval: bool = False, **ignored: Any):  # noqa: A002 - GEM's keyword
        super().__init__()
        if prompt not in FORMATS:
            raise InvalidArgument(f"prompt must be one of {', '.join(FORMATS)} for GEM, whose history wrappers build "
                                  f"the conversation from each step's new text (verl-agent repeats its own history "
                                  f"in every prompt), got {prompt!r}")
        self.ignored_keywords = dict(ignored)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0):
            raise InvalidArgument(f"seed must be an integer >= 0 or None, got {seed!r}")
        self.config = {"split": split, "human_goals": check_bool("human_goals", human_goals), "shop": shop,
                       "goals": goals, "price_seed": price_seed, "max_steps": max_steps, "prompt": prompt,
                       "closest": check_bool("closest", closest), "search_backend": search_backend,
                       "eval": check_bool("eval", eval)}
        loaded = shared_shop(shop if shop is not None else environment_shop(), goals=goals, human_goals=human_goals, price_seed=price_seed,
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
        self.resets = 0

    def __repr__(self) -> str:
        where = "not reset" if self.episode is None else f"goal {self.episode.goal_index}, step {len(self.episode.actions)}"
        return f"WebShopGemEnv(split={self.config['split']!r}, {where})"

    def reset(self, seed: int | None = None, goal_index: int | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode: goal ``goal_index``, else the split's next (``eval``) or a drawn one; return the task and info.

        Args:
            seed: reseeds this env's draw of goals (GEM's global seeding is left alone).
            goal_index: the goal to play (an index into the goal set).
        """
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
                raise InvalidArgument(f"seed must be an integer >= 0 or None, got {seed!r}")
            self.rng = np.random.default_rng(int(seed))
        if goal_index is not None:
            goal_index = self.env.engine.check_goal(goal_index)
        elif self.config["eval"]:
            goal_index = int(self.goal_range[self.resets % len(self.goal_range)])
            self.resets += 1
        else:
            goal_index = int(self.goal_range[int(self.rng.integers(len(self.goal_range)))])
        self.episode = TextEpisode(self.env, goal_index, self.config["prompt"], self.config["closest"])
        return self.messages()[0]["content"], self._info()

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Parse the reply, take its action; return the new page (a user turn), the reward, terminated, truncated, info."""
        if self.episode is None:
            raise InvalidArgument("no episode yet: call reset() first")
        step = self.episode.act(action)
        observation = last_user_turn(self.episode.messages())
        return observation, step.reward, step.done and not step.truncated, step.truncated, self._info(step)

    def messages(self) -> list[dict[str, str]]:
        """The conversation so far as GEM's ``concat_chat`` builds it: ``eval``'s messages, the system message folded into the first user message.

        ``concat_with_action`` joins the same contents, and ``concat`` the user turns, each ending in a line break.
        """
        if self.episode is None:
            raise InvalidArgument("no episode yet: call reset() first")
        system, first, *rest = self.episode.messages()
        return [{"role": "user", "content": f"{system['content']}\n\n{first['content']}"}, *rest]

    def _info(self, step=None) -> dict[str, Any]:
        info = dict(self.episode.info)
        info["goal_index"] = self.episode.goal_index
        if step is not None:
            info.update(action=step.action, action_is_valid=step.valid, format_ok=step.format_ok,
                        parsed_action=self.episode.turns[-1].response)
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
