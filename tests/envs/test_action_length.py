"""Actions longer than the action space's ``max_length`` are invalid no-ops (issue 13, item 3)."""

from __future__ import annotations

from webshop_gym import WebShopEnv, WebShopVectorEnv
from webshop_gym.core.actions import MAX_ACTION_LENGTH, parse_action


def _search_of_length(n: int) -> str:
    return "search[" + "a" * (n - len("search[]")) + "]"


def test_the_declared_limit_is_enforced(default_shop):
    env = WebShopEnv(shop=default_shop)
    assert env.action_space.max_length == MAX_ACTION_LENGTH == 100_000
    longest, too_long = _search_of_length(MAX_ACTION_LENGTH), _search_of_length(MAX_ACTION_LENGTH + 1)
    assert env.action_space.contains(longest) and not env.action_space.contains(too_long)
    start, _ = env.reset(seed=0, options={"goal_index": 1})
    obs, reward, terminated, truncated, info = env.step(too_long)
    assert (obs, reward, terminated, info["invalid_action"], info["page"]) == (start, 0.0, False, True, "start")
    obs, reward, terminated, truncated, info = env.step(longest)
    assert not info["invalid_action"] and info["page"] == "results"
    assert parse_action(too_long) == (None, None) and parse_action(longest)[0] == "search"


def test_vector_env_and_workers_treat_long_actions_alike(default_shop):
    too_long = "click[" + "x" * MAX_ACTION_LENGTH + "]"
    for workers in (0, 2):
        envs = WebShopVectorEnv(2, shop=default_shop, num_workers=workers)
        envs.reset(seed=0)
        _, rewards, _, _, infos = envs.step([too_long, "search[red dress]"])
        assert infos["invalid_action"].tolist() == [True, False] and rewards.tolist() == [0.0, 0.0]
        envs.close()
