"""Two sampled checkpoints compared as a paper prints them: Δ mean@K and Δ pass@K, goal by goal (issue 56 item 1).

Each run plays every goal K times with samples that differ (a coin per episode: the oracle or the
random policy).  The report, the viewer (over HTTP, a real server on 127.0.0.1) and the bundle are
read by header name; the figures are checked against the run files themselves, goal by goal.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from bs4 import BeautifulSoup
from scipy import stats
from werkzeug.serving import make_server

from tests.helpers import CoinPolicy
from webshop_gym.cli.app import main
from webshop_gym.evaluation.local import evaluate

K, GOALS = 4, 16


Coin = CoinPolicy


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory, default_shop) -> Path:
    """Two sampled runs of the same goals: `first` (oracle 3 times in 5), `second` (2 in 10, other seeds)."""
    folder = tmp_path_factory.mktemp("checkpoints")
    for name, p, seed in (("first", 0.6, 0), ("second", 0.2, 1)):
        evaluate(lambda p=p: Coin(default_shop, p), shop=default_shop, num_goals=GOALS, samples=K, num_envs=4,
                 seed=seed, out=folder / f"{name}.jsonl", keep_episodes=False)
    return folder


def _per_goal(path: Path) -> dict[int, list[float]]:
    """From the run file itself: per goal, its samples' final rewards."""
    rewards: dict[str, float] = {}
    goal_of: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "episode":
            goal_of[record["episode"]], rewards[record["episode"]] = record["goal_index"], 0.0
        elif record["type"] == "step":
            rewards[record["episode"]] = float(record["reward"])
    found: dict[int, list[float]] = defaultdict(list)
    for episode, goal in goal_of.items():
        found[goal].append(rewards[episode])
    return dict(found)


def _truth(folder: Path) -> dict:
    a, b = _per_goal(folder / "first.jsonl"), _per_goal(folder / "second.jsonl")
    goals = sorted(a)
    share = {name: np.array([np.mean(np.array(r[g]) == 1.0) for g in goals]) for name, r in (("a", a), ("b", b))}
    passed = {name: np.array([float(any(x == 1.0 for x in r[g])) for g in goals]) for name, r in (("a", a), ("b", b))}
    only_a = int(((passed["a"] == 1) & (passed["b"] == 0)).sum())
    only_b = int(((passed["b"] == 1) & (passed["a"] == 0)).sum())
    return {"goals": goals, "a": a, "b": b, "share": share, "passed": passed,
            "mean": (100 * share["a"].mean(), 100 * share["b"].mean(), 100 * (share["b"] - share["a"]).mean()),
            "pass": (100 * passed["a"].mean(), 100 * passed["b"].mean(), 100 * (passed["b"] - passed["a"]).mean()),
            "mcnemar": 1.0 if only_a + only_b == 0 else stats.binomtest(only_b, only_a + only_b).pvalue}


def _value(cell: str) -> float:
    return float(cell.split(" [")[0])


