"""The reference site's error pages as scrapers read them, and what its search form and page numbers take.

Through a real HTTP server in a thread, fetched with ``requests`` the way ReAct's WebShop client
fetches pages (the URL built from the agent's words, unencoded).  :func:`react_observation`
applies that client's reading rules, as documented in its notebook, to a page: visible text
nodes only; a ``<button>`` becomes ``[text]``, a ``<label>`` an option, an ``a.product-link``
a product (only the first three are shown); every other text is plain, and the first two plain
texts of any page but the start page are dropped.  On the reference's own error pages
(Werkzeug's: a title, an ``<h1>``, a ``<p>``) that leaves nothing.
"""

from __future__ import annotations

import json
import re

import requests
from bs4 import BeautifulSoup
from bs4.element import Comment
from webshop_gym.server.site import MAX_QUERY, MAX_SEGMENT

from webshop_gym.core.pages import PRODUCTS_PER_PAGE

HIDDEN = {"style", "script", "head", "title", "meta", "[document]"}


def visible(html: str) -> list:
    """The page's text nodes that a browser shows (the scraper's filter)."""
    soup = BeautifulSoup(html, "html.parser")
    return [t for t in soup.find_all(string=True) if t.parent.name not in HIDDEN and not isinstance(t, Comment)]


def react_observation(html: str, url: str, page_type: str) -> str:
    """The observation ReAct's client makes of a page (written here from its documented rules)."""
    out = []
    plain = products = since_product = 0
    for text in visible(html):
        if text == "\n" or not text.replace("\n", "").replace("\\n", "").replace(" ", ""):
            continue
        if text.parent.name == "button":
            piece = f"\n[{text}] "
        elif text.parent.name == "label":
            piece = f"[[{text}]]" if f"'{text}'" in url else f"[{text}]"
        elif text.parent.get("class") == ["product-link"]:
            piece = f"\n[{text}] " if products < 3 else ""
            products += 1
            since_product = 0
        else:
            piece = f"\n{text} "
            if plain < 2 and page_type != "init":
                piece = ""
            if since_product <= 2 and products >= 4:
                piece = ""
            plain += 1
        since_product += 1
        out.append(piece)
    return "".join(out)


def page_type(path: str) -> str:
    """ReAct's page type of a site path."""
    first = path.lstrip("/").split("/", 1)[0]
    return {"search_results": "search", "item_page": "item", "item_sub_page": "item_sub", "done": "end"}.get(first, "init")


def structure(html: str) -> list[str]:
    """The tags around the page's visible, non-blank texts, and whether it has a title."""
    soup = BeautifulSoup(html, "html.parser")
    return ["title" if soup.title else "-"] + [t.parent.name for t in visible(html) if t.strip()]


# -- G6: error pages read as the reference's ------------------------------------------------------


ERRORS = [  # (path as a client builds it, status we answer)
    ("/search_results/fixed_1/what size?/1", 404),  # '?' starts the query: /search_results/fixed_1/what size
    ("/item_page/fixed_1/{asin}/shoes/1/{'color': 'a01#red'}", 400),  # '#' cuts the options off
    ("/item_page/fixed_1/NOSUCHASIN/shoes/1/{}", 404),
    ("/item_page/fixed_1/{asin}/shoes/1/{'a': 1}", 400),
    ("/item_sub_page/fixed_1/{asin}/shoes/1/nope/{}", 404),
    ("/done/fixed_1/{asin}/{'x': {'y': 'z'}}", 400),
    ("/search_results/never-opened/shoes/1", 404),
    ("/search_results/fixed_1/shoes/0", 404),
    ("/search_results/fixed_1/['a', 1]/1", 400),
    ("/search_results/fixed_1/shoes", 404),  # no page segment: no route
]


def test_site_error_pages_read_as_empty_observations_with_our_status_codes(serve, default_shop):
    base = serve()
    asin = default_shop.catalog.asin[0]
    http = requests.Session()
    assert http.get(f"{base}/fixed_1", timeout=60).status_code == 200
    for path, status in ERRORS:
        path = path.replace("{asin}", asin)
        response = http.get(base + path, timeout=60)
        html = response.text
        assert response.status_code == status, (path, html[:300])
        assert structure(html) == ["title", "h1", "p"], (path, html)
        assert react_observation(html, base + path, page_type(path)) == "", path
        assert "Traceback" not in html and "Back to the start page" not in html


def test_the_start_page_error_has_the_same_structure(serve):
    base = serve()
    response = requests.get(f"{base}/fixed_999999", timeout=60)
    assert response.status_code == 404
    assert structure(response.text) == ["title", "h1", "p"]
    soup = BeautifulSoup(response.text, "html.parser")
    assert soup.h1.text == "Not Found" and "'fixed_999999' names no goal" in soup.p.text
    # ReAct keeps the two texts of a start page: the heading and the reason.
    assert react_observation(response.text, "", "init").split("\n")[1:] == ["Not Found ", soup.p.text + " "]


def test_our_own_routes_keep_their_styled_error_pages(serve):
    base = serve()
    for path in ("/play/no-such-game", "/goal/nope", "/agentgym/nope"):
        response = requests.get(base + path, timeout=60)
        assert response.status_code == 404, path
        if path.startswith("/agentgym"):
            assert response.json() == {"detail": "Not Found"}
        else:
            assert "Back to the start page" in response.text, path


