"""One run's figures read the same everywhere: `eval --json`, the report (HTML and Markdown, every
table by its header names), the exports and the viewer's pages, on a served run with errored
episodes (issues 28 and 29: the report's headers were shifted one column, the viewer counted
errored episodes as failures)."""

from __future__ import annotations

import csv
import json

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")
bs4 = pytest.importorskip("bs4")

from tests.openai_server import ChatServer  # noqa: E402
from tests.runs.test_served import _eval  # noqa: E402
from webshop_gym.analysis.figures import intervals  # noqa: E402
from webshop_gym.analysis.stats import NoInterval  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402

GOALS = 16
ERRORED = (2, 5, 11)  # every request of these goals fails: errored episodes, never scored


@pytest.fixture(scope="module")
def served(tmp_path_factory, default_shop):
    folder = tmp_path_factory.mktemp("agree")
    run = folder / "served.jsonl"
    with ChatServer(fail_when=[default_shop.goals.instruction[g] for g in ERRORED]) as server:
        assert _eval(server, run, "--max-retries", "0", "--json", str(folder / "served.json"), goals=GOALS) == 0
    result = json.loads((folder / "served.json").read_text())
    assert result["errored"] == len(ERRORED) and result["counts"]["episodes"] == GOALS - len(ERRORED)
    return folder, run, result


def _by_header(header: list[str], rows: list[list[str]]) -> list[dict[str, str]]:
    assert all(len(row) == len(header) for row in rows), f"a row's cells do not match the header {header}"
    return [dict(zip(header, row)) for row in rows]


def _html_tables(html: str) -> dict[str, list[dict[str, str]]]:
    """Each table of a page under its heading (or id), its rows as {header name: cell text}."""
    soup = bs4.BeautifulSoup(html, "html.parser")
    out = {}
    for table in soup.find_all("table"):
        heading = table.find_previous(["h2", "h3"])
        header = [th.get_text(" ", strip=True) for th in table.select("thead th")] or \
                 [c.get_text(" ", strip=True) for c in table.find("tr").find_all(["th", "td"])]
        body = table.select("tbody tr") or table.find_all("tr")[1:]
        rows = _by_header(header, [[c.get_text(" ", strip=True) for c in tr.find_all(["td", "th"])] for tr in body])
        for key in (table.get("id"), heading.get_text(" ", strip=True) if heading else None):
            if key:
                out[key] = rows
    return out


def _md_tables(text: str) -> dict[str, list[dict[str, str]]]:
    out, title, lines = {}, None, text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            title = lines[i][3:].strip()
        if lines[i].startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip().replace("\\", "") for c in lines[i].strip("|").split(" | ")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("| "):
                rows.append([c.strip().replace("\\", "") for c in lines[i].strip("|").split(" | ")])
                i += 1
            out[title] = _by_header(header, rows)
            continue
        i += 1
    return out


def _expected(result: dict) -> dict[str, str]:
    scored = result["counts"]["episodes"]
    return {"episodes": f"{scored} (+{result['errored']} errored)", "score": f"{result['score']:.1f}",
            "sr": f"{result['sr']:.1f}", "mean steps": f"{result['mean_steps']:.2f}",
            "valid %": f"{result['valid_rate']:.1f}", "requests": f"{result['requests']:,}",
            "retries": f"{result['retries']:,}", "errored": f"{result['errored']} of {scored + result['errored']}",
            "prompt tokens": f"{result['tokens']['prompt']:,}", "completion tokens": f"{result['tokens']['completion']:,}"}


def _check_report_tables(tables: dict, result: dict, score_ci: str, sr_ci: str) -> None:
    want = _expected(result)
    runs = tables["Runs"]
    assert len(runs) == 1
    row = runs[0]
    assert row["run"] == "served" and row["policy"] == "openai:scripted" and row["split"] == "test"
    assert row["episodes"] == want["episodes"]
    assert row["Score [95% CI]"] == score_ci and score_ci.startswith(want["score"] + _shown(result, "score"))
    assert row["SR % [95% CI]"] == sr_ci and sr_ci.startswith(want["sr"] + _shown(result, "sr"))
    assert row["mean steps"] == want["mean steps"] and row["valid %"] == want["valid %"]
    calls = next(v for k, v in tables.items() if k.startswith("Model calls"))
    assert calls[0]["run"] == "served" and calls[0]["errored episodes"] == want["errored"]
    assert calls[0]["requests"] == want["requests"] and calls[0]["retries"] == want["retries"]
    assert calls[0]["prompt tokens"] == want["prompt tokens"]
    assert calls[0]["completion tokens"] == want["completion tokens"]
    solved = next(v for k, v in tables.items() if k.startswith("Failure tags"))
    assert {r["failure tag"]: r["served"] for r in solved}["solved"] == str(result["counts"]["successes"])


