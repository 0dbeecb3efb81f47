"""benchmarks/replay.py: the ratio to the reference only from a side-by-side run.

The reference (princeton-nlp/WebShop) is not needed: the no-reference path runs on a tiny golden
set recorded here on the embedded shop, and a bad ``--reference`` must fail before anything runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "replay.py"


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env=os.environ.copy())


@pytest.fixture(scope="module")
def tiny_golden(tmp_path_factory) -> Path:
    """The embedded shop with a golden/ folder of 3 trajectories played by our env."""
    from webshop_gym import WebShopEnv, load_shop

    shop_dir = tmp_path_factory.mktemp("shop")
    for item in (ROOT / "data").glob("*.json"):
        (shop_dir / item.name).symlink_to(item)
    golden = shop_dir / "golden"
    golden.mkdir()
    shop = load_shop(shop_dir, progress=False)
    shop.goals.save(golden / "goals.json", shop.catalog)
    env = WebShopEnv(shop=shop)
    lines = []
    for goal in range(3):
        obs, info = env.reset(options={"goal_index": goal})
        steps = [{"action": None, "obs_text": obs, "reward": 0.0, "done": False}]
        actions = [f"search[{shop.goals[goal]['instruction_text']}]", "click[next >]", "click[< prev]"]
        for i, action in enumerate(actions):
            obs, reward, terminated, _, info = env.step(action)
            steps.append({"action": action, "obs_text": obs, "reward": float(reward), "done": terminated})
            if i == 0:  # then a product of the first results page, and buy it
                product = next(c for c in info["available_actions"]["clickables"] if c.startswith("b0"))
                actions += [f"click[{product}]", "click[buy now]"]
        assert steps[-1]["done"]
        lines.append(json.dumps({"goal_index": goal, "policy": "test", "steps": steps}))
    env.close()
    (golden / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    return shop_dir


def test_without_reference_no_ratio(tiny_golden, tmp_path):
    out = tmp_path / "replay.json"
    proc = run("--shop", str(tiny_golden), "--modes", "single", "vector", "--repeat", "1", "--num-envs", "2",
               "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert [r["mode"] for r in result["rows"]] == ["single", "vector"]
    for row in result["rows"]:
        assert row["trajectories"] == 3 and row["steps"] == 15 and row["mismatches"] == 0
        assert row["steps_per_s"] > 0
        assert "x_reference" not in row
    assert not any("reference" in key for key in result)
    assert "x_reference" not in proc.stdout


@pytest.mark.parametrize("kind", ["missing", "not-a-checkout"])
def test_bad_reference_is_one_line_exit_2(tiny_golden, tmp_path, kind):
    reference = tmp_path / "WebShop"
    if kind == "not-a-checkout":
        (reference / "web_agent_site").mkdir(parents=True)
    out = tmp_path / "replay.json"
    proc = run("--shop", str(tiny_golden), "--modes", "single", "--repeat", "1", "--reference", str(reference),
               "--json", str(out), timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("replay.py: error: --reference ")
    assert ("no such directory" if kind == "missing" else "not a checkout of princeton-nlp/WebShop") in lines[0]
    assert "Traceback" not in proc.stderr and not out.exists()


def test_reference_python_must_be_executable(tiny_golden, tmp_path):
    reference = tmp_path / "WebShop"
    text_env = reference / "web_agent_site" / "envs" / "web_agent_text_env.py"
    text_env.parent.mkdir(parents=True)
    text_env.write_text("")
    (reference / "data").mkdir()
    for name in ("items_shuffle_1000.json", "items_ins_v2_1000.json", "items_human_ins.json"):
        (reference / "data" / name).write_text("[]")
    index = reference / "search_engine" / "indexes_1k"
    index.mkdir(parents=True)
    (index / "segments_1").write_bytes(b"")
    proc = run("--shop", str(tiny_golden), "--modes", "single", "--reference", str(reference),
               "--reference-python", str(tmp_path / "no-python"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"replay.py: error: --reference-python {tmp_path / 'no-python'}: "
                                                "not an executable file"]


def test_reference_without_index_is_one_line_exit_2(tiny_golden, tmp_path):
    reference = tmp_path / "WebShop"
    text_env = reference / "web_agent_site" / "envs" / "web_agent_text_env.py"
    text_env.parent.mkdir(parents=True)
    text_env.write_text("")
    proc = run("--shop", str(tiny_golden), "--modes", "single", "--reference", str(reference), timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("replay.py: error: items_shuffle_1000.json is neither in ")


def test_reference_that_cannot_import_is_one_line_exit_2(tiny_golden, tmp_path):
    """A checkout whose requirements are missing in --reference-python: the module named, exit 2."""
    reference = tmp_path / "WebShop"
    package = reference / "web_agent_site"
    (package / "envs").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "utils.py").write_text("import no_such_requirement_of_the_reference\n")
    (package / "envs" / "web_agent_text_env.py").write_text("")
    (reference / "data").mkdir()
    for name in ("items_shuffle_1000.json", "items_ins_v2_1000.json", "items_human_ins.json"):
        (reference / "data" / name).write_text("[]")
    (reference / "search_engine" / "indexes_1k").mkdir(parents=True)
    (reference / "search_engine" / "indexes_1k" / "segments_1").write_bytes(b"")
    out = tmp_path / "replay.json"
    proc = run("--shop", str(tiny_golden), "--modes", "single", "--reference", str(reference), "--json", str(out),
               timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"replay.py: error: the reference could not be imported by {sys.executable} ")
    assert "No module named 'no_such_requirement_of_the_reference'" in lines[0]
    assert "docs/benchmarks.md" in lines[0] and not out.exists()


def test_a_wrong_golden_page_or_reward_is_a_mismatch_in_every_mode(tiny_golden, tmp_path):
    """The outputs kept during the timed replay are compared after it: a changed page, a changed
    first page and a changed reward are each counted, and the run fails."""
    import shutil

    shop = tmp_path / "shop"
    shutil.copytree(tiny_golden, shop, symlinks=True)
    path = shop / "golden" / "trajectories.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["steps"][2]["obs_text"] += " changed"
    rows[1]["steps"][0]["obs_text"] += " changed"
    rows[2]["steps"][-1]["reward"] += 0.5
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "replay.json"
    proc = run("--shop", str(shop), "--modes", "single", "vector", "--repeat", "1", "--num-envs", "2", "--json", str(out))
    assert proc.returncode != 0 and "MISMATCHES" in proc.stderr
    assert [r["mismatches"] for r in json.loads(out.read_text())["rows"]] == [3, 3]
