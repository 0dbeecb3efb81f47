"""Runs written by `webshop-gym eval --out` once per session, shared by the run, viewer and report tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.conftest import hf_stack, make_tiny_model, tiny_tokenizer  # noqa: F401  (HF run test)
from webshop_gym.cli.main import main

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
