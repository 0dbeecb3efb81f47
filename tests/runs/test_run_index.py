"""The run index (webshop_gym.runs.index), failure tags (webshop_gym.analysis.diagnosis) and intervals (webshop_gym.analysis.intervals)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from webshop_gym.analysis.diagnosis import SOLVED, TAG_RULES, TAGS, EpisodeFacts, failure_tag
from webshop_gym.analysis.intervals import score_interval, sr_interval, wilson
from webshop_gym.analysis.stats import bootstrap_ci
from webshop_gym.runs.index import RunIndex
from webshop_gym.runs.log import LogError, read_log
from webshop_gym.runs.run import load_run


def test_index_agrees_with_load_run(runs_dir):
    for name in ("rule", "random", "oracle"):
        path = runs_dir / f"{name}.jsonl"
        run, index = load_run(path), RunIndex(path)
        assert index.refresh() and not index.refresh()  # the second call finds nothing new
        table = index.table()
        assert table.figures == run.figures and index.header == run.header and index.summary == run.summary
        assert table.reward.tolist() == [e.reward for e in run.episodes]
        assert [table.cause_names(i) for i in range(len(table))] == [e.causes for e in run.episodes]
        for i in (0, len(run.episodes) // 2, len(run.episodes) - 1):
            episode = index.episode(i)
            assert episode.log.steps == run.episodes[i].log.steps and episode.log.record == run.episodes[i].log.record
            assert episode.log.step_lines == run.episodes[i].log.step_lines
        with pytest.raises(IndexError):
            index.episode(len(run.episodes))


def test_index_reads_on_when_the_file_grows_and_again_when_replaced(runs_dir, tmp_path):
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "live.jsonl"
    cut = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "episode" and i > 20)
    path.write_text("".join(lines[:cut]) + lines[cut][:30], encoding="utf-8")  # a line being written
    index = RunIndex(path)
    index.refresh()
    before = index.episodes
    assert before == sum(json.loads(line)["type"] == "episode" for line in lines[:cut])
    consumed = index.consumed
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(lines[cut][30:] + "".join(lines[cut + 1 :]))
    assert index.refresh() and index.consumed > consumed
    run = load_run(runs_dir / "rule.jsonl")
    assert index.episodes == len(run.episodes) and index.table().figures == run.figures
    shutil.copy(runs_dir / "random.jsonl", path)  # replaced: read again from the start
    index.refresh()
    assert index.table().figures == load_run(runs_dir / "random.jsonl").figures


@pytest.mark.parametrize("bad, message", [
    ('{"type": "step", "episode": "x", "step": 1}', "step record has no 'reward'"),
    ("not json", "not JSON"),
    ('{"type": "episode", "episode": "g0", "goal_index": -1}', "goal_index must be >= 0"),
])
def test_malformed_lines_are_named_as_read_log_names_them(runs_dir, tmp_path, bad, message):
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([*lines[:5], bad, *lines[5:]]) + "\n", encoding="utf-8")
    with pytest.raises(LogError) as from_index:
        RunIndex(path).refresh()
    with pytest.raises(LogError) as from_reader:
        read_log(path)
    assert str(from_index.value) == str(from_reader.value) and message in str(from_index.value)
    assert "line 6" in str(from_index.value)


def _facts(**changes) -> EpisodeFacts:
    base = dict(purchased=True, truncated=False, steps=4, invalid=0, reward=0.5, searched=True, target="B01",
                bought="B02", seen_step=1, opened=False, reward_info={"r_type": 1.0, "r_att": 0.5, "r_price": True})
    return EpisodeFacts(**{**base, **changes})


@pytest.mark.parametrize("changes, tag", [
    ({"reward": 1.0, "bought": "B01"}, SOLVED),
    ({"errored": True, "reward": 1.0}, "errored"),
    ({"purchased": False, "steps": 4, "invalid": 2}, "invalid-action loop"),
    ({"purchased": False, "searched": False, "invalid": 1}, "never searched"),
    ({"purchased": False, "truncated": True}, "step cap"),
    ({"purchased": False}, "no purchase"),
    ({"seen_step": 0}, "target not on the pages seen"),
    ({"seen_step": 2}, "seen but not opened"),
    ({"opened": True}, "opened but wrong product bought"),
    ({"seen_step": None}, "wrong product bought"),
    ({"target": ""}, "wrong product bought"),
    ({"bought": "b01", "reward_info": {"r_option": 0.5, "r_price": False}}, "right product, wrong options"),
    ({"bought": "b01", "reward_info": {"r_option": 0.5}, "reachable": True}, "right product, option not clicked"),
    ({"bought": "B01", "reward_info": {"r_option": 0.5}, "reachable": False}, "goal unreachable"),
    ({"bought": "B02", "reward_info": {"r_option": 0.5}, "reachable": False}, "seen but not opened"),
    ({"purchased": False, "reachable": False}, "no purchase"),
    ({"bought": "B01", "reward_info": {"r_option": 1.0, "r_price": False}}, "price over the cap"),
    ({"bought": "B01", "reward_info": {"r_att": 0.5, "r_price": True}}, "right product, other part short"),
])
def test_failure_tag_rules(changes, tag):
    assert failure_tag(_facts(**changes)) == tag


def test_every_tag_has_a_rule():
    assert set(TAG_RULES) == set(TAGS)


def test_wilson_interval():
    low, high = wilson(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)  # the textbook value
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)
    interval = sr_interval([True] * 3 + [False] * 7)
    assert interval.value == pytest.approx(30.0) and 0 < interval.low < 30 < interval.high < 100
    assert sr_interval([]) is None
    with pytest.raises(ValueError):
        wilson(0, 0)


def test_score_interval_is_the_wilson_type_interval_of_a_mean():
    """Issue 54: a closed form (no seed), never zero-width; 0/1 rewards give SR's interval."""
    rng = np.random.default_rng(3)
    rewards = rng.choice([0.0, 0.25, 0.5, 1.0], size=400)
    a = score_interval(rewards, 4000, seed=1)
    assert a == score_interval(rewards, 10, seed=7) and a.value == pytest.approx(100 * rewards.mean())
    classic = bootstrap_ci(rewards, 4000, seed=1)  # on 400 episodes the bootstrap agrees within a point
    assert abs(a.low - classic.low) < 1.0 and abs(a.high - classic.high) < 1.0
    assert score_interval([0.5] * 10).low < 50.0 < score_interval([0.5] * 10).high  # no zero-width interval
    assert score_interval([0.0] * 30).format() == sr_interval([False] * 30).format() == "0.0 [0.0, 11.4]"
    assert score_interval([]) is None
    assert not math.isnan(score_interval([1.0]).low)
