"""Prompt builders for LLM agents: ReAct, verl-agent and ``<think>``/``<answer>`` chat formats.

Every format turns the env's observation and info (plus the episode's earlier turns) into a
prompt, as a plain string (:meth:`PromptFormat.build`) or chat messages
(:meth:`PromptFormat.messages`, a list of ``{"role", "content"}`` dicts), one sample or a batch,
and parses the model's answer back (:meth:`PromptFormat.parse`).  :meth:`PromptFormat.describe`
is the action-format text the prompts embed.

* :class:`ThinkAnswerPrompt` (``think-answer``): a system instruction, one user turn per step
  (observation + admissible actions), assistant turns ``<think>rationale</think><answer>action
  </answer>``; the format of SFT models such as the Qwen2.5-3B WebShop SFT model.  With all
  earlier turns shown (``history=None``, the default) the messages of step ``t`` extend those of
  step ``t - 1``, so one transcript trains every step in the context it is played in.
* :class:`VerlAgentPrompt` (``verl-agent``): one user message holding the task, the last ``k``
  observations and actions, the current observation and the admissible actions; the answer is
  ``<think>...</think><action>...</action>`` (the WebShop prompt of verl-agent / GiGPO).
* :class:`ReActPrompt` (``react``): a system description, user turns with the observation and
  the admissible actions, answers ``Thought: ...`` then ``Action: ...``.

Infos may be per-slot dicts or the batched dict a vector env returns; an idle slot (eval mode)
gives an empty prompt (``""``, ``[]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from webshop_gym.agents.batch import unbatch_infos
from webshop_gym.agents.parse import ParsedAction, parse_detailed, parse_or_raise
from webshop_gym.error import expect_one_of

__all__ = [
    "EpisodeHistory",
    "PromptFormat",
    "ReActPrompt",
    "ThinkAnswerPrompt",
    "Turn",
    "VerlAgentPrompt",
    "admissible_actions",
    "make_prompt",
    "strip_instruction",
]

SEARCH_TEMPLATE = "search[<query>]"


@dataclass(frozen=True)
class Turn:
    """One earlier step of an episode.

    Attributes:
        observation: the observation the action was chosen on.
        action: the action taken.
        response: the model's full answer, when known (shown instead of a formatted action).
        valid_actions: the admissible actions shown at that step (chat formats repeat them).
    """

    observation: str
    action: str
    response: str | None = None
    valid_actions: tuple[str, ...] | None = None


def _as_turn(item: Any) -> Turn:
    if isinstance(item, Turn):
        return item
    if isinstance(item, Mapping):
        va = item.get("valid_actions")
        return Turn(item["observation"], item["action"], item.get("response"), None if va is None else tuple(va))
    return Turn(*item)


class EpisodeHistory:
    """The turns of the episode running in every slot of a batch.

    Call :meth:`observe` with each step's infos (slots whose ``info["steps"] == 0`` start over),
    then :meth:`record` each slot's action.

    Args:
        num_envs: number of slots (grows on demand).
    """

    def __init__(self, num_envs: int = 1):
        self.turns: list[list[Turn]] = [[] for _ in range(num_envs)]

    def __len__(self) -> int:
        return len(self.turns)

    def __getitem__(self, slot: int) -> list[Turn]:
        return self.turns[slot]

    def _grow(self, n: int) -> None:
        while len(self.turns) < n:
            self.turns.append([])

    def reset(self, slot: int | None = None) -> None:
        """Forget one slot's turns (or every slot's)."""
        if slot is None:
            self.turns = [[] for _ in self.turns]
        else:
            self._grow(slot + 1)
            self.turns[slot] = []

    def observe(self, infos) -> None:
        """Start over in every slot whose info says a new episode began (``steps == 0``).

        An info with ``turn`` > 0 (replies already given this episode: a loop that plays replies
        as turns, :mod:`webshop_gym.agents.turns`, asks again after a reply without an action)
        continues its episode at step 0.
        """
        infos = unbatch_infos(infos)
        self._grow(len(infos))
        for slot, info in enumerate(infos):
            if info.get("steps") == 0 and not info.get("turn"):
                self.turns[slot] = []

    def record(self, slot: int, observation: str, action: str, response: str | None = None,
               valid_actions: Sequence[str] | None = None) -> None:
        """Append a turn to a slot."""
        self._grow(slot + 1)
        self.turns[slot].append(Turn(observation, action, response, None if valid_actions is None else tuple(valid_actions)))


def admissible_actions(info: Mapping[str, Any]) -> list[str]:
    """The admissible actions of a step.

    ``info["valid_actions"]`` when present, else built from the reference's
    ``available_actions``: ``search[<query>]`` when there is a search bar, then one
    ``click[label]`` per clickable.
    """
    valid = info.get("valid_actions")
    if valid is not None:
        return list(valid)
    avail = info.get("available_actions") or {}
    out = [SEARCH_TEMPLATE] if avail.get("has_search_bar") else []
    out += [f"click[{c}]" for c in avail.get("clickables", []) if c != "search"]
    return out


def strip_instruction(observation: str, instruction: str) -> str:
    """The ``text`` observation without its leading ``WebShop`` / ``Instruction:`` parts.

    >>> strip_instruction("Instruction: [SEP] i need bacon [SEP] Back to Search [SEP] Next >", "i need bacon")
    'Back to Search [SEP] Next >'
    """
    parts = observation.split(" [SEP] ")
    try:
        index = parts.index(instruction.strip())
    except ValueError:
        return observation
    if index > 2 or any(p not in ("WebShop", "Instruction:") for p in parts[:index]):
        return observation
    return " [SEP] ".join(parts[index + 1 :])


class PromptFormat:
    """Base class of the prompt formats (see the module docstring).

    Args:
        history: earlier turns shown (``None``: all of them; ``0``: none).
        system: replaces the format's system instruction (chat formats).
        keep_instruction: keep the instruction inside observations (it is shown once anyway).
    """

    name = "plain"
    answer_tag: str | None = None
    search_display = SEARCH_TEMPLATE
    default_history: int | None = None

    def __init__(self, history: int | None = -1, system: str | None = None, keep_instruction: bool = False):
        if history == -1:
            history = self.default_history
        if history is not None and history < 0:
            raise ValueError(f"history must be None or a number of turns >= 0, got {history}")
        self.history = history
        self._system = system
        self.keep_instruction = keep_instruction

    def __repr__(self) -> str:
        return f"{type(self).__name__}(history={self.history!r})"

    # -- text pieces ----------------------------------------------------------------------------

    def describe(self) -> str:
        """The action format, as the prompts explain it to the model."""
        raise NotImplementedError

    @property
    def system(self) -> str | None:
        """The system instruction (``None`` for single-message formats)."""
        return self._system

    @property
    def stop(self) -> tuple[str, ...]:
        """Strings after which a generation can stop (the closing answer tag)."""
        return (f"</{self.answer_tag}>",) if self.answer_tag else ()

    def admissible(self, info: Mapping[str, Any]) -> list[str]:
        """The admissible actions as the prompt shows them."""
        return [self.search_display if a == SEARCH_TEMPLATE else a for a in admissible_actions(info)]

    def observation(self, obs: str, info: Mapping[str, Any]) -> str:
        """The observation as the prompt shows it."""
        if self.keep_instruction or "instruction" not in info:
            return obs
        return strip_instruction(obs, info["instruction"])

    def format_response(self, action: str, thought: str | None = None) -> str:
        """The assistant answer that takes ``action`` (the format of demonstrations)."""
        raise NotImplementedError

    def _shown(self, history: Sequence[Any]) -> list[Turn]:
        turns = [_as_turn(t) for t in history]
        if self.history is None:
            return turns
        return turns[len(turns) - self.history :] if self.history else []

    # -- prompts ----------------------------------------------------------------------------

    def messages(self, obs: str, info: Mapping[str, Any], history: Sequence[Any] = ()) -> list[dict[str, str]]:
        """The prompt as chat messages (``[]`` for an idle slot)."""
        raise NotImplementedError

    def build(self, obs: str, info: Mapping[str, Any], history: Sequence[Any] = ()) -> str:
        """The prompt as one string: the messages' contents separated by blank lines."""
        return "\n\n".join(m["content"] for m in self.messages(obs, info, history))

    def _batch(self, method, observations, infos, histories):
        infos = unbatch_infos(infos, len(observations))
        if histories is None:
            histories = [()] * len(observations)
        elif len(histories) < len(observations):
            raise ValueError(f"expected one history per observation ({len(observations)}), got {len(histories)}")
        return [method(o, i, histories[k]) for k, (o, i) in enumerate(zip(observations, infos, strict=True))]

    def build_batch(self, observations: Sequence[str], infos, histories=None) -> list[str]:
        """:meth:`build` for every slot.

        ``histories`` holds one turn list per slot (an :class:`EpisodeHistory` works too).
        """
        return self._batch(self.build, observations, infos, histories)

    def messages_batch(self, observations: Sequence[str], infos, histories=None) -> list[list[dict[str, str]]]:
        """:meth:`messages` for every slot."""
        return self._batch(self.messages, observations, infos, histories)

    # -- answers ----------------------------------------------------------------------------

    def parse_detailed(self, text: str, admissible: Sequence[str] | None = None, closest: bool = False) -> ParsedAction:
        """Parse an answer (see :mod:`webshop_gym.agents.parse`)."""
        return parse_detailed(text, admissible, self.name, closest)

    def parse_response(self, text: str, admissible: Sequence[str] | None = None, closest: bool = False) -> tuple[str, bool]:
        """Parse an answer into ``(action, valid)``."""
        result = parse_detailed(text, admissible, self.name, closest)
        return result.action, result.valid

    def parse(self, text: str, admissible: Sequence[str] | None = None, closest: bool = False) -> str:
        """Return the admissible action of an answer or raise :class:`~webshop_gym.error.InvalidAction`."""
        return parse_or_raise(text, admissible, self.name, closest)


