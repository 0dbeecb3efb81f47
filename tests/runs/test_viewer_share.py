"""Diagnosis, round 2 (issue 31, the rest): comparison pages, refusals in words, the arrow keys, a bundle to share.

The comparisons run ``webshop-gym eval`` twice on the real 1k shop (``../shared/webshop-small``,
skipped without it): a rule and a random run of the same 60 test goals.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from webshop_gym.analysis.stats import PAIRED_COLUMNS
from webshop_gym.cli import main
from webshop_gym.reporting.report import build_report, tables
from webshop_gym.runs.index import RunIndex

GOALS = 60


def soup_of(response, status: int = 200) -> BeautifulSoup:
    assert response.status_code == status, response.get_data(as_text=True)[:800]
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


@pytest.fixture(scope="module")
def real_pair(tmp_path_factory, real_dir, golden_dir):
    """A rule and a random run of the real 1k shop's first 60 test goals, and the default shop's rule run beside."""
    folder = tmp_path_factory.mktemp("real-pair")
    for policy in ("rule", "random"):
        assert main(["eval", "--policy", policy, "--shop", str(real_dir), "--goals", str(golden_dir / "goals.json"),
                     "--num-goals", str(GOALS), "--quiet", "--out", str(folder / f"{policy}.jsonl")]) == 0
    return folder


def _table(folder: Path, name: str):
    index = RunIndex(folder / f"{name}.jsonl")
    index.refresh()
    return index.table()


# -- 6. comparison pages --------------------------------------------------------------------------------


def test_the_comparison_shows_the_reports_paired_statistics(make_viewer, real_pair):
    client = make_viewer(real_pair)
    soup = soup_of(client.get("/runs/rule/vs/random"))
    headers = [th.text for th in soup.select("#paired thead th")]
    cells = [td.text for td in soup.select("#paired tbody td")]
    assert headers == list(PAIRED_COLUMNS)
    viewer = dict(zip(headers, cells, strict=True))
    report = build_report([real_pair / "rule.jsonl", real_pair / "random.jsonl"])
    header, rows = tables(report)["paired"]
    assert rows[0][0] == "random vs rule"
    reported = dict(zip(header, rows[0], strict=True))
    for name in PAIRED_COLUMNS:  # the report's paired table for the same two runs, column by column
        assert viewer[name] == reported[name], name
    assert viewer["goals"] == str(GOALS)
    # each run's Score and SR on the goals both played (all 60 here: the runs' own figures)
    for run, td in zip(("rule", "random"), soup.select("#common-score td")[1:], strict=True):
        row = next(r for r in report.rows if r.label == run)
        assert td.text == row.score.format(1)
    assert [td.text for td in soup.select("#common-sr td")[1:]] == [r.sr.format(1) for r in report.rows]


def test_the_comparison_has_a_tag_column_per_run(make_viewer, real_pair):
    client = make_viewer(real_pair)
    ta, tb = _table(real_pair, "rule"), _table(real_pair, "random")
    soup = soup_of(client.get("/runs/rule/vs/random"))
    heads = [th.text for th in soup.select("#goals thead th")]
    assert "rule's tag" in heads and "random's tag" in heads
    rows = soup.select("#goals tbody tr")
    assert len(rows) == GOALS
    by_goal_a, by_goal_b = ta.by_goal(), tb.by_goal()
    for tr in rows:
        goal = int(tr.find("td").text)
        assert tr.select_one("td.tag-a").text == ta.tag_name(by_goal_a[goal])
        assert tr.select_one("td.tag-b").text == tb.tag_name(by_goal_b[goal])


def test_the_tag_transition_table_links_each_cell_to_its_goals(make_viewer, real_pair):
    client = make_viewer(real_pair)
    ta, tb = _table(real_pair, "rule"), _table(real_pair, "random")
    by_goal_a, by_goal_b = ta.by_goal(), tb.by_goal()
    expected: dict[tuple[str, str], list[int]] = {}
    for goal in sorted(by_goal_a):
        expected.setdefault((ta.tag_name(by_goal_a[goal]), tb.tag_name(by_goal_b[goal])), []).append(goal)
    soup = soup_of(client.get("/runs/rule/vs/random"))
    table = soup.select_one("#transitions")
    cols = [th.text for th in table.select("thead th")][1:]
    found = {}
    for tr in table.select("tbody tr"):
        row = tr.find("th").text
        for col, td in zip(cols, tr.find_all("td"), strict=True):
            if td.find("a"):
                found[(row, col)] = (int(td.text), td.find("a")["href"])
            else:
                assert td.text == "0"
    assert {k: v[0] for k, v in found.items()} == {k: len(v) for k, v in expected.items()}
    assert sum(v[0] for v in found.values()) == GOALS
    for (row, col), (count, href) in found.items():  # each cell: the compare page filtered on its goals
        query = parse_qs(urlsplit(href).query)
        assert query["tag_a"] == [row] and query["tag_b"] == [col]
        page = soup_of(client.get(href))
        goals = [int(tr.find("td").text) for tr in page.select("#goals tbody tr")]
        assert goals == expected[(row, col)], (row, col)
        assert f"{count} goals" in page.select_one("#tag-filter").text
    assert client.get("/runs/rule/vs/random?tag_a=nonsense").status_code == 400


def test_one_goal_side_by_side_has_both_diagnoses(make_viewer, real_pair):
    client = make_viewer(real_pair)
    ta, tb = _table(real_pair, "rule"), _table(real_pair, "random")
    goal = next(g for g, i in ta.by_goal().items() if ta.tag_name(i) != tb.tag_name(tb.by_goal()[g]))
    soup = soup_of(client.get(f"/runs/rule/vs/random/{goal}"))
    assert soup.select_one("#a-failure-tag").text == ta.tag_name(ta.by_goal()[goal])
    assert soup.select_one("#b-failure-tag").text == tb.tag_name(tb.by_goal()[goal])
    index = RunIndex(real_pair / "rule.jsonl")
    index.refresh()
    title = index.episode(ta.by_goal()[goal]).log.record["target"]["title"]
    for side in ("a", "b"):
        assert soup.select_one(f"#{side}-target-title").text == title
        assert soup.select_one(f"#{side}-searches td.rank") is not None  # where the target was, searched again
        links = [a["href"] for a in soup.select(f"#{side}-diagnosis a")]
        run = "rule" if side == "a" else "random"
        assert links and all(href.startswith(f"/runs/{run}/") and "?step=" in href for href in links)
    ids = [el["id"] for el in soup.select("[id]")]
    assert len(ids) == len(set(ids))  # two diagnoses on one page, no id twice


# -- 9. refusals in words, a way back, the arrow keys ------------------------------------------------------


@pytest.fixture(scope="module")
def mixed(real_pair, runs_dir, tmp_path_factory):
    """The real 1k shop's rule run beside a rule run of the embedded shop (``data``)."""
    folder = tmp_path_factory.mktemp("mixed")
    shutil.copy(real_pair / "rule.jsonl", folder / "real.jsonl")
    shutil.copy(runs_dir / "rule.jsonl", folder / "embedded.jsonl")
    return folder


