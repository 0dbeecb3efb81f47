"""Memo files check themselves: an altered memo is found, named and computed again (issue 46, item 3).

Before, the reachability memo was plain JSON: altering its values turned the unreachable count
of a run from 2 into 30 (goals the agent solved counted as unreachable), and ``data verify``
said 0 damaged.  The goal-set digest and the source files' hashes were kept the same way.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.data.test_cache import _small_shop
from webshop_gym.utils.memo import (
    FORMAT,
    find_memos,
    memo_damage,
    read_memo,
    remove_damaged_memos,
    write_memo,
)

ROOT = Path(__file__).resolve().parents[2]


def _alter(path: Path, change) -> None:
    """Edit a memo's data by hand, as a person (or a bad disk) would, leaving its checksum as it was."""
    record = json.loads(path.read_text())
    change(record["data"])
    path.write_text(json.dumps(record))


def test_a_memo_round_trips_and_an_altered_one_is_named_removed_and_not_read(tmp_path, caplog):
    memo = tmp_path / "x.memo.json"
    assert read_memo(memo) is None and memo_damage(memo) is None  # none yet: nothing wrong
    assert write_memo(memo, {"best": [1.0, 0.5], "reason": ["", "why"]})
    assert read_memo(memo) == {"best": [1.0, 0.5], "reason": ["", "why"]}
    assert json.loads(memo.read_text())["format"] == FORMAT
    assert oct(memo.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # like any cache file, not private
    _alter(memo, lambda data: data["best"].__setitem__(0, 0.0))
    assert memo_damage(memo) == "its data does not match its checksum"
    with caplog.at_level(logging.WARNING, logger="webshop_gym"):
        assert read_memo(memo) is None
    assert [r.getMessage() for r in caplog.records] == [
        f"webshop-gym: warning: recomputing the damaged memo {memo} (its data does not match its checksum)"]
    assert not memo.exists()  # removed: its reader writes it again
    memo.write_text("{not json")
    assert memo_damage(memo).startswith("it cannot be read as JSON")
    memo.write_text(json.dumps({"best": [1.0]}))  # an old plain-JSON memo
    assert memo_damage(memo) == f"it is not a {FORMAT} file"
    assert remove_damaged_memos([memo]) == [(memo, f"it is not a {FORMAT} file")] and not memo.exists()
    with pytest.raises(ValueError, match="ends in '.memo.json'"):
        write_memo(tmp_path / "x.json", 1)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _python(code: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)


def _cli(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "WEBSHOP_GYM_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "webshop_gym.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)


REACH = """
import json, sys
from webshop_gym import load_shop
shop = load_shop(sys.argv[1] if len(sys.argv) > 1 else {shop!r})
r = shop.reachability()
print(json.dumps({{"unreachable": r.unreachable, "best": r.best.tolist(), "digest": shop.goals.digest(),
                  "folder": str(shop.goals.seed_folder)}}))
"""


def test_an_altered_reachability_memo_is_found_by_load_verify_and_compile(tmp_path):
    shop = _small_shop(tmp_path / "shop")
    cache = tmp_path / "cache"
    first = _python(REACH.format(shop=str(shop)), cache)
    assert first.returncode == 0, first.stderr
    truth = json.loads(first.stdout)
    folder = Path(truth["folder"])
    memo = folder / "reachability-v3.memo.json"
    assert read_memo(memo)["best"] == truth["best"] and len(truth["best"]) >= 2

    # every goal's best reward set to 0.5: all unreachable, if the memo were believed
    _alter(memo, lambda data: data.__setitem__("best", [0.5] * len(data["best"])))
    verify = _cli(["data", "verify", str(shop)], cache)
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert f"DAMAGED  {memo}: its data does not match its checksum" in verify.stdout
    assert verify.stdout.strip().splitlines()[-1].startswith(f"{_folders(verify.stdout)} folders and ")
    assert ", 1 damaged (to repair, run `webshop-gym data compile " in verify.stdout

    again = _python(REACH.format(shop=str(shop)), cache)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["unreachable"] == truth["unreachable"]
    assert json.loads(again.stdout)["best"] == truth["best"]
    assert again.stderr.strip() == (f"webshop-gym: warning: recomputing the damaged memo {memo} "
                                    "(its data does not match its checksum)")
    assert read_memo(memo)["best"] == truth["best"]  # written again, intact

    _alter(memo, lambda data: data.__setitem__("best", [0.5] * len(data["best"])))
    compiled = _cli(["data", "compile", str(shop), "--no-index"], cache)
    assert compiled.returncode == 0, compiled.stderr
    assert f"removed {memo} (damaged: its data does not match its checksum)" in compiled.stdout
    verified = _cli(["data", "verify", str(shop)], cache)
    assert verified.returncode == 0 and verified.stdout.strip().endswith(" checked, 0 damaged")
    assert f"ok       {folder / 'digest.memo.json'}" in verified.stdout


def _folders(stdout: str) -> int:
    return sum(1 for line in stdout.splitlines() if line.split()[:1] in (["ok"], ["DAMAGED"])
               and not line.rstrip().split(":")[0].endswith(".memo.json"))


def test_an_altered_goal_set_digest_is_computed_again(tmp_path):
    shop = _small_shop(tmp_path / "shop")
    cache = tmp_path / "cache"
    truth = json.loads(_python(REACH.format(shop=str(shop)), cache).stdout)
    memo = Path(truth["folder"]) / "digest.memo.json"
    assert read_memo(memo) == truth["digest"]
    record = json.loads(memo.read_text())
    record["data"] = "0" * 16
    memo.write_text(json.dumps(record))
    again = _python(REACH.format(shop=str(shop)), cache)
    assert json.loads(again.stdout)["digest"] == truth["digest"]
    assert f"recomputing the damaged memo {memo}" in again.stderr


def test_the_source_hashes_memo_is_checked_and_bounded_in_bytes(tmp_path, monkeypatch):
    from webshop_gym.data import records

    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(records, "MEMO_BYTES", 4000)
    files = []
    for i in range(60):
        path = tmp_path / "src" / f"file-{i:03d}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"[{i}]")
        files.append(path)
    import hashlib

    for path in files:
        assert records.file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    memo = tmp_path / "cache" / records.FILE_HASHES_MEMO
    assert find_memos(tmp_path / "cache") == [memo]
    kept = read_memo(memo)
    assert 0 < len(kept) < 60 and len(memo.read_text()) < 4000 + 200  # the oldest went first
    assert any(k.startswith(str(files[-1].resolve()) + "|") for k in kept)
    _alter(memo, lambda data: data.__setitem__(next(iter(data)), "0" * 64))  # a wrong hash kept by hand
    first_kept = next(p for p in files if any(k.startswith(str(p.resolve()) + "|") for k in kept))
    assert records.file_sha256(first_kept) == hashlib.sha256(first_kept.read_bytes()).hexdigest()
