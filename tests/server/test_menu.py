"""The start menu: goals by index, random goals by split, the reference's /fixed_<i> URLs."""

from __future__ import annotations

import html
from urllib.parse import urlsplit

import pytest


def play_path(response) -> str:
    assert response.status_code == 303, response.status_code
    path = urlsplit(response.headers["Location"]).path
    assert path.startswith("/play/")
    return path


def test_menu_lists_the_shop_and_splits(client, store):
    page = client.get("/").get_data(as_text=True)
    assert "Play a random goal" in page and "Play this goal" in page
    assert f"{len(store.shop.goals)} synthetic goals" in page
    assert "test split (500 goals: 0 to 499)" in page
    assert "<script>" in page  # the shared layout (its one inline script), no external assets
    assert "http://" not in page and "https://" not in page


def test_goal_by_index_starts_a_session(client, store):
    path = play_path(client.get("/goal/7"))
    sid = path.rsplit("/", 1)[-1]
    assert store.get(sid).goal == 7
    page = client.get(path).get_data(as_text=True)
    assert store.shop.goals.instruction[7].replace("'", "&#39;") in page
    assert "goal 7" in page


def test_each_session_has_its_own_url(client):
    first, second = play_path(client.get("/goal/3")), play_path(client.get("/goal/3"))
    assert first != second
    assert len(first.rsplit("/", 1)[-1]) >= 22  # secrets.token_urlsafe: not guessable


def test_new_with_goal_field(client, store):
    path = play_path(client.post("/new", data={"goal": "12"}))
    assert store.get(path.rsplit("/", 1)[-1]).goal == 12


@pytest.mark.parametrize("split", ["test", "eval", "train", "all", ""])
def test_new_with_split_draws_from_it(client, store, split):
    for _ in range(5):
        path = play_path(client.post("/new", data={"split": split}))
        session = store.get(path.rsplit("/", 1)[-1])
        assert session.goal in store.goal_range(None if split in ("all", "") else split)


def test_fixed_url_is_the_reference_sites_page(client, store):
    response = client.get("/fixed_5")  # the reference site's search page (tests/server/test_site.py)
    assert response.status_code == 200
    assert store.shop.goals.instruction[5] in html.unescape(response.get_data(as_text=True))


@pytest.mark.parametrize("url", ["/goal/100000", "/goal/-1", "/goal/abc"])  # /fixed_<i>: test_site_errors.py
def test_bad_goal_index_is_a_404_page(client, url):
    response = client.get(url, follow_redirects=True)
    assert response.status_code == 404
    page = response.get_data(as_text=True)
    assert "404" in page and "Traceback" not in page and "Back to the start page" in page


@pytest.mark.parametrize("data", [{"goal": "x1"}, {"goal": "-3"}, {"split": "nope"}])
def test_malformed_new_form_is_a_400(client, data):
    response = client.post("/new", data=data)
    assert response.status_code == 400
    assert "400" in response.get_data(as_text=True)


def test_out_of_range_goal_in_form_is_a_404(client):
    assert client.post("/new", data={"goal": "99999999"}).status_code == 404


def test_empty_split_is_a_404(client, store, monkeypatch):
    # e.g. a small shop whose goals do not reach the eval split
    real = store.goal_range
    monkeypatch.setattr(store, "goal_range", lambda split: range(0) if split == "eval" else real(split))
    response = client.post("/new", data={"split": "eval"})
    assert response.status_code == 404
    assert "holds no goals" in response.get_data(as_text=True)
    assert "eval split" not in client.get("/").get_data(as_text=True)  # not offered in the menu
