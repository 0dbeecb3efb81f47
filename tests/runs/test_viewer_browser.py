"""The run viewer in a real browser: headless Chromium (Debian's) driven by Playwright.

Serves the app with ``RUNS`` on 127.0.0.1 in a thread, then goes through the viewer as a
researcher does: the run list, a run's episode table (sorted by reward), an episode stepped to
its outcome, and a comparison of two runs, goal by goal and side by side.  Screenshots go to
``artifacts/runs/``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from webshop_gym.server import create_app

from tests.browser import CHROMIUM, LAUNCH_ARGS, require_playwright, served, watch
from tests.runs.conftest import NUM_GOALS, first_with_tag
from webshop_gym.runs.index import RunIndex
from webshop_gym.runs.run import load_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def sync_playwright():
    return require_playwright()


def _artifacts() -> Path:
    """The screenshots' folder (``artifacts/runs/``), created."""
    folder = Path(__file__).resolve().parents[2] / "artifacts" / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def _viewer_page(sync_playwright, base: str, problems: list[str]):
    """A Chromium page; failed requests and console errors under ``base``, and sandbox warnings, go to ``problems``."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            watch(page, base, problems)
            page.on("console", lambda m: problems.append(m.text) if "sandbox" in m.text.lower() else None)
            yield page
        finally:
            browser.close()


def _live(shop, folder):
    """The viewer over ``folder`` served on 127.0.0.1; yields its base URL."""
    app = create_app({"SHOP": shop, "RUNS": str(folder), "SEED": 0, "MAX_SESSIONS": 4})
    try:
        with served(app) as base:
            yield base
    finally:
        app.extensions["webshop_gym"].close()
        app.extensions["webshop_gym_runs"].close()


@pytest.fixture
def live_viewer(default_shop, runs_dir):
    yield from _live(default_shop, runs_dir)


def test_view_runs_in_chromium(sync_playwright, live_viewer, runs_dir):
    artifacts = _artifacts()
    base = live_viewer
    rule = load_run(runs_dir / "rule.jsonl")
    position = next(e.position for e in rule.episodes if not e.success and len(e.log.steps) >= 3)
    episode = rule.episodes[position]
    problems: list[str] = []
    with _viewer_page(sync_playwright, base, problems) as page:
        page.goto(base + "/runs/")
        assert page.locator("#runs tbody tr").count() == 3
        page.screenshot(path=str(artifacts / "run-list.png"), full_page=True)

        page.click("a.run-link:text-is('rule')")
        page.wait_for_selector("#episodes")
        assert page.locator("#episodes tbody tr").count() == NUM_GOALS
        page.click("#episodes th a:text('reward')")
        page.click("#episodes th a:text('reward')")  # twice: descending
        page.wait_for_url("**sort=reward&desc=1")
        rewards = [float(x) for x in page.locator("#episodes td.reward").all_inner_texts()]
        assert rewards == sorted(rewards, reverse=True)
        page.select_option("#filter-outcome", "failure")
        page.click("#apply-filters")
        page.wait_for_url("**outcome=failure**")
        assert page.locator("#episodes tbody tr").count() == sum(not e.success for e in rule.episodes)
        page.screenshot(path=str(artifacts / "run.png"), full_page=True)

        page.goto(f"{base}/runs/rule/{position}")
        frame = page.frame_locator("#page")
        assert episode.instruction in frame.locator(".instruction").inner_text()
        page.click("#next")
        page.wait_for_url("**step=1")
        frame = page.frame_locator("#page")
        frame.locator("a.product-link").first.wait_for()  # the results page the agent saw
        assert page.inner_text("#action") == episode.log.steps[1]["action"]
        page.screenshot(path=str(artifacts / "episode-step.png"), full_page=True)
        page.click("#last")
        page.wait_for_selector(".score-board")
        assert f"{episode.reward:.3f}" in page.inner_text("#score")
        assert page.locator("#page").count() == 0  # the breakdown, not the env's bare done page
        page.screenshot(path=str(artifacts / "episode.png"), full_page=True)

        page.goto(base + "/runs/")
        page.select_option("#compare-a", "rule")
        page.select_option("#compare-b", "oracle")
        page.click("#compare")
        page.wait_for_url("**/runs/rule/vs/oracle")
        assert page.locator("#goals tbody tr").count() == NUM_GOALS
        page.screenshot(path=str(artifacts / "compare.png"), full_page=True)
        page.click(f"#goals tbody tr:nth-child({position + 1}) a:text('side by side')")
        page.wait_for_selector(".sides")
        assert page.locator(".side").count() == 2
        page.frame_locator("#side-2 iframe").locator("button.buy").wait_for()  # the item page it bought from
        page.screenshot(path=str(artifacts / "compare-goal.png"), full_page=True)
    assert not problems, problems
    for name in ("run-list", "run", "episode", "compare", "compare-goal"):
        assert (artifacts / f"{name}.png").stat().st_size > 5000


@pytest.fixture
def live_scripted(default_shop, scripted_runs):
    yield from _live(default_shop, scripted_runs)


def test_episode_diagnosis_in_chromium(sync_playwright, live_scripted, scripted_runs):
    """Wrong product, wrong option, never retrieved: the diagnosis and the marked pages, as a user sees them."""
    artifacts = _artifacts()
    base = live_scripted
    index = RunIndex(scripted_runs / "scripted.jsonl")
    index.refresh()
    cases = {tag: first_with_tag(scripted_runs, "scripted", tag) for tag in
             ("opened but wrong product bought", "right product, option not clicked", "target not on the pages seen")}
    problems: list[str] = []
    with _viewer_page(sync_playwright, base, problems) as page:
        # the run page: tags with example episodes
        page.goto(base + "/runs/scripted")
        tags = page.locator("#tags tr.tag-row td:first-child").all_inner_texts()
        assert set(cases) <= set(tags)

        position = cases["opened but wrong product bought"]
        episode = index.episode(position)
        page.goto(f"{base}/runs/scripted/{position}")
        assert page.inner_text("#failure-tag") == "opened but wrong product bought"
        assert page.inner_text("#target-title") == episode.log.record["target"]["title"]
        assert page.inner_text("#bought-title") not in ("", episode.log.record["target"]["title"])
        assert "opened at step 2" in page.inner_text("#seen")
        assert ", page 1 (of 50 results)" in page.inner_text("#searches td.rank")
        assert page.inner_text("#searches td.pages-seen") == "page 1: target on them"
        # step 1: the results page; the product the agent clicked and the target are marked
        page.goto(f"{base}/runs/scripted/{position}?step=1")
        frame = page.frame_locator("#page")
        clicked = frame.locator(f"a.product-link[data-action='{episode.log.steps[1]['action']}']")
        assert clicked.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
        target = episode.log.record["target"]["asin"].lower()
        row = frame.locator(f"li:has(> a.product-link[data-action='click[{target}]'])")
        assert "inset" in row.evaluate("e => getComputedStyle(e).boxShadow")
        thumbs = frame.locator("span.thumb")
        assert thumbs.count() and not thumbs.first.is_visible()  # no grey placeholders
        assert frame.locator("a.product-link").first.is_visible()
        page.screenshot(path=str(artifacts / "diagnosis-wrong-product.png"), full_page=True)

        position = cases["right product, option not clicked"]
        options = index.episode(position).log.record["target"]["options"]
        page.goto(f"{base}/runs/scripted/{position}")
        assert page.inner_text("#failure-tag") == "right product, option not clicked"
        missed = page.inner_text("#miss-options")
        assert all(f"{k}: {v}: offered, not clicked" in missed for k, v in options.items())
        assert page.inner_text("#tag-family") == "(option clicking)"
        page.click("#last")
        page.wait_for_selector(".score-board")
        page.screenshot(path=str(artifacts / "diagnosis-wrong-option.png"), full_page=True)

        position = cases["target not on the pages seen"]
        page.goto(f"{base}/runs/scripted/{position}")
        assert page.inner_text("#failure-tag") == "target not on the pages seen"
        assert page.locator("#searches td.rank").all_inner_texts() == ["not in the top 50"]
        assert "none of the results pages" in page.inner_text("#seen")
        page.screenshot(path=str(artifacts / "diagnosis-never-retrieved.png"), full_page=True)
    assert not problems, problems


def test_unreachable_goal_and_reachable_filter_in_chromium(sync_playwright, real_shop, real_dir, golden_dir,
                                                           tmp_path):
    """A rule run of the real 1k shop in Chromium: SR on reachable goals, the filter, an unreachable goal's page."""
    from webshop_gym.cli import main

    out = tmp_path / "rule.jsonl"
    assert main(["eval", "--policy", "rule", "--shop", str(real_dir), "--goals", str(golden_dir / "goals.json"),
                 "--num-goals", "40", "--quiet", "--out", str(out)]) == 0
    reach = real_shop.reachability()
    problems: list[str] = []
    for base in _live(real_shop, tmp_path):
        with _viewer_page(sync_playwright, base, problems) as page:
            page.goto(base + "/runs/rule/")  # the trailing slash too
            assert page.inner_text("#unreachable b") == str(int((~reach.reachable[:40]).sum()))
            page.select_option("#filter-reachable", "no")
            page.click("#apply-filters")
            page.wait_for_url("**reachable=no**")
            goals = [int(x) for x in page.locator("#episodes tbody tr td:nth-child(2)").all_inner_texts()]
            assert goals == [g for g in range(40) if not reach.reachable[g]]
            page.locator("#episodes tbody tr td.instr a").first.click()
            page.wait_for_selector("#unreachable-goal")
            assert reach.reason[goals[0]] in page.inner_text("#unreachable-goal")
            page.screenshot(path=str(_artifacts() / "diagnosis-unreachable-goal.png"), full_page=True)
    assert not problems, problems


