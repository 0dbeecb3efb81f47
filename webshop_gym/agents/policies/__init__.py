"""Baseline policies: random valid actions, the reference's rule policy, and a goal-aware oracle.

:mod:`.registry` builds them by name; :mod:`.base` says what a policy is and never imports its
subclasses.
"""

from __future__ import annotations

from webshop_gym.agents.policies.base import Policy
from webshop_gym.agents.policies.oracle import OraclePolicy
from webshop_gym.agents.policies.random_policy import RandomPolicy
from webshop_gym.agents.policies.registry import BASELINES, make_policy
from webshop_gym.agents.policies.rule import RulePolicy

__all__ = ["BASELINES", "OraclePolicy", "Policy", "RandomPolicy", "RulePolicy", "make_policy"]
