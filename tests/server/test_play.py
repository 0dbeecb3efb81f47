"""The play routes: every page kind, every control, errors and escaping."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from tests.server.conftest import Player
from webshop_gym.agents.policies.oracle import OraclePolicy


def soup_of(response) -> BeautifulSoup:
    return BeautifulSoup(response.get_data(as_text=True), "html.parser")


@pytest.fixture
def planned(client, default_shop):
    """A session on goal 1 and the oracle's plan for it (search, product, options, buy)."""
    plan, *_ = OraclePolicy(default_shop).make_plan(1)
    return Player.start(client, 1), plan


def test_start_page(client):
    player = Player.start(client, 0)
    soup = player.soup()
    assert soup.body["class"] == ["page-start"]
    assert soup.select_one(".instruction").get_text(" ", strip=True).startswith("Instruction:")
    form = soup.select_one("form.search")
    assert form["method"] == "post" and form["action"] == player.url
    assert soup.select_one("input[name=query]") is not None
    assert soup.select_one(".topbar a.brand")["href"] == "/"


def test_every_page_kind_and_the_score(planned):
    player, plan = planned
    player.act(plan[0])
    soup = player.soup()
    assert soup.body["class"] == ["page-results"]
    assert soup.select("a.product-link") and soup.select_one(".instruction")
    player.act(next(a for a in plan if a.startswith("click[b")))
    soup = player.soup()
    assert soup.body["class"] == ["page-item"] and soup.select_one(".instruction")
    for tab in ("description", "features", "reviews"):
        player.act(f"click[{tab}]")
        soup = player.soup()
        assert soup.body["class"] == ["page-sub"] and soup.select_one(f".tab-{tab}") is not None
        assert soup.select_one(".instruction")
        player.act("click[< prev]")
    options = [a for a in plan[2:-1]]
    for action in options:
        player.act(action)
    soup = player.soup()
    checked = {r["data-action"] for r in soup.select("input[type=radio][checked]")}
    assert checked == set(options)  # the chosen options show as selected
    player.act("click[buy now]")
    state = player.state()
    assert state["terminated"] and state["info"]["page"] == "done"
    soup = player.soup()
    board = soup.select_one(".score-board")
    assert board.select_one("#score").get_text() == f"{state['reward']:.3f}"
    text = board.get_text(" ", strip=True)
    for part in ("type", "attributes", "price", "The instruction asked for", "Target product"):
        assert part in text
    if "r_option" in state["info"]["reward_info"]:
        assert "options" in text
    assert state["info"]["purchased_asin"].upper() in text
    assert soup.select_one(".again a[href='/goal/1']") is not None


def test_options_are_selectable_and_replaced(client, store):
    # A product with a group of at least two values.
    shop = store.shop
    goal = next(g for g in range(len(shop.goals)) if any(len(v) > 1 for _, v in
                store.engine.ctx.views(int(shop.goals.target[g])).groups))
    plan, *_ = OraclePolicy(shop).make_plan(goal)
    player = Player.start(client, goal)
    player.act(plan[0])
    player.act(next(a for a in plan if a.startswith("click[b") and a != "click[buy now]"))
    group = next(v for _, v in store.engine.ctx.views(int(shop.goals.target[goal])).groups if len(v) > 1)
    first, second = (f"click[{text}]" for _, text in group[:2])
    player.act(first)
    assert first in {r["data-action"] for r in player.soup().select("input[type=radio][checked]")}
    player.act(second)
    checked = {r["data-action"] for r in player.soup().select("input[type=radio][checked]")}
    assert second in checked and first not in checked


def test_product_links_are_get_links_to_do(planned):
    player, plan = planned
    player.act(plan[0])
    link = player.soup().select_one("a.product-link")
    assert link["href"].startswith(player.url + "/do?action=click%5B")
    response = player.client.get(link["href"])
    assert response.status_code == 303
    assert player.state()["info"]["page"] == "item"


def test_next_prev_back_to_search(planned):
    player, plan = planned
    player.act(plan[0])
    player.act("click[next >]")
    assert "Page 2" in player.soup().select_one(".counter").get_text()
    player.act("click[< prev]")
    assert "Page 1" in player.soup().select_one(".counter").get_text()
    player.act("click[back to search]")
    assert player.state()["info"]["page"] == "start"


