"""The session store: expiry, bounded size, slot reuse, thread safety."""

from __future__ import annotations

import gc
import threading
import tracemalloc

import pytest

from tests.server.conftest import Player
from webshop_gym.error import GoalNotFound


def test_idle_sessions_expire(make_app, clock):
    app = make_app(SESSION_TTL=60)
    client = app.test_client()
    store = app.extensions["webshop_gym"]
    player = Player.start(client, 0)
    clock.advance(59)
    assert client.get(player.url).status_code == 200  # a request refreshes the session
    clock.advance(59)
    player.act("search[shoes]")
    clock.advance(61)
    response = client.get(player.url)
    assert response.status_code == 404 and "expired" in response.get_data(as_text=True)
    assert len(store) == 0 and store.stats["expired"] == 1
    assert client.post(player.url, data={"action": "click[next >]"}).status_code == 404


def test_expiry_frees_slots_for_reuse(make_app, clock):
    app = make_app(SESSION_TTL=10, MAX_SESSIONS=4)
    store = app.extensions["webshop_gym"]
    first = [store.create(goal=i) for i in range(4)]
    clock.advance(11)
    second = [store.create(goal=i) for i in range(4)]
    assert sorted(s.slot for s in second) == sorted(s.slot for s in first)
    assert store.stats["expired"] == 4 and store.stats["evicted"] == 0
    assert all(store.get(s.id) is None for s in first)


def test_no_ttl_means_no_expiry(make_app, clock):
    app = make_app(SESSION_TTL=None)
    store = app.extensions["webshop_gym"]
    session = store.create(goal=0)
    clock.advance(10**9)
    assert store.get(session.id) is session


def test_full_store_evicts_the_least_recently_used(make_app, clock):
    app = make_app(MAX_SESSIONS=3)
    store = app.extensions["webshop_gym"]
    a, b, c = (store.create(goal=0) for _ in range(3))
    clock.advance(1)
    store.get(a.id)  # a is now the most recent
    d = store.create(goal=1)
    assert store.get(b.id) is None and store.stats["evicted"] == 1
    assert all(s.id in store for s in (a, c, d))
    assert d.slot == b.slot


def test_evicted_slot_starts_clean(make_app):
    app = make_app(MAX_SESSIONS=1)
    client = app.test_client()
    store = app.extensions["webshop_gym"]
    old = Player.start(client, 0)
    old.act("search[shoes]")
    new = Player.start(client, 9)
    assert client.get(old.url).status_code == 404
    state = new.state()
    assert state["info"]["page"] == "start" and state["info"]["steps"] == 0 and state["goal_index"] == 9
    assert store.engine.state.results[store.get(new.sid).slot] is None


def test_memory_stays_flat_with_thousands_of_sessions(make_app):
    app = make_app(MAX_SESSIONS=50, LOG_DIR=None)
    store = app.extensions["webshop_gym"]
    for i in range(500):  # warm up caches
        store.create(goal=i % 100)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(5000):
            session = store.create(goal=i % 100)
            if i % 10 == 0:
                store.act(session.id, "click[nothing here]")
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(store) == 50 and len(store._free) == 0
    assert store.stats["created"] == 5500 and store.stats["evicted"] == 5450
    assert grown < 256 * 1024, grown


def test_bad_goal_and_split(store):
    with pytest.raises(GoalNotFound):
        store.create(goal=len(store.shop.goals))
    with pytest.raises(ValueError):
        store.create(split="nope")


def test_concurrent_players(make_app):
    app = make_app(MAX_SESSIONS=16, LOG_DIR=None)
    errors: list = []

    def play(goal: int) -> None:
        try:
            client = app.test_client()
            player = Player.start(client, goal)
            for action in ["search[gluten free snack]", "click[next >]", "click[< prev]", "click[back to search]"]:
                player.act(action)
            assert player.state()["info"]["steps"] == 4
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=play, args=(g,)) for g in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
