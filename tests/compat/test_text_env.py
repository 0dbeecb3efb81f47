"""``webshop_gym.compat.WebAgentTextEnv``: the reference text env's API and behaviour on our engine."""

from __future__ import annotations

import gc
import json
import random
import string
import subprocess
import sys
import textwrap

import pytest

from webshop_gym.compat import ImageFeaturesUnavailable, SimServer, WebAgentTextEnv, random_idx
from webshop_gym.error import GoalNotFound

# -- golden trajectories ------------------------------------------------------------------------------


@pytest.mark.parametrize("human", [False, True])
def test_golden_trajectories_replay_identically(golden_dir, real_server, real_human_server, human):
    folder = golden_dir / "human" if human else golden_dir
    server = real_human_server if human else real_server
    text = WebAgentTextEnv(observation_mode="text", server=server)
    rich = WebAgentTextEnv(observation_mode="text_rich", server=server)
    failures, steps = [], 0
    with open(folder / "trajectories.jsonl", encoding="utf-8") as handle:
        for line in handle:
            trajectory = json.loads(line)
            for k, step in enumerate(trajectory["steps"]):
                if k == 0:
                    obs, info = text.reset(session=trajectory["goal_index"])
                    obs_rich, _ = rich.reset(session=trajectory["goal_index"])
                    reward, done = 0.0, False
                    assert info is None
                else:
                    obs, reward, done, info = text.step(step["action"])
                    obs_rich, *_ = rich.step(step["action"])
                    assert info is None
                steps += 1
                got = (obs, obs_rich, text.get_available_actions(), reward, done)
                want = (step["obs_text"], step["obs_text_rich"], step["available_actions"], step["reward"], step["done"])
                if got != want:
                    failures.append((trajectory["goal_index"], trajectory["policy"], k))
    assert steps > (130 if human else 3000)
    assert failures == []


# -- history, resets, sessions ---------------------------------------------------------------------


def _history(obs_list, actions, n_obs, n_act):
    """The reference's joining rule, written out for one step."""
    parts = [obs_list[-1]]
    prev_obs = obs_list[:-1]
    for i in range(1, 1 + max(n_obs, n_act)):
        if len(actions) >= i and n_act >= i:
            parts.append(actions[-i])
        if len(prev_obs) >= i and n_obs >= i:
            parts.append(prev_obs[-i])
    return " [SEP] ".join(parts[::-1])


@pytest.mark.parametrize(("n_obs", "n_act"), [(0, 0), (1, 0), (0, 2), (2, 1), (3, 3)])
def test_previous_observations_and_actions_are_joined_as_the_reference_joins_them(default_server, n_obs, n_act):
    plain = WebAgentTextEnv(observation_mode="text", server=default_server)
    env = WebAgentTextEnv(observation_mode="text", server=default_server, num_prev_obs=n_obs, num_prev_actions=n_act)
    first, _ = env.reset(session=3)
    assert first == plain.reset(session=3)[0]  # reset returns the page alone
    pages, actions = [first], []
    for action in ["search[red shoes]", "click[nope]", "click[next >]", "click[< prev]", "click[back to search]"]:
        obs, *_ = env.step(action)
        page, *_ = plain.step(action)
        actions.append(action)
        pages.append(page)
        assert obs == _history(pages, actions, n_obs, n_act)


def test_session_int_picks_the_goal_and_names_keep_their_goal(default_server):
    env = WebAgentTextEnv(observation_mode="text", server=default_server)
    for goal in (0, 7, len(default_server.goals) - 1, -1):
        env.reset(session=goal)
        assert env.session == str(goal)
        assert env.instruction_text == "Instruction: " + default_server.goals[goal]["instruction_text"]
    env.reset(session="a-name")
    first = env.instruction_text
    for _ in range(3):
        env.reset(session="a-name")  # a known name keeps its goal, as in the reference
        assert env.instruction_text == first
    other = WebAgentTextEnv(observation_mode="text", server=default_server)
    other.reset(session="a-name")  # sessions belong to the server, shared by its envs
    assert other.instruction_text == first
    with pytest.raises(GoalNotFound, match="names no goal"):
        env.reset(session=len(default_server.goals))


