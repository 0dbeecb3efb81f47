"""Demonstrations: replay-verified, split by product, SFT-ready chat transcripts."""

from __future__ import annotations

import json

import pytest

from webshop_gym import WebShopEnv
from webshop_gym.agents import parse_response
from webshop_gym.evaluation.demos import (
    make_demos,
    rationale,
    split_by_product,
    verify_trajectory,
    write_demos,
)


@pytest.fixture(scope="module")
def think_demos(default_shop):
    return make_demos(shop=default_shop, n=80, split="train", fmt="think-answer", eval_fraction=0.2, num_envs=16)


def _replay_messages(shop, record):
    """Replay the answers of a transcript in a fresh env; return the final reward."""
    env = WebShopEnv(shop=shop)
    obs, info = env.reset(options={"goal_index": record["goal_index"]})
    reward, done = 0.0, False
    for message in record["messages"]:
        if message["role"] != "assistant":
            continue
        assert not done
        action, valid = parse_response(message["content"], info["valid_actions"], record["format"])
        assert valid, message
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert done
    return reward


def test_demos_are_verified_successes(think_demos, default_shop):
    counts = think_demos.counts
    assert counts["goals_run"] == 80 and counts["replay_mismatches"] == 0
    assert counts["trajectories_kept"] + counts["below_min_reward"] == 80
    assert counts["trajectories_kept"] >= 72 and counts["records"] == counts["trajectories_kept"]
    train_goals = set(default_shop.goals.split_range("train"))
    for record in think_demos.records:
        assert record["goal_index"] in train_goals and record["reward"] == 1.0
        assert record["asin"] == default_shop.goals.asin[record["goal_index"]]
        assert _replay_messages(default_shop, record) == record["reward"]


def test_split_by_product(think_demos):
    train = {r["asin"] for r in think_demos.records if r["split"] == "train"}
    held = {r["asin"] for r in think_demos.records if r["split"] == "eval"}
    assert train and held and not train & held
    assert think_demos.counts["products_eval"] == len(held)
    asins = [r["asin"] for r in think_demos.records]
    assert split_by_product(asins, 0.2, seed=0) == held
    assert split_by_product(list(reversed(asins)), 0.2, seed=0) == held  # order-free
    assert split_by_product(asins, 0.0) == set()
    with pytest.raises(ValueError):
        split_by_product(asins, 1.0)


def test_think_answer_transcripts(think_demos):
    for record in think_demos.records:
        roles = [m["role"] for m in record["messages"]]
        assert roles[0] == "system" and roles[1:] == ["user", "assistant"] * ((len(roles) - 1) // 2)
        assert len(roles) == 1 + 2 * record["steps"]
        for message in record["messages"][2::2]:
            think = message["content"].split("</think>")[0]
            assert message["content"].startswith("<think>") and len(think) > len("<think>") + 10
            assert message["content"].endswith("</answer>")
    first = think_demos.records[0]["messages"]
    assert "searching for it" in first[2]["content"] and "buying" in first[-1]["content"]


def test_other_formats(default_shop):
    verl = make_demos(shop=default_shop, n=10, fmt="verl-agent", num_envs=8)
    kept = verl.counts["trajectories_kept"]
    assert verl.counts["records"] == sum(r["steps"] for r in verl.records if r["step"] == 0)
    assert sum(r["step"] == 0 for r in verl.records) == kept
    for record in verl.records:
        assert [m["role"] for m in record["messages"]] == ["user", "assistant"]
        assert record["messages"][1]["content"].endswith("</action>")
        if record["step"] > 0:
            assert "Prior to this step" in record["messages"][0]["content"]
    react = make_demos(shop=default_shop, n=10, fmt="react", policy="rule", min_reward=0.0, num_envs=8)
    assert react.counts["trajectories_kept"] == 10 and react.counts["replay_mismatches"] == 0
    for record in react.records:
        assert "\nAction: " in record["messages"][-1]["content"]
        assert _replay_messages(default_shop, record) == pytest.approx(record["reward"])


def test_verification_rejects_tampered_trajectories(think_demos, default_shop):
    from webshop_gym.agents.policies import OraclePolicy
    from webshop_gym.envs.vector_env import WebShopVectorEnv
    from webshop_gym.evaluation.local import rollout

    env = WebShopVectorEnv(2, shop=default_shop, split="train", eval_mode=True)
    episodes = rollout(env, lambda: OraclePolicy(shop=default_shop), num_goals=2, record=True)
    env.close()
    replay = WebShopEnv(shop=default_shop)
    episode = episodes[0]
    assert verify_trajectory(replay, episode["goal_index"], episode["trajectory"], episode["reward"])
    assert not verify_trajectory(replay, episode["goal_index"], episode["trajectory"], episode["reward"] - 0.5)
    assert not verify_trajectory(replay, episode["goal_index"] + 1, episode["trajectory"], episode["reward"])
    assert not verify_trajectory(replay, episode["goal_index"], episode["trajectory"][:-1], episode["reward"])


def test_rationales():
    info = {"page": "item", "instruction": "i need soap, and price lower than 20.00 dollars",
            "available_actions": {"clickables": ["< prev", "large", "small", "buy now"]}}
    obs = "Instruction: [SEP] i need soap [SEP] Back to Search [SEP] < Prev [SEP] size [SEP] large [SEP] small [SEP] Soap [SEP] Price: $12.5 [SEP] Rating: N.A. [SEP] Buy Now"
    assert rationale(obs, info, "click[large]") == "Selecting size: large as requested."
    assert rationale(obs, info, "click[buy now]", ["size: large"]) == (
        "All requested options are set (size: large) and its price ($12.5) is below the $20.00 budget; buying.")
    assert rationale("", {"page": "start"}, "search[red soap]") == "The instruction asks for red soap; searching for it."
    assert rationale("", {"page": "start"}, "search[i am looking for a red soap]") == "The instruction asks for red soap; searching for it."
    results = "Back to Search [SEP] Page 1 (Total results: 2) [SEP] Next > [SEP] B0ABC12345 [SEP] Red Soap Bar [SEP] $3.0"
    assert rationale(results, {"page": "results"}, "click[b0abc12345]") == "B0ABC12345 (Red Soap Bar, $3.0) matches the requested product; opening it."
    assert "next page" in rationale(results, {"page": "results"}, "click[next >]")


def test_cli_writes_jsonl(tmp_path, capsys):
    from webshop_gym.cli.app import main

    out = tmp_path / "demos.jsonl"
    assert main(["demos", "--policy", "oracle", "-n", "12", "--format", "think-answer", "--out", str(out), "--quiet", "--num-envs", "4"]) == 0
    counts = json.loads(capsys.readouterr().out)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == counts["records"] and counts["goals_run"] == 12
    assert set(lines[0]) == {"messages", "goal_index", "asin", "reward", "split", "format", "steps"}
    with pytest.raises(FileNotFoundError, match="does not exist"):  # no folders are created behind a user's back
        write_demos(tmp_path / "sub" / "x.jsonl", lines[:2])
    assert not (tmp_path / "sub").exists()
    (tmp_path / "sub").mkdir()
    write_demos(tmp_path / "sub" / "x.jsonl", lines[:2])
    assert len((tmp_path / "sub" / "x.jsonl").read_text().splitlines()) == 2