def test_report_html_and_markdown_tables_agree_with_eval_by_header_name(served, tmp_path, capsys):
    folder, run, result = served
    found = intervals([e["reward"] for e in _episodes_of(run)], [e["errored"] for e in _episodes_of(run)])
    score_ci, sr_ci = _ci_cell(result["score"], found["score"]), _ci_cell(result["sr"], found["sr"])
    for fmt in ("md", "html"):
        out = tmp_path / f"report.{fmt}"
        assert main(["report", str(run), "--no-plots", "--format", fmt, "--out", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        _check_report_tables(_md_tables(text) if fmt == "md" else _html_tables(text), result, score_ci, sr_ci)
    capsys.readouterr()


def _ci_cell(value: float, found) -> str:
    """A figure's cell: ``x [low, high]``, or ``x (no 95% interval at 13 episodes)`` for a count on too few trials."""
    if isinstance(found, NoInterval):  # issue 54, round 6: a count of 13 scored episodes prints no interval
        return f"{value:.1f} ({found.note})"
    return f"{value:.1f} [{found.low:.1f}, {found.high:.1f}]"


def _shown(result: dict, key: str) -> str:
    """What follows a figure in eval's JSON terms: `` [`` before an interval, or `` (`` + the withheld note."""
    reason = (result.get("intervals_withheld") or {}).get(key)
    return f" ({reason.split(';')[0]})" if reason else " ["


def _episodes_of(run) -> list[dict]:
    out = []
    for line in run.read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "episode":
            out.append({"goal": record["goal_index"], "errored": bool(record.get("errored")), "reward": 0.0})
        elif record["type"] == "step" and record["terminated"]:
            out[-1]["reward"] = record["reward"]
    return out


def test_exports_agree_with_eval(served, tmp_path, capsys):
    folder, run, result = served
    assert main(["report", str(run), "--no-plots", "--format", "md", "--out", str(tmp_path / "r.md"),
                 "--csv", str(tmp_path / "e.csv"), "--jsonl", str(tmp_path / "e.jsonl")]) == 0
    with open(tmp_path / "e.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    records = [json.loads(x) for x in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert len(rows) == len(records) == GOALS
    for table in (rows, records):
        errored = [int(r["goal_index"]) for r in table if r.get("errored") in (True, "true")]
        assert errored == list(ERRORED)
        kept = [float(r["reward"]) for r in table if r.get("errored") not in (True, "true")]
        assert f"{100 * sum(kept) / len(kept):.6f}" == f"{result['score']:.6f}"
    capsys.readouterr()


def test_viewer_pages_agree_with_eval_and_report(served, make_viewer, tmp_path, capsys):
    folder, run, result = served
    want = _expected(result)
    client = make_viewer(folder)
    listing = _html_tables(client.get("/runs/").get_data(as_text=True))["runs"]
    row = next(r for r in listing if r["run"].startswith("served"))
    assert row["episodes"] == want["episodes"]
    assert row["Score [95% CI]"].startswith(want["score"] + _shown(result, "score"))
    assert row["SR % [95% CI]"].startswith(want["sr"] + _shown(result, "sr"))
    # the interval is the report's, and holds its own point
    out = tmp_path / "r.md"
    assert main(["report", str(run), "--no-plots", "--format", "md", "--out", str(out)]) == 0
    report_row = _md_tables(out.read_text())["Runs"][0]
    assert row["Score [95% CI]"].replace(" ", "") == report_row["Score [95% CI]"].replace(" ", "")
    assert row["SR % [95% CI]"].replace(" ", "") == report_row["SR % [95% CI]"].replace(" ", "")
    page = bs4.BeautifulSoup(client.get("/runs/served").get_data(as_text=True), "html.parser")
    assert page.select_one("#score").text == want["score"] and page.select_one("#sr").text == want["sr"]
    assert page.select_one("#episodes").text == str(result["counts"]["episodes"])
    assert page.select_one("#errored").text == f"{result['errored']} errored"
    low, high = (float(x) for x in page.select_one("#score-ci").text.strip("[]").split(", "))
    assert low <= result["score"] <= high
    # a run compared with itself: errored goals are no losses and no wins
    compared = bs4.BeautifulSoup(client.get("/runs/served/vs/served").get_data(as_text=True), "html.parser")
    text = compared.get_text(" ", strip=True)
    assert f"{result['counts']['episodes']} goals" in text or str(result["counts"]["episodes"]) in text
    capsys.readouterr()