def test_random_sessions_and_goals_follow_the_reference_stream(default_shop):
    server = SimServer(shop=default_shop)
    env = WebAgentTextEnv(observation_mode="text", server=server, session_prefix="p-")
    # A fresh reference process: random.seed(233), shuffle the goals, then the constructor's reset
    # draws a name and a goal, and so does every reset without a session.
    rng = random.Random(233)
    rng.shuffle(list(range(len(default_shop.goals))))
    cum = [0, *__import__("numpy").cumsum(default_shop.goals.weight).tolist()]
    expected = []
    for _ in range(4):
        name = "".join(rng.choices(string.ascii_lowercase, k=10))
        expected.append(("p-" + name, random_idx(rng, cum)))
    got = [(env.session, env.instruction_text)]
    for _ in range(3):
        env.reset()
        got.append((env.session, env.instruction_text))
    assert got == [(name, "Instruction: " + default_shop.goals.instruction[g]) for name, g in expected]


def test_random_idx_keeps_the_reference_off_by_one():
    rng = random.Random(0)
    cum = [0, 1.0, 2.0, 3.0]
    draws = [random_idx(rng, cum) for _ in range(3000)]
    assert 0 not in draws and set(draws) == {1, 2}  # goal 0 never; the last goal twice as often
    assert 1.6 < draws.count(2) / draws.count(1) < 2.5


def test_no_auto_reset_after_a_purchase_and_the_episode_goes_on(real_server):
    env = WebAgentTextEnv(observation_mode="text", server=real_server)
    env.reset(session=0)
    env.step("search[pillow]")
    asin = env.get_available_actions()["clickables"][2]
    env.step(f"click[{asin}]")
    obs, reward, done, info = env.step("click[buy now]")
    assert done and isinstance(reward, float) and info is None
    assert "Your score (min 0.0, max 1.0)" in obs
    assert env.get_available_actions() == {"has_search_bar": False, "clickables": []}
    again, reward, done, _ = env.step("click[buy now]")  # nothing to click on the done page
    assert (again, reward, done) == (obs, 0, False) and type(reward) is int
    obs, reward, done, _ = env.step("search[towel]")  # a search still works, as in the reference
    assert obs.startswith("Instruction:") and "Page 1 (Total results:" in obs and (reward, done) == (0.0, False)
    assert env.state["url"].startswith("http://127.0.0.1:3000/search_results/0/towel/1")


def test_invalid_actions_are_no_ops_with_an_int_zero(default_server):
    env = WebAgentTextEnv(observation_mode="text", server=default_server)
    start, _ = env.reset(session=1)
    for action in ["click[search]", "Search[x]", "click[nope]", "garbage", "", 42, None]:
        obs, reward, done, info = env.step(action)
        assert (obs, reward, done, info) == (start, 0, False, None) and type(reward) is int


def test_state_url_html_and_instruction(default_server):
    env = WebAgentTextEnv(observation_mode="url", server=default_server, session_prefix="user_")
    obs, _ = env.reset(session=5)
    assert obs == env.state["url"] == "http://127.0.0.1:3000/user_5"
    assert env.get_instruction_text() == "Instruction: " + default_server.goals[5]["instruction_text"]
    obs, *_ = env.step("search[Red Shoes]")
    assert obs == "http://127.0.0.1:3000/search_results/user_5/red+shoes/1"
    assert env.get_instruction_text() == "Instruction:" + default_server.goals[5]["instruction_text"]
    state = env.state
    assert set(state) == {"url", "html", "instruction_text"} and state["html"].startswith("<!DOCTYPE html>")
    env.reset(session=5, instruction_text="custom")
    assert env.instruction_text == env.state["instruction_text"] == "custom"
    html = WebAgentTextEnv(server=default_server)  # the reference's default mode is html
    assert html.observation_mode == "html" and html.observation.startswith("<!DOCTYPE html>")
    assert html.render() is None and html.render(mode="human") is None and html.close() is None


