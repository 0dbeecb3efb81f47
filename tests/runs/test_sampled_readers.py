"""Sampled runs (`eval --samples K`) as a user reads them: every reader resamples and pairs goals, to the digit.

Issue 42, items 1 and 4: a deterministic policy played 5 times per goal showed an SR interval
half as wide as the same episodes played once; the paired table of two `--samples 5` runs said
"goals 2500" for 500 goals and counted a 10-vs-4 goal discordance as 50 vs 20; "unreachable goals"
counted episodes.  Here the printout, `--json`, the report (Markdown, HTML, LaTeX), the viewer and
the bundle are read by header name and must agree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from bs4 import BeautifulSoup
from scipy import stats

from webshop_gym.agents.policies import OraclePolicy
from webshop_gym.analysis.intervals import fmt
from webshop_gym.analysis.stats import SAMPLED_PAIRED_COLUMNS, sign_test
from webshop_gym.cli.app import main
from webshop_gym.evaluation.local import evaluate
from webshop_gym.reporting.report import build_report

K, GOALS = 5, 30
SOLVED_BOTH = set(range(20, 25))
ONLY_A, ONLY_B = set(range(0, 4)), set(range(4, 14))  # 4 goals only the first run solves, 10 only the second


class Chooser:
    """A deterministic policy: the oracle on the goals it is given, else searches until the step cap (reward 0)."""

    name = "chooser"

    def __init__(self, shop, solves: set):
        self.oracle, self.solves, self.playing = OraclePolicy(shop), solves, False

    def reset(self, info):
        self.playing = int(info["goal_index"]) in self.solves
        if self.playing:
            self.oracle.reset(info)

    def act(self, obs, info):
        return self.oracle.act(obs, info) if self.playing else "search[nothing at all]"


@pytest.fixture(scope="module")
def sampled(tmp_path_factory, default_shop) -> tuple[Path, dict]:
    """Two deterministic runs played K times per goal (`first`, `second`) and their eval results."""
    folder = tmp_path_factory.mktemp("sampled-readers")
    results = {}
    for name, solves in (("first", SOLVED_BOTH | ONLY_A), ("second", SOLVED_BOTH | ONLY_B)):
        results[name] = evaluate(lambda solves=solves: Chooser(default_shop, solves), shop=default_shop,
                                 num_goals=GOALS, samples=K, num_envs=8, out=folder / f"{name}.jsonl",
                                 keep_episodes=False)
    return folder, results


def _md_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """Each Markdown table under its `## ` title, rows as {header: cell}."""
    out, title, lines, i = {}, None, text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("## "):
            title = lines[i][3:].strip()
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip().replace("\\", "") for c in lines[i].strip("|").split(" | ")]
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("| "):
                cells = [c.strip().replace("\\", "") for c in lines[i].strip("|").split(" | ")]
                assert len(cells) == len(header), (header, cells)
                rows.append(dict(zip(header, cells, strict=True)))
                i += 1
            out[title] = rows
            continue
        i += 1
    return out


def _html_table(soup: BeautifulSoup, heading_start: str) -> list[dict[str, str]]:
    heading = next(h for h in soup.find_all("h2") if h.get_text(" ", strip=True).startswith(heading_start))
    table = heading.find_next("table")
    header = [th.get_text(" ", strip=True) for th in table.select("thead th")]
    return [dict(zip(header, [td.get_text(" ", strip=True) for td in tr.find_all("td")], strict=True))
            for tr in table.select("tbody tr")]


def _ci(figures: dict, key: str) -> str:
    """A figure with its interval as every reader prints it: ``35.0 [21.2, 52.3]``."""
    found = figures["intervals"][key]
    value = figures[key] if key in figures else figures[{"score": "score", "sr": "sr"}[key]]
    return f"{fmt(value)} [{fmt(found['low'])}, {fmt(found['high'])}]"


def test_a_deterministic_policy_played_five_times_has_the_intervals_of_once(tmp_path, capsys):
    """`eval --samples 5` of the rule policy (deterministic) against one play per goal: the same intervals."""
    printed, results = {}, {}
    for name, extra in (("once", []), ("five", ["--samples", "5"])):
        out = tmp_path / f"{name}.json"
        assert main(["eval", "--policy", "rule", "-n", "40", "--quiet", "--json", str(out), *extra]) == 0
        printed[name] = capsys.readouterr().out
        results[name] = json.loads(out.read_text(encoding="utf-8"))
    assert results["five"]["intervals"] == results["once"]["intervals"]
    assert results["five"]["counts"]["episodes"] == 200 and results["five"]["counts"]["goals"] == 40
    for label in ("Score [95% CI]", "SR (%) [95% CI]"):
        rows = {name: re.search(rf"^{re.escape(label)} +(.+)$", text, re.M).group(1) for name, text in printed.items()}
        assert rows["five"] == rows["once"], label
    assert re.search(r"^95% intervals +over the 40 goals, each with its 5 samples", printed["five"], re.M)
    # mean@5 and pass@5 of a deterministic policy: its SR, with SR's interval
    protocol = results["five"]["protocol"]
    assert protocol["intervals"]["mean@5"] == protocol["intervals"]["pass@5"] == results["once"]["intervals"]["sr"]
    assert re.search(r"^mean@5 / pass@5 \(%\) \[95% CI\] +(\S+ \[\S+, \S+\]) / \1$", printed["five"], re.M)


def test_the_paired_table_pairs_goals_in_the_report_and_the_viewer(sampled, make_viewer, tmp_path, capsys):
    folder, _ = sampled
    runs = [str(folder / "first.jsonl"), str(folder / "second.jsonl")]
    out = tmp_path / "report.md"
    assert main(["report", *runs, "--no-plots", "--format", "md", "--out", str(out), "--bootstrap", "2000"]) == 0
    (row,) = _md_tables(out.read_text(encoding="utf-8"))["Paired comparison with the first run"]
    assert row["goals"] == str(GOALS)  # not GOALS x K
    assert list(row) == ["run vs first", *SAMPLED_PAIRED_COLUMNS]
    assert row["won / lost / tied"] == f"{len(ONLY_B)} / {len(ONLY_A)} / {GOALS - len(ONLY_A) - len(ONLY_B)}"
    assert row["higher success share: first / this / same (some solved)"] == f"4 / 10 / {len(SOLVED_BOTH)}"
    assert row["sign-flip test p"] == f"{sign_test(10, 4):.3f}" == "0.180"  # 0.0004 when each sample was a pair
    assert row["sign test p"] == "0.180"
    html = tmp_path / "report.html"
    assert main(["report", *runs, "--no-plots", "--out", str(html), "--bootstrap", "2000"]) == 0
    (in_html,) = _html_table(BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser"), "Paired comparison")
    # the viewer's comparison page: the same table, column by column (the viewer resamples 10,000 times)
    assert main(["report", *runs, "--no-plots", "--format", "md", "--out", str(out)]) == 0
    (row,) = _md_tables(out.read_text(encoding="utf-8"))["Paired comparison with the first run"]
    soup = BeautifulSoup(make_viewer(folder).get("/runs/first/vs/second").get_data(as_text=True), "html.parser")
    headers = [th.text for th in soup.select("#paired thead th")]
    assert headers == list(SAMPLED_PAIRED_COLUMNS)
    viewer = dict(zip(headers, [td.text for td in soup.select("#paired tbody td")], strict=True))
    for name in SAMPLED_PAIRED_COLUMNS:
        assert viewer[name] == row[name], name
        if "CI" not in name:
            assert in_html[name] == row[name], name
    text = soup.get_text(" ", strip=True)
    assert f"on the {GOALS} goals both played" in text and "planned episodes" not in text  # a row per goal (issue 56)
    assert len(soup.select("#goals tbody tr")) == GOALS
    assert f"Score on the {GOALS} goals in both" in text
    assert "sign-flip test on the per-goal differences" in soup.select_one("#paired-method").text
    capsys.readouterr()


def test_every_reader_shows_the_same_intervals_of_a_sampled_run(sampled, make_viewer, tmp_path, capsys):
    folder, results = sampled
    run, result = folder / "second.jsonl", results["second"]
    protocol = result["protocol"]
    want = {"score": _ci(result, "score"), "sr": _ci(result, "sr"), "mean": _ci(protocol, f"mean@{K}"),
            "pass": _ci(protocol, f"pass@{K}")}
    # intervals over goals: a deterministic policy's SR interval is Wilson on the 30 goals (15 solved), not on 150
    wilson = stats.binomtest(15, GOALS).proportion_ci(method="wilson")
    assert want["sr"] == want["mean"] == want["pass"] == f"50.0 [{100 * wilson.low:.1f}, {100 * wilson.high:.1f}]"
    # the report: the runs table and the published rows, Markdown, HTML and LaTeX, by header name
    out = tmp_path / "report.md"
    assert main(["report", str(run), "--no-plots", "--format", "md", "--out", str(out)]) == 0
    tables = _md_tables(out.read_text(encoding="utf-8"))
    (runs,) = tables["Runs"]
    assert (runs["Score [95% CI]"], runs["SR % [95% CI]"]) == (want["score"], want["sr"])
    (published,) = next(v for k, v in tables.items() if k.startswith("Rows as published"))
    # SR and mean@K are one figure here (issue 56): one column, and Score with its interval
    assert published[f"SR = mean@{K} % [95% CI]"] == want["sr"] == want["mean"] and f"mean@{K} [95% CI]" not in published
    assert published[f"pass@{K} [95% CI]"] == want["pass"] and published["Score [95% CI]"] == want["score"]
    html = tmp_path / "report.html"
    assert main(["report", str(run), "--no-plots", "--out", str(html)]) == 0
    soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
    (in_html,) = _html_table(soup, "Rows as published")
    assert in_html[f"SR = mean@{K} % [95% CI]"] == want["mean"] and in_html[f"pass@{K} [95% CI]"] == want["pass"]
    assert "over goals" in soup.select_one("#method").text
    tex = tmp_path / "table.tex"
    assert main(["report", str(run), "--out", str(tex)]) == 0
    lines = tex.read_text(encoding="utf-8").splitlines()
    header = [h.strip() for h in lines[lines.index(r"\toprule") + 1][: -len(r" \\")].split(" & ")]
    cells = [c.strip() for c in lines[lines.index(r"\midrule") + 1][: -len(r" \\")].split(" & ")]
    latex = dict(zip(header, cells, strict=True))
    assert latex[f"SR = mean@{K} \\% [95\\% CI]"] == want["mean"] == want["sr"]
    # SR by category (the plot's error bars): over goals too, Wilson on each category's goals here
    for name, c in build_report([run]).rows[0].categories.items():
        ci = stats.binomtest(c["successes"] // K, c["episodes"] // K).proportion_ci(method="wilson")
        assert (c["low"], c["high"]) == pytest.approx((100 * ci.low, 100 * ci.high)), name
    # the viewer: the run list, the run page, and the bundle (the run page saved)
    client = make_viewer(folder)
    listing = BeautifulSoup(client.get("/runs/").get_data(as_text=True), "html.parser")
    heads = [th.get_text(" ", strip=True) for th in listing.select("table thead")[0].find_all("th")]
    listed = {tr.find_all("td")[0].get_text(" ", strip=True): dict(zip(heads, [td.get_text(" ", strip=True)
                                                                               for td in tr.find_all("td")], strict=False))
              for tr in listing.select("table tbody")[0].find_all("tr")}
    assert listed["second"]["SR % [95% CI]"].replace(" ", "") == want["sr"].replace(" ", "")
    assert listed["second"]["Score [95% CI]"].replace(" ", "") == want["score"].replace(" ", "")
    bundle = tmp_path / "bundle"
    assert main(["report", str(run), "--bundle", str(bundle)]) == 0
    for page in (client.get("/runs/second").get_data(as_text=True), (bundle / "index.html").read_text(encoding="utf-8")):
        soup = BeautifulSoup(page, "html.parser")
        for box, key in (("score", "score"), ("sr", "sr"), ("mean-at-k", "mean"), ("pass-at-k", "pass")):
            shown = (soup.select_one(f"#{box}") if box in ("score", "sr") else soup.select_one(f"#{box} b")).text.strip()
            assert f"{shown} {soup.select_one(f'#{box}-ci').text.strip()}" == want[key], box
        assert "over goals" in soup.select_one("#method").text
    capsys.readouterr()


def test_unreachable_goals_count_goals(tmp_path, make_viewer, capsys):
    """The oracle on goals 0-99 (60 and 99 cannot score 1.0), 3 samples each: 2 unreachable goals, 6 episodes."""
    out, figures = tmp_path / "oracle.jsonl", tmp_path / "oracle.json"
    assert main(["eval", "--policy", "oracle", "-n", "100", "--samples", "3", "--quiet", "--out", str(out),
                 "--json", str(figures)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(figures.read_text(encoding="utf-8"))
    assert result["unreachable"] == 2 and result["unreachable_episodes"] == 6 and result["counts"]["goals"] == 100
    assert "(2 unreachable goals, 6 episodes: no purchase of the target scores 1.0)" in printed
    assert main(["report", str(out), "--no-plots", "--format", "md", "--out", str(tmp_path / "r.md")]) == 0
    report = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "oracle: 2 unreachable goals, 6 episodes (no purchase" in report
    (runs,) = _md_tables(report)["Runs"]
    assert runs["SR % on reachable goals"] == "100.0 (2 unreachable)"
    page = BeautifulSoup(make_viewer(tmp_path).get("/runs/oracle").get_data(as_text=True), "html.parser")
    assert page.select_one("#unreachable b").text == "2"
    assert page.select_one("#unreachable").get_text(" ", strip=True).startswith("unreachable goals 2 6 episodes")
    # the episodes it links to are the 6 unreachable plays
    assert np.sum([tr.select_one(".unreachable-mark") is not None
                   for tr in BeautifulSoup(make_viewer(tmp_path).get("/runs/oracle?reachable=no").get_data(as_text=True),
                                           "html.parser").select("#episodes tbody tr")]) == 6