def _idle(info: Mapping[str, Any]) -> bool:
    return bool(info.get("idle")) or "instruction" not in info


def _action_lines(actions: Sequence[str]) -> str:
    return "\n".join(actions)


class ThinkAnswerPrompt(PromptFormat):
    """The ``<think>``/``<answer>`` chat format of SFT models.

    A system instruction; user turns with the observation and admissible actions; assistant
    turns ``<think>rationale</think><answer>action</answer>``.

    Example:
        >>> p = ThinkAnswerPrompt()
        >>> info = {"instruction": "i need bacon", "valid_actions": ["search[<query>]"], "steps": 0}
        >>> [m["role"] for m in p.messages("WebShop [SEP] Instruction: [SEP] i need bacon [SEP] Search", info)]
        ['system', 'user']
        >>> print(p.messages("WebShop [SEP] Instruction: [SEP] i need bacon [SEP] Search", info)[1]["content"])
        Instruction: i need bacon
        Observation: Search
        Admissible actions:
        search[<query>]
    """

    name = "think-answer"
    answer_tag = "answer"

    def describe(self) -> str:
        """The action format."""
        return (
            "Each turn shows the current page (its visible text, elements separated by [SEP]) and the "
            "admissible actions. Actions are search[<query>] (type a query into the search box; only "
            "on the search page) and click[<label>] (click a button, a product id or an option value "
            "of the page).\n"
            "Answer with a short reasoning inside <think> </think> tags, then exactly one admissible "
            "action inside <answer> </answer> tags, for example:\n"
            "<think>The first result matches the requested product; opening it.</think>"
            "<answer>click[b0example1]</answer>"
        )

    @property
    def system(self) -> str:
        """The system instruction."""
        if self._system is not None:
            return self._system
        return (
            "You are a shopping agent in WebShop, a simulated online store. Buy the product that best "
            "matches the instruction: search for it, open a matching product, select the options the "
            "instruction asks for, and click Buy Now.\n\n" + self.describe()
        )

    def user_turn(self, obs: str, instruction: str | None, actions: Sequence[str] | None, info=None) -> str:
        """One user turn."""
        lines = []
        if instruction is not None:
            lines.append(f"Instruction: {instruction}")
        lines.append(f"Observation: {obs}")
        if actions is not None:
            lines.append("Admissible actions:\n" + _action_lines(actions))
        return "\n".join(lines)

    def format_response(self, action: str, thought: str | None = None) -> str:
        """``<think>thought</think><answer>action</answer>``."""
        return f"<think>{thought or ''}</think><answer>{action}</answer>"

    def messages(self, obs: str, info: Mapping[str, Any], history: Sequence[Any] = ()) -> list[dict[str, str]]:
        """System, then a user/assistant pair per shown turn, then the current user turn."""
        if _idle(info):
            return []
        instruction = info["instruction"]
        out = [{"role": "system", "content": self.system}]
        for k, turn in enumerate(self._shown(history)):
            shown = self.observation(turn.observation, info)
            actions = None if turn.valid_actions is None else self.admissible({"valid_actions": turn.valid_actions})
            out.append({"role": "user", "content": self.user_turn(shown, instruction if k == 0 else None, actions)})
            out.append({"role": "assistant", "content": turn.response or self.format_response(turn.action)})
        first = len(out) == 1
        out.append({"role": "user", "content": self.user_turn(self.observation(obs, info), instruction if first else None,
                                                               self.admissible(info))})
        return out


