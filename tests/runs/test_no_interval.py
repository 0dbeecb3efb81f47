"""Issue 54, round 6: a binomial count on too few trials prints no interval, and says so, in every form a user reads.

The rule (``webshop_gym.analysis.withheld``): a figure that is a count of ``n`` trials whatever the run
scored (SR of one play per goal, pass@K of K samples) gets no 95% interval when at more than a tenth of the truths between 5% and 95% no run of counts of ``n`` has a
binomial probability inside 93-97%: under 14 trials.  The share is checked here against a count
written apart (every run of counts, SciPy's binomial CDF), and the rule the way a user meets it:
``webshop-gym eval`` (its table, ``--json``), ``report`` (Markdown, LaTeX, HTML) and the viewer.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from bs4 import BeautifulSoup
from scipy import stats

from benchmarks.intervals import Scenario, coverage
from webshop_gym.analysis.figures import summarize
from webshop_gym.analysis.intervals import goal_intervals, sampled_intervals, wilson
from webshop_gym.analysis.stats import Goals, Interval, NoInterval
from webshop_gym.analysis.withheld import TRUTHS, no_interval_share, withheld_size
from webshop_gym.cli import main

GOALS = 10
NOTE = f"no 95% interval at {GOALS} episodes"


def _share_apart(n: int) -> float:
    """The share of the truths 5-95% where no run a..b of counts has P(a <= X <= b) in [0.93, 0.97], by every pair."""
    truths = np.concatenate([TRUTHS, 1 - TRUTHS[TRUTHS < 0.5]])  # the whole 5-95% grid, not its half
    cdf = np.concatenate([np.zeros((len(truths), 1)), stats.binom.cdf(np.arange(n + 1)[None, :], n, truths[:, None])], 1)
    runs = cdf[:, None, 1:] - cdf[:, :-1, None]  # runs[t, a, b] = P(a <= X <= b) at truth t, for a <= b
    upper = np.triu(np.ones((n + 1, n + 1), bool))[None]
    inside = upper & (runs >= 0.93 - 1e-12) & (runs <= 0.97 + 1e-12)
    return float(np.mean(~inside.any(axis=(1, 2))))


def test_the_share_without_any_interval_is_counted_exactly():
    for n in (*range(1, 41), 49, 50, 60, 99):
        assert no_interval_share(n) == pytest.approx(_share_apart(n), abs=1e-12), n
    assert [n for n in range(1, 200) if withheld_size(n)] == list(range(1, 14))
    assert no_interval_share(10) == pytest.approx(0.178, abs=0.001)  # 10 goals: 18% of the scale, 7% at 20
    assert all(_share_apart(n) == 0.0 for n in (50, 80, 120))  # past the computed sizes: nothing to withhold


def test_only_counts_by_design_under_fourteen_trials_lose_their_interval():
    """SR of one play per goal and pass@K are counts whatever the run scored; Score and sampled SR keep theirs."""
    ten = goal_intervals(Goals.of([1.0, 1.0] + [0.0] * 8))
    assert isinstance(ten["sr"], NoInterval) and ten["sr"].value == 20.0
    assert ten["sr"].format() == "20.0 (no 95% interval at 10 episodes)" and ten["sr"].reason.startswith(
        "no 95% interval at 10 episodes; at 18% of the truths between 5% and 95% no interval of a count of 10")
    assert not ten["sr"] and ten["sr"].low is None and ten["sr"].high is None
    assert ten["score"] == Interval(20.0, *(100 * x for x in wilson(2, 10)))  # a mean reward: its interval stands
    assert isinstance(goal_intervals(Goals.of([0.0] * 13))["sr"], NoInterval)
    fourteen = goal_intervals(Goals.of([1.0, 1.0] + [0.0] * 12))["sr"]  # 14 episodes: Wilson's interval
    assert fourteen == Interval(100 * 2 / 14, *(100 * x for x in wilson(2, 14)))
    keys = np.repeat(np.arange(10), 4).tolist()  # 10 goals x 4 samples
    sampled = Goals.of(np.repeat([1.0] * 3 + [0.0] * 7, 4), keys)  # each goal all or nothing: by the outcome only
    assert isinstance(goal_intervals(sampled)["sr"], Interval)
    at_k = sampled_intervals(sampled, 4)
    assert at_k["pass@4"].format() == "30.0 (no 95% interval at 10 goals)" and isinstance(at_k["mean@4"], Interval)
    wide = Goals.of(np.repeat([1.0] * 3 + [0.0] * 11, 4), np.repeat(np.arange(14), 4).tolist())
    assert sampled_intervals(wide, 4)["pass@4"] == Interval(100 * 3 / 14, *(100 * x for x in wilson(3, 14)))


def test_json_carries_null_and_the_reason():
    figures = summarize([{"reward": r, "steps": 3, "invalid_actions": 0} for r in [1.0, 1.0] + [0.0] * 8])
    assert figures["intervals"]["sr"] is None and figures["intervals"]["score"] is not None
    assert figures["intervals_withheld"] == {"sr": goal_intervals(Goals.of([1.0, 1.0] + [0.0] * 8))["sr"].reason}
    assert figures["intervals_withheld"]["sr"].startswith(NOTE + "; at 18% of the truths")
    wide = summarize([{"reward": r, "steps": 3, "invalid_actions": 0} for r in [1.0, 1.0] + [0.0] * 28])
    assert wide["intervals"]["sr"] is not None and "intervals_withheld" not in wide


def _rows(text: str) -> dict[str, str]:
    """eval's printed table as {row name: value} (two or more spaces part them)."""
    return dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in text.splitlines() if re.search(r"\S\s{2,}\S", line))


