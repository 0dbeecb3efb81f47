"""The viewer in Chromium (issue 31, round 2): a live run reloading itself, the exports, a served run's accounting.

Each test serves the viewer on 127.0.0.1 (as ``test_viewer_browser.py`` does) and reads the
page as a user does; figures are found by the label the page prints beside them and checked
against the run file (its summary line, read by key) and ``webshop-gym report``'s table (read
by column header).
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests.runs.test_viewer_browser import _live, _viewer_page
from webshop_gym.analysis.intervals import fmt
from webshop_gym.cli import main
from webshop_gym.runs.log import TrajectoryWriter
from webshop_gym.runs.run import load_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def sync_playwright():
    from tests.browser import require_playwright

    return require_playwright()


def _figure(page, label: str) -> tuple[str, str]:
    """The big figure and its small print of the run page's box labelled ``label``."""
    box = page.locator(".figure", has=page.locator(f"small:text-is('{label}')"))
    return box.locator("b").inner_text(), box.locator("small").nth(1).inner_text()


def _summary(path) -> dict:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    return next(x for x in lines if x["type"] == "summary")["result"]


def test_a_live_run_reloads_itself_until_its_summary_arrives(sync_playwright, default_shop, runs_dir, tmp_path,
                                                              monkeypatch):
    """A run being written (eval's own writer, line by line): partial counts, reloads by itself, then stops."""
    import webshop_gym.server.run_pages as viewer

    monkeypatch.setattr(viewer, "LIVE_REFRESH", 1)
    lines = (runs_dir / "rule.jsonl").read_text(encoding="utf-8").splitlines()
    header, summary = json.loads(lines[0]), _summary(runs_dir / "rule.jsonl")
    body = [x for x in lines[1:] if json.loads(x)["type"] != "summary"]
    starts = [i for i, x in enumerate(body) if json.loads(x)["type"] == "episode"]
    folder = tmp_path / "live"
    folder.mkdir()
    writer = TrajectoryWriter(folder / "live.jsonl", append=False)  # what `eval --out` writes with
    for line in [lines[0], *body[: starts[3]]]:  # the run line and three episodes
        writer.write_line(line)
    partial = load_run(folder / "live.jsonl", steps=False).episodes
    assert len(partial) == 3
    problems: list[str] = []
    loads: list[str] = []
    try:
        for base in _live(default_shop, folder):
            with _viewer_page(sync_playwright, base, problems) as page:
                page.goto(base + "/runs/live")
                live = page.inner_text("#live")
                score = fmt(100 * sum(e.reward for e in partial) / 3)
                sr = fmt(100 * sum(e.success for e in partial) / 3)
                assert live.startswith(f"Still running: 3 of {header['num_goals']} episodes done · Score {score} · "
                                       f"SR {sr}% so far."), live
                assert _figure(page, "episodes")[0] == "3"
                page.on("load", lambda: loads.append(page.url))
                for line in body[starts[3]:]:  # the other episodes: the page follows by itself
                    writer.write_line(line)
                page.locator("#live", has_text=f"Still running: {len(starts)} of").wait_for(timeout=5000)
                assert loads, "the page did not reload by itself"
                writer.write_line(lines[-1])  # the summary line
                page.locator("#live").wait_for(state="detached", timeout=5000)
                assert _figure(page, "Score [95% CI]")[0] == fmt(summary["score"])
                assert _figure(page, "SR % [95% CI]")[0] == fmt(summary["sr"])
                assert _figure(page, "episodes")[0] == f"{summary['episodes']:,}"
                assert page.locator('meta[http-equiv="refresh"]').count() == 0
                settled = len(loads)
                page.wait_for_timeout(2500)  # more than two reload periods
                assert len(loads) == settled, "the page kept reloading after the summary arrived"
    finally:
        writer.close()
    assert not problems, problems


PRICES = ("2", "8")  # USD per million prompt / completion tokens


@pytest.fixture(scope="module")
def served_run(tmp_path_factory, default_shop):
    """A served model's run of 8 goals: a fault now and then (retries), goal 3's calls always failing (errored)."""
    pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]'")
    from tests.openai_server import ChatServer
    from webshop_gym.agents import OpenAIPolicy

    original = OpenAIPolicy.__init__

    def fast(self, *args, **kw):  # retries wait milliseconds, as in test_served.py
        kw.setdefault("backoff", 0.001)
        kw.setdefault("max_backoff", 0.02)
        original(self, *args, **kw)

    folder = tmp_path_factory.mktemp("served-browser")
    out, figures = folder / "served.jsonl", folder / "served.json"
    OpenAIPolicy.__init__ = fast
    try:
        with ChatServer(fail_when=default_shop.goals.instruction[3], faults={"500": 0.1}, seed=3) as server:
            # one request at a time: the seeded faults fall on the same requests in every run
            assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--num-goals", "8",
                         "--concurrency", "1", "--max-retries", "4", "--timeout", "5", "--quiet", "--out", str(out),
                         "--json", str(figures), "--price-input", PRICES[0], "--price-output", PRICES[1]]) == 0
    finally:
        OpenAIPolicy.__init__ = original
    result = json.loads(figures.read_text(encoding="utf-8"))
    assert result["errored"] == 1 and result["retries"] > 4  # faults retried besides goal 3's 4 retries
    return folder, out, result


