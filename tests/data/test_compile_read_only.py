"""``data compile`` prepares everything a run needs, so a read-only shared cache works (issue 20, G4)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.test_cache import _as_reader, _small_shop, shared_base  # noqa: F401 (a fixture)
from webshop_gym.utils.integrity import VERIFIED_ENV

ROOT = Path(__file__).resolve().parents[2]


def _eval(shop: Path, *flags: str) -> str:
    args = ["eval", "--shop", str(shop), "--policy", "rule", "--num-envs", "1", "--num-goals", "1", "--quiet", *flags]
    return f"import sys; from webshop_gym.cli import main; sys.exit(main({args!r}))"


@pytest.mark.slow
def test_compiled_cache_serves_every_run_read_only(shared_base):  # noqa: F811
    shop, cache = _small_shop(shared_base / "shop"), shared_base / "cache"
    env = {k: v for k, v in os.environ.items() if k != VERIFIED_ENV}
    env.update(WEBSHOP_GYM_CACHE=str(cache), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "webshop_gym.cli", "data", "compile", str(shop), "--human-goals",
                           "--price-seed", "0", "--price-seed", "3"], env=env, cwd=shared_base,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "synthetic goals (price seed 0)" in done.stdout and "human goals (price seed 3)" in done.stdout
    assert "search postings" in done.stdout  # built in Python: no Lucene index

    # Read-only from here: every run the compile prepared works, searching included (the rule policy searches).
    for flags in ([], ["--price-seed", "3"], ["--human-goals"], ["--human-goals", "--price-seed", "3"]):
        run = _as_reader(_eval(shop, *flags), cache, shared_base)
        assert run.returncode == 0, (flags, run.stderr)
        assert "Score" in run.stdout and "Traceback" not in run.stderr
    info = _as_reader(f"import sys; from webshop_gym.cli import main; sys.exit(main(['data', 'info', {str(shop)!r}]))",
                      cache, shared_base)
    assert info.returncode == 0, info.stderr

    # What it did not prepare is still one clear line.
    other = _as_reader(_eval(shop, "--price-seed", "5"), cache, shared_base)
    assert other.returncode == 2
    assert "cannot write the prices of seed 5" in other.stderr and len(other.stderr.strip().splitlines()) == 1
