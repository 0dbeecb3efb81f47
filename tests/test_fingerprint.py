"""The shop fingerprint: what tells two users they evaluated on the same shop and goals."""

from __future__ import annotations

import json
import subprocess
import sys

from webshop_gym import load_shop
from webshop_gym.cli.app import main


def test_fingerprint_identifies_shop_goals_and_prices(default_shop):
    a = default_shop.fingerprint()
    assert set(a) == {"catalog", "files", "content", "products", "goals", "goal_kind", "price_seed", "goal_set"}
    assert a["products"] == 1000 and a["goal_kind"] == "synthetic" and a["price_seed"] == 0
    assert set(a["files"]) == {"items_shuffle.json", "items_ins_v2.json", "items_human_ins.json"}
    assert load_shop(progress=False).fingerprint() == a  # stable
    reseeded = load_shop(seed=1, progress=False).fingerprint()
    assert reseeded["catalog"] == a["catalog"] and reseeded["files"] == a["files"]
    assert reseeded["goal_set"] != a["goal_set"]  # other prices and caps
    human = load_shop(human_goals=True, progress=False).fingerprint()
    assert human["goal_set"] != a["goal_set"] and human["goal_kind"] == "human"


def test_another_process_computes_the_same_fingerprint(default_shop):
    code = "import json, webshop_gym; print(json.dumps(webshop_gym.load_shop(progress=False).fingerprint()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == default_shop.fingerprint()


def test_data_info_and_eval_print_it(default_shop, tmp_path, capsys):
    fingerprint = default_shop.fingerprint()
    assert main(["data", "info"]) == 0
    out = capsys.readouterr().out
    assert f"goal_set: {fingerprint['goal_set']}" in out and f"catalog: {fingerprint['catalog']}" in out
    result = tmp_path / "r.json"
    assert main(["eval", "--num-goals", "2", "--num-envs", "2", "--json", str(result), "--quiet"]) == 0
    assert f"goal set {fingerprint['goal_set']}" in capsys.readouterr().out
    assert json.loads(result.read_text())["fingerprint"] == fingerprint
