"""WebShopEnv: Gymnasium API, parity with the reference, HTML == text, determinism, bad input."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence

import webshop_gym
from webshop_gym import WebShopEnv
from webshop_gym.error import EpisodeFinished
from webshop_gym.render.parse import available_actions, html_to_text, html_to_text_rich


def test_check_env_and_registration():
    env = gym.make("webshop_gym:WebShop-v0")
    assert isinstance(env.unwrapped, WebShopEnv)
    check_env(env.unwrapped)
    human = gym.make("webshop_gym:WebShopHuman-v0")
    assert human.unwrapped.shop.goals.kind == "human"


def test_make_with_the_issue_signature(tmp_path, real_dir, golden_dir):
    env = gym.make("webshop_gym:WebShop-v0", shop=str(real_dir), goals=str(golden_dir / "goals.json"),
                   human_goals=False, observation_mode="text", split=None, max_steps=15)
    obs, info = env.reset(options={"goal_index": 0})
    assert info["instruction"].startswith("Find me double sided, machine washable decorative pillows")


def test_episode_flow_and_infos(default_shop):
    env = WebShopEnv(shop=default_shop)
    obs, info = env.reset(seed=1, options={"goal_index": 5})
    assert info["goal_index"] == 5 and info["page"] == "start" and info["valid_actions"] == ["search[<query>]"]
    assert obs == f"WebShop [SEP] Instruction: [SEP] {info['instruction']} [SEP] Search"
    obs, reward, terminated, truncated, info = env.step("search[" + info["instruction"].split(", and price")[0] + "]")
    assert info["page"] == "results" and not info["invalid_action"] and reward == 0.0
    first = info["available_actions"]["clickables"][2]
    obs, *_, info = env.step(f"click[{first}]")
    assert info["page"] == "item"
    assert all(a in info["valid_actions"] for a in ("click[buy now]", "click[description]", "click[< prev]"))
    obs, reward, terminated, truncated, info = env.step("click[buy now]")
    assert terminated and not truncated and info["page"] == "done"
    assert set(info["reward_info"]) >= {"r_type", "r_att", "w_att", "r_price", "w_price"}
    assert info["purchased_asin"].lower() == first and reward == pytest.approx(
        default_shop.reward(5, info["purchased_asin"], info["purchased_options"])[0])
    with pytest.raises(EpisodeFinished):
        env.step("click[back to search]")


def test_truncation_and_render(default_shop):
    env = WebShopEnv(shop=default_shop, max_steps=3, render_mode="html")
    env.reset(options={"goal_index": 0})
    results = [env.step("click[nothing]") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True] and not any(r[2] for r in results)
    html = env.render()
    assert html.startswith("<!DOCTYPE html>") and html_to_text(html) == results[-1][0]
    ansi = WebShopEnv(shop=default_shop, render_mode="ansi")
    obs, _ = ansi.reset(options={"goal_index": 0})
    assert ansi.render() == obs


@pytest.mark.parametrize(
    "action",
    ["", "click[]", "search[]", "click[buy now", "search", "Search[shoes]", "click[BUY NOW]]x", "x" * 10_000,
     "click[\n]", "💥[💥]", None, 3, b"click[buy now]", ["click[buy now]"]],
)
def test_garbage_actions_are_no_ops(default_shop, action):
    env = WebShopEnv(shop=default_shop)
    obs, info = env.reset(options={"goal_index": 2})
    obs2, reward, terminated, truncated, info2 = env.step(action)
    assert obs2 == obs and reward == 0.0 and not terminated and info2["invalid_action"]
    assert info2["page"] == "start"


def test_huge_and_unicode_searches_are_valid_searches(default_shop):
    env = WebShopEnv(shop=default_shop)
    env.reset(options={"goal_index": 2})
    for query in ["ü" * 5000, "é" + "x" * 10_000, "🎁 gift", " " * 3]:
        obs, reward, terminated, truncated, info = env.step(f"search[{query}]")
        assert not info["invalid_action"] and info["page"] == "results" and reward == 0.0


def test_sampled_actions_never_raise(default_shop):
    env = WebShopEnv(shop=default_shop)
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()


def _episode_digest(seed: int) -> str:
    env = WebShopEnv(observation_mode="text_rich")
    obs, info = env.reset(seed=seed)
    digest = hashlib.sha256(obs.encode())
    rng = np.random.default_rng(seed)
    for _ in range(12):
        actions = info["valid_actions"] or ["click[x]"]
        action = actions[int(rng.integers(len(actions)))].replace("<query>", info["instruction"][:40])
        obs, reward, terminated, truncated, info = env.step(action)
        digest.update(f"{obs}|{reward}|{terminated}|{truncated}|{json.dumps(info, sort_keys=True)}".encode())
        if terminated or truncated:
            obs, info = env.reset()
            digest.update(obs.encode())
    return digest.hexdigest()


def test_same_seed_same_episode_in_another_process():
    here = _episode_digest(7)
    code = "from tests.envs.test_env import _episode_digest; print(_episode_digest(7))"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert here == there
    assert _episode_digest(8) != here


def test_two_envs_same_seed_same_rollout(default_shop):
    a, b = WebShopEnv(shop=default_shop), WebShopEnv(shop=default_shop)
    ra, rb = a.reset(seed=42), b.reset(seed=42)
    assert data_equivalence(ra, rb)
    for action in ["search[red dress]", "click[next >]", "click[< prev]", "click[back to search]"]:
        assert data_equivalence(a.step(action), b.step(action))


# -- parity with the reference --------------------------------------------------------------------


def _replay(shop, path):
    rows = []
    with open(path, encoding="utf-8") as handle:
        trajectories = [json.loads(line) for line in handle]
    text_env = WebShopEnv(shop=shop, max_steps=None)
    rich_env = WebShopEnv(shop=shop, max_steps=None, observation_mode="text_rich")
    for t in trajectories:
        obs, info = text_env.reset(options={"goal_index": t["goal_index"]})
        rich, _ = rich_env.reset(options={"goal_index": t["goal_index"]})
        done = False
        for k, step in enumerate(t["steps"]):
            if k:
                obs, reward, done, _, info = text_env.step(step["action"])
                rich, *_ = rich_env.step(step["action"])
            else:
                reward = 0.0
            rows.append((t["goal_index"], k, obs == step["obs_text"], rich == step["obs_text_rich"],
                         info["available_actions"] == step["available_actions"], reward == step["reward"],
                         done == step["done"], step["reward_info"] is None or info.get("reward_info") == step["reward_info"]))
    return rows


@pytest.mark.parametrize("human", [False, True])
def test_golden_trajectories_replay_identically(real_dir, golden_dir, human):
    folder = golden_dir / "human" if human else golden_dir
    shop = webshop_gym.load_shop(real_dir, goals=folder / "goals.json", progress=False)
    rows = _replay(shop, folder / "trajectories.jsonl")
    assert len(rows) > (100 if human else 3000)
    failures = [r for r in rows if not all(r[2:])]
    assert failures == []


# -- HTML: the text rule applied to the page gives the text observation ----------------------------


def _random_walk(shop, seed, steps=60, observation_mode="html"):
    env = WebShopEnv(shop=shop, observation_mode=observation_mode, max_steps=None, show_attrs=bool(seed % 2))
    rng = np.random.default_rng(seed)
    html, info = env.reset(seed=seed)
    pages = [(html, info)]
    for _ in range(steps):
        r = rng.random()
        if r < 0.1:
            action = rng.choice(["click[nope]", "search[]", "garbage", "click[search]"])
        elif r < 0.2:
            action = f"search[{' '.join(info['instruction'].split()[: rng.integers(1, 9)])}]"
        else:
            choices = [a for a in info["valid_actions"] if a != "click[buy now]" or rng.random() < 0.2] or ["click[x]"]
            action = choices[int(rng.integers(len(choices)))].replace("<query>", "shoes")
        html, _, terminated, _, info = env.step(action)
        pages.append((html, info))
        if terminated:
            html, info = env.reset()
            pages.append((html, info))
    return env, pages


@pytest.mark.parametrize("seed", range(6))
def test_html_parses_to_the_text_observation(default_shop, seed):
    env, pages = _random_walk(default_shop, seed)
    text_env = WebShopEnv(shop=default_shop, max_steps=None, show_attrs=bool(seed % 2))
    _, replayed = _random_walk(default_shop, seed, observation_mode="text")
    assert len(replayed) == len(pages)
    for (html, info), (text, text_info) in zip(pages, replayed):
        assert html_to_text(html) == text
        assert available_actions(html) == info["available_actions"] == text_info["available_actions"]
    del text_env


def test_html_parses_to_text_rich_on_the_real_shop(real_shop):
    env = WebShopEnv(shop=real_shop, observation_mode="html", max_steps=None)
    rich = WebShopEnv(shop=real_shop, observation_mode="text_rich", max_steps=None)
    rng = np.random.default_rng(3)
    for goal in range(0, 60, 3):
        html, info = env.reset(options={"goal_index": goal})
        text, _ = rich.reset(options={"goal_index": goal})
        for _ in range(10):
            engine = env.engine
            visited = {real_shop.catalog.asin[r].upper() for r in engine.state.visited[0]}
            assert html_to_text_rich(html, engine.renderer.url(engine.state, 0), visited) == text
            actions = [a for a in info["valid_actions"] if a != "click[buy now]"] or ["click[back to search]"]
            action = actions[int(rng.integers(len(actions)))].replace("<query>", info["instruction"][:30])
            html, _, _, _, info = env.step(action)
            text, *_ = rich.step(action)


def test_html_escapes_user_text(default_shop):
    env = WebShopEnv(shop=default_shop, observation_mode="html")
    env.reset(options={"goal_index": 0})
    html, *_ = env.step("search[<script>alert(1)</script> & 'quotes']")
    assert "<script>alert(1)</script>" not in html
    assert "http" not in html.split("<body")[0].replace("http-equiv", "")  # no external CSS/JS in the head


def test_url_mode(default_shop):
    env = WebShopEnv(shop=default_shop, observation_mode="url")
    url, info = env.reset(options={"goal_index": 9})
    assert url == "http://127.0.0.1:3000/9"
    url, *_ = env.step("search[red shoes]")
    assert url == "http://127.0.0.1:3000/search_results/9/red+shoes/1"
    url, *_, info = env.step("click[next >]")
    assert url.endswith("/search_results/9/red+shoes/2")
    label = info["available_actions"]["clickables"][3]
    url, *_ = env.step(f"click[{label}]")
    assert url == f"http://127.0.0.1:3000/item_page/9/{label.upper()}/red+shoes/2/{{}}"


def test_reference_debugging_queries(default_shop):
    catalog = default_shop.catalog
    env = WebShopEnv(shop=default_shop, max_steps=None)

    def listed(query):
        env.reset(options={"goal_index": 0})
        obs, *_ , info = env.step(f"search[{query}]")
        total = int(obs.split("(Total results: ")[1].split(")")[0])
        rows = env.engine.state.results[0]
        return total, [catalog.asin[int(r)] for r in rows]

    total, asins = listed("<c> beauty")
    beauty = [catalog.asin[r] for r in range(len(catalog)) if catalog.category_names[catalog.category[r]] == "beauty"]
    assert asins == beauty and total == len(beauty) > 50  # every product of the category, in catalog order
    query = catalog.query_names[catalog.query[5]]
    total, asins = listed(f"<q> {query}")
    assert asins == [catalog.asin[r] for r in range(len(catalog)) if catalog.query_names[catalog.query[r]] == query]
    attribute = catalog.attribute_names[catalog.attributes[7][0]]
    total, asins = listed(f"<a> {attribute}")
    expected = [catalog.asin[r] for r in range(len(catalog))
                if attribute in [catalog.attribute_names[a] for a in catalog.attributes[r]]]
    assert asins == expected and total >= 1
    assert listed("<c>") == (0, [])
    first, again = listed("<r> anything"), listed("<r> anything")
    assert first[0] == 50 and first == again and len(set(first[1])) == 50  # seeded by the episode, no repeats


# -- the single env's scalar step is the batch step -------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_single_slot_step_is_the_batch_step(default_shop, seed):
    """``Engine.step_one`` (what WebShopEnv steps with) and ``Engine.step`` on one slot agree on everything."""
    from webshop_gym.engine import Engine

    scalar, batch = (Engine(default_shop, 1, max_steps=12) for _ in range(2))
    rng = np.random.default_rng(seed)
    ends = set()
    for _ in range(8):
        goal = int(rng.integers(len(default_shop.goals)))
        for e in (scalar, batch):
            e.reset([0], [goal])
        for _ in range(14):
            info = scalar.info(0)
            r = rng.random()
            if r < 0.1:
                action = str(rng.choice(["click[nope]", "search[]", "garbage", "click[search]", "search[<r> x]"]))
            elif r < 0.25:
                action = f"search[{' '.join(info['instruction'].split()[: rng.integers(1, 9)])}]"
            else:
                choices = info["valid_actions"] or ["click[x]"]
                action = choices[int(rng.integers(len(choices)))].replace("<query>", "shoes")
            got = scalar.step_one(0, action)
            rewards, terminated, truncated = batch.step(np.zeros(1, np.intp), [action])
            assert got == (float(rewards[0]), bool(terminated[0]), bool(truncated[0]))
            assert type(got[0]) is float and type(got[1]) is bool and type(got[2]) is bool
            assert scalar.observe(0) == batch.observe(0) == scalar.renderer.text(scalar.state, 0)  # kept text is current
            assert scalar.info(0) == batch.info(0)
            if scalar.finished(0):
                ends.add("bought" if got[1] else "truncated")
                break
    assert ends == {"bought", "truncated"}  # both endings were compared


def test_the_single_env_steps_without_the_batch_arrays(default_shop, monkeypatch):
    from webshop_gym.engine import Engine

    env = WebShopEnv(shop=default_shop)
    env.reset(seed=0)
    monkeypatch.setattr(Engine, "step", lambda *a, **k: pytest.fail("WebShopEnv.step went through the batch step"))
    obs, reward, terminated, truncated, info = env.step("search[shoes]")
    assert info["page"] == "results" and reward == 0.0 and not terminated and not truncated


@pytest.mark.parametrize("show_attrs", [False, True])
def test_info_action_lists_are_the_renderers_two_lists(default_shop, show_attrs):
    """``info`` takes both action lists from one look at the page: the same lists, fresh each time."""
    env = WebShopEnv(shop=default_shop, max_steps=None, show_attrs=show_attrs)
    engine = env.engine
    renderer, state = engine.renderer, engine.state
    rng = np.random.default_rng(int(show_attrs))
    _, info = env.reset(seed=1)
    seen = set()
    for _ in range(300):
        available, valid = renderer.action_lists(state, 0)
        assert (available, valid) == (renderer.available_actions(state, 0), renderer.valid_actions(state, 0))
        assert (info["available_actions"], info["valid_actions"]) == (available, valid)
        again = renderer.action_lists(state, 0)
        assert again[0]["clickables"] is not available["clickables"] and again[1] is not valid
        seen.add(info["page"])
        if rng.random() < 0.15:
            action = f"search[{' '.join(info['instruction'].split()[: rng.integers(1, 9)])}]"
        else:
            action = str(rng.choice(valid)).replace("<query>", "shoes")
        _, _, terminated, _, info = env.step(action)
        if terminated:
            seen.add(info["page"])
            _, info = env.reset()
    assert {"start", "results", "item", "done"} <= seen and len(seen) >= 5  # a tab page too


def test_an_invalid_action_answers_the_kept_text(default_shop, monkeypatch):
    """An invalid action changes nothing a text observation shows: the engine does not render it again."""
    env = WebShopEnv(shop=default_shop, max_steps=None)
    obs, _ = env.reset(seed=3)
    results, *_ = env.step("search[shoes]")
    renderer = env.engine.renderer
    rendered = []
    real = renderer.text
    monkeypatch.setattr(renderer, "text", lambda state, slot: rendered.append(slot) or real(state, slot))
    for action in ("click[nope]", "garbage", "search[]", "click[search]"):
        again, _, _, _, info = env.step(action)
        assert again == results and info["invalid_action"]
    assert rendered == []
    item, *_ = env.step(env.engine.info(0)["valid_actions"][2])  # a product: the page changes
    assert rendered == [0] and item != results
    env.reset(seed=4)
    assert rendered == [0, 0]  # a new episode renders its start page


def test_an_option_click_keeps_the_text_but_not_the_rich_text(default_shop, monkeypatch):
    """Text mode does not show which options are selected: choosing one renders nothing new (text_rich does)."""
    from webshop_gym.core.pages import BUY_NOW, SUB_LABELS

    env = WebShopEnv(shop=default_shop, max_steps=None)
    env.reset(seed=5)
    _, _, _, _, info = env.step("search[shirt]")
    buttons = {"back to search", "< prev", BUY_NOW, *SUB_LABELS}
    for product in info["valid_actions"][2:]:
        item, _, _, _, info = env.step(product)
        options = [a for a in info["valid_actions"] if a[6:-1] not in buttons]
        if options:
            break
        env.step("click[< prev]")
    assert options, "no product with options on the first results page"
    rich_before = env.engine.observe(0, "text_rich")
    renderer = env.engine.renderer
    rendered = []
    real = renderer.text
    monkeypatch.setattr(renderer, "text", lambda state, slot: rendered.append(slot) or real(state, slot))
    again, _, _, _, info = env.step(options[0])
    assert not info["invalid_action"] and info["page"] == "item"
    assert again == item and rendered == [] and real(env.engine.state, 0) == item
    assert env.engine.observe(0, "text_rich") != rich_before  # the selection shows there
    # the batch step keeps it too (what the vector env steps with)
    env.engine.step(np.zeros(1, np.intp), [options[-1]])
    assert env.engine.observe(0) == item and rendered == [] and not env.engine.info(0)["invalid_action"]
    env.engine.step(np.zeros(1, np.intp), ["click[< prev]"])
    assert env.engine.observe(0) != item and rendered == [0]


def test_a_restored_state_is_observed_afresh(default_shop):
    """A state put in the engine's place (the run viewer's restore) is never answered with a kept text."""
    import copy

    env = WebShopEnv(shop=default_shop, max_steps=None)
    start, _ = env.reset(seed=2)
    engine = env.engine
    saved = copy.deepcopy(engine.state)
    results, *_ = env.step("search[shoes]")
    assert engine.observe(0) == results != start
    engine.state = copy.deepcopy(saved)  # back to the start page
    assert engine.observe(0) == start == engine.renderer.text(engine.state, 0)
    env.step("click[nope]")  # invalid: the restored page's text is kept from here on
    assert engine.observe(0) == start


def test_kept_page_actions_come_out_as_fresh_lists(default_shop):
    """The engine keeps a page's actions while the page stays (invalid actions, option clicks);
    every ``info`` still gets lists of its own, so changing one changes nothing later."""
    env = WebShopEnv(shop=default_shop, max_steps=None)
    _, info = env.reset(seed=3)
    _, _, _, _, info = env.step(f"search[{' '.join(info['instruction'].split()[:6])}]")
    _, _, _, _, info = env.step(info["valid_actions"][2])  # a product
    assert info["page"] == "item"
    want = (info["available_actions"], info["valid_actions"])
    want = ({**want[0], "clickables": list(want[0]["clickables"])}, list(want[1]))
    options = info["valid_actions"][info["valid_actions"].index("click[buy now]") + 1:][:2]
    assert options  # option values follow "buy now"
    for action in ("click[not on this page]", "garbage", *options):
        info["valid_actions"].append("click[mutated]")
        info["available_actions"]["clickables"].clear()
        _, _, _, _, info = env.step(action)
        assert info["page"] == "item" and (info["available_actions"], info["valid_actions"]) == want


def test_forget_drops_what_the_engine_kept_of_a_slot(default_shop):
    """``Engine.forget``: after a slot's state is put back in place (an undone step), the kept
    text and page actions of the page it left are dropped, and the slot shows its restored page."""
    import copy
    import dataclasses

    env = WebShopEnv(shop=default_shop, max_steps=None)
    _, info = env.reset(seed=5)
    engine = env.engine
    _, _, _, _, info = env.step(f"search[{' '.join(info['instruction'].split()[:5])}]")
    before = (engine.observe(0), engine.info(0))
    saved = {f.name: copy.copy(getattr(engine.state, f.name)[0]) for f in dataclasses.fields(engine.state)}
    env.step("click[next >]")
    after = (engine.observe(0), engine.info(0))
    assert after[0] != before[0] and after[1]["valid_actions"] != before[1]["valid_actions"]
    for name, value in saved.items():
        getattr(engine.state, name)[0] = value
    engine.invalid[0] = before[1]["invalid_action"]
    assert engine.observe(0) == after[0]  # kept: the engine cannot know the state was put back
    engine.forget(0)
    assert (engine.observe(0), engine.info(0)) == before
