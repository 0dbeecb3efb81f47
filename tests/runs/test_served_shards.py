"""`eval --shard i/n` and `report` over the shards; the report's accounting table and cost (issue 22)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer  # noqa: E402
from tests.runs.test_served import _episodes, _eval  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.reporting.report import build_report, tables  # noqa: E402
from webshop_gym.runs.replay import replay  # noqa: E402
from webshop_gym.runs.run import load_run  # noqa: E402
from webshop_gym.runs.shards import merge_shards  # noqa: E402


@pytest.fixture(scope="module")
def shard_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    with ChatServer() as server:
        for i in range(3):
            assert _eval(server, folder / f"qwen.{i}.jsonl", "--shard", f"{i}/3", goals=14) == 0
        assert _eval(server, folder / "whole.jsonl", goals=14) == 0
        sums = server.usage_sums()
    return folder, sums


def test_shards_are_disjoint_contiguous_blocks(shard_runs):
    folder, _ = shard_runs
    goals = [[e.goal_index for e in load_run(folder / f"qwen.{i}.jsonl").episodes] for i in range(3)]
    assert goals == [[0, 1, 2, 3], [4, 5, 6, 7, 8], [9, 10, 11, 12, 13]]
    assert load_run(folder / "qwen.1.jsonl").header["shard"] == [1, 3]


def test_report_reads_the_shards_as_one_run(shard_runs, tmp_path, capsys):
    folder, (prompt, completion) = shard_runs
    shards = [str(folder / f"qwen.{i}.jsonl") for i in range(3)]
    report = build_report([*shards, str(folder / "whole.jsonl")], resamples=200, price_input=2.0, price_output=8.0)
    assert [r.label for r in report.rows] == ["qwen (3 shards)", "whole"]
    merged, whole = report.rows
    assert merged.figures == whole.figures and merged.run.complete and not report.notes
    assert merged.figures["tokens"]["prompt"] * 2 == prompt  # the shards and the whole run: the same requests
    assert report.comparisons[0].paired.tied == 14
    served = tables(report)["served"][1]
    expected_cost = (prompt / 2 * 2.0 + completion / 2 * 8.0) / 1e6
    assert served[0][0] == "qwen (3 shards)" and served[0][1] == "0 of 14" and served[0][-1] == f"{expected_cost:.4f}"
    out = tmp_path / "r.md"
    assert main(["report", *shards, "--out", str(out), "--no-plots", "--bootstrap", "100",
                 "--price-input", "2", "--price-output", "8"]) == 0
    text = out.read_text()
    assert "Model calls" in text and f"{expected_cost:.4f}" in text and "qwen (3 shards)" in text
    capsys.readouterr()


def test_a_missing_shard_is_noted(shard_runs):
    folder, _ = shard_runs
    report = build_report([str(folder / "qwen.0.jsonl"), str(folder / "qwen.2.jsonl")], resamples=100)
    assert report.notes == ["qwen (2 shards): shards 1 of 3 are missing"]
    assert report.rows[0].figures["episodes"] == 9


def test_merge_shards_writes_the_whole_run(shard_runs, tmp_path):
    folder, _ = shard_runs
    out = tmp_path / "merged.jsonl"
    run = merge_shards([folder / f"qwen.{i}.jsonl" for i in (2, 0, 1)], out)
    assert [e.goal_index for e in run.episodes] == list(range(14)) and run.complete
    assert _episodes(out) == _episodes(folder / "whole.jsonl")
    assert all(r["match"] for r in replay(out))
    head = json.loads(out.read_text().splitlines()[0])
    assert "shard" not in head and head["shards"] == 3 and head["goals"] == [0, 14] and head["num_goals"] == 14


def test_report_counts_errored_episodes_apart(tmp_path, default_shop, capsys):
    out = tmp_path / "run.jsonl"
    with ChatServer(fail_when=default_shop.goals.instruction[2]) as server:
        assert _eval(server, out, "--max-retries", "0", goals=6) == 0
    report = build_report([str(out)], resamples=100)
    row = tables(report)["runs"][1][0]
    assert row[3] == "5 (+1 errored)"
    served = tables(report)["served"][1][0]
    assert served[1] == "1 of 6"
    assert report.rows[0].figures["episodes"] == 5
    capsys.readouterr()


def test_report_writes_the_merged_run(shard_runs, tmp_path, capsys):
    folder, _ = shard_runs
    merged = tmp_path / "merged.jsonl"
    shards = [str(folder / f"qwen.{i}.jsonl") for i in range(3)]
    assert main(["report", *shards, "--merged", str(merged), "--no-plots", "--bootstrap", "100", "--format", "md"]) == 0
    assert _episodes(merged) == _episodes(folder / "whole.jsonl")
    assert main(["report", str(folder / "qwen.0.jsonl"), str(folder / "whole.jsonl"), "--merged", str(merged),
                 "--no-plots", "--bootstrap", "100", "--format", "md"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "error: cannot merge: only shards of one evaluation (eval --shard i/n, same settings) can be merged")


def test_shards_that_do_not_make_one_run_are_one_line(tmp_path, capsys):
    with ChatServer() as server:
        for n, shard, name in (("12", "0/2", "a"), ("16", "1/2", "b"), ("12", "1/2", "c")):
            assert _eval(server, tmp_path / f"{name}.jsonl", "--shard", shard, goals=int(n)) == 0
    capsys.readouterr()
    a, b, c = (str(tmp_path / f"{x}.jsonl") for x in "abc")
    cases = [([a, b], "a and b are shards of evaluations of different goals (--num-goals/--goals 12 vs 16)"),
             ([a, a], "shard 0 of 2 is given twice"),
             ([a, c, "--merged", a], f"--merged {a} is one of the runs read"),
             ([a, b, "--merged", str(tmp_path / "m.jsonl")], "different goals")]
    before = (tmp_path / "a.jsonl").read_bytes()
    for args, message in cases:
        assert main(["report", *args, "--no-plots", "--format", "md", "--out", str(tmp_path / "r.md")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err and "internal error" not in err
    assert (tmp_path / "a.jsonl").read_bytes() == before and not (tmp_path / "m.jsonl").exists()
    assert main(["report", a, c, "--merged", str(tmp_path / "m.jsonl"), "--no-plots", "--format", "md",
                 "--out", str(tmp_path / "r.md")]) == 0
    assert [e.goal_index for e in load_run(tmp_path / "m.jsonl").episodes] == list(range(12))
    capsys.readouterr()


@pytest.mark.parametrize("text", ["١/٢", "1/٢", " 1/2", "1/2 ", "+1/2", "1/2/3", "2/2", "0/0", "a/b", "1"])
def test_a_shard_is_ascii_digits_i_of_n(text, capsys):
    from webshop_gym.evaluation.plan import parse_shard

    with pytest.raises(ValueError, match="must be i/n with integers 0 <= i < n"):
        parse_shard(text)
    with pytest.raises(SystemExit):
        main(["eval", "--policy", "openai:x", "--base-url", "http://127.0.0.1:9/v1", "--shard", text])
    assert "--shard" in capsys.readouterr().err
    assert parse_shard("1/2") == (1, 2)