def _markdown_table(text: str, first: str) -> list[dict[str, str]]:
    """The Markdown table whose first header is ``first``, as rows by header name."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} |"))
    cells = [[c.strip().replace("\\", "") for c in line.strip().strip("|").split("|")] for line in lines[start:]
             if line.startswith("|")]
    header, body = cells[0], [row for row in cells[2:] if len(row) == len(cells[0])]
    return [dict(zip(header, row, strict=True)) for row in body]


@pytest.fixture(scope="module")
def ten_goals(tmp_path_factory, default_shop):
    """`webshop-gym eval --policy rule --num-goals 10 --out --json`, as a user runs it, and what it printed."""
    folder = tmp_path_factory.mktemp("ten")
    out, figures = folder / "ten.jsonl", folder / "ten.json"
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = main(["eval", "--policy", "rule", "--num-goals", str(GOALS), "--num-envs", "2", "--seed", "0", "--quiet",
                       "--out", str(out), "--json", str(figures)])
    assert status == 0
    return folder, out, json.loads(figures.read_text(encoding="utf-8")), printed.getvalue()


def test_eval_says_so_in_its_table_and_json(ten_goals):
    _, _, result, printed = ten_goals
    rows = _rows(printed)
    sr = rows["SR (%) [95% CI]"]
    assert sr == f"{result['sr']:.1f} ({NOTE})" and "[" not in sr
    assert result["intervals"]["sr"] is None and result["intervals_withheld"]["sr"].startswith(NOTE + ";")
    json_line = json.loads(next(line for line in printed.splitlines() if line.startswith("json: "))[6:])
    assert json_line["intervals"]["sr"] is None and json_line["intervals_withheld"]["sr"].startswith(NOTE)
    if result["intervals"]["score"] is not None:  # partial rewards: Score is no count, its interval stands
        assert rows["Score [95% CI]"].endswith(f"[{result['intervals']['score']['low']:.1f}, "
                                               f"{result['intervals']['score']['high']:.1f}]")


def test_report_says_so_in_markdown_latex_and_html(ten_goals, tmp_path):
    _, out, result, _ = ten_goals
    md, tex, html = tmp_path / "r.md", tmp_path / "r.tex", tmp_path / "r.html"
    for path, form in ((md, "md"), (tex, "latex"), (html, "html")):
        assert main(["report", str(out), "--out", str(path), "--format", form, "--no-plots", "--bootstrap", "200"]) == 0
    text = md.read_text(encoding="utf-8")
    runs, published = _markdown_table(text, "run"), _markdown_table(text, "method")
    assert runs[0]["SR % [95% CI]"] == published[0]["SR % [95% CI]"] == f"{result['sr']:.1f} ({NOTE})"
    score = result["intervals"]["score"]  # the rule's partial rewards: Score is no count, its interval stands
    assert runs[0]["Score [95% CI]"] == f"{result['score']:.1f} [{score['low']:.1f}, {score['high']:.1f}]"
    assert runs[0]["episodes"] == str(GOALS) and runs[0]["done / planned"] == f"{GOALS} / {GOALS}"  # columns in place
    assert f"{result['sr']:.1f} (no 95\\% interval at {GOALS} episodes)" in tex.read_text(encoding="utf-8")
    soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
    assert f"{result['sr']:.1f} ({NOTE})" in soup.get_text()


def test_the_viewer_says_so(ten_goals, make_viewer):
    folder, _, result, _ = ten_goals
    client = make_viewer(folder)
    soup = BeautifulSoup(client.get("/runs/").get_data(as_text=True), "html.parser")
    heads = [th.text.strip() for th in soup.select("#runs thead th")]
    row = dict(zip(heads, (td.text.strip() for td in soup.select("#runs tbody tr")[0].find_all("td")), strict=False))
    assert row["SR % [95% CI]"].split()[0] == f"{result['sr']:.1f}" and f"({NOTE})" in row["SR % [95% CI]"]
    page = BeautifulSoup(client.get("/runs/ten").get_data(as_text=True), "html.parser")
    assert page.select_one("#sr-ci").text.strip() == f"({NOTE})"
    assert page.select_one("#sr-ci .withheld")["title"] == result["intervals_withheld"]["sr"]


# -- coverage: withheld where the table says no interval holds, in the band where it prints one -------------


def test_withheld_at_ten_goals_and_covering_at_thirty():
    ten = coverage(Scenario("beta", 0.05, 0.5), 10, 1, 200, resamples=0, before=False)  # SR: Wilson covered 91.4%
    assert ten["withheld"]["sr"] == 100.0 and ten["coverage"]["sr"] is None
    assert ten["withheld"]["score"] == 0.0 and 93.0 <= ten["coverage"]["score"] <= 98.5  # Score: printed
    thirty = coverage(Scenario("binomial", 0.5, partial=False), 30, 1, 400, resamples=0, before=False)
    assert thirty["withheld"]["sr"] == 0.0 and 92.5 <= thirty["coverage"]["sr"] <= 97.5, thirty["coverage"]
