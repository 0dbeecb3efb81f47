"""A report over shard files equals the report over their merged file, table by table, export by export (issue 42, item 3).

The shards are a served model's run of 9 goals x 2 samples (a protocol's plan) in 3 shards, with
goal 4's calls failing (errored episodes in the middle shard).  The merged file is written by
``report --merged`` and named as the report names the shards (``qwen (3 shards).jsonl``), so every
table, example list, plot and export can be compared byte for byte.
"""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.reporting.plots import PLOTS, draw_all  # noqa: E402
from webshop_gym.reporting.report import build_report, failure_tags, tables, write_episodes  # noqa: E402

LABEL = "qwen (3 shards)"


@pytest.fixture(scope="module")
def shards(tmp_path_factory, default_shop):
    folder = tmp_path_factory.mktemp("shard-report")
    with ChatServer(fail_when=default_shop.goals.instruction[4]) as server:
        for i in range(3):
            assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "9",
                         "--samples", "2", "--concurrency", "4", "--max-retries", "0", "--timeout", "5", "--quiet",
                         "--out", str(folder / f"qwen.{i}.jsonl"), "--shard", f"{i}/3"]) == 0
    paths = [folder / f"qwen.{i}.jsonl" for i in range(3)]
    merged = folder / "merged" / f"{LABEL}.jsonl"
    merged.parent.mkdir()
    assert main(["report", *map(str, paths), "--merged", str(merged), "--no-plots", "--format", "md",
                 "--out", str(folder / "r.md")]) == 0
    return paths, merged


def test_every_table_of_the_shards_report_equals_the_merged_files(shards):
    paths, merged = shards
    by_shards, by_merged = build_report(paths, resamples=500), build_report([merged], resamples=500)
    assert [r.label for r in by_shards.rows] == [r.label for r in by_merged.rows] == [LABEL]
    a, b = tables(by_shards), tables(by_merged)
    assert list(a) == list(b)
    for key in a:  # table by table, header and rows
        assert a[key] == b[key], key
    assert sum(int(row[2]) for row in a["tag-counts"][1]) == 18  # every shard's episodes are tagged
    assert failure_tags(by_shards) == failure_tags(by_merged)
    examples = [p for t in failure_tags(by_shards) for p in t["examples"]]
    assert max(examples) >= 12  # examples from the last shard, at their positions in the whole run


def test_the_tag_plot_and_every_plot_equal_the_merged_files(shards):
    pytest.importorskip("matplotlib")
    paths, merged = shards
    a = draw_all(build_report(paths, resamples=500).rows)
    b = draw_all(build_report([merged], resamples=500).rows)
    assert set(a) == set(b) == set(PLOTS)
    for name in PLOTS:
        assert a[name] == b[name], name


def test_csv_and_jsonl_of_the_shards_equal_the_merged_files(shards, tmp_path, capsys):
    paths, merged = shards
    for name, runs in (("shards", list(map(str, paths))), ("merged", [str(merged)])):
        assert main(["report", *runs, "--no-plots", "--format", "md", "--out", str(tmp_path / f"{name}.md"),
                     "--csv", str(tmp_path / f"{name}.csv"), "--jsonl", str(tmp_path / f"{name}.jsonl")]) == 0
    capsys.readouterr()
    for kind in ("csv", "jsonl"):
        a, b = (tmp_path / f"shards.{kind}").read_text(encoding="utf-8"), (tmp_path / f"merged.{kind}").read_text(
            encoding="utf-8")
        assert a == b, kind
        assert len(a.splitlines()) == 18 + (kind == "csv")


def test_the_shards_report_reads_each_shard_once_through_one_loader(shards, tmp_path):
    """A shard missing: the report still reads the others whole (tags and exports of both), and says so."""
    paths, _ = shards
    folder = tmp_path / "two"
    folder.mkdir()
    for p in (paths[0], paths[2]):
        shutil.copy(p, folder / p.name)
    report = build_report([folder / paths[0].name, folder / paths[2].name], resamples=200)
    assert report.rows[0].label == "qwen (2 shards)"
    assert any("shards 1 of 3 are missing" in note for note in report.notes)
    assert sum(report.rows[0].tags.values()) == 12
    write_episodes(report, csv_path=str(tmp_path / "two.csv"))
    assert len((tmp_path / "two.csv").read_text(encoding="utf-8").splitlines()) == 13
