"""The webshop-gym command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from webshop_gym.cli.app import build_parser, main

COMMANDS = [[], ["demo"], ["data"], ["data", "synth"], ["data", "info"], ["data", "compile"], ["data", "index"],
            ["data", "goals"], ["replay"], ["serve"], ["eval"], ["demos"]]


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "top")
def test_help_everywhere(words, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*words, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: webshop-gym" in out and len(out.splitlines()) > 3


def test_demo_prints_an_episode(capsys):
    assert main(["demo", "--goal", "3"]) == 0
    out = capsys.readouterr().out
    assert "goal 3:" in out and "action: search[" in out and "action: click[buy now]" in out
    assert "reward: " in out and "breakdown: " in out


def test_data_info(capsys):
    assert main(["data", "info"]) == 0
    out = capsys.readouterr().out
    assert "products: 1000" in out and "synthetic goals:" in out and "test 500" in out


def test_data_goals_export(tmp_path, capsys):
    out_file = tmp_path / "frozen.json"
    assert main(["data", "goals", "--out", str(out_file)]) == 0
    data = json.loads(out_file.read_text())
    assert len(data["goals"]) > 1000 and len(data["prices"]) == 1000


def test_errors_are_messages_not_tracebacks(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:  # rejected by the parser
        main(["demo", "--shop", str(tmp_path / "missing")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "webshop-gym demo: error: argument --shop:" in err and "does not exist" in err
    # a shop folder without a product file: the package's own error, one line
    assert main(["demo", "--shop", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webshop-gym demo: error: no product file in") and len(err.splitlines()) == 1


def test_replay_command(tmp_path, default_shop):
    from webshop_gym.runs.log import RecordTrajectory

    log = tmp_path / "log.jsonl"
    env = RecordTrajectory(webshop_gym_env(default_shop), log)
    rewards = []
    for goal in (1, 2):
        obs, info = env.reset(options={"goal_index": goal})
        obs, r, te, tr, info = env.step("search[" + info["instruction"].split(", and price")[0] + "]")
        obs, r, te, tr, info = env.step(f"click[{info['available_actions']['clickables'][2]}]")
        obs, r, te, tr, info = env.step("click[buy now]")
        assert te
        rewards.append(r)
    env.close()
    result = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "replay", str(log)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "2 episodes, 0 mismatches" in result.stdout
    assert f"logged {rewards[0]:.4f}  replayed {rewards[0]:.4f}  ok" in result.stdout
    # a log whose reward was tampered with is reported, with exit status 1
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    lines[-1]["reward"] = 0.123  # the purchase of the second episode
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    bad = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "replay", str(log)], capture_output=True, text=True)
    assert bad.returncode == 1 and "1 mismatches" in bad.stdout


def webshop_gym_env(shop):
    from webshop_gym import WebShopEnv

    return WebShopEnv(shop=shop)


def test_parser_lists_every_subcommand():
    parser = build_parser()
    text = parser.format_help()
    for name in ("demo", "data", "serve", "replay", "eval", "demos"):
        assert name in text