class ReActPrompt(ThinkAnswerPrompt):
    """ReAct style: ``Thought: ...`` then ``Action: ...``.

    A system description, user turns ``Observation: ...`` with the admissible actions,
    assistant answers ``Thought: ...`` then ``Action: ...``.
    """

    name = "react"
    answer_tag = None

    def describe(self) -> str:
        """The action format."""
        return (
            "Each turn shows the current page (visible text, elements separated by [SEP]) and the "
            "admissible actions: search[<query>] searches (only on the search page), click[<label>] "
            "clicks a button, a product id or an option value.\n"
            "Answer in two lines:\nThought: <your reasoning>\nAction: <one admissible action>"
        )

    @property
    def system(self) -> str:
        """The system instruction."""
        if self._system is not None:
            return self._system
        return (
            "You are a web shopping agent. Buy the product that best matches the instruction: search, "
            "open a product, select the requested options, then buy it.\n\n" + self.describe()
        )

    @property
    def stop(self) -> tuple[str, ...]:
        """ReAct answers end with the action line."""
        return ()

    def format_response(self, action: str, thought: str | None = None) -> str:
        """``Thought: ...`` / ``Action: ...`` (only the action line when there is no thought)."""
        return f"Thought: {thought}\nAction: {action}" if thought else f"Action: {action}"


