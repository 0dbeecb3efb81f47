"""The first command of a new install says what it is compiling and for how long (issue 56, item 5)."""

from __future__ import annotations

import pytest

from webshop_gym.cli.app import main
from webshop_gym.utils import first_run


def test_an_empty_numba_cache_is_a_first_run(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not first_run.kernels_cached()
    (tmp_path / "reward_0a1b").mkdir()
    (tmp_path / "reward_0a1b" / "_kernels.score-52.py312.nbi").write_bytes(b"")
    assert not first_run.kernels_cached()  # the search kernels are not compiled yet
    (tmp_path / "search_2c3d").mkdir()
    (tmp_path / "search_2c3d" / "_kernels.top_k-17.py312.nbi").write_bytes(b"")
    assert first_run.kernels_cached()


@pytest.mark.parametrize("cached", [False, True])
def test_demo_says_what_it_compiles_before_it_does(cached, monkeypatch, capsys):
    monkeypatch.setattr(first_run, "kernels_cached", lambda: cached)
    assert main(["demo", "--max-steps", "3"]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[:1] == ([] if cached else [first_run.MESSAGE])
    assert "about 1-3 minutes, once" in first_run.MESSAGE
    assert captured.out.startswith("shop: ")  # the demo itself is unchanged


def test_quiet_commands_and_commands_without_a_shop_say_nothing(monkeypatch, capsys):
    monkeypatch.setattr(first_run, "kernels_cached", lambda: False)
    assert main(["eval", "--policy", "rule", "-n", "2", "--quiet"]) == 0
    assert first_run.MESSAGE not in capsys.readouterr().err
    assert main(["protocols"]) == 0
    assert first_run.MESSAGE not in capsys.readouterr().err
