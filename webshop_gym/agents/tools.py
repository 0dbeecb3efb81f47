"""WebShop as two function-calling tools, ``search(query)`` and ``click(label)``: one definition.

A tool-calling model trained with the TRL environment
(:class:`~webshop_gym.integrations.trl.WebShopToolEnv`) is evaluated by ``webshop-gym eval
--prompt tools`` in the format it was trained in.  Both read everything a model sees from here:

* :data:`TOOLS`: each tool's name, description and argument.  :func:`tool_schemas` gives the
  chat-completions ``tools`` list; the TRL environment's ``search``/``click`` methods take their
  docstrings from :func:`tool_docstring` (TRL builds its schema from them), and a test checks that
  the two schemas are equal.
* :data:`TASK_PROMPT`: the user message a rollout starts with; :func:`reset_text` what the reset
  appends to it (the instruction, the page, the admissible actions).
* :func:`page_text`: a tool's result (the new page and what is admissible on it, or how the
  episode ended); :func:`inadmissible_text`: the error of an action the page does not admit.
* :func:`tool_message_content`: how TRL (1.16) turns a result or an error into a ``tool``
  message's content (``str(result)``, and ``str({"error": message})`` for an error).
* :func:`call_action`: a tool call as the env's action (``search[...]``, ``click[...]``).
* :class:`ToolConversation`: one episode's conversation, message by message, as a served model
  is sent it (:class:`~webshop_gym.agents.openai.OpenAIPolicy` holds one per episode; the run
  viewer rebuilds the prompt of a logged step with it, from the logged pages and answers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from webshop_gym.agents.prompts import admissible_actions, strip_instruction
from webshop_gym.core.actions import MAX_ACTION_LENGTH
from webshop_gym.error import close_match

__all__ = ["TASK_PROMPT", "TOOLS", "ToolCallError", "ToolCalling", "ToolConversation", "ToolStep", "admissible_text", "call_text", "ending_text", "call_action", "inadmissible_text", "page_text", "reset_text",
           "tool_docstring", "tool_message_content", "tool_schemas"]

TASK_PROMPT = (
    "You are shopping on WebShop, an online store. Find and buy the product that the instruction "
    "below describes, with the options it asks for, within its price limit. Call the tool "
    "search(query) on a page with a search bar to search by keywords, and click(label) to click "
    "one of the labels a page lists: a product id on a results page, an option value on a "
    "product page, 'buy now' to buy the product on the page (this ends the episode), 'next >', "
    "'< prev', 'back to search'. Call one tool at a time."
)
"""The user message a tool-calling rollout starts with; the reset's text is appended to it."""

#: The two tools: name -> (description, argument, argument's description, what it returns).
TOOLS: dict[str, tuple[str, str, str, str]] = {
    "search": (
        "Search the shop for products matching some keywords.",
        "query",
        'the keywords to search for, e.g. "gluten free smoked bacon 4 ounce".',
        "The first page of results (ten products, each with its id, title and price) and the actions admissible on it.",
    ),
    "click": (
        "Click a button, link or option on the current page.",
        "label",
        'what to click, as the page\'s admissible actions list it: a product id from the results (e.g. "b09qkp7xqq"), '
        'an option value on a product page (e.g. "large"), "buy now", "next >", "< prev", "description", '
        '"back to search".',
        "The page the click leads to and the actions admissible on it; after \"buy now\", the purchase confirmation "
        "(the episode is then over).",
    ),
}


class ToolCalling:
    """The ``tools`` prompt format of served models (``eval --prompt tools``): chat completions with :func:`tool_schemas`.

    Not a text format: the conversation is kept by the policy (tool calls in, tool messages out),
    so it has no stop string and no answer tag.
    """

    name = "tools"
    stop: tuple[str, ...] = ()
    answer_tag: str | None = None

    def __repr__(self) -> str:
        return "ToolCalling()"


class ToolCallError(ValueError):
    """A tool call that names no tool of :data:`TOOLS` or lacks its string argument."""


def tool_docstring(name: str) -> str:
    """The Google-style docstring of tool ``name`` (TRL reads the schema from it)."""
    description, argument, about, returns = TOOLS[name]
    return f"{description}\n\nArgs:\n    {argument}: {about}\n\nReturns:\n    {returns}\n"


def tool_schemas(returns: bool = False) -> list[dict[str, Any]]:
    """The chat-completions ``tools`` list: one ``function`` per tool, its argument a required string.

    Args:
        returns: add each function's ``return`` entry, as transformers' ``get_json_schema`` (and
            so TRL's chat template) has it; the API's schema has none.
    """
    out = []
    for name, (description, argument, about, result) in TOOLS.items():
        function: dict[str, Any] = {
            "name": name, "description": description,
            "parameters": {"type": "object", "properties": {argument: {"type": "string", "description": about}},
                           "required": [argument]}}
        if returns:
            function["return"] = {"type": "string", "description": result}
        out.append({"type": "function", "function": function})
    return out


