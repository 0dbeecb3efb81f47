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


# -- issue 42 item 6: a protocol's price-seed lanes in flight side by side, up to --num-envs slots ------------


@pytest.fixture(scope="module")
def real_1k(real_dir):
    from webshop_gym import load_shop

    return load_shop(real_dir, progress=False)


@pytest.mark.parametrize(("policy", "samples"), [("rule", 1), ("random", 2), ("oracle", 1)])
def test_a_protocol_plays_at_num_envs_with_the_same_episodes(real_1k, policy, samples, tmp_path):
    """verl-agent's 256 episodes sit on 128 price-seed shops (about 2 each): 64 slots hold 32 of them at once."""
    from webshop_gym.evaluation.local import evaluate

    one = evaluate(policy, shop=real_1k, protocol="verl-agent", num_envs=1, samples=samples, seed=3,
                   out=tmp_path / "one.jsonl")
    wide = evaluate(policy, shop=real_1k, protocol="verl-agent", num_envs=64, samples=samples, seed=3,
                    out=tmp_path / "wide.jsonl")
    narrow, wide_lines = ([line for line in (tmp_path / name).read_text(encoding="utf-8").splitlines()
                        if json.loads(line)["type"] not in ("run", "summary")] for name in ("one.jsonl", "wide.jsonl"))
    assert narrow == wide_lines  # the same file line for line (a purchase's option keys in the slot's own order too)
    assert wide["counts"]["episodes"] == 256 * samples
    assert wide["episodes_detail"] == one["episodes_detail"]  # every field of every episode, in order
    assert (one["num_envs"], wide["num_envs"], wide["num_envs_asked"]) == (1, 64, 64)  # was 2: one shop at a time
    assert wide["env_steps"] < one["env_steps"] / 1.5  # slots of one shop step together


def test_a_batch_policy_is_asked_once_for_every_lane_in_flight(real_1k):
    from webshop_gym.agents.batch import SlotPolicies
    from webshop_gym.agents.policies.registry import make_policy
    from webshop_gym.evaluation.local import evaluate

    rule = evaluate("rule", shop=real_1k, protocol="verl-agent", num_envs=64)
    batch = SlotPolicies(lambda: make_policy("rule"))
    played = evaluate(batch, shop=real_1k, protocol="verl-agent", num_envs=64)
    assert batch.widest == 64  # one call holds 64 live slots of 32 shops (was 2: one shop's)
    assert batch.calls < 50  # 23: about one per step of the longest shops in flight (was 659, one per shop's step)
    assert played["num_envs"] == 64
    assert played["episodes_detail"] == rule["episodes_detail"]  # a slot taken over by the next shop starts clean


def test_cli_prints_the_slots_in_use_and_the_num_envs_asked(real_dir, tmp_path, capsys):
    out, run = tmp_path / "r.json", tmp_path / "run.jsonl"
    assert main(["eval", "--shop", str(real_dir), "--protocol", "verl-agent", "--policy", "rule", "--num-envs", "64",
                 "--json", str(out), "--out", str(run)]) == 0
    printed = capsys.readouterr().out
    wall = next(line for line in printed.splitlines() if line.startswith("wall time"))
    assert wall.endswith("64 envs)"), wall
    assert json.loads(out.read_text())["num_envs"] == 64
    assert main(["eval", "--shop", str(real_dir), "--protocol", "verl-agent", "--policy", "rule", "--num-envs", "500",
                 "--json", str(out)]) == 0
    wall = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("wall time"))
    assert wall.endswith("256 envs (--num-envs 500))"), wall  # every lane at once: 256 episodes, 256 slots
    assert json.loads(out.read_text())["num_envs"] == 256
