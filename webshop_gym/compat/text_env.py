"""``WebAgentTextEnv``: the reference's text env (gym 0.x API) as a facade over the engine.

Code written for ``web_agent_site.envs.WebAgentTextEnv`` (verl-agent's workers, AgentGym's env
server, the reference's IL/RL baselines) runs unchanged on it after one import line::

    from webshop_gym.compat import WebAgentTextEnv      # was: from web_agent_site.envs import ...

Every call is translated onto a slot of the shared :class:`~webshop_gym.engine.Engine` (no
HTML is parsed); observations, rewards, done flags and available actions are the reference's,
checked against its golden trajectories.  ``docs/compat.md`` lists the few deliberate
differences.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
import weakref
from typing import Any

from webshop_gym.compat.sim_server import SimServer
from webshop_gym.core.pages import START
from webshop_gym.error import Error

__all__ = ["ImageFeaturesUnavailable", "WebAgentTextEnv", "step_envs"]

OBSERVATION_MODES = ("html", "text", "text_rich", "url")

_KNOWN = {
    "attr_path", "shop", "goals", "num_products", "human_goals", "show_attrs", "session",
    "session_prefix", "filter_goals", "limit_goals", "num_prev_obs", "num_prev_actions", "get_image",
    "seed", "shuffle_goals_with_seed",
}  # fmt: skip


class ImageFeaturesUnavailable(Error, NotImplementedError):
    """``get_image``: the reference's pre-computed ResNet image features are not provided."""


_IMAGES = (
    "image features are not provided by webshop-gym: the reference's get_image reads ResNet "
    "features (feat_conv.pt) that are not part of the data; construct the env without get_image"
)

try:  # the reference env is a gym.Env; gym is optional here (Gymnasium is the maintained one)
    # gym prints an "unmaintained" notice on first import; importing it here only to subclass
    # gym.Env must not print it in every process that uses the compat classes (`serve` among them).
    # A program that imports gym itself before this module still sees the notice.
    with contextlib.redirect_stderr(io.StringIO()):
        import gym as _gym

    _Base: type = _gym.Env

    class _StringSpace(_gym.spaces.Space):
        """Any string (what the reference's env takes and returns); gym's checkers want a space."""

        def contains(self, x) -> bool:
            return isinstance(x, str)

        def sample(self, mask=None) -> str:
            return "click[back to search]"

except Exception:  # pragma: no cover - depends on whether the old gym is installed
    _Base = object
    _StringSpace = None