def test_invalid_action_shows_a_notice_once(planned):
    player, _ = planned
    player.act("click[not a button]")
    assert not player.used_control
    page = player.html()
    assert "Nothing happened" in page and "not a button" in page
    assert "Nothing happened" not in player.html()  # one-shot
    assert player.state()["info"]["steps"] == 1  # an invalid action still counts, as in the env


def test_actions_after_buying_show_the_done_page(planned):
    player, plan = planned
    for action in plan:
        player.act(action)
    reward = player.state()["reward"]
    response = player.client.post(player.url, data={"action": "search", "query": "more"})
    assert response.status_code == 303
    page = player.html()
    assert "This episode is over" in page and "score-board" in page
    state = player.state()
    assert state["reward"] == reward and state["info"]["page"] == "done"
    assert player.client.get(player.url + "/do?action=click%5Bback%20to%20search%5D").status_code == 303
    assert player.state()["info"]["page"] == "done"


def test_user_text_is_escaped(client):
    player = Player.start(client, 0)
    attack = "<script>alert(1)</script>"
    player.act(f"search[{attack}]")
    page = player.html()
    assert attack not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    player.act(f'click[{attack}" onmouseover="x]')
    page = player.html()
    assert "<script>alert(1)" not in page and 'onmouseover="x' not in page
    response = client.get(f"/play/{attack}")
    assert response.status_code == 404 and attack not in response.get_data(as_text=True)


@pytest.mark.parametrize("data", [{}, {"query": "shoes"}, {"action": "search"}])
def test_malformed_forms_are_400(client, data):
    player = Player.start(client, 0)
    response = client.post(player.url, data=data)
    assert response.status_code == 400 and "Traceback" not in response.get_data(as_text=True)


def test_do_without_action_is_400(client):
    player = Player.start(client, 0)
    assert client.get(player.url + "/do").status_code == 400


def test_oversized_requests_are_refused(client):
    player = Player.start(client, 0)
    assert client.post(player.url, data={"action": "search", "query": "x" * 20_000}).status_code == 400
    assert client.post(player.url, data={"action": "search", "query": "x" * 100_000}).status_code == 413


@pytest.mark.parametrize("method,url", [
    ("get", "/play/no-such-session"),
    ("post", "/play/no-such-session"),
    ("get", "/play/no-such-session/do?action=click%5Bx%5D"),
    ("get", "/play/no-such-session/state.json"),
    ("get", "/no/such/page"),
    ("get", "/play/"),
    ("get", "/static/webshop.css"),
])
def test_unknown_things_are_404_pages(client, method, url):
    response = getattr(client, method)(url, data={"action": "click[x]"} if method == "post" else None)
    assert response.status_code == 404
    page = response.get_data(as_text=True)
    assert "<html" in page and "Traceback" not in page


def test_wrong_method_is_405(client):
    player = Player.start(client, 0)
    assert client.put(player.url).status_code == 405
    assert client.get("/new").status_code == 405


def test_state_json(client, store):
    player = Player.start(client, 4)
    state = player.state()
    assert state["goal_index"] == 4 and state["observation"].startswith("WebShop [SEP] Instruction:")
    assert state["info"]["page"] == "start" and state["max_steps"] == 15
    assert state["info"]["instruction"] == store.shop.goals.instruction[4]


def test_pages_are_not_cached_and_carry_security_headers(client):
    player = Player.start(client, 0)
    response = client.get(player.url)
    assert response.headers["Cache-Control"] == "no-store"
    csp = response.headers["Content-Security-Policy"]
    assert "script-src 'sha256-" in csp and "default-src 'none'" in csp
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["X-Frame-Options"] == "DENY"


def test_inline_script_hash_matches_the_page(client):
    import base64
    import hashlib
    import re

    player = Player.start(client, 0)
    response = client.get(player.url)
    script = re.search(r"<script>(.*?)</script>", response.get_data(as_text=True), re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in response.headers["Content-Security-Policy"]


def test_pages_inline_the_whole_stylesheet_unaltered(client):
    # Pages inline the CSS through an autoescaped template: any quote, ampersand or angle
    # bracket in it would reach the browser as an entity and break the rule it is in.
    from webshop_gym.render.html import stylesheet

    player = Player.start(client, 0)
    for url in (player.url, "/", "/play/no/such/page"):  # other unknown paths are the reference site's
        assert stylesheet() in client.get(url).get_data(as_text=True), url
