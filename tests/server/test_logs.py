"""Session logs: the recorder's trajectory format, flushed per action, replayable in WebShopEnv."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.conftest import Player
from webshop_gym.agents.policies.oracle import OraclePolicy
from webshop_gym.runs.log import read_episodes
from webshop_gym.runs.replay import replay


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def play_logged(app, shop, goal: int) -> tuple[Player, Path, list[str]]:
    plan, *_ = OraclePolicy(shop).make_plan(goal)
    actions = [plan[0], "click[oops]", *plan[1:]]
    player = Player.start(app.test_client(), goal)
    log = Path(app.config["LOG_DIR"]) / f"{player.sid}.jsonl"
    for n, action in enumerate(actions, 1):
        player.act(action)
        assert len(lines(log)) == 1 + n  # flushed before the player sees the page
    return player, log, actions


def test_log_has_one_episode_line_and_one_line_per_action(app, default_shop):
    player, log, actions = play_logged(app, default_shop, 2)
    records = lines(log)
    head, steps = records[0], records[1:]
    assert head["type"] == "episode" and head["episode"] == player.sid and head["goal_index"] == 2
    assert head["instruction"] == default_shop.goals.instruction[2]
    assert head["shop"]["path"] == str(default_shop.path) and head["source"] == "server"
    assert [s["action"] for s in steps] == actions
    assert [s["step"] for s in steps] == list(range(1, len(actions) + 1))
    assert all({"page", "time", "reward", "terminated", "truncated", "invalid_action"} <= set(s) for s in steps)
    assert steps[1]["invalid_action"] and steps[-1]["terminated"] and steps[-1]["page"] == "done"
    assert steps[-1]["reward"] == player.state()["reward"] and "reward_info" in steps[-1]
    # Actions on the finished episode are not logged.
    player.act("click[back to search]")
    assert len(lines(log)) == len(records)


def test_replay_gives_the_same_reward(app, default_shop):
    player, log, _ = play_logged(app, default_shop, 6)
    [result] = replay(log)
    assert result["match"] and result["replayed_reward"] == player.state()["reward"]
    assert result["goal_index"] == 6


def test_replay_of_a_truncated_episode(make_app):
    app = make_app(MAX_STEPS=3)
    player = Player.start(app.test_client(), 8)
    for action in ["search[tea]", "click[next >]", "click[next >]"]:
        player.act(action)
    log = Path(app.config["LOG_DIR"]) / f"{player.sid}.jsonl"
    assert lines(log)[-1]["truncated"]
    [result] = replay(log)
    assert result["match"] and result["replayed_reward"] == 0.0


def test_log_survives_a_crash(app, default_shop):
    _, log, actions = play_logged(app, default_shop, 4)
    # A crash in the middle of a write leaves a torn last line: everything before it still reads.
    with open(log, "a", encoding="utf-8") as handle:
        handle.write('{"type": "step", "episode": "x", "act')
    [episode] = read_episodes(log)
    assert episode.actions == actions and episode.finished


def test_log_is_complete_while_the_server_is_still_running(app):
    # No buffering: another process sees every line while the session is alive.
    player = Player.start(app.test_client(), 0)
    player.act("search[shoes]")
    log = Path(app.config["LOG_DIR"]) / f"{player.sid}.jsonl"
    fd = os.open(log, os.O_RDONLY)
    try:
        text = os.read(fd, 1 << 20).decode()
    finally:
        os.close(fd)
    assert text.count("\n") == 2


def test_no_logs_without_log_dir(make_app, tmp_path):
    app = make_app(LOG_DIR=None)
    Player.start(app.test_client(), 0).act("search[shoes]")
    assert not (tmp_path / "logs").exists()


@pytest.mark.slow
def test_replay_cli(app, default_shop):
    player, log, _ = play_logged(app, default_shop, 11)
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "replay", str(log)], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert f"replayed {player.state()['reward']:.4f}  ok" in out.stdout
    assert "1 episodes, 0 mismatches" in out.stdout


def test_a_failed_log_write_rolls_the_action_back(app, client):
    """Issue 13 item 14: never an applied but unlogged action; the player gets a clear page."""
    app.config["PROPAGATE_EXCEPTIONS"] = False  # as outside tests: errors become pages
    player = Player.start(client, 3)
    log = Path(app.config["LOG_DIR"]) / f"{player.sid}.jsonl"
    player.act("search[gift]")
    before = player.state()
    logged = lines(log)
    log.rename(log.with_suffix(".moved"))
    log.mkdir()  # appending to the log now fails (a directory where the file was)
    response = client.post(player.url, data={"action": "click[next >]"})
    page = response.get_data(as_text=True)
    assert response.status_code == 503 and "was not applied" in page and "Traceback" not in page
    assert player.state() == before  # the step was undone: same page, same step count
    log.rmdir()
    log.with_suffix(".moved").rename(log)
    player.act("click[next >]")
    after = player.state()
    assert after["info"]["steps"] == before["info"]["steps"] + 1
    assert lines(log) == logged + lines(log)[len(logged):] and len(lines(log)) == len(logged) + 1
    assert lines(log)[-1]["action"] == "click[next >]" and lines(log)[-1]["step"] == after["info"]["steps"]


def test_a_game_whose_log_cannot_be_started_is_not_started(app, client, store, tmp_path):
    app.config["PROPAGATE_EXCEPTIONS"] = False
    import shutil

    folder = Path(app.config["LOG_DIR"])
    shutil.rmtree(folder)
    folder.write_text("not a folder", encoding="utf-8")  # every new log fails
    sessions = len(store)
    response = client.get("/goal/1")
    assert response.status_code == 503 and "no game was started" in response.get_data(as_text=True)
    assert len(store) == sessions and store.stats["created"] == 0