class WebAgentTextEnv(_Base):
    """The reference's ``WebAgentTextEnv`` with gym 0.x semantics, on webshop-gym's engine.

    ``reset(session=None, instruction_text=None) -> (obs, None)``; ``step(action) -> (obs,
    reward, done, None)`` with no auto-reset: after ``click[buy now]`` the done page stays and
    further actions behave as the reference's do (a search starts over on the same goal).

    Args:
        observation_mode: ``"html"`` (the reference's default), ``"text"``, ``"text_rich"`` or ``"url"``.
        file_path: the reference's product file (``items_shuffle_1000.json``); the attribute
            and human-instruction files are found beside it.  ``None``: ``shop=`` or the
            package's embedded shop.
        server: a :class:`~webshop_gym.compat.SimServer` (e.g. ``other_env.server``) to share
            its loaded shop instead of loading one.
        **kwargs: the reference's ``attr_path``, ``num_products``, ``human_goals``,
            ``show_attrs``, ``session``, ``session_prefix``, ``filter_goals``, ``limit_goals``,
            ``num_prev_obs``, ``num_prev_actions``, ``get_image`` (raises: no image features),
            ``seed`` (prices and price caps, default 0), and ours: ``shop`` (a folder or a
            :class:`~webshop_gym.shop.Shop`), ``goals`` (a frozen goal-set file) and
            ``shuffle_goals_with_seed`` (shuffle the goals with ``seed`` instead of 233, as the
            verl-agent fork does).  Unknown names are ignored with a warning.

    Example:
        >>> from webshop_gym.compat import WebAgentTextEnv
        >>> env = WebAgentTextEnv(observation_mode="text")
        >>> obs, info = env.reset(session=0)
        >>> obs.startswith("WebShop [SEP] Instruction:"), info
        (True, None)
        >>> obs, reward, done, info = env.step("search[shoes]")
        >>> env.get_available_actions()["clickables"][:2]
        ['back to search', 'next >']
    """

    def __init__(
        self,
        observation_mode: str = "html",
        file_path: str | os.PathLike | None = None,
        server: SimServer | None = None,
        **kwargs: Any,
    ):
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"Observation mode {observation_mode} not supported; expected one of {list(OBSERVATION_MODES)}")
        unknown = sorted(set(kwargs) - _KNOWN)
        if unknown:
            warnings.warn(f"WebAgentTextEnv ignores unknown arguments {unknown} (as the reference does)",
                          UserWarning, stacklevel=2)
        if kwargs.get("get_image", 0):
            raise ImageFeaturesUnavailable(_IMAGES)
        self.observation_mode = observation_mode
        if _StringSpace is not None:
            self.action_space = _StringSpace()
            self.observation_space = _StringSpace()
        self.kwargs = kwargs
        self.file_path = file_path
        self.base_url = "http://127.0.0.1:3000"
        if server is None:
            seed = kwargs.get("seed", 0)
            server = SimServer(
                self.base_url,
                file_path,
                kwargs.get("filter_goals"),
                kwargs.get("limit_goals", -1),
                kwargs.get("num_products"),
                kwargs.get("human_goals"),
                kwargs.get("show_attrs", False),
                attr_path=kwargs.get("attr_path"),
                shop=kwargs.get("shop"),
                goals=kwargs.get("goals"),
                seed=0 if seed is None else seed,
                shuffle_seed=seed if kwargs.get("shuffle_goals_with_seed") else None,
            )
        elif not isinstance(server, SimServer):
            raise TypeError(f"server must be a webshop_gym.compat.SimServer (e.g. another env's .server), got {type(server).__name__}")
        self.server = server
        self._engine, self._slot = server.lease()
        weakref.finalize(self, server.release, self._engine, self._slot)
        self.session = kwargs.get("session")
        self.session_prefix = kwargs.get("session_prefix")
        self.prev_obs: list[str] = []
        self.prev_actions: list = []
        self.num_prev_obs = kwargs.get("num_prev_obs", 0)
        self.num_prev_actions = kwargs.get("num_prev_actions", 0)
        self.instruction_text: str | None = None
        self.text_to_clickable: dict | None = None
        self.reset()

    # -- the gym 0.x API ------------------------------------------------------------------------

    def step(self, action):
        """Take an action (``search[keywords]`` or ``click[label]``); return ``(obs, reward, done, None)``.

        An action that is not valid on the page does nothing and returns reward ``0`` (an int,
        as in the reference) with ``done`` False.
        """
        return step_envs([self], [action])[0]

    def _before_step(self) -> None:
        state = self._engine.state
        if state.done[self._slot]:
            # The reference keeps going after a purchase: its done page has no clickables, but a
            # search still works and the episode continues on the same goal.
            state.done[self._slot] = False

    def _after_step(self, action, reward: float, terminated: bool) -> tuple:
        valid = not self._engine.invalid[self._slot]
        reward = float(reward) if valid else 0
        ob = self.observation
        text_list = [ob]
        self.prev_actions.append(action)
        for i in range(1, 1 + max(self.num_prev_obs, self.num_prev_actions)):
            if len(self.prev_actions) >= i and self.num_prev_actions >= i:
                text_list.append(str(self.prev_actions[-i]))
            if len(self.prev_obs) >= i and self.num_prev_obs >= i:
                text_list.append(self.prev_obs[-i])
        obs = " [SEP] ".join(text_list[::-1])
        self.prev_obs.append(ob)
        return obs, reward, bool(terminated), None

    def reset(self, session=None, instruction_text: str | None = None):
        """Start a session; return ``(obs, None)``.

        Args:
            session: an int picks that goal (``server.goals[session]``; a bool counts as 0 or 1,
                as in the reference, named ``"True"``/``"False"``); any other value names a
                session (a known name keeps its goal, a new one gets a random goal); ``None``
                draws a random 10-letter name.  ``session_prefix`` is put in front.
            instruction_text: overrides ``env.instruction_text`` (the page keeps the goal's).
        """
        session_int = None
        if session is not None:
            self.session = str(session)
            if isinstance(session, int):
                session_int = int(session)  # True plays goal 1, as the reference's goals[True] does
        else:
            self.session = self.server.random_session()
        if self.session_prefix is not None:
            self.session = self.session_prefix + self.session
        goal = self.server.session_goal(self.session, session_int)
        engine, slot = self._engine, self._slot
        engine.reset([slot], [self.server.shop_goal(goal)])
        engine.renderer.sessions[slot] = self.session
        self.text_to_clickable = None
        self.instruction_text = self.get_instruction_text() if instruction_text is None else instruction_text
        obs = self.observation
        self.prev_obs = [obs]
        self.prev_actions = []
        return obs, None

    def get_available_actions(self) -> dict:
        """``{"has_search_bar": bool, "clickables": [labels]}`` of the current page."""
        actions = self._engine.renderer.available_actions(self._engine.state, self._slot)
        self.text_to_clickable = dict.fromkeys(actions["clickables"])
        return actions

    def get_instruction_text(self) -> str:
        """The instruction as the reference reads it off the page's ``#instruction-text`` heading.

        ``"Instruction: <text>"`` on the search page and ``"Instruction:<text>"`` on the others
        (their headings differ by a space).
        """
        state, slot = self._engine.state, self._slot
        text = self.server.shop.goals.instruction[int(state.goal[slot])]
        return ("Instruction: " if state.page[slot] == START else "Instruction:") + text

    def get_image(self):
        """Not available: the reference's image features are not part of the data.

        Raises:
            ImageFeaturesUnavailable: always.
        """
        raise ImageFeaturesUnavailable(_IMAGES)

    @property
    def observation(self) -> str:
        """The current page in ``observation_mode``."""
        return self._engine.observe(self._slot, self.observation_mode)

    @property
    def state(self) -> dict:
        """``{"url", "html", "instruction_text"}`` of the current page."""
        engine, slot = self._engine, self._slot
        return {
            "url": engine.renderer.url(engine.state, slot),
            "html": engine.observe(slot, "html"),
            "instruction_text": self.instruction_text,
        }

    def render(self, mode: str = "human"):
        """Does nothing (as in the reference)."""

    def close(self) -> None:
        """Does nothing (as in the reference); the slot is given back when the env is collected."""