def call_action(name: str, arguments: Any) -> tuple[str, str]:
    """A tool call as ``(action, call text)``: ``("search[q]", "search('q')")`` (query whitespace normalised).

    Args:
        name: the tool's name.
        arguments: its arguments (a dict, or the JSON text of one, as chat completions send them).

    Raises:
        ToolCallError: no such tool, or its argument is missing or not a string.
    """
    if name not in TOOLS:
        raise ToolCallError(f"Tool {name} not found.")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            raise ToolCallError(f"{name}(): the arguments are not JSON: {arguments[:80]!r}") from None
    argument = TOOLS[name][1]
    if not isinstance(arguments, dict) or set(arguments) != {argument}:
        got = sorted(arguments) if isinstance(arguments, dict) else type(arguments).__name__
        raise ToolCallError(f"{name}() takes exactly one argument, {argument!r}; got {got}")
    value = arguments[argument]
    if not isinstance(value, str):
        raise ToolCallError(f"{name}({argument}): {argument} must be a string, got {value!r}")
    if name == "search":
        value = " ".join(value.split())  # a newline would end the action in the env's grammar
    return f"{name}[{value}]", call_text(name, value)


def admissible_text(valid: Sequence[str], tried: str | None = None) -> str:
    """The admissible actions as the tools name them, with a close match of a mistyped label."""
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


def ending_text(info: Mapping[str, Any], max_steps: int | None) -> str:
    """How an episode ended: the product bought, or the step cap."""
    if info.get("purchased_asin") is not None:
        return f"{str(info['purchased_asin']).lower()} was bought"
    return f"the limit of {max_steps} actions was reached without a purchase"


def page_text(obs: str, info: Mapping[str, Any], over: bool, max_steps: int | None) -> str:
    """A tool's result: the page (without the repeated instruction), then what is admissible or how it ended."""
    text = f"Page: {strip_instruction(obs, info['instruction'])}\n"
    if over:
        return text + f"The episode is over: {ending_text(info, max_steps)}."
    return text + admissible_text(info["valid_actions"])


def reset_text(obs: str, info: Mapping[str, Any], max_steps: int | None) -> str:
    """What the reset appends to the rollout's user message: the instruction and the first page."""
    return f"\n\nInstruction: {info['instruction']}\n\n{page_text(obs, info, False, max_steps)}"


def call_text(name: str, argument: str) -> str:
    """A tool call as an error shows it: ``click('x')``, the argument's repr cut after 200 characters."""
    text = repr(argument)
    return f"{name}({text if len(text) <= 200 else f'{text[:200]}... [{len(argument):,} characters]'})"


def inadmissible_text(call: str, tried_label: str | None, invalid: int, info: Mapping[str, Any],
                      admissible_before: Sequence[str], over: bool, max_steps: int | None,
                      action_length: int = 0) -> str:
    """The error of an action the page did not admit (it was stepped: it used one of the steps).

    Args:
        call: the call as text, ``click('x')``.
        tried_label: the clicked label (for a close match), ``None`` for a search.
        invalid: invalid actions so far in the episode, this one included.
        info: the step's info.
        admissible_before: what the page admitted before the action.
        over: whether this step ended the episode (the step cap).
        max_steps: the step cap.
        action_length: the action's length (one over :data:`~webshop_gym.core.actions.MAX_ACTION_LENGTH`
            is admissible nowhere, and the error says so).
    """
    steps = int(info.get("steps", 0))
    where = f"step {steps}" + ("" if max_steps is None else f" of {max_steps}")
    why = "on this page" if action_length <= MAX_ACTION_LENGTH else (
        f"anywhere: the action has {action_length:,} characters, at most {MAX_ACTION_LENGTH:,}")
    message = (f"{call} is not admissible {why} (invalid action {invalid}; {where}). "
               f"{admissible_text(admissible_before, tried_label)}")
    if over:
        message += f" The episode is over: {ending_text(info, max_steps)}."
    return message


def tool_message_content(result: str | None = None, error: str | None = None) -> str:
    """A ``tool`` message's content as TRL 1.16's rollout writes it: the result, or ``{'error': ...}``."""
    return str({"error": error}) if error is not None else str(result)


@dataclass(frozen=True)
class ToolStep:
    """One tool call of an answer, as the env steps it.

    Attributes:
        action: the env's action (``""`` for a call that names no tool or lacks its argument:
            stepped as an invalid action).
        valid: whether the page admits the action.
        error: why the call is not a call of a tool (:class:`ToolCallError`'s message), else ``None``.
        tool_call: the call, with its id.
    """

    action: str
    valid: bool
    error: str | None
    tool_call: dict