def test_arrow_keys_and_tag_transitions_in_chromium(sync_playwright, live_viewer, runs_dir):
    """← → step through an episode (the page's one script file, under its strict CSP); a transition cell filters."""
    rule = load_run(runs_dir / "rule.jsonl")
    position = next(e.position for e in rule.episodes if len(e.log.steps) >= 3)
    base = live_viewer
    problems: list[str] = []
    with _viewer_page(sync_playwright, base, problems) as page:
        page.goto(f"{base}/runs/rule/{position}")
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**step=1")
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**step=2")
        assert page.inner_text("#action") == rule.episodes[position].log.steps[2]["action"]
        page.keyboard.press("ArrowLeft")
        page.wait_for_url("**step=1")
        page.keyboard.press("Shift+ArrowRight")  # with a modifier: the browser's, not ours
        page.wait_for_timeout(300)
        assert page.url.endswith("step=1")

        page.goto(f"{base}/runs/rule/vs/oracle")
        cell = page.locator("#transitions tbody td a").first
        count = int(cell.inner_text())
        cell.click()
        page.wait_for_url("**tag_a=**")
        assert page.locator("#goals tbody tr").count() == count
        page.screenshot(path=str(_artifacts() / "compare-transitions.png"), full_page=True)
    assert not problems, problems


