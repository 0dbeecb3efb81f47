"""The cache: stages keyed by what they depend on, reused across processes, usable read-only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import product, write_shop
from webshop_gym.error import CacheNotWritable

ROOT = Path(__file__).resolve().parents[2]


def _small_shop(folder: Path) -> Path:
    products = [
        product("B000000001", pricing="$12.50", customization_options={
            "Size": [{"value": "Small"}, {"value": "Large"}], "Color": [{"value": "Red"}, {"value": "Blue"}]}),
        product("B000000002", name="Crunchy Peanut Butter Bars", pricing="$20.00 - $30.00"),
        product("B000000003", name="Dark Chocolate Gift Basket", pricing="$45.00"),
        product("B000000004", name="Sea Salt Potato Chips", pricing="$7.00"),
    ]
    attributes = {
        "B000000001": {"attributes": ["vegan", "low sugar"], "instruction": "Find me bars.",
                       "instruction_attributes": ["vegan", "low sugar"]},
        "B000000002": {"attributes": ["vegan"], "instruction": "I need snacks", "instruction_attributes": ["vegan"]},
    }
    human = {"B000000004": [{"instruction": "cheap chips", "instruction_attributes": ["cheap"],
                             "instruction_options": []}]}
    return write_shop(folder, products, attributes, human)


def _drop_file_override() -> None:  # runs in the child before exec
    """Take away root's power to ignore file permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            os._exit(97)


def _as_reader(code: str, cache: Path, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python -c code`` unable to write ``cache`` (write bits off; root loses its override)."""
    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    modes = {}
    for path in [cache, *cache.rglob("*")]:
        modes[path] = path.stat().st_mode
        path.chmod(modes[path] & ~0o222)
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True,
                              preexec_fn=_drop_file_override if os.geteuid() == 0 else None, timeout=300)
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    if done.returncode == 97:
        pytest.skip("cannot drop root's file-permission override here")
    return done


@pytest.fixture()
def shared_base():
    """A world-readable folder (another user must read the shop and the cache)."""
    base = Path(tempfile.mkdtemp(prefix="webshop-gym-ro-"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_complete_cache_loads_read_only_after_touch(shared_base, monkeypatch):
    from webshop_gym.shop import load_shop

    shop_dir, cache = _small_shop(shared_base / "shop"), shared_base / "cache"
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(cache))
    shop = load_shop(shop_dir, progress=False)
    expected = shop.reward(0, "B000000003")[0]
    os.utime(shop_dir / "items_shuffle.json", ns=(1, 1))  # a new mtime: the file-hash memo is stale

    code = (
        "import json; from webshop_gym.shop import load_shop\n"
        f"shop = load_shop({str(shop_dir)!r}, progress=False)\n"
        "print(json.dumps({'report': shop.load_report, 'reward': shop.reward(0, 'B000000003')[0]}))"
    )
    done = _as_reader(code, cache, shared_base)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    stages = {k: v for k, v in result["report"].items() if isinstance(v, dict)}
    assert set(stages) == {"catalog", "goals", "prices", "nouns", "reward_tables"}
    assert all(v["cached"] for v in stages.values())
    assert result["reward"] == expected

    # A stage the cache lacks (another price seed) is one clear line, not a PermissionError.
    done = _as_reader(
        f"import sys; from webshop_gym.cli.app import main; sys.exit(main(['data', 'goals', {str(shop_dir)!r}, "
        f"'--price-seed', '7', '--out', {str(shared_base / 'goals.json')!r}]))", cache, shared_base)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("webshop-gym data goals: error: cannot write the prices of seed 7 into ")
    assert "WEBSHOP_GYM_CACHE" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_unwritable_cache_location_is_a_clear_error(tmp_path, monkeypatch):
    from webshop_gym.data.catalog import load_catalog

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(blocker / "cache"))
    with pytest.raises(CacheNotWritable, match=r"cannot write the compiled catalog of .* the cache folder is not "
                                               r"writable\. Point WEBSHOP_GYM_CACHE at a writable folder"):
        load_catalog(_small_shop(tmp_path / "shop"), progress=False)
