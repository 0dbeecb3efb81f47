"""Runs on disk: `eval --out` writes every episode; `replay` verifies it; figures equal eval's."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from tests.runs.conftest import NUM_GOALS, write_run
from webshop_gym import WebShopEnv, __version__
from webshop_gym.agents.parse import ParsedAction
from webshop_gym.agents.policies import RulePolicy
from webshop_gym.analysis.taxonomy import failure_causes
from webshop_gym.cli.app import main
from webshop_gym.evaluation.local import evaluate
from webshop_gym.runs.log import read_log
from webshop_gym.runs.run import load_run

FIGURES = ("score", "sr", "mean_reward", "mean_steps", "valid_rate", "breakdown", "counts")


def test_eval_out_round_trips_through_replay(runs_dir, capsys):
    for name in ("rule", "random", "oracle"):
        assert main(["replay", str(runs_dir / f"{name}.jsonl")]) == 0
        out = capsys.readouterr().out
        assert out.count("  ok\n") == NUM_GOALS
        assert out.endswith(f"{NUM_GOALS} episodes, 0 mismatches; run summary: ok\n")


def test_run_file_layout(runs_dir, default_shop, eval_json):
    log = read_log(runs_dir / "rule.jsonl")
    head = log.header
    assert head["format"] == 2 and head["policy"] == "rule" and head["split"] == "test"
    assert head["seed"] == 0 and head["max_steps"] == 15 and head["observation_mode"] == "text"
    assert head["goals"] == [0, NUM_GOALS] and head["num_goals"] == NUM_GOALS
    assert head["package"] == f"webshop-gym {__version__}"
    assert dt.datetime.fromisoformat(head["created"]).tzinfo is not None
    assert head["fingerprint"] == default_shop.fingerprint()
    assert head["shop"]["path"] == str(default_shop.path) and head["arguments"]["num_goals"] == NUM_GOALS
    assert [e.goal_index for e in log.episodes] == list(range(NUM_GOALS))  # goal order
    env = WebShopEnv(shop=default_shop)
    for ep in log.episodes[:5]:
        goal = ep.goal_index
        assert ep.instruction == default_shop.goals.instruction[goal]
        assert ep.record["category"] == default_shop.goals.category[goal]
        assert ep.record["target"]["asin"] == default_shop.goals.asin[goal]
        obs, _ = env.reset(options={"goal_index": goal})
        assert ep.record["observation"] == obs
        for step in ep.steps:  # each step holds the observation its action led to
            obs, reward, terminated, truncated, info = env.step(step["action"])
            assert (step["observation"], step["reward"], step["page"]) == (obs, reward, info["page"])
        last = ep.steps[-1]
        assert last["terminated"] and last["reward_info"] == info["reward_info"]
        assert last["purchased_asin"] == info["purchased_asin"] and last["purchased_price"] == info["purchased_price"]
        assert "time" not in last  # run files are deterministic apart from the run and summary lines
    assert log.summary["result"]["score"] == eval_json["rule"]["score"]


@pytest.mark.parametrize("name", ["rule", "random", "oracle"])
def test_run_figures_equal_eval(runs_dir, eval_json, name):
    run = load_run(runs_dir / f"{name}.jsonl")
    expected = eval_json[name]
    for key in FIGURES:
        assert run.figures[key] == expected[key], key
    if name == "oracle":
        assert run.figures["unreachable"] == expected["unreachable"]
        assert run.figures["sr_reachable"] == expected["sr_reachable"]
    assert run.policy == name and run.complete and len(run.episodes) == NUM_GOALS


def test_same_seed_same_file_whatever_num_envs(tmp_path):
    a, _ = write_run(tmp_path, "a", "random", num_envs=1, seed=3)
    b, _ = write_run(tmp_path, "b", "random", num_envs=7, seed=3)
    body = lambda p: p.read_text(encoding="utf-8").splitlines()[1:-1]  # noqa: E731
    assert body(a) == body(b)
    assert len(body(a)) > NUM_GOALS * 2


def test_replay_reports_a_tampered_summary_and_an_incomplete_run(runs_dir, tmp_path, capsys):
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    summary = json.loads(lines[-1])
    summary["result"]["score"] += 1.0
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join([*lines[:-1], json.dumps(summary)]) + "\n", encoding="utf-8")
    assert main(["replay", str(forged)]) == 1
    assert "summary MISMATCH (score: summary" in capsys.readouterr().out
    cut = tmp_path / "cut.jsonl"
    last_episode = max(i for i, line in enumerate(lines) if '"type": "episode"' in line)
    cut.write_text("\n".join(lines[:last_episode]) + "\n", encoding="utf-8")
    assert main(["replay", str(cut)]) == 1
    assert f"incomplete run: {NUM_GOALS - 1} of {NUM_GOALS} episodes" in capsys.readouterr().out


def test_an_interrupted_eval_leaves_a_readable_run(tmp_path, default_shop):
    calls = {"n": 0}

    class Flaky(RulePolicy):
        def act(self, obs, info):
            calls["n"] += 1
            if calls["n"] > 40:
                raise KeyboardInterrupt
            return super().act(obs, info)

    out = tmp_path / "cut.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate(Flaky, shop=default_shop, num_envs=3, num_goals=20, out=out)
    run = load_run(out)
    assert 0 < len(run.episodes) < 20 and not run.complete
    assert main(["replay", str(out)]) == 1  # every episode ok, but the run is incomplete


class ScriptedLLM:
    """A batch policy that answers like an LLM: raw text, then a parsed action (as HFPolicy keeps them)."""

    name = "scripted-llm"

    def __init__(self):
        self.rule = {}
        self.last, self.last_responses = [], []

    def act_batch(self, observations, infos):
        from webshop_gym.agents.batch import unbatch_infos

        infos = unbatch_infos(infos, len(observations))
        actions, self.last, self.last_responses = [], [], []
        for slot, (obs, info) in enumerate(zip(observations, infos)):
            if info.get("idle"):
                actions.append("")
                self.last.append(None)
                self.last_responses.append(None)
                continue
            if info["steps"] == 0:
                self.rule[slot] = RulePolicy()
                self.rule[slot].reset(info)
            action = self.rule[slot].act(obs, info) if info["steps"] != 1 else "click[the best one]"
            text = f"<think>step {info['steps']}</think><answer>{action}</answer>"
            actions.append(action)
            self.last.append(ParsedAction(action, action in info["valid_actions"], True, False,
                                          "" if action in info["valid_actions"] else "not admissible"))
            self.last_responses.append(text)
        return actions


def test_model_outputs_are_logged(tmp_path, default_shop):
    out = tmp_path / "llm.jsonl"
    result = evaluate(ScriptedLLM(), shop=default_shop, num_envs=3, num_goals=4, out=out)
    run = load_run(out)
    assert run.policy == "scripted-llm" and run.figures["score"] == result["score"]
    for episode in run.episodes:
        steps = episode.log.steps
        assert steps[1]["model"] == {"response": "<think>step 1</think><answer>click[the best one]</answer>",
                                     "action": "click[the best one]", "valid": False, "format_ok": True,
                                     "mapped": False, "reason": "not admissible"}
        assert steps[1]["invalid_action"] and all("model" in s for s in steps)
    assert main(["replay", str(out)]) == 0


def test_hf_policy_run_records_prompt_format_and_outputs(tmp_path, default_shop, make_tiny_model, tiny_tokenizer):
    model_dir = tmp_path / "model"
    tiny_tokenizer.save_pretrained(model_dir)
    make_tiny_model().save_pretrained(model_dir)
    out = tmp_path / "hf.jsonl"
    assert main(["eval", "--policy", f"hf:{model_dir}", "--num-goals", "2", "--num-envs", "2", "--max-steps", "2",
                 "--max-new-tokens", "3", "--device", "cpu", "--prompt", "react", "--quiet", "--out", str(out)]) == 0
    run = load_run(out)
    assert run.header["prompt"] == "react" and run.header["policy_settings"]["max_new_tokens"] == 3
    steps = [s for e in run.episodes for s in e.log.steps]
    assert len(steps) == 4 and all(isinstance(s["model"]["response"], str) and "valid" in s["model"] for s in steps)


def test_out_is_checked_at_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--out", str(tmp_path), "--num-goals", "1"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --out:" in err and "is a directory" in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["eval", "--out", str(tmp_path / "no" / "run.jsonl")])
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("args, expected", [
    ((True, False, 4, 0, {"r_type": 1.0, "r_att": 1.0, "r_price": True}, 1.0), []),
    ((True, False, 4, 0, {"r_type": 0.5, "r_att": 0.5, "r_option": 0.0, "r_price": False}, 0.1),
     ["type", "attributes", "options", "price"]),
    ((True, False, 4, 0, {"r_type": 1.0, "r_att": 1.0, "r_option": 0.5, "r_price": True}, 0.8), ["options"]),
    ((True, False, 4, 3, {"r_type": 1.0, "r_att": 1.0, "r_price": False}, 0.67), ["price"]),
    # without a purchase there are no reward parts: the failure tag says what happened (one taxonomy)
    ((False, True, 15, 8, None, 0.0), []),
    ((False, True, 15, 7, None, 0.0), []),
    ((False, False, 3, 0, None, 0.0), []),
    ((False, False, 0, 0, None, 0.0), []),
])  # fmt: skip
def test_failure_cause_rules(args, expected):
    assert failure_causes(*args) == expected
