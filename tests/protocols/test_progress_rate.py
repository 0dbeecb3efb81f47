"""AgentBoard's progress rate (issue 43 item 7), checked against an independent computation from the run file.

AgentBoard's site (``web_agent_site/app.py``) scores each served page: a third each of the best
reward of a product on a results page seen (over every combination of its option values), the
best of a product page opened, and the purchase; the episode keeps the best.  The test reads the
pages back from the run file and scores the products with the reference's pure-Python scorer.
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


def _best(shop, goal: int, asin: str) -> float:
    row = shop.catalog.row_of(asin)
    groups = list(shop.catalog.options_of(row).items())
    combos = itertools.product(*[[(name, v) for v in values] for name, values in groups]) if groups else [()]
    return max(shop.reward(goal, asin, dict(combo))[0] for combo in combos)


def _independent(shop, episode: dict, steps: list[dict]) -> float:
    goal = int(episode["goal_index"])
    search = item = 0.0
    shown: list[str] = []
    for step in steps:
        clicked = re.fullmatch(r"click\[(.+)\]", step["action"])
        opened = clicked.group(1).upper() if clicked and clicked.group(1).upper() in shown else None
        if step.get("page") == "results":
            shown = ASIN.findall(step["observation"])
            search = max([search, *(_best(shop, goal, a) for a in shown)])
        if step.get("page") == "item" and opened:
            item = max(item, _best(shop, goal, opened))
    bought = steps[-1]["reward"] if steps and steps[-1].get("terminated") else 0.0
    return (search + item + bought) / 3


@pytest.fixture(scope="module")
def played(real_dir, tmp_path_factory):
    data = copy.deepcopy(get_protocol("agentboard").data)
    data.update(shop={"release": "any"}, goal_kind="synthetic",
                test={"list": {"shuffle_seed": 233}, "indices": {"range": [0, 40]}})
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
