"""No string raises out of ``step`` (issue 52, item 3): a search the engine fails on is one slot's invalid action.

The failing search is simulated by an analyser that raises for one query; the other slots of the
same batch (vector env, the OpenEnv server's batch of sessions) get their results as usual, and the
failing slot's ``info`` says why its action was invalid.  The real case, a curly apostrophe on an
install without Pyserini, is played in a subprocess that cannot import Pyserini or pyjnius.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from webshop_gym import WebShopEnv, WebShopVectorEnv
from webshop_gym.search import bm25 as _bm25

BAD = "zebra striped crash query"
"""The query whose analysis raises (a query no other test searches, so that no cache holds it)."""

QUERIES = ["red dress", "gluten free snack", BAD, "wireless headphones"]


@pytest.fixture
def failing_analyzer(monkeypatch):
    real = _bm25.analyze

    def analyze(text, *args, **kwargs):
        if text == BAD:
            raise RuntimeError("the analyser broke on this query")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(_bm25, "analyze", analyze)


def _check_failed(info: dict) -> None:
    assert info["invalid_action"] is True
    assert info["invalid_reason"] == "the search failed (RuntimeError: the analyser broke on this query)"
    assert info["page"] == "start"


def test_a_failing_search_is_an_invalid_action_of_the_single_env(default_shop, failing_analyzer, caplog):
    env = WebShopEnv(shop=default_shop)
    env.reset(seed=0, options={"goal_index": 3})
    with caplog.at_level(logging.WARNING, logger="webshop_gym"):
        obs, reward, terminated, truncated, info = env.step(f"search[{BAD}]")
    _check_failed(info)
    assert (reward, terminated, truncated, info["steps"]) == (0.0, False, False, 1)
    assert "Search" in obs and "[SEP] B0" not in obs  # still the start page
    assert [r.getMessage() for r in caplog.records] == [
        f"webshop-gym: warning: search[{BAD}]: the search failed (RuntimeError: the analyser broke on this query); "
        "the action is invalid"]
    obs, _, _, _, info = env.step("search[red dress]")  # the next search works, and the reason is gone
    assert info["page"] == "results" and not info["invalid_action"] and "invalid_reason" not in info
    assert obs.count("[SEP] B0") == 10


@pytest.mark.parametrize("columns", [True, False], ids=["in-process", "slot-by-slot"])
def test_a_failing_search_fails_only_its_slot_of_a_vector_batch(default_shop, failing_analyzer, columns):
    envs = WebShopVectorEnv(num_envs=4, shop=default_shop)
    try:
        if not columns:  # the infos of a pool of workers: engine.info slot by slot
            envs.engine.info_columns = None
        envs.reset(seed=0, options={"goal_index": [0, 1, 2, 3]})
        obs, rewards, terms, truncs, infos = envs.step([f"search[{q}]" for q in QUERIES])
        assert infos["invalid_action"].tolist() == [False, False, True, False]
        assert infos["page"].tolist() == ["results", "results", "start", "results"]
        assert infos["_invalid_reason"].tolist() == [False, False, True, False]
        assert infos["invalid_reason"][2] == "the search failed (RuntimeError: the analyser broke on this query)"
        for i in (0, 1, 3):
            assert obs[i].count("[SEP] B0") == 10
            assert np.array_equal(envs.engine.state.results[i], default_shop.search(QUERIES[i]))
        assert rewards.tolist() == [0.0] * 4 and not terms.any() and not truncs.any()
        # the next step of the same slots: the reason is gone
        obs, _, _, _, infos = envs.step(["search[red dress]"] * 4)
        assert not infos["invalid_action"].any() and "invalid_reason" not in infos
    finally:
        envs.close()


def test_a_failing_search_fails_only_its_session_of_an_openenv_batch(default_shop, failing_analyzer):
    pytest.importorskip("openenv", reason="OpenEnv is not installed: pip install 'webshop-gym[openenv]'")
    from webshop_gym.integrations.openenv.environment import SlotPool, WebShopEnvironment
    from webshop_gym.integrations.openenv.models import WebShopAction

    pool = SlotPool(default_shop, num_slots=4)
    sessions = [WebShopEnvironment(pool=pool) for _ in QUERIES]
    for i, env in enumerate(sessions):
        env.reset(goal_index=i)

    async def one_turn():  # every session steps in the same turn of the event loop: one engine batch
        return await asyncio.gather(*(env.step_async(WebShopAction(action=f"search[{q}]"))
                                      for env, q in zip(sessions, QUERIES)))

    observations = asyncio.run(one_turn())
    assert pool.stats["batches"] == 1 and pool.stats["steps"] == 4
    assert [o.invalid_action for o in observations] == [False, False, True, False]
    assert [o.page for o in observations] == ["results", "results", "start", "results"]
    assert observations[2].invalid_reason == "the search failed (RuntimeError: the analyser broke on this query)"
    assert [o.invalid_reason for o in observations[:2] + observations[3:]] == [None] * 3
    assert all(o.text.count("[SEP] B0") == 10 for o in observations[:2] + observations[3:])
    for env in sessions:
        env.close()


def test_a_curly_apostrophe_searches_without_pyserini_or_java(tmp_path):
    """The issue's case: ``search[women’s shoes]`` on a plain install (no Pyserini, no pyjnius)."""
    script = textwrap.dedent("""
        import json, sys
        sys.modules["pyserini"] = None  # as after a plain `pip install webshop-gym`
        sys.modules["jnius"] = None
        import gymnasium as gym
        import webshop_gym
        import webshop_gym.search.java

        env = gym.make("webshop_gym:WebShop-v0")
        env.reset(seed=0, options={"goal_index": 0})
        obs, reward, terminated, truncated, info = env.step("search[women\\u2019s shoes]")
        print(json.dumps({"results": obs.count("[SEP] B0"), "page": info["page"],
                          "invalid": info["invalid_action"], "reason": info.get("invalid_reason"),
                          "java": webshop_gym.search.java.is_started()}))
    """)
    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"results": 10, "page": "results", "invalid": False, "reason": None, "java": False}
