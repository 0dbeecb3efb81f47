"""Prompts from OpenEnv observations and actions from model replies: what ``webshop-gym eval`` does, for any client.

An OpenEnv observation of WebShop (a :class:`~webshop_gym.integrations.openenv.models.WebShopObservation`,
or the dict a ``GenericEnvClient`` returns) carries the page ``text``, the ``instruction`` and
the ``admissible_actions``.  :func:`prompt_messages` and :func:`build_prompt` turn it into a
prompt in one of our formats (``think-answer``, ``react``, ``verl-agent``: the classes of
:mod:`webshop_gym.agents.prompts`), and :func:`parse_action` turns the model's reply into the exact
``search[...]``/``click[...]`` string the server takes (the server rejects ``Search[x]`` and
``<answer>search[x]</answer>`` as inadmissible), with the parser of :mod:`webshop_gym.agents.parse`.
Pure text: no OpenEnv import, so these work beside any client.

>>> obs = {"text": "WebShop [SEP] Instruction: [SEP] i need bacon [SEP] Search", "instruction": "i need bacon",
...        "admissible_actions": ["search[<query>]"], "steps": 0}
>>> print(build_prompt(obs).splitlines()[-3])
Observation: Search
>>> parse_action("<think>go</think><answer>Search[Smoked Bacon]</answer>", obs).action
'search[smoked bacon]'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from webshop_gym.agents.parse import ParsedAction, parse_detailed
from webshop_gym.agents.prompts import PromptFormat, Turn, make_prompt
from webshop_gym.error import InvalidArgument

__all__ = ["Turn", "build_prompt", "observation_info", "parse_action", "prompt_messages"]


def observation_info(observation: Any) -> tuple[str, dict[str, Any]]:
    """The page text and an env-style ``info`` dict (``instruction``, ``valid_actions``, ``steps``, ...) of an observation.

    Args:
        observation: a ``WebShopObservation``, its dict (``GenericEnvClient``), or a ``StepResult``
            holding either.

    Raises:
        InvalidArgument: the observation lacks ``text``, ``instruction`` or ``admissible_actions``.
    """
    observation = getattr(observation, "observation", observation)  # a StepResult
    if hasattr(observation, "model_dump"):
        observation = observation.model_dump()
    if not isinstance(observation, Mapping):
        raise InvalidArgument(f"observation must be a WebShop observation or its dict, got {type(observation).__name__}")
    missing = [k for k in ("text", "instruction", "admissible_actions") if k not in observation]
    if missing:
        raise InvalidArgument(f"the observation has no {', '.join(missing)}: is it from webshop-gym openenv?")
    info = {"instruction": observation["instruction"], "valid_actions": list(observation["admissible_actions"]),
            "steps": int(observation.get("steps") or 0)}
    for key in ("goal_index", "page"):
        if key in observation:
            info[key] = observation[key]
    return str(observation["text"]), info


def _format(fmt: str | PromptFormat, kwargs: dict[str, Any]) -> PromptFormat:
    try:
        return make_prompt(fmt, **kwargs)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None


def prompt_messages(observation: Any, fmt: str | PromptFormat = "think-answer", history: Sequence[Any] = (),
                    **format_kwargs: Any) -> list[dict[str, str]]:
    """The prompt of a step as chat messages, in a format of :mod:`webshop_gym.agents.prompts`.

    Args:
        observation: the step's observation (see :func:`observation_info`).
        fmt: ``think-answer`` (default), ``react``, ``verl-agent``, or a ``PromptFormat``.
        history: the episode's earlier steps, each a :class:`Turn` (``observation`` text,
            ``action``, the model's ``response``, the ``valid_actions`` shown) or a dict with those keys.
        **format_kwargs: passed to the format (``history=2``, ``system=...``).
    """
    obs, info = observation_info(observation)
    return _format(fmt, format_kwargs).messages(obs, info, history)


def build_prompt(observation: Any, fmt: str | PromptFormat = "think-answer", history: Sequence[Any] = (),
                 **format_kwargs: Any) -> str:
    """The prompt of a step as one string (the messages' contents joined by blank lines); see :func:`prompt_messages`."""
    obs, info = observation_info(observation)
    return _format(fmt, format_kwargs).build(obs, info, history)


def parse_action(reply: str, observation: Any = None, fmt: str | PromptFormat = "think-answer",
                 closest: bool = False) -> ParsedAction:
    """The action of a model reply, checked against the observation's admissible actions.

    Send ``result.action`` to the server: when ``result.valid`` is False it is the best guess
    (the server then steps it as an invalid action, as ``eval`` does) and ``result.reason``
    says why.

    Args:
        reply: the model's answer.
        observation: the observation it answers (``None``: any well-formed action is admissible).
        fmt: the format the reply follows (``think-answer``, ``react``, ``verl-agent``, ``plain``).
        closest: map an inadmissible action to the closest admissible one.

    Returns:
        A :class:`~webshop_gym.agents.parse.ParsedAction` (``action, valid = result`` unpacks it).
    """
    admissible = None if observation is None else observation_info(observation)[1]["valid_actions"]
    name = getattr(fmt, "name", fmt)
    try:
        return parse_detailed(reply, admissible, name, closest)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
