"""What a policy is: one object per episode slot, fed observations and infos."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Policy", "instruction_query", "make_policy"]


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


BASELINES = ("random", "rule", "oracle")
"""Names of the baseline policies."""


def make_policy(name: str, **kwargs) -> Policy:
    """Build a baseline policy by name: ``random``, ``rule`` or ``oracle``."""
    from webshop_gym.agents.policies.oracle import OraclePolicy
    from webshop_gym.agents.policies.random_policy import RandomPolicy
    from webshop_gym.agents.policies.rule import RulePolicy

    table = {"random": RandomPolicy, "rule": RulePolicy, "oracle": OraclePolicy}
    if name not in table:
        from webshop_gym.error import close_match

        hint = close_match(name, table)
        raise ValueError(f"unknown policy {name!r}; expected one of {sorted(table)} or hf:PATH"
                         + (f" (did you mean {hint!r}?)" if hint else ""))
    return table[name](**kwargs)