@dataclass
class ToolConversation:
    """One episode's conversation in the tools format: the messages a served model is sent, built turn by turn.

    The conversation TRL's rollout of :class:`~webshop_gym.integrations.trl.WebShopToolEnv`
    holds: the task and the first page (one user message), then per answer an assistant message
    with its tool calls and, after each call is stepped, a ``tool`` message with the page it led
    to (or the error).  Every tool call is one env step: the calls of one answer are stepped in
    order without asking the model again.  An answer without a tool call is stepped as an invalid
    action and followed by a user message that says so.  Pure: no network, no env.

    Drive it with, per env state, :meth:`observe` (``True``: ask the model with :attr:`messages`,
    then :meth:`answer`), then :meth:`next_call` while :attr:`queued` holds calls to step.

    Args:
        max_steps: the env's step cap (the texts name it).
    """

    max_steps: int | None = None
    messages: list[dict] = field(default_factory=list)
    queued: list[dict] = field(default_factory=list)  # the calls of the last answer not yet stepped
    stepped: dict | None = None  # the call just stepped: its result becomes the next message
    invalid: int = 0  # invalid actions so far

    def observe(self, obs: str, info: Mapping[str, Any]) -> bool:
        """Take the env's state: the first user message, or the result of the call just stepped.

        Returns:
            Whether the model must be asked (no call of its last answer is left to step).
        """
        cap = self.max_steps
        if not self.messages:
            self.messages.append({"role": "user", "content": TASK_PROMPT + reset_text(obs, info, cap)})
        elif self.stepped is not None:
            done = self.stepped
            if info.get("invalid_action"):
                self.invalid += 1
            if done["id"] is None:  # the answer had no tool call: say so, as a user turn
                self.messages.append({"role": "user", "content": "No tool was called. " + admissible_text(
                    info.get("valid_actions", []))})
            else:
                if done["error"] is not None:
                    content = tool_message_content(error=done["error"])
                elif info.get("invalid_action"):
                    content = tool_message_content(error=inadmissible_text(
                        done["call"], done["label"], self.invalid, info, done["admissible"], False, cap,
                        action_length=done["length"]))
                else:
                    content = tool_message_content(result=page_text(obs, info, False, cap))
                self.messages.append({"role": "tool", "tool_call_id": done["id"], "name": done["name"],
                                      "content": content})
        self.stepped = None
        return not self.queued

    def answer(self, content: str | None, tool_calls: Sequence[dict], turn: int) -> str:
        """Add the model's answer (its text and tool calls) and queue its calls.

        Args:
            content: the answer's text (``""`` or ``None``: none).
            tool_calls: its tool calls as the API sends them (``id``, ``function``); a call
                without an id gets ``call_<turn>_<k>``.
            turn: the number of answers before this one.

        Returns:
            The answer as a run file records it: JSON of its ``content`` and ``tool_calls``.
        """
        assistant: dict[str, Any] = {"role": "assistant", "content": content or None}
        ids = [str(c.get("id") or f"call_{turn}_{k}") for k, c in enumerate(tool_calls)]
        if tool_calls:
            assistant["tool_calls"] = [{"id": i, "type": "function", "function": c.get("function")}
                                       for i, c in zip(ids, tool_calls, strict=True)]
            self.queued = [{**c, "id": i} for i, c in zip(ids, tool_calls, strict=True)]
        else:
            self.stepped = {"id": None, "name": None, "error": None}
        self.messages.append(assistant)
        return json.dumps({"content": content, "tool_calls": assistant.get("tool_calls", [])}, ensure_ascii=False)

    def next_call(self, info: Mapping[str, Any]) -> ToolStep:
        """Step the next queued call on the page ``info`` describes (its result comes with the next :meth:`observe`)."""
        tool_call = self.queued.pop(0)
        function = tool_call.get("function") if isinstance(tool_call.get("function"), dict) else {}
        name = str(function.get("name"))
        try:
            action, text = call_action(name, function.get("arguments"))
        except ToolCallError as exc:
            self.stepped = {"id": tool_call["id"], "name": name, "error": str(exc)}
            return ToolStep("", False, str(exc), tool_call)
        admissible = admissible_actions(info)
        label = action[len("click["):-1] if name == "click" else None
        self.stepped = {"id": tool_call["id"], "name": name, "error": None, "call": text, "label": label,
                        "admissible": list(info.get("valid_actions", [])), "length": len(action)}
        valid = action in admissible or (name == "search" and "search[<query>]" in admissible)
        return ToolStep(action, valid, None, tool_call)
