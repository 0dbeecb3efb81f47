"""AgentBoard's progress rate (issue 53 item 1), checked against an independent transcription of AgentBoard's code.

AgentBoard's site (``agentboard/environment/WebShop/web_agent_site/app.py`` at bb7255e) scores each
served page ``s/3 + i/3 + b/3``: ``s`` the best reward on a results page (over every combination of
a product's option values), ``i`` the reward of the LAST combination its product-page loop scores
(``maxr = -1`` inside the loop; it stops at a combination scoring exactly 1.0), ``b`` the
purchase's raw reward; its env (``webshop_env.py``) keeps the highest page score and, on the
purchase page, the raw reward itself.  The transcription below reads the pages back from the run
file (the observation text, the page, the action) and scores each combination with the
reference's pure-Python scorer, the way app.py's loops walk them; 200 episodes of each of two
policies.
"""

from __future__ import annotations

import copy
import itertools
import json
import re

import pytest

from webshop_gym import load_shop
from webshop_gym.evaluation.local import evaluate
from webshop_gym.protocols import Protocol, get_protocol

ASIN = re.compile(r"\bB[0-9A-Z]{9}\b")
EPISODES = 200
SUB_PAGES = ("description", "features", "reviews", "attributes")


def _search_page_score(shop, goal: int, products: list[str]) -> float:
    """app.py search_results: search_max over the page's products and each one's option combinations."""
    search_max = 0.0
    for asin in products:
        record = shop.catalog.product_record(shop.catalog.row_of(asin))
        all_combinations = list(itertools.product(*list(record["options"].values())))
        if len(all_combinations) > 0:
            for c in all_combinations:
                reward = shop.reward(goal, asin, dict(zip(record["options"], c, strict=True)))[0]
                search_max = max(search_max, reward)
        else:
            search_max = max(search_max, shop.reward(goal, asin, {}, price=record["pricing"][0])[0])
    return search_max


def _item_page_score(shop, goal: int, asin: str) -> float:
    """app.py item_page: maxr = -1 at every combination, so the loop leaves the last one scored (or the first 1.0)."""
    record = shop.catalog.product_record(shop.catalog.row_of(asin))
    all_combinations = list(itertools.product(*list(record["options"].values())))
    maxr = None
    if len(all_combinations) > 0:
        for c in all_combinations:
            maxr = -1
            reward = shop.reward(goal, asin, dict(zip(record["options"], c, strict=True)))[0]
            if reward > maxr:
                maxr = reward
                if reward == 1.0:
                    break
    else:
        maxr = shop.reward(goal, asin, {}, price=record["pricing"][0])[0]
    return maxr


def _independent(shop, episode: dict, steps: list[dict]) -> float:
    goal = int(episode["goal_index"])
    s_s = i_s = 0.0
    sub_reward = 0.0
    on_page: list[str] = []
    product = None
    for step in steps:
        clicked = re.fullmatch(r"click\[(.+)\]", step["action"])
        if clicked and clicked.group(1).upper() in on_page:
            product = clicked.group(1).upper()
        if step.get("page") == "results":
            on_page = ASIN.findall(step["observation"])
            s_s = max(s_s, _search_page_score(shop, goal, on_page))
        elif step.get("page") in ("item", *SUB_PAGES) and product is not None:
            i_s = max(i_s, _item_page_score(shop, goal, product))
        sub_reward = max(sub_reward, s_s / 3.0 + i_s / 3.0)
    if steps and steps[-1].get("terminated"):
        b_s = steps[-1]["reward"]
        sub_reward = max(sub_reward, s_s / 3.0 + i_s / 3.0 + b_s / 3.0, b_s)  # the done page, then 'Your score'
    return sub_reward


@pytest.fixture(scope="module")
def played(real_dir, tmp_path_factory):
    data = copy.deepcopy(get_protocol("agentboard").data)
    data.update(shop={"release": "any"}, goal_kind="synthetic",
                test={"list": {"shuffle_seed": 233}, "indices": {"range": [0, EPISODES]}})
    out = tmp_path_factory.mktemp("progress") / "run.jsonl"
    for policy in ("rule", "random"):
        result = evaluate(policy, shop=str(real_dir), protocol=Protocol(data, ""), out=out.with_name(f"{policy}.jsonl"),
                          keep_episodes=False)
        assert result["protocol"]["metrics"][1]["name"] == "progress_rate"
    return out.parent


@pytest.mark.parametrize("policy", ["rule", "random"])
def test_progress_rate_equals_an_independent_computation(played, real_dir, policy):
    shop = load_shop(real_dir, progress=False)
    lines = [json.loads(x) for x in (played / f"{policy}.jsonl").read_text().splitlines()]
    episodes = [x for x in lines if x["type"] == "episode"]
    steps: dict[str, list] = {}
    for x in lines:
        if x["type"] == "step":
            steps.setdefault(x["episode"], []).append(x)
    assert len(episodes) == EPISODES
    values = []
    for e in episodes:
        got = e["protocol"]["progress"]
        assert got == pytest.approx(_independent(shop, e, steps[e["episode"]]), abs=1e-6), e["episode"]
        values.append(got)
    summary = next(x for x in lines if x["type"] == "summary")
    metric = next(m for m in summary["result"]["protocol"]["metrics"] if m["name"] == "progress_rate")
    assert metric["value"] == pytest.approx(100 * sum(values) / len(values), abs=1e-6)
    if policy == "random":
        assert 0 < metric["value"] < 100 and any(0 < v < 1 for v in values)
