"""docs/training.md's table of stacks: every row names the test that runs that stack's own code with its line."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _table() -> list[dict[str, str]]:
    lines = (ROOT / "docs" / "training.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| stack | entry point |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        assert len(cells) == len(header), line
        rows.append(dict(zip(header, cells)))
    return rows


def test_every_stack_row_names_an_existing_test_and_its_line():
    rows = _table()
    assert {"stack", "entry point", "extra", "the one line that plugs WebShop in", "checked by"} <= set(rows[0])
    stacks = " ".join(r["stack"] for r in rows)
    for name in ("TRL", "verifiers", "OpenEnv harnesses", "OpenEnv clients", "SkyRL", "GEM", "verl-agent",
                 "AgentGym", "NeMo Gym"):
        assert name in stacks, name
    for row in rows:
        if row["stack"].startswith("NeMo Gym"):
            assert "Python >= 3.13.14" in row["entry point"] and row["checked by"] == "—"
            continue
        assert row["the one line that plugs WebShop in"].startswith("`"), row
        found = re.match(r"`(tests/[\w/]+\.py)::(\w+)`", row["checked by"])
        assert found, row["checked by"]
        path, name = ROOT / found.group(1), found.group(2)
        assert path.is_file(), path
        assert re.search(rf"^(async )?def {name}\(", path.read_text(), re.M), f"{path}::{name}"