def step_envs(envs: list[WebAgentTextEnv], actions: list) -> list[tuple]:
    """Step several envs by one action each; the envs on one engine go through one batched step.

    The result of each env is what ``env.step(action)`` would return, whoever shares its batch
    (an engine steps each slot on its own; only the search and the reward are batched).  An
    env listed twice is stepped twice, in order.

    Args:
        envs: the envs (any mix of servers and engines).
        actions: one action per env.

    Returns:
        ``(obs, reward, done, None)`` per env, in order.
    """
    if len(envs) != len(actions):
        raise ValueError(f"one action per env: got {len(envs)} envs and {len(actions)} actions")
    out: list = [None] * len(envs)
    todo = list(range(len(envs)))
    while todo:
        groups: dict[int, list[int]] = {}  # engine id -> positions, one per slot
        taken: set[tuple[int, int]] = set()
        later = []
        for k in todo:
            key = (id(envs[k]._engine), envs[k]._slot)
            if key in taken:
                later.append(k)  # the same env again: after this round
                continue
            taken.add(key)
            groups.setdefault(key[0], []).append(k)
        for positions in groups.values():
            engine = envs[positions[0]]._engine
            for k in positions:
                envs[k]._before_step()
            rewards, terminated, _ = engine.step([envs[k]._slot for k in positions], [actions[k] for k in positions])
            for j, k in enumerate(positions):
                out[k] = envs[k]._after_step(actions[k], rewards[j], terminated[j])
        todo = later
    return out
