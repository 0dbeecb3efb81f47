"""`webshop-gym report`: numbers equal eval's, paired statistics, HTML and Markdown, missing matplotlib."""

from __future__ import annotations

import base64
import json
import math
import shutil
import sys

import numpy as np
import pytest
from bs4 import BeautifulSoup

from tests.runs.conftest import NUM_GOALS
from webshop_gym.analysis.stats import bootstrap_ci, paired, sign_test
from webshop_gym.analysis.taxonomy import CAUSES, FAMILY
from webshop_gym.cli.app import main
from webshop_gym.reporting.report import build_report, tables
from webshop_gym.runs.index import RunIndex
from webshop_gym.runs.run import load_run


@pytest.fixture(scope="module")
def report_html(runs_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    args = ["report", *(str(runs_dir / f"{n}.jsonl") for n in ("rule", "random", "oracle")), "--out", str(out),
            "--bootstrap", "2000", "--viewer-url", "http://127.0.0.1:3000"]  # links to the viewer: asked for
    assert main(args) == 0
    return BeautifulSoup(out.read_text(encoding="utf-8"), "html.parser")


def _rows(soup, key):
    return [[td.text for td in tr.find_all("td")] for tr in soup.select(f"#table-{key} tbody tr")]


def test_report_numbers_equal_eval(runs_dir, eval_json, report_html):
    report = build_report([runs_dir / "rule.jsonl", runs_dir / "random.jsonl", runs_dir / "oracle.jsonl"],
                          resamples=2000)
    for row in report.rows:
        expected = eval_json[row.label]
        assert row.score.value == pytest.approx(expected["score"], abs=1e-9)
        assert row.sr.value == pytest.approx(expected["sr"], abs=1e-9)
        for key in ("mean_steps", "valid_rate", "breakdown", "counts"):
            assert row.figures[key] == expected[key]
    rendered = {r[0]: r for r in _rows(report_html, "runs")}
    for name in ("rule", "random", "oracle"):
        cells = rendered[name]
        assert cells[3] == str(NUM_GOALS)
        assert cells[4].startswith(f"{eval_json[name]['score']:.1f} [") and cells[5].startswith(f"{eval_json[name]['sr']:.1f} [")
        expected = eval_json[name]
        assert cells[6] == f"{expected['sr_reachable']:.1f} ({expected['unreachable']} unreachable)"
        assert cells[7] == f"{expected['mean_steps']:.2f}"
        assert cells[10] == f"{expected['breakdown']['r_type']:.3f}"
    assert tables(report)["runs"][1] == _rows(report_html, "runs")


def test_paired_comparison_counts(runs_dir, report_html):
    rule, oracle = load_run(runs_dir / "rule.jsonl"), load_run(runs_dir / "oracle.jsonl")
    a, b = [e.reward for e in rule.episodes], [e.reward for e in oracle.episodes]
    won = sum(y > x for x, y in zip(a, b))
    lost = sum(y < x for x, y in zip(a, b))
    row = next(r for r in _rows(report_html, "paired") if r[0] == "oracle vs rule")
    assert row[1] == str(NUM_GOALS) and row[2] == f"{won} / {lost} / {NUM_GOALS - won - lost}"
    only_rule = sum(x == 1.0 and y < 1.0 for x, y in zip(a, b))
    only_oracle = sum(y == 1.0 and x < 1.0 for x, y in zip(a, b))
    assert row[5].startswith(f"{only_rule} / {only_oracle} / ")
    diff = np.mean(b) - np.mean(a)
    assert row[3].startswith(f"{100 * diff:.1f} [")


def test_failure_tags_parts_and_categories_tables(runs_dir, report_html):
    random = load_run(runs_dir / "random.jsonl")
    causes = {r[0]: r for r in _rows(report_html, "causes")}
    column = ["rule", "random", "oracle"].index("random") + 1
    for cause in CAUSES:
        assert causes[cause][column] == str(sum(cause in e.causes for e in random.episodes))
    # one taxonomy: the tag table has a column per run, counted as the viewer counts them
    tags = {r[0]: r for r in _rows(report_html, "tag-counts")}
    for at, name in enumerate(["rule", "random", "oracle"], 2):
        index = RunIndex(runs_dir / f"{name}.jsonl")
        index.refresh()
        counts = index.tag_counts()
        assert {t: int(r[at]) for t, r in tags.items() if int(r[at])} == {t: c for t, c in counts.items() if c}
        assert all(r[1] == FAMILY[t] for t, r in tags.items() if t != "solved")
    categories = {r[0]: r for r in _rows(report_html, "categories")}
    for category in {e.category for e in random.episodes}:
        eps = [e for e in random.episodes if e.category == category]
        solved = sum(e.success for e in eps)
        assert categories[category][column] == f"{100 * solved / len(eps):.1f} ({solved}/{len(eps)})"


def test_html_is_self_contained(report_html):
    images = report_html.select("figure img")
    assert len(images) == 6
    for img in images:
        src = img["src"]
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    for tag in report_html.find_all(["img", "script", "link", "a", "iframe"]):
        if "example" in tag.get("class", []):  # links to episodes in the viewer (nothing is loaded from them)
            assert tag["href"].startswith("http://127.0.0.1:3000/runs/")
            continue
        for attr in ("src", "href"):
            assert not str(tag.get(attr, "")).startswith(("http:", "https:", "//")), tag


def test_markdown_report(runs_dir, tmp_path, capsys):
    out = tmp_path / "appendix.md"
    assert main(["report", str(runs_dir / "rule.jsonl"), str(runs_dir / "oracle.jsonl"), "--out", str(out),
                 "--bootstrap", "500"]) == 0
    assert "wrote" in capsys.readouterr().err
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# WebShop evaluation report") and "## Paired comparison with the first run" in text
    images = [line[line.index("](") + 2 : -1] for line in text.splitlines() if line.startswith("![")]
    assert len(images) == 6
    for path in images:
        assert (tmp_path / path).read_bytes()[:4] == b"\x89PNG"
    assert main(["report", str(runs_dir / "rule.jsonl"), "--format", "md", "--bootstrap", "500"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("# WebShop evaluation report") and "![" not in captured.out
    assert "no plots" in captured.err


def test_report_is_deterministic(runs_dir, tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.md"
        assert main(["report", str(runs_dir / "rule.jsonl"), "--out", str(out), "--no-plots", "--seed", "4"]) == 0
        outs.append([line for line in out.read_text().splitlines() if "written" not in line])
    assert outs[0] == outs[1]


def test_missing_matplotlib_is_one_line(runs_dir, tmp_path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    run = str(runs_dir / "rule.jsonl")
    assert main(["report", run, "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("webshop-gym report: error: the report's plots need matplotlib")
    assert "pip install 'webshop-gym[report]'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r.html").exists()
    assert main(["report", run, "--out", str(tmp_path / "r.html"), "--no-plots"]) == 0
    assert "Plots were left out" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_bad_inputs(runs_dir, tmp_path, capsys):
    broken = tmp_path / "broken.jsonl"
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    broken.write_text("\n".join([lines[0], "[1]", *lines[1:]]) + "\n", encoding="utf-8")
    assert main(["report", str(broken), "--no-plots"]) == 2
    assert capsys.readouterr().err.startswith(f"webshop-gym report: error: {broken}, line 2: expected a JSON object")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(lines[0] + "\n", encoding="utf-8")
    assert main(["report", str(empty), "--no-plots"]) == 2
    assert "no episode in this file" in capsys.readouterr().err
    for args in (["--bootstrap", "0"], ["--bootstrap", "2000000"], ["--out", str(tmp_path)], ["--format", "pdf"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["report", str(runs_dir / "rule.jsonl"), *args])
        assert exit_info.value.code == 2 and "Traceback" not in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", str(tmp_path / "missing.jsonl")])
    assert "does not exist" in capsys.readouterr().err


def test_different_goal_sets_are_not_paired(runs_dir, tmp_path):
    lines = (runs_dir / "random.jsonl").read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    head["fingerprint"]["goal_set"] = "0" * 16
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    shutil.copy(runs_dir / "rule.jsonl", tmp_path / "rule.jsonl")
    report = build_report([tmp_path / "rule.jsonl", other], resamples=200)
    [comparison] = report.comparisons
    assert comparison.paired is None and "they played different shop (" in comparison.note
    assert "goal set 0000000000000000" in comparison.note and "episodes" not in comparison.note  # the same episodes


def test_escaped_labels(runs_dir, tmp_path):
    nasty = tmp_path / "<img src=x onerror=alert(1)>.jsonl"
    shutil.copy(runs_dir / "rule.jsonl", nasty)
    out = tmp_path / "r.html"
    assert main(["report", str(nasty), "--out", str(out), "--no-plots"]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text


def test_sign_test_and_bootstrap():
    assert sign_test(0, 5) == pytest.approx(2 / 32) and sign_test(5, 0) == pytest.approx(2 / 32)
    assert sign_test(3, 3) == 1.0 and sign_test(0, 0) == 1.0
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    rng = np.random.default_rng(1)
    coin = (rng.random(500) < 0.5).astype(float)
    ci = bootstrap_ci(coin, resamples=4000, seed=0)
    half = 100 * 1.96 * math.sqrt(coin.mean() * (1 - coin.mean()) / len(coin))  # the normal approximation
    assert ci.low < ci.value < ci.high
    assert (ci.high - ci.low) / 2 == pytest.approx(half, abs=0.5)
    assert bootstrap_ci(coin, resamples=4000, seed=0) == ci and bootstrap_ci(coin, resamples=4000, seed=1) != ci
    assert bootstrap_ci([1.0] * 20) .low == bootstrap_ci([1.0] * 20).high == 100.0 and bootstrap_ci([]) is None
    p = paired([0.0, 1.0, 0.5, 1.0], [1.0, 1.0, 0.2, 0.0], resamples=500)
    assert (p.won, p.lost, p.tied) == (1, 2, 1)
    assert (p.solved_both, p.solved_a_only, p.solved_b_only, p.solved_neither) == (1, 1, 1, 1)
    assert p.score_diff.value == pytest.approx(100 * (2.2 - 2.5) / 4)
    with pytest.raises(ValueError):
        paired([1.0], [1.0, 0.0])


def test_report_failure_tags_link_to_the_viewer(runs_dir, report_html):
    from webshop_gym.runs.index import RunIndex

    rows = report_html.select("#table-tags tbody tr")
    assert rows
    for tr in rows:
        run, tag, count = (td.text for td in tr.find_all("td")[:3])
        index = RunIndex(runs_dir / f"{run}.jsonl")
        index.refresh()
        table = index.table()
        assert int(count) == sum(table.tag_name(i) == tag for i in range(len(table)))
        assert tr.select("a.example")
        for a in tr.select("a.example"):
            assert a["href"].startswith(f"http://127.0.0.1:3000/runs/{run}/")
            assert table.tag_name(int(a["href"].rsplit("/", 1)[1])) == tag


def test_report_names_one_interval_method(runs_dir, report_html):
    from webshop_gym.analysis.intervals import score_interval, sr_interval

    method = report_html.select_one("#method").text
    assert "Wilson" in method and "percentile bootstrap" in method and "2,000 resamples" in method
    run = load_run(runs_dir / "random.jsonl")
    row = next(r for r in _rows(report_html, "runs") if r[0] == "random")
    assert row[4] == score_interval([e.reward for e in run.episodes], 2000, 0).format()
    assert row[5] == sr_interval([e.success for e in run.episodes]).format()


def test_report_episode_exports_equal_eval_json(tmp_path):
    import csv

    from tests.runs.conftest import write_run
    from webshop_gym.runs.index import CSV_COLUMNS, EXPORT_COLUMNS, csv_value

    path, result = write_run(tmp_path, "oracle", "oracle", extra=["--episodes"])
    expected = result["episodes_detail"]
    out_csv, out_jsonl = tmp_path / "episodes.csv", tmp_path / "episodes.jsonl"
    assert main(["report", str(path), "--no-plots", "--out", str(tmp_path / "r.html"), "--csv", str(out_csv),
                 "--jsonl", str(out_jsonl)]) == 0
    lines = [json.loads(line) for line in out_jsonl.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(expected)
    for line, record in zip(lines, expected):
        assert {k: line[k] for k in record} == record and set(line) - set(record) == {"run", *EXPORT_COLUMNS}
    rows = list(csv.DictReader(out_csv.read_text(encoding="utf-8").splitlines()))
    assert list(rows[0]) == ["run", *CSV_COLUMNS]
    for row, record in zip(rows, expected):
        assert row["run"] == "oracle"
        for key, value in record.items():
            if key == "reward_info":
                assert all(row[f"reward_info.{k}"] == csv_value(v) for k, v in value.items())
            else:
                assert row[key] == csv_value(value)


def test_report_shows_eval_facts(runs_dir, eval_json):
    report = build_report([runs_dir / "oracle.jsonl"], resamples=200)
    unreachable = eval_json["oracle"]["unreachable"]
    # SR on reachable goals sits beside SR in the runs table; a note only when some goal is unreachable
    row = tables(report)["runs"][1][0]
    assert row[6] == f"{eval_json['oracle']['sr_reachable']:.1f} ({unreachable} unreachable)"
    expected = f"oracle: {unreachable} unreachable goals"
    assert any(note.startswith(expected) for note in report.notes) == (unreachable > 0)


@pytest.mark.parametrize("name", ["rule", "random", "oracle"])
def test_a_run_read_without_its_steps_has_the_same_figures_and_episodes(runs_dir, name):
    """What `report` reads (outcomes only, memory per episode, not per step) equals the full read."""
    full, light = load_run(runs_dir / f"{name}.jsonl"), load_run(runs_dir / f"{name}.jsonl", steps=False)
    assert light.figures == full.figures and light.header == full.header and light.summary == full.summary
    assert len(light.episodes) == len(full.episodes)
    for a, b in zip(full.episodes, light.episodes):
        assert (a.goal_index, a.reward, a.success, a.purchased, a.truncated, a.steps, a.invalid_actions, a.causes,
                a.category, a.reward_info, a.record()) == (
                b.goal_index, b.reward, b.success, b.purchased, b.truncated, b.steps, b.invalid_actions, b.causes,
                b.category, b.reward_info, b.record())
        assert b.log.steps == [] and b.log.outcome["steps"] == len(a.log.steps) and "observation" not in b.log.record


def test_a_run_read_without_its_steps_is_checked_line_by_line(runs_dir, tmp_path):
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    skipped = next(i for i, line in enumerate(lines) if '"step": 2,' in line or '"step": 2}' in line)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines[:skipped] + lines[skipped + 1:]) + "\n", encoding="utf-8")
    from webshop_gym.runs.log import LogError

    for steps in (True, False):
        with pytest.raises(LogError, match=r"line \d+: step 3 of episode .*expected step 2"):
            load_run(bad, steps=steps)
    torn = tmp_path / "torn.jsonl"  # a crash cut the last line: ignored in both modes
    torn.write_text("\n".join(lines) + "\n" + lines[-1][:20], encoding="utf-8")
    assert load_run(torn, steps=False).figures == load_run(torn).figures == load_run(runs_dir / "rule.jsonl").figures