class VerlAgentPrompt(PromptFormat):
    """The verl-agent / GiGPO WebShop prompt.

    One user message with the task, the last ``k`` observations and actions (``history``, default 2), the current observation and the
    admissible actions; answers ``<think>...</think><action>...</action>``.

    Observations are shown as verl-agent shows them: the parts after the instruction, each in
    single quotes, joined by `` [SEP] ``; the search template reads ``search[<your query>]``.
    """

    name = "verl-agent"
    answer_tag = "action"
    search_display = "search[<your query>]"
    default_history = 2

    def describe(self) -> str:
        """The action format."""
        return (
            "Now it's your turn to take one action for the current step.\n"
            "You should first reason step-by-step about the current situation, then think carefully "
            "which admissible action best advances the shopping goal. This reasoning process MUST be "
            "enclosed within <think> </think> tags.\n"
            "Once you've finished your reasoning, you should choose an admissible action for current "
            "step and present it within <action> </action> tags."
        )

    def observation(self, obs: str, info: Mapping[str, Any]) -> str:
        """Parts after the instruction, each quoted."""
        stripped = super().observation(obs, info)
        if stripped is obs:
            return obs
        return " [SEP] ".join(f"'{p}'" for p in stripped.split(" [SEP] "))

    def format_response(self, action: str, thought: str | None = None) -> str:
        """``<think>thought</think><action>action</action>``."""
        return f"<think>{thought or ''}</think><action>{action}</action>"

    def messages(self, obs: str, info: Mapping[str, Any], history: Sequence[Any] = ()) -> list[dict[str, str]]:
        """One user message (verl-agent puts the history inside the prompt)."""
        if _idle(info):
            return []
        return [{"role": "user", "content": self.prompt(obs, info, history)}]

    def prompt(self, obs: str, info: Mapping[str, Any], history: Sequence[Any] = ()) -> str:
        """The prompt text."""
        actions = "\n".join(f"'{a}'," for a in self.admissible(info))
        head = ("You are an expert autonomous agent operating in the WebShop e-commerce platform.\n"
                f"Your task is to: {info['instruction']}.\n")
        shown = self._shown(history)
        current = self.observation(obs, info)
        if not shown:
            body = f"Your current observation is: {current}.\n"
        else:
            steps = int(info.get("steps", len(history)))
            first = steps - len(shown) + 1
            lines = "\n".join(
                f"[Observation {first + j}: '{self.observation(t.observation, info)}', Action {first + j}: '{t.action}']"
                for j, t in enumerate(shown)
            )
            body = (f"Prior to this step, you have already taken {steps} step(s). Below are the most recent "
                    f"{len(shown)} observations and the corresponding actions you took: {lines}\n"
                    f"You are now at step {steps + 1} and your current observation is: {current}.\n")
        return (head + body + f"Your admissible actions of the current situation are: \n[\n{actions}\n].\n\n"
                + self.describe())


FORMATS = {"think-answer": ThinkAnswerPrompt, "verl-agent": VerlAgentPrompt, "react": ReActPrompt}


def make_prompt(name: str | PromptFormat, **kwargs) -> PromptFormat:
    """Build a prompt format by name: ``think-answer``, ``verl-agent`` or ``react``."""
    if isinstance(name, PromptFormat):
        return name

    expect_one_of("format", name, list(FORMATS))
    return FORMATS[name](**kwargs)