def _report_table(capsys, path, first_header: str) -> dict[str, str]:
    """``webshop-gym report PATH`` (Markdown on stdout): the row of the table whose second header is ``first_header``."""
    capsys.readouterr()
    assert main(["report", str(path), "--price-input", PRICES[0], "--price-output", PRICES[1]]) == 0
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("|")]
    for i, line in enumerate(rows):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 1 and cells[1] == first_header:
            values = [c.strip() for c in rows[i + 2].strip("|").split("|")]
            return dict(zip(cells, values, strict=True))
    raise AssertionError(f"no table with the column {first_header!r} in:\n{text}")


def test_served_accounting_on_the_run_page_matches_the_file_and_the_report(sync_playwright, default_shop, served_run,
                                                                            capsys):
    folder, out, result = served_run
    summary = _summary(out)
    report = _report_table(capsys, out, "errored episodes")
    problems: list[str] = []
    for base in _live(default_shop, folder):
        with _viewer_page(sync_playwright, base, problems) as page:
            page.goto(base + "/runs/served")
            requests, calls = _figure(page, "model calls")
            assert requests == f"{summary['requests']:,}" == report["requests"]
            retries = re.search(r"([\d,]+) retries", calls).group(1)
            tokens = re.search(r"([\d,]+) tokens", calls).group(1)
            assert retries == f"{summary['retries']:,}" == report["retries"]
            assert tokens == f"{summary['tokens']['total']:,}" == report["whole run: tokens"]
            assert f"{summary['tokens']['prompt']:,}" == report["prompt tokens"]
            assert f"{summary['tokens']['completion']:,}" == report["completion tokens"]
            scored, note = _figure(page, "episodes")
            errored = int(page.inner_text("#errored").split()[0])
            assert errored == summary["errored"] == 1 and report["errored episodes"] == f"1 of {int(scored) + 1}"
            assert int(scored) == summary["episodes"] == result["counts"]["episodes"] == 7
            # errored episodes are not failures: the tag table and the failure filter hold the 7 scored ones only
            solved = int(page.inner_text("#tags tbody tr:first-child td.num"))
            tags = {r.locator("td").nth(0).inner_text(): (r.locator("td").nth(1).inner_text(), int(r.locator("td.num")
                    .inner_text())) for r in page.locator("#tags tr.tag-row").all()}
            assert tags.pop("errored") == ("not the agent's", 1)
            failures = sum(count for _, count in tags.values())
            assert solved + failures == 7 and f"{solved} solved" in note
            page.select_option("#filter-outcome", "failure")
            page.click("#apply-filters")
            page.wait_for_url("**outcome=failure**")
            assert page.locator("#episodes tbody tr").count() == failures
            assert _figure(page, "Score [95% CI]")[0] == fmt(summary["score"])
            # the cost: the viewer has no prices; eval's and report's agree at the same prices
            assert report["cost"] == f"{result['cost']:.4f}"
    assert not problems, problems


def test_exports_download_with_diagnosis_and_accounting_columns(sync_playwright, default_shop, served_run, tmp_path):
    folder, out, _ = served_run
    summary = _summary(out)
    run = load_run(out, steps=False)
    problems: list[str] = []
    for base in _live(default_shop, folder):
        with _viewer_page(sync_playwright, base, problems) as page:
            page.goto(base + "/runs/served")
            requests = int(_figure(page, "model calls")[0].replace(",", ""))
            scored = int(_figure(page, "episodes")[0])
            files = {}
            for kind in ("csv", "jsonl"):
                with page.expect_download() as download:
                    page.click(f"#export-{kind}")
                assert download.value.suggested_filename == f"served-episodes.{kind}"
                files[kind] = tmp_path / f"served.{kind}"
                download.value.save_as(files[kind])
    assert not problems, problems
    rows = list(csv.DictReader(io.StringIO(files["csv"].read_text(encoding="utf-8"))))
    lines = [json.loads(x) for x in files["jsonl"].read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(lines) == len(run.episodes) == 8  # errored episodes are exported, marked
    diagnosis = ("tag", "family", "target_asin", "first_seen_step", "opened_step", "queries", "missed_options",
                 "reachable")
    accounting = ("errored", "error", "tokens.prompt", "tokens.completion", "requests", "retries", "latency_s")
    assert set(diagnosis + accounting) <= set(rows[0]) and set(diagnosis) <= set(lines[0])
    by_goal = {e.goal_index: e for e in run.episodes}
    for row, line in zip(rows, lines, strict=True):
        episode = by_goal[int(row["goal_index"])]
        record = episode.log.record
        assert row["errored"] == ("true" if episode.errored else "false") and line["errored"] is episode.errored
        assert int(row["requests"]) == record["requests"] == line["requests"]
        assert int(row["retries"]) == record["retries"] == line["retries"]
        assert int(row["tokens.prompt"]) == record["tokens"]["prompt"]
        assert int(row["tokens.completion"]) == record["tokens"]["completion"]
        assert row["latency_s"] != "" and row["tag"] == line["tag"]
        if not episode.errored:
            assert float(row["reward"]) == episode.reward and row["target_asin"] and row["tag"]
        else:
            assert row["error"].startswith("status 500") and row["tag"] == "errored"
    # the totals are the page's and the summary's
    assert sum(int(r["requests"]) for r in rows) == requests == summary["requests"]
    assert sum(int(r["retries"]) for r in rows) == summary["retries"]
    assert sum(int(r["tokens.prompt"]) + int(r["tokens.completion"]) for r in rows) == summary["tokens"]["total"]
    assert sum(r["errored"] == "false" for r in rows) == scored
    assert sum(r["success"] == "true" for r in rows if r["errored"] == "false") == summary["counts"]["successes"]