def test_a_refused_comparison_says_why_in_words(make_viewer, mixed):
    client = make_viewer(mixed)
    soup = soup_of(client.get("/runs/embedded/vs/real"))
    reason = soup.select_one("#refused").text
    assert "they played different episodes (24 episodes of goals 0-23 at price seed 0 vs 60 episodes" in reason
    assert re.search(r"shop \(`data`: 1,000 products, 3,887 synthetic goals, content \w+ vs `webshop-small`: 1,000 "
                     r"products, 6,910 synthetic goals", reason)
    assert not re.search(r"[{}\[\]]|'\w", reason)  # no dict, list or string repr
    details = soup.select_one("details#refusal-details")
    assert details is not None and "open" not in details.attrs  # folded away
    rows = [tr.find_all("td") for tr in details.select("tr")[1:]]
    assert [r[0].text for r in rows] == ["episodes", "step cap", "success rule", "shop", "observation mode", "prompt"]  # each once
    assert soup.select_one("#paired") is None and soup.select_one("#transitions") is None
    soup = soup_of(client.get("/runs/embedded/vs/real/3"), 409)
    assert soup.select_one("#refused").text.startswith("they played different episodes (24 episodes")
    assert soup.select_one("details#refusal-details") is not None
    assert soup.select_one("#back-to-runs")["href"] == "/runs/"


@pytest.mark.parametrize("url, status", [("/runs/nothing-here", 404), ("/runs/real?sort=a%0Ab%27c", 400),
                                         ("/runs/real/9999", 404), ("/runs/real/vs/real/99999", 404),
                                         ("/runs/real/0?step=x", 400), ("/runs/real/vs/embedded?tag_b=%7B%7D", 400)])
def test_every_error_page_of_the_viewer_leads_back_to_the_runs(make_viewer, mixed, url, status):
    client = make_viewer(mixed)
    soup = soup_of(client.get(url), status)
    assert soup.select_one("#back-to-runs")["href"] == "/runs/"
    message = soup.select_one(".card p").text
    assert "\n" not in message and "\\n" not in message  # one line, no repr's escapes
    if "sort=" in url:
        assert "unknown sort column “a b'c”; expected one of position, goal" in message


