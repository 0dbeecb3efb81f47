"""Baseline policies: random (valid actions), rule (its documented contract), oracle (1.0 when reachable)."""

from __future__ import annotations

import pytest

from webshop_gym import WebShopEnv
from webshop_gym.agents.policies import OraclePolicy, RandomPolicy, RulePolicy, make_policy
from webshop_gym.agents.policies.base import instruction_query


def _play(env, policy, goal, seed=0):
    obs, info = env.reset(seed=seed, options={"goal_index": goal})
    policy.reset(info)
    actions, reward, done = [], 0.0, False
    while not done:
        action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        actions.append((action, info))
        done = terminated or truncated
    return actions, reward, info


@pytest.fixture(scope="module")
def env(default_shop):
    return WebShopEnv(shop=default_shop)


def test_random_policy_takes_valid_actions_and_is_reseedable(env):
    policy = RandomPolicy(seed=3)
    for goal in range(20):
        actions, _, _ = _play(env, policy, goal)
        assert not any(info["invalid_action"] for _, info in actions)
    first = RandomPolicy(seed=0)
    first.seed_episode(11)
    second = RandomPolicy(seed=99)
    second.seed_episode(11)
    assert [a for a, _ in _play(env, first, 5)[0]] == [a for a, _ in _play(env, second, 5)[0]]


def test_rule_policy_contract(env, default_shop):
    """Search the instruction without its price clause, open the first result, click the
    longest value of each option group that occurs in the instruction, buy."""
    policy = RulePolicy()
    for goal in range(30):
        actions, _, info = _play(env, policy, goal)
        instruction = default_shop.goals.instruction[goal]
        assert actions[0][0] == f"search[{instruction_query(instruction)}]"
        assert actions[-1][0] == "click[buy now]" and info["page"] == "done"
        rows = default_shop.search(instruction_query(instruction).lower())
        first = default_shop.catalog.asin[int(rows[0])].lower()
        assert actions[1][0] == f"click[{first}]"
        clicked = [a[len("click["):-1] for a, _ in actions[2:-1]]
        assert all(value in instruction.lower() for value in clicked)
        row = int(rows[0])
        groups = [[default_shop.catalog.value_text[v] for v in default_shop.catalog.group_values[g]]
                  for g in default_shop.catalog.option_groups[row]]
        for values in groups:
            named = [v for v in values if v in instruction.lower()]
            if named:
                assert max(named, key=len) in clicked


def test_oracle_reaches_one_when_reachable_and_says_why_not(env, default_shop):
    policy = OraclePolicy(shop=default_shop)
    unreachable = 0
    for goal in range(60):
        actions, reward, _ = _play(env, policy, goal)
        if policy.reachable:
            assert reward == 1.0, goal
        else:
            unreachable += 1
            assert policy.reason and reward < 1.0
    assert unreachable <= 6


def test_make_policy():
    assert isinstance(make_policy("rule"), RulePolicy)
    assert isinstance(make_policy("random", seed=1), RandomPolicy)
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("greedy")
