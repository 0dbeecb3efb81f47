"""A person on the server gets exactly the env's outcome: same pages, rewards and breakdowns."""

from __future__ import annotations

import pytest

from tests.server.conftest import Player
from webshop_gym import WebShopEnv
from webshop_gym.agents.policies.oracle import OraclePolicy


def scripted(shop, goal: int) -> list[str]:
    """The oracle's plan with detours a person takes: paging, an invalid click, tabs, back."""
    plan, *_ = OraclePolicy(shop).make_plan(goal)
    assert plan and plan[0].startswith("search[") and plan[-1] == "click[buy now]"
    detour = ["click[next >]", "click[< prev]", "click[no such button]"]
    tabs = ["click[features]", "click[< prev]", "click[reviews]", "click[< prev]", "click[description]", "click[< prev]"]
    return [plan[0], *detour, *plan[1:-1], *tabs, "click[buy now]"]


@pytest.mark.parametrize("goal", [0, 1, 5, 42, 777])
def test_scripted_episode_matches_the_env(make_app, default_shop, goal):
    app = make_app(MAX_STEPS=None)
    client = app.test_client()
    store = app.extensions["webshop_gym"]
    actions = scripted(default_shop, goal)
    env = WebShopEnv(shop=default_shop, max_steps=None)
    obs, info = env.reset(options={"goal_index": goal})
    player = Player.start(client, goal)
    assert store.observe(player.sid) == obs
    for action in actions:
        controls = player.controls()
        # Every action the env accepts now has a control on the person's page.
        assert {a for a in info["valid_actions"] if not a.startswith("search[")} <= set(controls), info["page"]
        obs, reward, terminated, truncated, info = env.step(action)
        player.act(action)
        assert player.used_control == (not info["invalid_action"]), action
        state = player.state()
        assert state["observation"] == obs, action
        assert state["reward"] == reward
        assert state["terminated"] == terminated and state["truncated"] == truncated
        assert state["info"]["page"] == info["page"]
        assert state["info"]["invalid_action"] == info["invalid_action"]
    assert terminated
    assert state["info"]["reward_info"] == info["reward_info"]
    assert state["info"]["purchased_options"] == info["purchased_options"]
    page = player.html()
    assert f"{reward:.3f}" in page  # the score board shows the env's reward


def test_step_cap_matches_the_env(make_app, default_shop):
    app = make_app(MAX_STEPS=4)
    client = app.test_client()
    env = WebShopEnv(shop=default_shop, max_steps=4)
    env.reset(options={"goal_index": 3})
    player = Player.start(client, 3)
    for action in ["search[shoes]", "click[nothing]", "click[next >]", "click[next >]"]:
        _, reward, terminated, truncated, info = env.step(action)
        player.act(action)
    assert truncated and not terminated
    state = player.state()
    assert (state["truncated"], state["terminated"], state["reward"]) == (True, False, reward)
    page = player.html()
    assert "Step limit reached (4 actions)" in page
    # A finished episode takes no more actions (and does not crash).
    before = player.state()["observation"]
    player.act("click[< prev]")
    assert player.state()["observation"] == before
    assert player.state()["info"]["steps"] == 4


@pytest.mark.shared
@pytest.mark.parametrize("shop_fixture,goal", [("real_shop", 0), ("real_shop", 123), ("real_human_shop", 4)])
def test_real_shop_episode_matches_the_env(make_app, request, shop_fixture, goal):
    shop = request.getfixturevalue(shop_fixture)
    app = make_app(SHOP=shop, MAX_STEPS=None)
    client = app.test_client()
    plan, *_ = OraclePolicy(shop).make_plan(goal)
    actions = [*plan[:-1], "click[reviews]", "click[< prev]", "click[buy now]"] if plan else ["search[shoes]"]
    env = WebShopEnv(shop=shop, max_steps=None)
    env.reset(options={"goal_index": goal})
    player = Player.start(client, goal)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        player.act(action)
        state = player.state()
        assert state["observation"] == obs, action
        assert (state["reward"], state["terminated"]) == (reward, terminated)
        assert "Traceback" not in player.html()
    assert state["info"].get("reward_info") == info.get("reward_info")
