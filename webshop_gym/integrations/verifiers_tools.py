"""The verifiers environment's ``tools`` format: ``search``/``click`` as function-calling tools.

verifiers 0.4 offers a model tools only through its harness: the null harness's chat program
lists the tools of the MCP servers a taskset declares and sends them as the request's
``tools``; a request interceptor cannot add or change them (``RolloutSession.rewrite_request``,
verifiers/v1/session.py: "request interceptors cannot rewrite tools").  What verifiers does let
an environment do in process is answer a tool call itself: when the model's reply commits, the
task's ``@vf.intercept`` request hooks see each proposed call with an empty result, and a
result they write in its place is what the model gets, the harness's tool gate then refusing to
run the call (``RolloutSession.gate_tool_calls``/``decide_tool``; the null harness has
``SUPPORTS_TOOL_INTERCEPTION``).

So the two halves:

* :class:`WebShopTools`, a taskset-scoped MCP server (one per eval, started by verifiers in its
  own process) that only *lists* the tools: exactly :func:`~webshop_gym.agents.tools.tool_schemas`,
  the schemas of ``webshop-gym eval --prompt tools`` and the TRL environment.  It never runs a
  call (it answers one with an error, which a gated harness never asks for).
* :class:`ToolEpisode`, the episode in the eval process: each call is stepped on a
  :class:`~webshop_gym.WebShopEnv` and its result (the next page, or the error) written by
  :class:`~webshop_gym.agents.tools.ToolConversation`, the conversation ``eval --prompt tools``
  sends, so the model reads the same messages in both.

``python -m webshop_gym.integrations.verifiers_tools`` serves :class:`WebShopTools` (what
verifiers runs; ``VF_CONFIG`` carries its config).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import verifiers.v1 as vf
from mcp.types import CallToolResult, TextContent, Tool

from webshop_gym import WebShopEnv
from webshop_gym.agents.tools import ToolConversation, tool_message_content, tool_schemas

__all__ = ["NOT_RUN_HERE", "ToolEpisode", "WebShopTools"]

NOT_RUN_HERE = ("this server only lists WebShop's tools; the environment answers every call in the eval "
                "process (a harness that runs tool calls without asking verifiers' tool gate cannot play it)")
"""What the server answers to a call it is asked to run (a harness without the tool gate)."""


class WebShopTools(vf.Toolset[vf.SharedToolsetConfig]):
    """Lists ``search(query)`` and ``click(label)`` under their bare names, with our exact schemas."""

    TOOL_PREFIX = None

    def register(self, mcp: Any) -> None:
        """Serve the fixed tool list (verifiers' own NeMo Gym toolset replaces these two handlers the same way)."""
        server = cast(Any, mcp)
        server.list_tools = self.list_tools
        server.call_tool = self.call_tool

    async def list_tools(self) -> list[Tool]:
        """The tools, as :func:`~webshop_gym.agents.tools.tool_schemas` defines them."""
        return [Tool(name=f["name"], description=f["description"], input_schema=f["parameters"])
                for f in (s["function"] for s in tool_schemas())]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        """Refuse: a call is stepped by the environment, never here."""
        return CallToolResult(content=[TextContent(type="text", text=f"{name}: {NOT_RUN_HERE}")], is_error=True)


@dataclass
class ToolEpisode:
    """One tools-format episode in the eval process: the env, and the conversation the model is sent.

    Args:
        env: the episode's env, not yet reset.
        goal_index: the goal to play.
        max_steps: the env's step cap (the texts name it).
    """

    env: WebShopEnv
    goal_index: int
    max_steps: int | None
    conversation: ToolConversation = field(init=False)
    info: dict[str, Any] = field(init=False)
    obs: str = ""
    reward: float = 0.0
    over: bool = False
    actions: list[str] = field(default_factory=list)
    valid: list[bool] = field(default_factory=list)
    well_formed: list[bool] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)  # tool call id -> its tool message's content
    answers: int = 0

    def __post_init__(self) -> None:
        self.obs, self.info = self.env.reset(options={"goal_index": self.goal_index})
        self.conversation = ToolConversation(self.max_steps)
        self.conversation.observe(self.obs, self.info)

    @property
    def first_message(self) -> str:
        """The user message the rollout opens with: the task, the instruction, the first page."""
        return self.conversation.messages[0]["content"]

    def call(self, call_id: str, content: str | None, tool_calls: Sequence[Mapping[str, Any]]) -> str:
        """The result of call ``call_id`` of the answer ``(content, tool_calls)``, stepping it the first time it is asked for.

        The calls of an answer are stepped in order; a call asked for after the episode ended
        (a later call of the answer that bought, or reached the step cap) is not stepped.
        """
        if call_id in self.results:
            return self.results[call_id]
        if self.over:
            return tool_message_content(error="the episode is over; this call was not made")
        conversation = self.conversation
        if not conversation.queued:  # a new answer: queue its calls
            conversation.answer(content, [dict(c) for c in tool_calls], self.answers)
            self.answers += 1
        step = conversation.next_call(self.info)
        if step.tool_call["id"] != call_id:
            raise RuntimeError(f"tool call {call_id!r} asked for out of order (expected {step.tool_call['id']!r})")
        self._step(step.action, step.valid, step.error is None)
        conversation.observe(self.obs, self.info)
        self.results[call_id] = conversation.messages[-1]["content"]
        return self.results[call_id]

    def no_call(self, content: str) -> str:
        """Step an answer without a tool call (an invalid action); the user message that says so."""
        self.conversation.answer(content, [], self.answers)
        self.answers += 1
        self._step("", False, False)
        self.conversation.observe(self.obs, self.info)
        return self.conversation.messages[-1]["content"]

    def _step(self, action: str, valid: bool, well_formed: bool) -> None:
        self.obs, reward, terminated, truncated, self.info = self.env.step(action)
        self.actions.append(action)
        self.valid.append(valid and not self.info.get("invalid_action", False))
        self.well_formed.append(well_formed)
        if terminated:
            self.reward = float(reward)
        self.over = bool(terminated or truncated)


if __name__ == "__main__":
    WebShopTools.run()
