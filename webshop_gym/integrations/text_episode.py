"""One WebShop episode played from a model's text replies, in a prompt format of ``webshop-gym eval``.

The stacks that hand an environment the model's raw reply and take text back (SkyRL-gym's
``BaseTextEnv``, GEM's ``Env``, verifiers' native env) all play the same loop: show the page in a
prompt format (:mod:`webshop_gym.agents.prompts`), parse the reply with ``eval``'s parser, step
the env with the action (an inadmissible one is stepped as an invalid action, as ``eval`` does),
and show the next page.  :class:`TextEpisode` is that loop, once; each integration only adapts
it to its stack's calls.  Pure: no stack is imported here.

>>> from webshop_gym import WebShopEnv
>>> episode = TextEpisode(WebShopEnv(split=None), goal_index=0)
>>> [m["role"] for m in episode.messages()]
['system', 'user']
>>> step = episode.act("<think>look</think><answer>search[shoes]</answer>")
>>> step.action, step.valid, step.done
('search[shoes]', True, False)
>>> [m["role"] for m in episode.messages()]
['system', 'user', 'assistant', 'user']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webshop_gym import WebShopEnv
from webshop_gym.agents.parse import ParsedAction
from webshop_gym.agents.prompts import PromptFormat, Turn, admissible_actions, make_prompt
from webshop_gym.error import InvalidArgument

__all__ = ["TextEpisode", "TextStep", "check_instruction", "last_user_turn"]


def last_user_turn(messages: list[dict[str, str]]) -> str:
    """The content of the last user message (the page a growing conversation adds)."""
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def check_instruction(goal_index: int, instruction: str | None, actual: str) -> None:
    """Refuse a task whose instruction is not its goal's in the env's goal set (``None``: nothing to check).

    It catches a task built with other shop settings than the env that plays it.

    Raises:
        InvalidArgument: the instructions differ.
    """
    if instruction is not None and instruction != actual:
        raise InvalidArgument(
            f"the task's instruction {instruction!r} is not goal {goal_index}'s in this env's goal set "
            f"({actual!r}): build the tasks and the env with the same shop, goals, human_goals and price_seed")


@dataclass(frozen=True)
class TextStep:
    """What one reply did.

    Attributes:
        action: the action stepped (the parser's best guess when not admissible).
        valid: whether the page admitted it.
        format_ok: whether the reply followed its format.
        reward: the step's reward (WebShop pays once, at the purchase).
        done: the episode is over (bought, or the step cap).
        truncated: it ended at the step cap without a purchase.
        info: the env's info after the step.
        parsed: the parser's full result.
    """

    action: str
    valid: bool
    format_ok: bool
    reward: float
    done: bool
    truncated: bool
    info: dict[str, Any]
    parsed: ParsedAction


class TextEpisode:
    """One episode on ``env`` (reset here to ``goal_index``), its turns kept as ``eval`` keeps them.

    Args:
        env: a :class:`~webshop_gym.WebShopEnv` whose goal set holds ``goal_index``.
        goal_index: the goal to play.
        fmt: a prompt format or its name (``think-answer``, ``react``, ``verl-agent``).
        closest: map an inadmissible reply to the closest admissible action (``eval --closest``).
        instruction: when given, it must be the goal's instruction (it catches a task built with
            other shop settings than the env).

    Attributes:
        turns: the earlier steps (the page, the action, the reply, what the page admitted).
        actions, valid, well_formed: per step, the action, whether it was admissible, and
            whether the reply followed its format.
        reward, done, truncated, obs, info: the episode's state after the last step.
    """

    def __init__(self, env: WebShopEnv, goal_index: int, fmt: str | PromptFormat = "think-answer",
                 closest: bool = False, instruction: str | None = None):
        try:
            self.format = make_prompt(fmt)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        self.env = env
        self.closest = bool(closest)
        self.obs, self.info = env.reset(options={"goal_index": goal_index})
        check_instruction(goal_index, instruction, self.info["instruction"])
        self.goal_index = int(goal_index)
        self.turns: list[Turn] = []
        self.actions: list[str] = []
        self.valid: list[bool] = []
        self.well_formed: list[bool] = []
        self.reward = 0.0
        self.done = False
        self.truncated = False

    def messages(self) -> list[dict[str, str]]:
        """The prompt for the next reply as chat messages: exactly what ``eval`` sends (all turns shown)."""
        return self.format.messages(self.obs, self.info, self.turns)

    def prompt(self) -> str:
        """The prompt for the next reply as one string (the messages joined by blank lines)."""
        return self.format.build(self.obs, self.info, self.turns)

    def act(self, reply: str) -> TextStep:
        """Parse ``reply`` against the page, step the env with its action, and keep the turn.

        Raises:
            InvalidArgument: the reply is not a string, or the episode is over.
        """
        if not isinstance(reply, str):
            raise InvalidArgument(f"the reply must be a string, got {type(reply).__name__}")
        if self.done:
            raise InvalidArgument("the episode is over (bought, or the step cap): start a new one")
        admissible = admissible_actions(self.info)
        parsed = self.format.parse_detailed(reply, admissible, self.closest)
        self.turns.append(Turn(self.obs, parsed.action, reply, tuple(admissible)))
        self.obs, reward, terminated, truncated, self.info = self.env.step(parsed.action)
        self.actions.append(parsed.action)
        self.valid.append(parsed.valid)
        self.well_formed.append(parsed.format_ok)
        self.done = bool(terminated or truncated)
        self.truncated = bool(truncated and not terminated)
        self.reward = float(reward) if terminated else 0.0
        return TextStep(parsed.action, parsed.valid, parsed.format_ok, float(reward), self.done, self.truncated,
                        self.info, parsed)

    def metrics(self) -> dict[str, float]:
        """The episode's figures: reward, success, steps, invalid actions, format errors and the breakdown."""
        breakdown = self.info.get("reward_info") or {}
        out = {"reward": self.reward, "success": float(self.reward == 1.0), "steps": float(len(self.actions)),
               "invalid_actions": float(sum(not v for v in self.valid)),
               "format_errors": float(sum(not w for w in self.well_formed))}
        for name in ("r_type", "r_att", "r_option", "r_price"):
            out[name] = float(breakdown.get(name, 0.0))
        return out
