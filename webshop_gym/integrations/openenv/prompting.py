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

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from webshop_gym.agents.parse import ParsedAction, parse_detailed
from webshop_gym.agents.prompts import PromptFormat, Turn, make_prompt
from webshop_gym.error import InvalidArgument

__all__ = ["UNCHECKED", "Turn", "build_prompt", "observation_info", "parse_action", "prompt_messages"]

UNCHECKED = "not checked: no observation was given, so nothing says what the page admits"
"""The ``reason`` of a reply parsed without an observation (its ``valid`` is False)."""


def observation_info(observation: Any) -> tuple[str, dict[str, Any]]:
    """The page text and an env-style ``info`` dict (``instruction``, ``valid_actions``, ``steps``, ...) of an observation.

    Args:
        observation: a ``WebShopObservation``, its dict (``GenericEnvClient``), or a ``StepResult``
            holding either.

    Raises:
        InvalidArgument: the observation lacks ``text``, ``instruction`` or ``admissible_actions``,
            or one of them (or ``steps``) has the wrong type.
    """
    observation = getattr(observation, "observation", observation)  # a StepResult
    if hasattr(observation, "model_dump"):
        observation = observation.model_dump()
    if not isinstance(observation, Mapping):
        raise InvalidArgument(f"observation must be a WebShop observation or its dict, got {type(observation).__name__}")
    missing = [k for k in ("text", "instruction", "admissible_actions") if k not in observation]
    if missing:
        raise InvalidArgument(f"the observation has no {', '.join(missing)}: is it from webshop-gym openenv?")
    for key in ("text", "instruction"):
        if not isinstance(observation[key], str):
            raise InvalidArgument(f"the observation's {key} must be a string, got {type(observation[key]).__name__}")
    actions = observation["admissible_actions"]
    if isinstance(actions, str | bytes) or not isinstance(actions, Sequence) or not all(isinstance(a, str) for a in actions):
        raise InvalidArgument(f"the observation's admissible_actions must be a list of action strings, "
                              f"got {type(actions).__name__}")
    steps = observation.get("steps") or 0
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise InvalidArgument(f"the observation's steps must be a non-negative integer, got {steps!r}"[:160])
    info = {"instruction": observation["instruction"], "valid_actions": list(actions), "steps": steps}
    for key in ("goal_index", "page"):
        if key in observation:
            info[key] = observation[key]
    return str(observation["text"]), info


_TURN_FIELDS = ("observation", "action", "response", "valid_actions")


def _turn(k: int, item: Any) -> Turn:
    """History entry ``k`` as a :class:`Turn`, its fields checked (one clear error, never a bare ``KeyError``)."""
    where = f"history[{k}]"
    if isinstance(item, Turn):
        fields = {name: getattr(item, name) for name in _TURN_FIELDS}
    elif isinstance(item, Mapping):
        missing = [name for name in ("observation", "action") if name not in item]
        if missing:
            raise InvalidArgument(f"{where} has no {' and no '.join(missing)}: a history entry is a Turn or a dict "
                                  f"with observation, action and optionally response and valid_actions")
        fields = {name: item.get(name) for name in _TURN_FIELDS}
    else:
        shown = repr(item) if len(repr(item)) <= 60 else repr(item)[:57] + "..."
        raise InvalidArgument(f"{where} must be a Turn or a dict with observation and action, got {shown} "
                              f"({type(item).__name__})")
    for name, optional in (("observation", False), ("action", False), ("response", True)):
        value = fields[name]
        if not isinstance(value, str) and not (optional and value is None):
            raise InvalidArgument(f"{where}: {name} must be a string{' or None' if optional else ''}, "
                                  f"got {type(value).__name__}")
    shown_actions = fields["valid_actions"]
    if shown_actions is not None:
        if isinstance(shown_actions, str | bytes) or not isinstance(shown_actions, Sequence) or not all(
                isinstance(a, str) for a in shown_actions):
            raise InvalidArgument(f"{where}: valid_actions must be a list of action strings or None, "
                                  f"got {type(shown_actions).__name__}")
        shown_actions = tuple(shown_actions)
    return Turn(fields["observation"], fields["action"], fields["response"], shown_actions)


def _history(history: Any) -> list[Turn]:
    """The episode's earlier steps as checked :class:`Turn` objects."""
    if isinstance(history, str | bytes | Mapping) or not isinstance(history, Sequence):
        raise InvalidArgument(f"history must be a sequence of Turn objects or dicts, got {type(history).__name__}")
    return [_turn(k, item) for k, item in enumerate(history)]


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
            A malformed entry raises :class:`~webshop_gym.error.InvalidArgument` naming it.
        **format_kwargs: passed to the format (``history=2``, ``system=...``).
    """
    obs, info = observation_info(observation)
    return _format(fmt, format_kwargs).messages(obs, info, _history(history))


def build_prompt(observation: Any, fmt: str | PromptFormat = "think-answer", history: Sequence[Any] = (),
                 **format_kwargs: Any) -> str:
    """The prompt of a step as one string (the messages' contents joined by blank lines); see :func:`prompt_messages`."""
    obs, info = observation_info(observation)
    return _format(fmt, format_kwargs).build(obs, info, _history(history))


def parse_action(reply: str, observation: Any = None, fmt: str | PromptFormat = "think-answer",
                 closest: bool = False) -> ParsedAction:
    """The action of a model reply, checked against the observation's admissible actions.

    Send ``result.action`` to the server: when ``result.valid`` is False it is the best guess
    (the server then steps it as an invalid action, as ``eval`` does) and ``result.reason``
    says why.  Without an observation nothing says what the page admits, so ``valid`` is False
    (``reason``: not checked) even for a well-formed action; ``format_ok`` still tells whether the
    reply followed its format.

    Args:
        reply: the model's answer.
        observation: the observation it answers (``None``: the action is extracted, not checked).
        fmt: the format the reply follows (``think-answer``, ``react``, ``verl-agent``, ``plain``).
        closest: map an inadmissible action to the closest admissible one.

    Returns:
        A :class:`~webshop_gym.agents.parse.ParsedAction` (``action, valid = result`` unpacks it).
    """
    admissible = None if observation is None else observation_info(observation)[1]["valid_actions"]
    name = getattr(fmt, "name", fmt)
    try:
        parsed = parse_detailed(reply, admissible, name, closest)
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    if admissible is None and parsed.valid:
        parsed = dataclasses.replace(parsed, valid=False, reason=UNCHECKED)
    return parsed