def test_reference_error_pages_and_ours_read_the_same(serve, real_human_shop, golden_dir):
    """Every page the reference site served (errors included): ReAct reads ours exactly as the reference's."""
    base = serve(SHOP=real_human_shop)
    rows = [json.loads(line) for line in (golden_dir / "human" / "site_pages.jsonl").read_text("utf-8").splitlines()]
    errors = 0
    http = requests.Session()
    for row in rows:
        url = base + row["url"]
        kind = page_type(row["url"])
        response = http.get(url, timeout=60)
        assert (response.status_code == 200) == (row["status"] == 200), row["url"]
        assert react_observation(response.text, url, kind) == react_observation(row["html"], url, kind), row["url"]
        if row["status"] != 200:
            errors += 1
            assert structure(response.text) == structure(row["html"]) == ["title", "h1", "p"]
            assert react_observation(row["html"], url, kind) == ""
    assert errors >= 5 and len(rows) > 90


# -- G7: the search form and page numbers -----------------------------------------------------------


def test_a_search_with_a_slash_is_served(serve, default_shop):
    base = serve()
    http = requests.Session()
    response = http.post(f"{base}/fixed_1", data={"search_query": "3/4 Inch rug"}, timeout=60)
    assert response.status_code == 200, response.text[:300]
    assert response.history and response.history[0].status_code == 302
    soup = BeautifulSoup(response.text, "html.parser")
    want = [default_shop.catalog.asin[r] for r in default_shop.search("3/4 inch rug")[:PRODUCTS_PER_PAGE]]
    assert [a.text for a in soup.select("a.product-link")] == want
    # Its links work too: the product, and from there back to the results and on to a purchase.
    item = http.get(base + soup.select_one("a.product-link")["href"], timeout=60)
    assert item.status_code == 200
    item_soup = BeautifulSoup(item.text, "html.parser")
    back = item_soup.find("button", string="< Prev").find_parent("form")["action"]
    assert http.post(base + back, timeout=60).url == response.url
    nxt = soup.find("button", string="Next >").find_parent("form")["action"]
    assert "Page 2 (Total results:" in http.post(base + nxt, timeout=60).text


def test_an_option_value_with_a_slash_reaches_the_done_page(serve, default_shop):
    base = serve()
    asin = default_shop.catalog.asin[0]
    http = requests.Session()
    item = http.get(f"{base}/item_page/fixed_1/{asin}/['a\\x2fb']/1/{{'size': '1\\x2f2 gallon'}}", timeout=60)
    assert item.status_code == 200
    buy = BeautifulSoup(item.text, "html.parser").find("button", string="Buy Now").find_parent("form")["action"]
    done = http.post(base + buy, timeout=60)
    assert done.status_code == 200
    assert '"size": "1/2 gallon"' in BeautifulSoup(done.text, "html.parser").select_one("#options pre").text


def test_long_queries_get_a_clear_page_up_to_the_documented_bound(serve):
    base = serve()
    http = requests.Session()
    longest = ("/ " * (MAX_QUERY // 2))[:MAX_QUERY]  # the most escaping per character that ordinary text needs
    assert http.post(f"{base}/fixed_1", data={"search_query": longest}, timeout=60).status_code == 200
    response = http.post(f"{base}/fixed_1", data={"search_query": "rug " * 5000}, timeout=60)  # 20,000 characters
    assert response.status_code == 400 and not response.history
    soup = BeautifulSoup(response.text, "html.parser")
    assert soup.h1.text == "Bad Request"
    assert soup.p.text == f"The search query has 20,000 characters; this site takes at most {MAX_QUERY:,}."
    for keywords in ("rug" * 3000, str(["rug"] * 1500)):  # a URL built by hand: plain words or a list
        response = http.get(f"{base}/search_results/fixed_1/{keywords}/1", timeout=60)
        assert response.status_code == 400, keywords[:20]
        assert BeautifulSoup(response.text, "html.parser").p.text == (
            f"the keywords segment is longer than {MAX_SEGMENT} characters")
    controls = http.post(f"{base}/fixed_1", data={"search_query": "\u2028" * 1500}, timeout=60)  # repr: 6 each
    assert controls.status_code == 400 and f"at most {MAX_SEGMENT:,}" in controls.text


def test_page_numbers_as_documented(serve, default_shop):
    base = serve()
    http = requests.Session()
    http.get(f"{base}/fixed_1", timeout=60)
    total = len(default_shop.search("shoes"))
    last = -(-total // PRODUCTS_PER_PAGE) + 1
    assert total > PRODUCTS_PER_PAGE
    for page in ("1", "2", str(last)):
        response = http.get(f"{base}/search_results/fixed_1/shoes/{page}", timeout=60)
        assert response.status_code == 200 and f"Page {int(page)} (Total results: {total})" in response.text, page
    for page in ("0", "-1", "99", str(last + 1), "1_0", "\u0661", "+1", " 1", "1.0", "9" * 40):
        response = http.get(f"{base}/search_results/fixed_1/shoes/{page}", timeout=60)
        assert response.status_code == 404, page
        assert re.search(r"no results page", BeautifulSoup(response.text, "html.parser").p.text), page