def test_get_image_says_image_features_are_not_provided(default_server):
    env = WebAgentTextEnv(observation_mode="text", server=default_server)
    with pytest.raises(ImageFeaturesUnavailable, match="image features are not provided"):
        env.get_image()
    with pytest.raises(ImageFeaturesUnavailable):
        WebAgentTextEnv(observation_mode="text", server=default_server, get_image=1)


def test_bad_arguments_are_clear(default_server):
    with pytest.raises(ValueError, match="Observation mode nope not supported"):
        WebAgentTextEnv(observation_mode="nope", server=default_server)
    with pytest.raises(TypeError, match="SimServer"):
        WebAgentTextEnv(server=object())
    with pytest.warns(UserWarning, match=r"ignores unknown arguments \['num_prev_ob'\]"):
        WebAgentTextEnv(observation_mode="text", server=default_server, num_prev_ob=2)


# -- the shared server --------------------------------------------------------------------------------


def test_envs_share_one_server_and_give_their_slots_back(default_shop):
    server = SimServer(shop=default_shop)
    envs = [WebAgentTextEnv(observation_mode="text", server=server) for _ in range(20)]
    assert server.slots_in_use == 20
    for i, env in enumerate(envs):
        env.reset(session=i)
        env.step("search[gift]")
    for i, env in enumerate(envs):  # every env kept its own episode
        assert env.instruction_text == "Instruction: " + default_shop.goals.instruction[i]  # read at reset
        assert env.get_instruction_text() == "Instruction:" + default_shop.goals.instruction[i]  # a results page
        assert env.state["url"].startswith(f"http://127.0.0.1:3000/search_results/{i}/gift/1")
    del envs, env
    gc.collect()
    assert server.slots_in_use == 0


def test_server_goals_and_weights_in_the_reference_format(real_server, real_human_server, golden_dir):
    golden = json.loads((golden_dir / "goals.json").read_text(encoding="utf-8"))
    assert len(real_server.goals) == len(golden) and real_server.goals[:50] == golden[:50]
    assert real_server.goals[-1] == golden[-1]
    assert real_server.weights[:50] == [g["weight"] for g in golden[:50]]
    human = json.loads((golden_dir / "human" / "goals.json").read_text(encoding="utf-8"))
    assert list(real_human_server.goals) == human
    assert all(type(w) is int for w in real_human_server.weights)
    import pickle

    assert pickle.loads(pickle.dumps(real_human_server.goals)) == human  # Ray sends a plain list


def test_filter_and_limit_goals(default_shop):
    keep = SimServer(shop=default_shop, filter_goals=lambda i, goal: i % 3 == 0)
    assert len(keep.goals) == (len(default_shop.goals) + 2) // 3
    assert keep.goals[1] == default_shop.goals[3]
    limited = SimServer(shop=default_shop, limit_goals=10)
    assert len(limited.goals) == 10 == len({g["instruction_text"] for g in limited.goals})
    again = SimServer(shop=default_shop, limit_goals=10)
    assert list(again.goals) == list(limited.goals)  # drawn from the reference's seeded stream


def test_seed_changes_prices_and_the_shuffle_option_changes_goal_order(default_shop, tmp_path):
    from webshop_gym.data.goals import GOAL_SHUFFLE_SEED

    base = SimServer(shop=default_shop)
    shuffled = SimServer(shop=default_shop, shuffle_seed=7)
    n = len(base.goals)
    # The reference's unshuffled list, recovered from the 233 order, shuffled with 7 instead.
    order = list(range(n))
    random.Random(GOAL_SHUFFLE_SEED).shuffle(order)
    unshuffled = [None] * n
    for position, index in enumerate(order):
        unshuffled[index] = base.goals[position]
    again = list(range(n))
    random.Random(7).shuffle(again)
    assert [shuffled.goals[i] for i in range(0, n, 97)] == [unshuffled[again[i]] for i in range(0, n, 97)]
    env = WebAgentTextEnv(observation_mode="text", shop=default_shop.path, seed=7, shuffle_goals_with_seed=True)
    assert env.server.shuffle_seed == 7 and env.server.shop.goals.seed == 7
    plain = WebAgentTextEnv(observation_mode="text", shop=default_shop.path, seed=7)
    assert plain.server.shuffle_seed == GOAL_SHUFFLE_SEED
    assert (plain.server.shop.goals.prices != default_shop.goals.prices).any()  # seed draws prices