def test_the_episode_page_loads_its_key_script_under_a_strict_policy(make_viewer, runs_dir):
    client = make_viewer(runs_dir)
    response = client.get("/runs/rule/0?step=1")
    soup = soup_of(response)
    scripts = [s.get("src") for s in soup.find_all("script")]
    assert "/runs/static/steps.js" in scripts and scripts.count(None) == 1  # base.html's one inline script
    policy = dict(part.strip().split(" ", 1) for part in response.headers["Content-Security-Policy"].split(";"))
    sources = policy["script-src"].split()
    assert sources[1:] == ["http://localhost/runs/static/steps.js"] and sources[0].startswith("'sha256-")
    script = client.get("/runs/static/steps.js")
    assert script.status_code == 200 and script.mimetype == "text/javascript"
    assert "ArrowRight" in script.get_data(as_text=True)
    script.close()


# -- 11. a run you can share -----------------------------------------------------------------------------------


def _links(html_text: str) -> list[str]:
    return re.findall(r'\b(?:href|src)="([^"]*)"', html_text)


def test_report_bundle_writes_a_self_contained_folder(real_pair, tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["report", str(real_pair / "rule.jsonl"), "--bundle", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and f"wrote the bundle {out}" in captured.err
    index = RunIndex(real_pair / "rule.jsonl")
    index.refresh()
    table = index.table()
    for name in ("index.html", "runs.css", "shop.css", "steps.js", "episodes.csv", "episodes.jsonl"):
        assert (out / name).is_file(), name
    assert len((out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()) == GOALS
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    for i in range(GOALS):  # every episode's diagnosis and every step of its stepper
        assert all(f"episodes/{i}/step-{k}.html" in pages for k in range(int(table.steps[i]) + 1)), i
    for page in pages:  # relative links to files of the bundle only
        text = (out / page).read_text(encoding="utf-8")
        for link in _links(text):
            if link.startswith(("#", "data:")):
                continue
            assert not urlsplit(link).scheme and not link.startswith("/"), (page, link)
            target = (out / page).parent / unquote(urlsplit(link).path)
            assert target.is_file(), (page, link)
        assert "<form" not in text and 'http-equiv="refresh"' not in text
        assert not re.search(r"(?:https?:)?//[a-z]", " ".join(_links(text)))
    first = BeautifulSoup((out / "episodes/0/step-0.html").read_text(encoding="utf-8"), "html.parser")
    assert first.select_one("#failure-tag").text == table.tag_name(0)
    assert first.select_one('link[rel="stylesheet"]')["href"] == "../../runs.css"
    assert first.select_one("#next")["href"] == "step-1.html"
    run_page = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    assert len(run_page.select("#episodes tbody tr")) == GOALS
    assert run_page.select_one("#export-csv")["href"] == "episodes.csv"
    assert run_page.select_one("#filters") is None  # no server behind a filter


def test_report_bundle_refuses_a_used_folder_and_bad_combinations(real_pair, tmp_path, capsys):
    run = str(real_pair / "rule.jsonl")
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine", encoding="utf-8")
    cases = [([run, "--bundle", str(used)], "is not empty: choose a new folder, or pass --force"),
             ([run, "--force"], "--force goes with --bundle DIR"),
             ([run, "--bundle", run], "is a file, expected a directory")]
    for args, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            status = main(["report", *args])
            raise SystemExit(status)
        assert exit_info.value.code == 2, args
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err, err
    assert sorted(p.name for p in used.iterdir()) == ["notes.txt"]  # several runs: tests/runs/test_bundles.py
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "run", "format": 2}\n', encoding="utf-8")
    assert main(["report", str(bad), "--bundle", str(tmp_path / "from-bad")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"The run “bad” cannot be read: {bad}, line 1" in err, err
    assert not (tmp_path / "from-bad").exists()
    assert main(["report", run, "--bundle", str(used), "--force"]) == 0
    assert (used / "notes.txt").read_text(encoding="utf-8") == "mine" and (used / "index.html").is_file()


def test_a_bundle_of_a_run_still_being_written_does_not_reload(runs_dir, tmp_path):
    from webshop_gym.runs.log import TrajectoryWriter

    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / "live.jsonl"
    writer = TrajectoryWriter(live, append=False)  # eval's writer, still at work
    try:
        for line in lines:
            if '"type": "summary"' not in line:
                writer.write_line(line.rstrip("\n"))
        assert main(["report", str(live), "--bundle", str(tmp_path / "b")]) == 0
    finally:
        writer.close()
    text = (tmp_path / "b" / "index.html").read_text(encoding="utf-8")
    assert "Still running" in text and "http-equiv" not in text
    header = json.loads(lines[0])
    assert header["type"] == "run"
