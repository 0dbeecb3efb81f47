"""Runs written by `webshop-gym eval --out` once per session, shared by the run, viewer and report tests.

``scripted_runs`` holds a run of a scripted policy whose episodes fail in known ways: on goals
``3k`` it searches for something else (the target is not on the pages seen), on ``3k + 1`` it opens the
target, goes back and buys another product, on ``3k + 2`` it buys the target without choosing
its options.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.agents.conftest import hf_stack, make_tiny_model, tiny_tokenizer  # noqa: F401  (HF run test)
from webshop_gym.cli import main
from webshop_gym.evaluation.local import evaluate
from webshop_gym.runs.index import RunIndex

NUM_GOALS = 24


def write_run(folder: Path, name: str, policy: str, num_envs: int = 5, seed: int = 0, extra=()) -> tuple[Path, dict]:
    """Run `webshop-gym eval --out` (and --json) as a user does; return the run file and eval's JSON."""
    out, figures = folder / f"{name}.jsonl", folder / f"{name}.json"
    status = main(["eval", "--policy", policy, "--num-goals", str(NUM_GOALS), "--num-envs", str(num_envs),
                   "--seed", str(seed), "--quiet", "--out", str(out), "--json", str(figures), *extra])
    assert status == 0
    return out, json.loads(figures.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory, default_shop) -> Path:
    """A folder with three runs on the default shop's first test goals: rule, random, oracle."""
    folder = tmp_path_factory.mktemp("runs")
    for name in ("rule", "random", "oracle"):
        write_run(folder, name, name)
    return folder


@pytest.fixture(scope="session")
def eval_json(runs_dir) -> dict:
    """Each run's `eval --json` result, by name."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in runs_dir.glob("*.json")}


OTHER_QUERY = {"fashion": "search[organic green tea bags]"}


class Scripted:
    """A per-slot policy that fails on purpose (see the module docstring)."""

    name = "scripted"

    def __init__(self, shop):
        self.shop = shop

    def reset(self, info):
        self.goal = int(info["goal_index"])
        self.mode = self.goal % 3
        self.target = self.shop.goals.asin[self.goal].lower()
        self.opened = self.back = False

    def act(self, obs, info):
        valid, page = info["valid_actions"], info["page"]
        if page == "start":
            if self.mode == 0:
                category = self.shop.goals.category[self.goal]
                return OTHER_QUERY.get(category, "search[men's leather hiking boots]")
            return f"search[{info['instruction']}]"
        if page == "results":
            target = f"click[{self.target}]"
            if self.mode in (1, 2) and target in valid and not self.opened:
                self.opened = True
                return target
            products = [a for a in valid if re.fullmatch(r"click\[[a-z0-9]{10}\]", a) and a != target]
            return products[0] if products else "click[next >]"
        if page == "item":
            if self.mode == 1 and self.opened and not self.back:
                self.back = True
                return "click[< prev]"
            return "click[buy now]"
        return "click[back to search]"


@pytest.fixture(scope="module")
def scripted_runs(tmp_path_factory, default_shop):
    folder = tmp_path_factory.mktemp("scripted")
    evaluate(lambda: Scripted(default_shop), shop=default_shop, num_envs=4, num_goals=24,
             out=folder / "scripted.jsonl")
    return folder


def first_with_tag(folder, name: str, tag: str) -> int:
    index = RunIndex(folder / f"{name}.jsonl")
    index.refresh()
    table = index.table()
    found = [i for i in range(len(table)) if table.tag_name(i) == tag]
    assert found, f"no {tag!r} episode in {name}: {index.tag_counts()}"
    return found[0]


@pytest.fixture
def make_viewer(default_shop):
    """A factory of test clients of the run viewer over a folder of runs (apps closed afterwards)."""
    from webshop_gym.server import create_app

    apps = []

    def make(folder, **config):
        app = create_app({"TESTING": True, "SHOP": default_shop, "RUNS": str(folder), "SEED": 0, "MAX_SESSIONS": 4,
                          **config})
        apps.append(app)
        return app.test_client()

    yield make
    for app in apps:
        app.extensions["webshop_gym"].close()
        app.extensions["webshop_gym_runs"].close()


@pytest.fixture
def fast_backoff(monkeypatch):
    """Served policies retry after 1-20 ms here (their backoff), so fault tests stay quick."""
    from webshop_gym.agents.openai import OpenAIPolicy

    original = OpenAIPolicy.__init__

    def init(self, *args, **kw):
        kw.setdefault("backoff", 0.001)
        kw.setdefault("max_backoff", 0.02)
        original(self, *args, **kw)

    monkeypatch.setattr(OpenAIPolicy, "__init__", init)
