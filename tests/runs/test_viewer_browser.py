"""The run viewer in a real browser: headless Chromium (Debian's) driven by Playwright.

Serves the app with ``RUNS`` on 127.0.0.1 in a thread, then goes through the viewer as a
researcher does: the run list, a run's episode table (sorted by reward), an episode stepped to
its outcome, and a comparison of two runs, goal by goal and side by side.  Screenshots go to
``artifacts/runs/``.
"""

from __future__ import annotations

import pytest
from webshop_gym.server import create_app

from tests.browser import CHROMIUM, LAUNCH_ARGS, require_playwright, served, watch
from tests.runs.conftest import NUM_GOALS
from webshop_gym.runs.run import load_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def sync_playwright():
    return require_playwright()


@pytest.fixture
def live_viewer(default_shop, runs_dir):
    app = create_app({"SHOP": default_shop, "RUNS": str(runs_dir), "SEED": 0, "MAX_SESSIONS": 4})
    try:
        with served(app) as base:
            yield base
    finally:
        app.extensions["webshop_gym"].close()
        app.extensions["webshop_gym_runs"].close()


def test_view_runs_in_chromium(sync_playwright, live_viewer, runs_dir):
    from pathlib import Path

    artifacts = Path(__file__).resolve().parents[2] / "artifacts" / "runs"
    artifacts.mkdir(parents=True, exist_ok=True)
    base = live_viewer
    rule = load_run(runs_dir / "rule.jsonl")
    position = next(e.position for e in rule.episodes if not e.success and len(e.log.steps) >= 3)
    episode = rule.episodes[position]
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            watch(page, base, problems)

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
            page.frame_locator("#page").locator("#reward").wait_for()  # the env's done page
            page.screenshot(path=str(artifacts / "episode.png"), full_page=True)

            page.goto(base + "/runs/")
            page.select_option("#compare-a", "rule")
            page.select_option("#compare-b", "oracle")
            page.click("#compare")
            page.wait_for_url("**/runs/rule/vs/oracle")
            assert page.locator("#goals tbody tr").count() == NUM_GOALS
            page.screenshot(path=str(artifacts / "compare.png"), full_page=True)
            page.click(f"#goals tbody tr:nth-child({position + 1}) a")
            page.wait_for_selector(".sides")
            assert page.locator(".side").count() == 2
            page.frame_locator("#side-2 iframe").locator("button.buy").wait_for()  # the item page it bought from
            page.screenshot(path=str(artifacts / "compare-goal.png"), full_page=True)
        finally:
            browser.close()
    assert not problems, problems
    for name in ("run-list", "run", "episode", "compare", "compare-goal"):
        assert (artifacts / f"{name}.png").stat().st_size > 5000