def test_a_bundle_opens_from_the_file_system_in_chromium(sync_playwright, runs_dir, tmp_path):
    """`report --bundle`: index.html from file://, a link to an episode, its stepper and the arrow keys, no network."""
    from webshop_gym.cli import main

    out = tmp_path / "bundle"
    assert main(["report", str(runs_dir / "rule.jsonl"), "--bundle", str(out)]) == 0
    rule = load_run(runs_dir / "rule.jsonl")
    position = next(e.position for e in rule.episodes if len(e.log.steps) >= 3)
    base = out.resolve().as_uri()
    problems: list[str] = []
    with _viewer_page(sync_playwright, base, problems) as page:
        page.goto(base + "/index.html")
        assert page.locator("#episodes tbody tr").count() == NUM_GOALS
        assert page.locator("h1").count() and page.evaluate("getComputedStyle(document.body).fontSize") == "15px"
        page.locator(f"#episodes tbody tr:nth-child({position + 1}) td.instr a").click()
        page.wait_for_url(f"**/episodes/{position}/step-0.html")
        assert page.inner_text("#failure-tag") == RunIndex_tag(runs_dir, position)
        frame = page.frame_locator("#page")
        assert rule.episodes[position].instruction in frame.locator(".instruction").inner_text()
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**/step-1.html")
        page.frame_locator("#page").locator("a.product-link").first.wait_for()
        page.click("#last")
        page.wait_for_url(f"**/step-{len(rule.episodes[position].log.steps)}.html")
        page.screenshot(path=str(_artifacts() / "bundle-episode.png"), full_page=True)
    assert not problems, problems


def RunIndex_tag(runs_dir, position: int) -> str:
    index = RunIndex(runs_dir / "rule.jsonl")
    index.refresh()
    return index.table().tag_name(position)


def test_a_goals_plays_are_navigable_in_chromium(sync_playwright, default_shop, tmp_path):
    """A run of 3 samples per goal: from the run page to a goal's page, then from play to play."""
    from webshop_gym.cli.app import main

    assert main(["eval", "--policy", "random", "--num-goals", "3", "--samples", "3", "--quiet",
                 "--out", str(tmp_path / "sampled.jsonl")]) == 0
    positions = [e.position for e in load_run(tmp_path / "sampled.jsonl").episodes if e.goal_index == 1]
    assert len(positions) == 3
    problems: list[str] = []
    live = _live(default_shop, tmp_path)
    base = next(live)
    try:
        with _viewer_page(sync_playwright, base, problems) as page:
            page.goto(base + "/runs/sampled")
            page.click("#sample-goals a.goal-link:text-is('1')")
            page.wait_for_selector("#plays-a")
            assert page.url.endswith("/runs/sampled/goal/1")
            assert page.locator("#plays-a tbody tr.play").count() == 3
            assert page.locator("#plays-a tr.current td").first.inner_text() == "0"
            assert page.locator("#side-1 h3 a").get_attribute("href").endswith(f"/runs/sampled/{positions[0]}")
            for k in (2, 1):
                page.click(f"#plays-a tr[data-play='{k}'] a.play-link")
                page.wait_for_url(f"**/runs/sampled/goal/1?play={k}")
                assert page.locator("#plays-a tr.current td").first.inner_text() == str(k)
                assert page.inner_text("#play-shown-a") == f"Showing play {k} of 3."
                assert page.locator("#side-1 h3 a").get_attribute("href").endswith(f"/runs/sampled/{positions[k]}")
            page.screenshot(path=str(_artifacts() / "goal-plays.png"), full_page=True)
            page.click("#plays-a tr[data-play='1'] td:last-child a")  # the play's own episode page
            page.wait_for_url(f"**/runs/sampled/{positions[1]}")
    finally:
        live.close()
    assert problems == []
