"""End to end in a real browser: headless Chromium (Debian's) driven by Playwright.

Starts the server on 127.0.0.1 (a free port) in a thread, then plays one episode the way a
person does: pick a goal in the menu, type a search, open the product, pick its options, buy,
and read the score, which must equal WebShopEnv's reward for the same actions.  Screenshots
go to ``artifacts/browser/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import CHROMIUM, LAUNCH_ARGS, require_playwright, served, watch
from webshop_gym import WebShopEnv
from webshop_gym.agents.policies.oracle import OraclePolicy

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "browser"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def sync_playwright():
    return require_playwright()


@pytest.fixture
def live_server(make_app):
    """The app on 127.0.0.1 at a free port, served by Werkzeug's threaded server."""
    app = make_app(TESTING=False, MAX_STEPS=None)
    with served(app) as base:
        yield app, base


def test_play_an_episode_in_chromium(sync_playwright, live_server, default_shop):
    app, base = live_server
    goal = 1
    plan, *_ = OraclePolicy(default_shop).make_plan(goal)
    query = plan[0][len("search["):-1]
    product = next(a for a in plan if a.startswith("click[") and a[6:-1].isalnum() and len(a) == 17)
    options = plan[plan.index(product) + 1 : -1]
    # The env's reward for exactly these actions.
    env = WebShopEnv(shop=default_shop, max_steps=None)
    env.reset(options={"goal_index": goal})
    for action in plan:
        _, reward, terminated, _, info = env.step(action)
    assert terminated

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            watch(page, base, problems)

            page.goto(base + "/")
            page.screenshot(path=str(ARTIFACTS / "menu.png"), full_page=True)
            page.fill("#goal", str(goal))
            page.click("#pick-goal")
            page.wait_for_selector("form.search")
            assert "/play/" in page.url
            assert default_shop.goals.instruction[goal] in page.inner_text(".instruction")
            page.screenshot(path=str(ARTIFACTS / "start.png"), full_page=True)

            page.fill("#search_input", query)
            page.press("#search_input", "Enter")
            page.wait_for_selector("a.product-link")
            assert page.inner_text(".topbar .query").endswith(query)
            page.screenshot(path=str(ARTIFACTS / "results.png"), full_page=True)

            page.click(f"a.product-link[data-action='{product}']")
            page.wait_for_selector("button.buy")
            for option in options:
                radio = page.locator(f"input[type=radio][data-action='{option}']").first
                with page.expect_navigation():
                    page.click(f"label[for='{radio.get_attribute('id')}']")
                assert page.locator(f"input[type=radio][data-action='{option}']").first.is_checked()
            page.screenshot(path=str(ARTIFACTS / "item.png"), full_page=True)

            page.click("button:has-text('Features')")
            page.wait_for_selector(".tab-features")
            page.click("button:has-text('< Prev')")
            page.wait_for_selector("button.buy")
            for option in options:  # kept across the tab
                assert page.locator(f"input[type=radio][data-action='{option}']").first.is_checked()

            page.click("button.buy")
            page.wait_for_selector(".score-board")
            score = float(page.inner_text("#score"))
            board = page.inner_text(".score-board")
            page.screenshot(path=str(ARTIFACTS / "done.png"), full_page=True)
        finally:
            browser.close()

    assert score == pytest.approx(reward, abs=5e-4)
    assert "attributes" in board and "price" in board and "The instruction asked for" in board
    assert info["purchased_asin"].upper() in board
    assert not problems, problems
    assert (ARTIFACTS / "done.png").stat().st_size > 1000