def test_the_environment_names_the_default_shop(real_dir, monkeypatch):
    monkeypatch.setenv("WEBSHOP_GYM_COMPAT_SHOP", str(real_dir))
    env = WebAgentTextEnv(observation_mode="text")  # as verl-agent builds it: no file, no shop
    assert env.server.shop.path == real_dir.resolve() and len(env.server.goals) == 6910


def test_file_path_names_the_reference_files(real_dir, tmp_path):
    env = WebAgentTextEnv(observation_mode="text", file_path=str(real_dir / "items_shuffle_1000.json"), human_goals=1)
    assert env.server.shop.goals.kind == "human" and len(env.server.goals) == 13
    # A folder that also holds another product file: only the named files are used.
    folder = tmp_path / "data"
    folder.mkdir()
    for name in ("items_shuffle_1000.json", "items_ins_v2_1000.json", "items_human_ins.json"):
        (folder / name).symlink_to(real_dir / name)
    (folder / "items_shuffle.json").write_text("[]", encoding="utf-8")
    other = WebAgentTextEnv(observation_mode="text", file_path=str(folder / "items_shuffle_1000.json"))
    assert len(other.server.shop.catalog) == 1000 and len(other.server.goals) == 6910


# -- registration with the old gym ----------------------------------------------------------------


def test_gym_make_when_gym_is_installed(default_shop):
    gym = pytest.importorskip("gym", reason="the old gym package is not installed (it is not a dependency)")
    import webshop_gym.compat  # noqa: F401  (registers on import)

    env = gym.make("WebAgentTextEnv-v0", observation_mode="text", shop=default_shop)  # as verl-agent calls it
    obs, info = env.reset(session=2)
    assert obs.startswith("WebShop [SEP]") and info is None
    obs, reward, done, info = env.step("search[shoes]")
    assert "Page 1 (Total results:" in obs and (reward, done, info) == (0.0, False, None)
    assert env.get_available_actions()["clickables"][:2] == ["back to search", "next >"]


def test_registration_uses_the_old_gym_api():
    """Without gym installed, the registration path runs against a stand-in gym module."""
    code = textwrap.dedent("""
        import sys, types
        calls = []
        gym = types.ModuleType("gym"); gym.envs = types.ModuleType("gym.envs")
        reg = types.ModuleType("gym.envs.registration"); reg.registry = {}
        def register(id, entry_point, **kw):
            calls.append((id, entry_point)); reg.registry[id] = entry_point
        reg.register = register; gym.envs.registration = reg; gym.envs.registry = reg.registry
        gym.Env = object
        sys.modules.update({"gym": gym, "gym.envs": gym.envs, "gym.envs.registration": reg})
        import webshop_gym.compat as compat
        assert compat.register_gym() is True      # idempotent
        print(calls)
        import importlib
        module, name = calls[0][1].split(":")
        assert getattr(importlib.import_module(module), name) is compat.WebAgentTextEnv
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[('WebAgentTextEnv-v0', 'webshop_gym.compat:WebAgentTextEnv')]"


def test_importing_compat_prints_nothing_even_with_gym_installed():
    """gym's "unmaintained" notice must not appear in every process that uses the compat classes (serve)."""
    pytest.importorskip("gym", reason="the old gym package is not installed (it is not a dependency)")
    code = "import webshop_gym.compat, gym; print(gym.envs.registry['WebAgentTextEnv-v0'].entry_point)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.strip() == "webshop_gym.compat:WebAgentTextEnv"