def _md_table(text: str, title_start: str) -> list[dict[str, str]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## " + title_start))
    header_at = next(i for i in range(start, len(lines)) if lines[i].startswith("| "))
    header = [c.strip().replace("\\", "") for c in lines[header_at].strip("|").split(" | ")]
    rows = []
    for line in lines[header_at + 2:]:
        if not line.startswith("| "):
            break
        rows.append(dict(zip(header, [c.strip().replace("\\", "") for c in line.strip("|").split(" | ")], strict=True)))
    return rows


def _html_table(soup: BeautifulSoup, selector: str) -> list[dict[str, str]]:
    table = soup.select_one(selector)
    assert table is not None, selector
    header = [th.get_text(" ", strip=True) for th in table.select("thead th")]
    return [dict(zip(header, [td.get_text(" ", strip=True) for td in tr.find_all("td")], strict=True))
            for tr in table.select("tbody tr")]


def test_the_report_has_delta_mean_and_pass_at_k_with_paired_tests(checkpoints, tmp_path, capsys):
    truth = _truth(checkpoints)
    out = tmp_path / "report.md"
    assert main(["report", str(checkpoints / "first.jsonl"), str(checkpoints / "second.jsonl"), "--no-plots",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text(encoding="utf-8")
    rows = {r["figure"]: r for r in _md_table(text, "mean@K and pass@K against the first run")}
    assert set(rows) == {f"mean@{K}", f"pass@{K}"}
    for figure, (first, this, delta) in ((f"mean@{K}", truth["mean"]), (f"pass@{K}", truth["pass"])):
        row = rows[figure]
        assert row["run vs first"] == "second vs first"
        assert _value(row["first [95% CI]"]) == pytest.approx(first, abs=0.051), figure
        assert _value(row["this [95% CI]"]) == pytest.approx(this, abs=0.051), figure
        assert _value(row["Δ [95% CI]"]) == pytest.approx(delta, abs=0.051), figure
        low, high = (float(x) for x in row["Δ [95% CI]"].split(" [")[1].rstrip("]").split(", "))
        assert low <= _value(row["Δ [95% CI]"]) <= high
    assert rows[f"mean@{K}"]["paired test"] == "sign-flip test"
    assert rows[f"pass@{K}"]["paired test"] == "McNemar's exact test"
    p = rows[f"pass@{K}"]["p"]
    assert (p == "<0.001" and truth["mcnemar"] < 0.001) or float(p) == pytest.approx(truth["mcnemar"], abs=5e-4)
    # Δ mean@K is the paired table's Δ of success shares, with the same interval and test
    paired = _md_table(text, "Paired comparison with the first run")[0]
    assert paired["Δ SR [95% CI]"] == rows[f"mean@{K}"]["Δ [95% CI]"]
    assert paired["sign-flip test p"] == rows[f"mean@{K}"]["p"]
    # each run's mean@K and pass@K are its published row's
    published = {r["method"]: r for r in _md_table(text, "Rows as published")}
    mean_column = next(h for h in published["first"] if f"mean@{K}" in h)  # "SR = mean@4 ..." when they agree
    assert published["first"][mean_column] == rows[f"mean@{K}"]["first [95% CI]"]
    assert published["second"][f"pass@{K} [95% CI]"] == rows[f"pass@{K}"]["this [95% CI]"]


@pytest.fixture
def served(checkpoints, default_shop):
    """The viewer over the runs, served by a real HTTP server on 127.0.0.1."""
    from webshop_gym.server import create_app

    app = create_app({"SHOP": default_shop, "RUNS": str(checkpoints), "SEED": 0, "MAX_SESSIONS": 4})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


def _get(url: str) -> BeautifulSoup:
    with urllib.request.urlopen(url, timeout=60) as response:
        assert response.status == 200
        return BeautifulSoup(response.read().decode("utf-8"), "html.parser")


def test_the_viewer_lists_goals_with_each_runs_successes_of_k(checkpoints, served, tmp_path, capsys):
    truth = _truth(checkpoints)
    soup = _get(f"{served}/runs/first/vs/second")
    rows = _html_table(soup, "#goals")
    assert [int(r["goal"]) for r in rows] == truth["goals"]  # one row per goal, not per sample
    better = {"first": 0, "second": 0}
    for row in rows:
        g = int(row["goal"])
        ca, cb = (sum(x == 1.0 for x in truth[s][g]) for s in ("a", "b"))
        ma, mb = (float(np.mean(truth[s][g])) for s in ("a", "b"))
        assert row["first: solved (mean reward)"] == f"{ca} of {K} ({ma:.3f})"
        assert row["second: solved (mean reward)"] == f"{cb} of {K} ({mb:.3f})"
        verdict = "first" if ma > mb else "second" if mb > ma else "-"
        assert row["better"] == verdict
        if verdict != "-":
            better[verdict] += 1
    summary = soup.select_one("#goals-in-both").get_text(" ", strip=True)
    assert f"{GOALS}: first better on {better['first']}, second better on {better['second']}" in summary
    at_k = {r["figure"]: r for r in _html_table(soup, "#at-k")}
    assert _value(at_k[f"mean@{K}"]["Δ [95% CI]"]) == pytest.approx(truth["mean"][2], abs=0.051)
    assert _value(at_k[f"pass@{K}"]["Δ [95% CI]"]) == pytest.approx(truth["pass"][2], abs=0.051)
    # the same cells as the report's table
    out = tmp_path / "report.md"
    assert main(["report", str(checkpoints / "first.jsonl"), str(checkpoints / "second.jsonl"), "--no-plots",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    report = {r["figure"]: r for r in _md_table(out.read_text(encoding="utf-8"), "mean@K and pass@K")}
    for figure, row in at_k.items():
        assert row["first [95% CI]"] == report[figure]["first [95% CI]"]
        assert row["second [95% CI]"] == report[figure]["this [95% CI]"]
        for column in ("Δ [95% CI]", "paired test", "p"):
            assert row[column] == report[figure][column]
    # the filter "first better" lists exactly the goals where first's mean reward is higher
    shown = _html_table(_get(f"{served}/runs/first/vs/second?show=a"), "#goals")
    assert len(shown) == better["first"] and all(r["better"] == "first" for r in shown)
    # the tag transitions count goals, and each cell's link lists its goals
    transitions = soup.select_one("#transitions")
    total = sum(int(a.get_text()) for a in transitions.select("td a"))
    assert total == GOALS
    cell = transitions.select_one("td a")
    listed = _html_table(_get(served + cell["href"]), "#goals")
    assert len(listed) == int(cell.get_text())


def test_the_bundle_keeps_the_goal_rows_and_the_at_k_table(checkpoints, tmp_path, capsys):
    bundle = tmp_path / "bundle"
    assert main(["report", str(checkpoints / "first.jsonl"), str(checkpoints / "second.jsonl"), "--bundle",
                 str(bundle)]) == 0
    capsys.readouterr()
    page = BeautifulSoup((bundle / "compare/first/vs/second/index.html").read_text(encoding="utf-8"), "html.parser")
    assert len(_html_table(page, "#goals")) == GOALS
    assert {r["figure"] for r in _html_table(page, "#at-k")} == {f"mean@{K}", f"pass@{K}"}
