"""The simulator's caches are bounded in bytes, whatever the queries (issue 13: memory in bytes)."""

from __future__ import annotations

import numpy as np

from webshop_gym import WebShopEnv
from webshop_gym.core import sim
from webshop_gym.utils.bytelru import ByteLRU


def test_byte_lru_evicts_by_bytes_and_refuses_giants():
    cache = ByteLRU(1000)
    for i in range(20):
        cache.put(i, str(i), 100)
    assert cache.nbytes == 1000 and len(cache) == 10 and cache.get(0) is None and cache.get(19) == "19"
    cache.get(10)  # recently used: survives the next insert
    cache.put("new", "x", 100)
    assert cache.get(10) == "10" and cache.get(11) is None
    cache.put("giant", "y", 126)  # more than an eighth of the budget: not kept
    assert cache.get("giant") is None and cache.nbytes <= 1000


def test_special_queries_with_unique_text_stay_within_budget(default_shop, monkeypatch):
    monkeypatch.setattr(sim, "SPECIAL_CACHE_BYTES", 20_000)
    env = WebShopEnv(shop=default_shop, max_steps=None)
    env.reset(options={"goal_index": 0})
    for i in range(300):
        env.step(f"search[<q> no such product type {i} {'x' * 200}]")
    cache = env.engine.ctx._special
    assert 0 < cache.nbytes <= 20_000 and len(cache) < 300


def test_results_pages_stay_within_budget(default_shop, monkeypatch):
    monkeypatch.setattr(sim, "PAGE_CACHE_BYTES", 200_000)
    env = WebShopEnv(shop=default_shop, max_steps=None)
    _, info = env.reset(options={"goal_index": 0})
    words = " ".join(default_shop.catalog.title[r] for r in range(40)).lower().split()
    rng = np.random.default_rng(0)
    for _ in range(200):
        env.step("search[" + " ".join(rng.choice(words, 3)) + "]")
        env.step("click[next >]")
    cache = env.engine.ctx._pages
    assert 0 < cache.nbytes <= 200_000
    assert len(cache) < 400  # pages were evicted


def test_the_page_a_step_is_on_is_read_once_from_the_shared_cache(default_shop):
    """The click, the text and both action lists of a step read the results page without the shared cache."""
    env = WebShopEnv(shop=default_shop, max_steps=None)
    env.reset(options={"goal_index": 0})
    _, _, _, _, info = env.step("search[shirt]")
    ctx = env.engine.ctx
    hits, misses = ctx._pages.hits, ctx._pages.misses
    for _ in range(3):
        obs, _, _, _, again = env.step("click[no such button]")
        assert again["valid_actions"] == info["valid_actions"] and again["invalid_action"]
    assert (ctx._pages.hits, ctx._pages.misses) == (hits, misses)
    first = ctx.results_view(env.engine.state.results[0], 1)
    env.step("click[next >]")  # another page of the same results: its own view
    second = ctx.results_view(env.engine.state.results[0], 2)
    assert second is not first and list(second.rows) != list(first.rows)
    assert ctx.results_view(env.engine.state.results[0], 1) is first  # back from the shared cache
    other = np.array(env.engine.state.results[0])  # equal rows, another array: not the remembered page
    assert ctx.results_view(other, 1) is not first and ctx.results_view(other, 1).clickables == first.clickables
