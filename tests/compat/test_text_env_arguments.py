"""``WebAgentTextEnv``: goal-list arguments that leave no goal name themselves; ``reset(session=True)`` as the reference."""

from __future__ import annotations

import pytest

from webshop_gym.compat import SimServer, WebAgentTextEnv
from webshop_gym.error import GoalNotFound


@pytest.mark.parametrize("limit", [0, -5])
def test_limit_goals_that_keeps_none_names_limit_goals(default_shop, limit):
    with pytest.raises(GoalNotFound, match=rf"limit_goals={limit} keeps none: pass -1 for all goals") as caught:
        WebAgentTextEnv(observation_mode="text", shop=default_shop, limit_goals=limit)
    assert "filter_goals" not in str(caught.value)
    server = SimServer(shop=default_shop, limit_goals=limit)
    with pytest.raises(GoalNotFound, match="limit_goals"):
        WebAgentTextEnv(observation_mode="text", server=server).reset(session=0)


def test_filter_goals_that_keeps_none_names_filter_goals(default_shop):
    server = SimServer(shop=default_shop, filter_goals=lambda i, goal: False)
    with pytest.raises(GoalNotFound, match="filter_goals kept none"):
        WebAgentTextEnv(observation_mode="text", server=server)
    with pytest.raises(GoalNotFound, match="filter_goals kept none"):
        server.session_goal("name", 3)


def test_reset_with_a_bool_session_plays_goal_one_or_zero_as_the_reference(default_server):
    """The reference: ``session_int = True`` (a bool is an int), then ``goals[True]`` is goal 1."""
    env = WebAgentTextEnv(observation_mode="text", server=default_server)
    for session, goal in ((True, 1), (False, 0)):
        obs, info = env.reset(session=session)
        assert info is None and env.session == str(session)
        assert env.instruction_text == "Instruction: " + default_server.goals[goal]["instruction_text"]
        assert env.state["url"] == f"http://127.0.0.1:3000/{session}"


def test_gym_make_reports_limit_goals_and_plays_goal_one_for_true(default_shop):
    gym = pytest.importorskip("gym", reason="the old gym package is not installed (it is not a dependency)")
    import webshop_gym.compat  # noqa: F401  (registers on import)

    with pytest.raises(GoalNotFound, match="limit_goals=0 keeps none"):
        gym.make("WebAgentTextEnv-v0", observation_mode="text", shop=default_shop, limit_goals=0)
    env = gym.make("WebAgentTextEnv-v0", observation_mode="text", shop=default_shop)
    obs, info = env.reset(session=True)
    assert info is None and default_shop.goals.instruction[1] in obs
