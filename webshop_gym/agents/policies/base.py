"""What a policy is: one object per episode slot, fed observations and infos."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Policy", "instruction_query"]


class Policy(Protocol):
    """A policy for one episode at a time.

    ``reset(info)`` is called with the info of every new episode, ``act(obs, info)`` returns the
    next action string.  Policies only read what the env gives every agent (``obs``,
    ``info["instruction"]``, ``info["available_actions"]``, ``info["valid_actions"]``,
    ``info["page"]``), except the oracle, which is told the goal by the evaluation loop.
    """

    name: str

    def reset(self, info: dict[str, Any]) -> None:
        """Start a new episode."""

    def act(self, obs: str, info: dict[str, Any]) -> str:
        """Return the next action."""


def instruction_query(instruction: str) -> str:
    """The instruction without its price clause (what the reference's rule policy searches)."""
    return instruction.split(", and price lower than")[0]
