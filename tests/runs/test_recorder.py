"""The trajectory recorder and replay: every step logged, safe lines, strict reading, the step cap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webshop_gym import WebShopEnv
from webshop_gym.cli.app import main
from webshop_gym.runs.log import (
    LogError,
    RecordTrajectory,
    TrajectoryWriter,
    dumps_line,
    read_episodes,
    read_log,
)
from webshop_gym.runs.replay import replay

SEPARATORS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r"


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


class BrokenRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


@pytest.mark.parametrize("action", [b"click[buy now]", {"search[x]"}, BrokenRepr(), 7, ["click[x]"], None])
def test_non_string_actions_are_logged_and_never_raise(tmp_path, default_shop, action):
    log = tmp_path / "log.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop), log)
    env.reset(options={"goal_index": 1})
    obs, reward, terminated, truncated, info = env.step(action)  # must not raise after stepping
    assert info["invalid_action"] and reward == 0.0
    env.step("search[tea]")
    env.close()
    step = records(log)[1]
    assert step["action"] is None and step["action_type"] == type(action).__qualname__
    assert step["action_repr"] == (object.__repr__(action) if isinstance(action, BrokenRepr) else repr(action))
    [episode] = read_episodes(log)
    assert episode.actions == [None, "search[tea]"]
    [result] = replay(log)
    assert result["match"], result


def test_lone_surrogates_and_line_separators_round_trip(tmp_path, default_shop):
    log = tmp_path / "log.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop), log, observations=True)
    actions = ["search[\ud800 tea]", f"search[a{SEPARATORS}b]", "click[\udfff]", "search[caf\u00e9 \U0001f375]"]
    env.reset(options={"goal_index": 2})
    outcomes = [env.step(a) for a in actions]
    env.close()
    text = log.read_text(encoding="utf-8")  # valid UTF-8 (a raw surrogate could not be encoded)
    assert len(text.splitlines()) == 1 + len(actions)  # str.splitlines counts records
    assert not any(c in text for c in SEPARATORS)
    assert "caf\u00e9 \U0001f375" in text  # other non-ASCII text stays readable
    [episode] = read_episodes(log)
    assert episode.actions == actions
    assert [s["observation"] for s in episode.steps] == [o[0] for o in outcomes]
    [result] = replay(log)
    assert result["match"], result


def test_dumps_line_is_valid_json_for_every_separator():
    for char in SEPARATORS + "\n\ud800\udbff\udc00":
        line = dumps_line({"s": f"x{char}y"})
        assert len(line.splitlines()) == 1 and json.loads(line) == {"s": f"x{char}y"}
        line.encode("utf-8")


def test_writer_survives_numpy_and_unknown_values(tmp_path):
    import numpy as np

    writer = TrajectoryWriter(tmp_path / "w.jsonl")
    writer.write({"a": np.float32(0.5), "b": np.bool_(True), "c": np.arange(3), "d": object(), "e": {1, 2}})
    writer.close()
    [record] = records(tmp_path / "w.jsonl")
    assert record["a"] == 0.5 and record["b"] is True and record["c"] == [0, 1, 2]
    assert record["d"].startswith("<object object") and record["e"] == ["1", "2"]


def _truncated_log(tmp_path, default_shop, cap=15) -> Path:
    log = tmp_path / "capped.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop, max_steps=cap), log)
    env.reset(options={"goal_index": 5})
    for _ in range(cap):
        *_, truncated, _ = env.step("click[nothing here]")
    assert truncated
    env.close()
    return log


def _write(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


def test_replay_honours_the_logged_step_cap(tmp_path, default_shop, capsys):
    log = _truncated_log(tmp_path, default_shop)
    lines = records(log)
    assert lines[0]["max_steps"] == 15
    [ok] = replay(log)
    assert ok["match"] and ok["steps"] == 15
    # A forged 23-step episode under the 15-step cap: the truncation flag removed, 8 steps added.
    forged = [dict(line) for line in lines]
    forged[-1]["truncated"] = False
    for k in range(16, 24):
        forged.append(dict(forged[-1], step=k))
    _write(log, forged)
    [bad] = replay(log)
    assert not bad["match"] and bad["problem"].startswith("step 15: truncated differs")
    # ... and with the flag kept: the log goes on after the episode ended.
    forged[15]["truncated"] = True
    _write(log, forged)
    [bad] = replay(log)
    assert not bad["match"] and "after the episode ended at step 15" in bad["problem"]
    assert main(["replay", str(log)]) == 1
    assert "MISMATCH (step 16: the log goes on after the episode ended" in capsys.readouterr().out


def test_format_1_logs_still_replay(tmp_path, default_shop):
    log = _truncated_log(tmp_path, default_shop, cap=4)
    lines = records(log)
    del lines[0]["max_steps"], lines[0]["observation_mode"]  # as format 1 wrote them
    lines[0]["shop"]["format"] = 1
    _write(log, lines)
    [episode] = read_episodes(log)
    assert episode.max_steps == 4  # told by the logged truncation
    [result] = replay(log)
    assert result["match"], result


def _tampered(tmp_path, default_shop) -> tuple[Path, list[str]]:
    log = tmp_path / "log.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop), log)
    env.reset(options={"goal_index": 3})
    env.step("search[tea]")
    env.step("click[next >]")
    env.close()
    return log, log.read_text(encoding="utf-8").splitlines()


def _set(line: str, **changes) -> str:
    record = json.loads(line)
    for key, value in changes.items():
        if value is KeyError:
            del record[key]
        else:
            record[key] = value
    return json.dumps(record)


@pytest.mark.parametrize("case, expected", [
    ("array", "line 2: expected a JSON object, got a list"),
    ("middle", "line 2: not JSON"),
    ("utf8", "line 2: not UTF-8 text"),
    ("no-episode-key", "line 2: step record has no 'episode'"),
    ("no-goal", "line 1: episode record has no 'goal_index'"),
    ("goal-type", "line 1: episode record: 'goal_index' must be an integer, got a string"),
    ("goal-bool", "line 1: episode record: 'goal_index' must be an integer, got a boolean"),
    ("reward-type", "line 3: step record: 'reward' must be an integer or a number, got a string"),
    ("flag-type", "line 2: step record: 'terminated' must be a boolean, got an integer"),
    ("shop-type", "line 1: episode record's shop: 'price_seed' must be an integer or null, got a string"),
    ("cap", "line 1: episode record: 'max_steps' must be >= 1 or null, got 0"),
    ("mode", "line 1: episode record: unknown observation_mode 'pixels'"),
    ("unknown-episode", "line 2: step of an episode that has not started"),
    ("skipped-step", "line 3: step 3 of episode"),
    ("no-type", "line 2: record has no 'type'"),
    ("goal-range", "line 1: goal_index 999999 is out of range"),
    ("garbage", "line 1: not JSON"),
    ("empty", "no episode in this log"),
])  # fmt: skip
def test_tampered_logs_give_one_line_errors(tmp_path, default_shop, capsys, case, expected):
    log, lines = _tampered(tmp_path, default_shop)
    head, first, second = lines
    tampered = {
        "array": [head, "[1, 2, 3]", second],
        "middle": [head, '{"type": "step", "episode": ', second],
        "no-episode-key": [head, _set(first, episode=KeyError), second],
        "no-goal": [_set(head, goal_index=KeyError), first, second],
        "goal-type": [_set(head, goal_index="3"), first, second],
        "goal-bool": [_set(head, goal_index=True), first, second],
        "reward-type": [head, first, _set(second, reward="1")],
        "flag-type": [head, _set(first, terminated=0), second],
        "shop-type": [_set(head, shop=dict(json.loads(head)["shop"], price_seed="0")), first, second],
        "cap": [_set(head, max_steps=0), first, second],
        "mode": [_set(head, observation_mode="pixels"), first, second],
        "unknown-episode": [head, _set(first, episode="nope"), second],
        "skipped-step": [head, first, _set(second, step=3)],
        "no-type": [head, _set(first, type=KeyError), second],
        "goal-range": [_set(head, goal_index=999999), first, second],
        "garbage": ["this is not a log"],
        "empty": [],
    }
    if case == "utf8":
        log.write_bytes(head.encode() + b"\n" + first.encode().replace(b"search", b"se\xffarch") + b"\n")
    else:
        log.write_text("".join(line + "\n" for line in tampered[case]), encoding="utf-8")
    assert main(["replay", str(log)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert err.startswith(f"webshop-gym replay: error: {log}") and expected in err, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_garbage_without_newline_is_not_zero_episodes(tmp_path, capsys):
    log = tmp_path / "garbage.jsonl"
    log.write_bytes(b"\x00\x01garbage")
    assert main(["replay", str(log)]) == 2
    assert "no episode in this log" in capsys.readouterr().err
    with pytest.raises(LogError):
        replay(log)


def test_a_torn_last_line_is_still_ignored(tmp_path, default_shop):
    log, lines = _tampered(tmp_path, default_shop)
    log.write_bytes(("\n".join(lines) + "\n").encode() + b'{"type": "step", "epi\xe2\x80')  # cut mid-character
    log_read = read_log(log)
    assert len(log_read.episodes[0].steps) == 2
    [result] = replay(log)
    assert result["match"]


def test_missing_shop_names_the_flag(tmp_path, default_shop, capsys):
    log, lines = _tampered(tmp_path, default_shop)
    head = json.loads(lines[0])
    head["shop"]["path"] = str(tmp_path / "moved-away")
    log.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    assert main(["replay", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"webshop-gym replay: error: {log}, line 1: cannot load the log's shop") and "--shop" in err
    assert main(["replay", str(log), "--shop", str(default_shop.path)]) == 0


def test_session_logs_escape_line_separators(default_shop, tmp_path):
    from webshop_gym.server import create_app

    app = create_app({"TESTING": True, "SHOP": default_shop, "LOG_DIR": str(tmp_path), "SEED": 0, "MAX_SESSIONS": 4})
    try:
        client = app.test_client()
        sid = client.get("/goal/0").headers["Location"].rsplit("/", 1)[-1]
        assert client.post(f"/play/{sid}", data={"action": "search", "query": "tea\u2028green\x85\u2029"}).status_code == 303
        log = tmp_path / f"{sid}.jsonl"
        text = log.read_text(encoding="utf-8")
        assert len(text.splitlines()) == 2 and "\u2028" not in text
        assert read_episodes(log)[0].actions == ["search[tea\u2028green\x85\u2029]"]
    finally:
        app.extensions["webshop_gym"].close()


def test_steps_after_a_reset_behind_the_wrapper_are_logged(tmp_path, default_shop):
    log = tmp_path / "log.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop), log)
    env.reset(options={"goal_index": 1})
    env.step("search[tea]")
    env.unwrapped.reset(options={"goal_index": 4})  # not through the wrapper
    env.step("search[soap]")
    env.step("click[next >]")
    env.close()
    first, second = read_episodes(log)
    assert (first.goal_index, first.actions) == (1, ["search[tea]"])
    assert (second.goal_index, second.actions) == (4, ["search[soap]", "click[next >]"])
    assert all(r["match"] for r in replay(log))


def test_recording_through_gym_make(tmp_path):
    import gymnasium as gym

    log = tmp_path / "log.jsonl"
    env = RecordTrajectory(gym.make("webshop_gym:WebShop-v0", max_steps=3), log)
    env.reset(seed=0, options={"goal_index": 2})
    outcomes = [env.step(a) for a in (b"click[x]", "search[\ud800 soap]", {"click[next >]"})]
    env.close()
    assert outcomes[-1][3]  # truncated by the 3-step cap
    [episode] = read_episodes(log)
    assert episode.actions == [None, "search[\ud800 soap]", None] and episode.max_steps == 3
    [result] = replay(log)
    assert result["match"], result


def test_a_log_with_lone_surrogates_is_exact_for_replay_and_clean_for_figures_and_exports(tmp_path, default_shop):
    from webshop_gym.runs.run import load_run

    log = tmp_path / "log.jsonl"
    env = RecordTrajectory(WebShopEnv(shop=default_shop), log)
    env.reset(options={"goal_index": 2})
    env.step("search[\ud800 tea]")
    env.close()
    assert read_log(log).episodes[0].actions == ["search[\ud800 tea]"]  # a replay sends what the agent sent
    [episode] = load_run(log).episodes  # what figures, pages and exports read
    assert episode.log.actions == ["search[\ufffd tea]"]
    csv = tmp_path / "episodes.csv"
    assert main(["report", str(log), "--csv", str(csv)]) == 0
    csv.read_text(encoding="utf-8")  # written whole, valid UTF-8
