"""Architecture rules: a pure core, and thin edges."""

from __future__ import annotations

import json
import subprocess
import sys


def test_core_imports_no_web_or_search_stack():
    code = (
        "import sys, json; import webshop_gym.core.sim, webshop_gym.core.actions, webshop_gym.core.pages; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('flask', 'jinja2', 'pyserini', 'jnius', 'bs4', 'spacy', 'numba'))))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert loaded == []


def test_text_observations_never_parse_html(default_shop, monkeypatch):
    import bs4

    def refuse(*args, **kwargs):
        raise AssertionError("the text path parsed HTML")

    monkeypatch.setattr(bs4, "BeautifulSoup", refuse)
    from webshop_gym import WebShopEnv

    env = WebShopEnv(shop=default_shop, observation_mode="text_rich")
    obs, info = env.reset(options={"goal_index": 0})
    env.step("search[boots]")
    env.step(f"click[{env.engine.info(0)['available_actions']['clickables'][2]}]")
