"""The baseline policies by name: the registry lives beside its entries, not in their base."""

from __future__ import annotations

from webshop_gym.agents.policies.base import Policy
from webshop_gym.agents.policies.oracle import OraclePolicy
from webshop_gym.agents.policies.random_policy import RandomPolicy
from webshop_gym.agents.policies.rule import RulePolicy
from webshop_gym.error import close_match

__all__ = ["BASELINES", "make_policy"]

BASELINES = ("random", "rule", "oracle")
"""Names of the baseline policies."""


def make_policy(name: str, **kwargs) -> Policy:
    """Build a baseline policy by name: ``random``, ``rule`` or ``oracle``."""
    table = {"random": RandomPolicy, "rule": RulePolicy, "oracle": OraclePolicy}
    if name not in table:
        hint = close_match(name, table)
        raise ValueError(f"unknown policy {name!r}; expected one of {sorted(table)} or hf:PATH"
                         + (f" (did you mean {hint!r}?)" if hint else ""))
    return table[name](**kwargs)
