"""The embedded default shop is reproducible bit for bit by its documented command."""

from __future__ import annotations

import hashlib
from pathlib import Path

from webshop_gym.cli.app import main

DATA = Path(__file__).resolve().parents[2] / "data"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_data_is_reproduced_by_the_documented_command(tmp_path, capsys):
    assert main(["data", "synth", "--products", "1000", "--seed", "0", "--out", str(tmp_path), "--quiet"]) == 0
    for name in ("items_shuffle.json", "items_ins_v2.json", "items_human_ins.json"):
        assert _digest(tmp_path / name) == _digest(DATA / name), name
