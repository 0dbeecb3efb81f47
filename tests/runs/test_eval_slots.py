"""More slots than goals (issue 20, G1): spare slots are idle from reset and eval caps its slots."""

from __future__ import annotations

import json

import numpy as np
import pytest

from webshop_gym import WebShopVectorEnv
from webshop_gym.cli.app import main


def test_spare_slots_are_idle_from_reset(default_shop):
    goals = len(default_shop.goals.split_range("test"))
    n = goals + 3
    env = WebShopVectorEnv(n, shop=default_shop, split="test", eval_mode=True)
    obs, infos = env.reset(seed=0)
    idle = infos["_idle"] & infos["idle"]
    assert idle.tolist() == [False] * goals + [True] * 3
    assert env.idle.tolist() == idle.tolist()
    assert all(o == "" for o in obs[goals:]) and all(o for o in obs[:goals])
    # live slots carry their goals; spare slots report nothing but idle
    assert infos["goal_index"][infos["_goal_index"]].tolist() == list(range(goals))
    assert not infos["_goal_index"][goals:].any() and not infos["_available_actions"][goals:].any()
    env.close()


def test_cli_eval_human_goals_with_default_num_envs(tmp_path):
    # the embedded shop's 510 human goals leave 10 in the eval split: fewer than the default 16 slots
    out = tmp_path / "r.json"
    assert main(["eval", "--human-goals", "--split", "eval", "--policy", "rule", "--json", str(out),
                 "--episodes", "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["counts"]["episodes"] == len(result["episodes_detail"]) < 16
    assert result["num_envs"] == result["counts"]["episodes"]


def test_cli_eval_human_goals_on_the_real_shop(real_dir, tmp_path):
    out = tmp_path / "r.json"
    for policy in ("rule", "oracle"):
        assert main(["eval", "--shop", str(real_dir), "--human-goals", "--policy", policy,
                     "--json", str(out), "--quiet"]) == 0
        assert json.loads(out.read_text())["counts"]["episodes"] == 13


def test_cli_eval_more_slots_than_the_test_split(tmp_path):
    out = tmp_path / "r.json"
    assert main(["eval", "--policy", "oracle", "--num-envs", "501", "--json", str(out), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["counts"]["episodes"] == 500 and result["num_envs"] == 500


def test_cli_eval_caps_slots_before_allocating(tmp_path, capsys):
    out = tmp_path / "r.json"
    run = tmp_path / "run.jsonl"
    with pytest.raises(SystemExit) as exc:  # past the documented bound: one line at the parser, exit 2
        main(["eval", "--policy", "rule", "--num-envs", "1000000", "--num-goals", "2", "--quiet"])
    assert exc.value.code == 2 and "at most 65,536" in capsys.readouterr().err
    assert main(["eval", "--policy", "rule", "--num-envs", "65536", "--num-goals", "2",
                 "--json", str(out), "--out", str(run), "--quiet"]) == 0
    result = json.loads(out.read_text())
    assert result["num_envs"] == 2 and result["counts"]["episodes"] == 2
    header = json.loads(run.read_text().splitlines()[0])
    assert np.any([v == 2 for k, v in _walk(header) if k == "num_envs"])


def _walk(obj, key=None):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, k)
    else:
        yield key, obj
