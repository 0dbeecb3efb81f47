"""Damaged cache folders are found at load and rebuilt (one warning line), or named when read-only.

Issue 20, G3: truncated or missing ``.npy`` files, garbage ``meta.json`` and a truncated postings
file used to end in raw numpy/JSON errors; 4 overwritten bytes of ``asin.data.npy`` or two
swapped offset files loaded silently and showed scrambled titles.  Each damage is made to a
complete cache and the user's command (``webshop-gym demo``, which searches and buys) is run in
a fresh process: it must print exactly what an undamaged cache prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.data.test_cache import _as_reader, _small_shop
from webshop_gym.utils.integrity import MANIFEST, VERIFIED_ENV, damage, verify_tree

ROOT = Path(__file__).resolve().parents[2]
DEMO = ["demo", "--goal", "0"]


def _env(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != VERIFIED_ENV}
    return {**env, "WEBSHOP_GYM_CACHE": str(cache), "PYTHONPATH": str(ROOT)}


def _cli(args: list[str], cache: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "webshop_gym.cli", *args], env=_env(cache), cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A small shop, its complete cache (catalog, nouns, goals, index, postings) and the demo's output."""
    base = tmp_path_factory.mktemp("integrity")
    base.chmod(0o755)
    shop = _small_shop(base / "shop")
    cache = base / "cache"
    done = _cli([*DEMO, "--shop", str(shop)], cache, base)
    assert done.returncode == 0, done.stderr
    catalogs = list((cache / "catalogs").iterdir())
    folder = next(p for p in catalogs if p.is_dir())
    assert not (folder / "index-v1").exists()  # the bm25 backend builds no Lucene index
    indexed = _cli(["data", "index", str(shop), "--lucene"], cache, base)  # the pyserini backend's, for the repairs
    assert indexed.returncode == 0, indexed.stderr
    assert (folder / MANIFEST).is_file() and (folder / "postings-v2-analysis-v1" / MANIFEST).is_file()
    assert (folder / "index-v1" / MANIFEST).is_file()
    assert (folder / "stems-v2" / MANIFEST).is_file()  # the stem table, built with the postings
    return base, shop, cache, folder.name, done.stdout


def _copy(pristine, tmp_path: Path) -> tuple[Path, Path]:
    base, shop, cache, key, _ = pristine
    target = tmp_path / "cache"
    shutil.copytree(cache, target)
    tmp_path.chmod(0o755)
    return target, target / "catalogs" / key


def _truncate(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def _overwrite4(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    at = 128 + 3  # past the .npy header: four bytes of the first asins
    raw[at : at + 4] = bytes(b ^ 0x5A for b in raw[at : at + 4])
    path.write_bytes(bytes(raw))


def _garbage(path: Path) -> None:
    path.write_bytes(bytes((i * 37 + 11) % 256 for i in range(path.stat().st_size)))  # same size, not JSON


def _swap(a: Path, b: Path) -> None:
    tmp = a.with_name("swap.tmp")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


DAMAGES = {
    "truncated .npy": ("", lambda f: _truncate(f / "title.data.npy")),
    "missing .npy": ("", lambda f: (f / "pricing.npy").unlink()),
    "garbage meta.json": ("", lambda f: _garbage(f / "meta.json")),
    "truncated postings": ("postings-v2-analysis-v1", lambda f: _truncate(f / "postings-v2-analysis-v1" / "docs.npy")),
    "4 bytes of asin data": ("", lambda f: _overwrite4(f / "asin.data.npy")),
    "swapped offset files": ("", lambda f: _swap(f / "title.offsets.npy", f / "description.offsets.npy")),
    "no checksums (older cache)": ("goals-synthetic-v1", lambda f: (f / "goals-synthetic-v1" / MANIFEST).unlink()),
}


REASONS = {
    "truncated .npy": r"title\.data\.npy has [\d,]+ bytes instead of [\d,]+",
    "missing .npy": r"pricing\.npy is missing",
    "garbage meta.json": r"meta\.json does not match its checksum",
    "truncated postings": r"docs\.npy has [\d,]+ bytes instead of [\d,]+",
    "4 bytes of asin data": r"asin\.data\.npy does not match its checksum",
    "swapped offset files": r"description\.offsets\.npy does not match its checksum",
    "no checksums (older cache)": r"it has no checksums\.json \(compiled by an older webshop-gym, or damaged\)",
}


@pytest.mark.parametrize("name", list(DAMAGES))
def test_every_damage_is_found(pristine, tmp_path, name):
    _, folder = _copy(pristine, tmp_path)
    where, damage_it = DAMAGES[name]
    damaged = folder / where if where else folder
    assert damage(damaged, contents=True) is None
    damage_it(folder)
    assert re.fullmatch(REASONS[name], damage(damaged, contents=True))
    if "checksum" not in REASONS[name]:  # found without reading the files: on every load
        assert re.fullmatch(REASONS[name], damage(damaged, contents=False))


@pytest.mark.parametrize("name", ["4 bytes of asin data", "truncated postings", "no checksums (older cache)"])
def test_damaged_folder_is_rebuilt_with_one_warning(pristine, tmp_path, name):
    base, shop, _, _, expected = pristine
    cache, folder = _copy(pristine, tmp_path)
    where, damage_it = DAMAGES[name]
    damage_it(folder)
    damaged = folder / where if where else folder

    done = _cli([*DEMO, "--shop", str(shop)], cache, base)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected  # the same titles, prices and reward as before the damage
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"webshop-gym: warning: rebuilding the damaged cache folder {damaged} (")
    # a rebuilt catalog folder loses Pyserini's index inside it: the bm25 demo needs none and builds none
    assert [problem for _, problem in verify_tree(cache / "catalogs")] == [None] * (8 if where else 7)
    assert (folder / "index-v1").is_dir() == bool(where)


@pytest.mark.parametrize("name", ["4 bytes of asin data", "truncated postings"])
def test_damaged_read_only_cache_names_the_folder_to_delete(pristine, tmp_path, name):
    base, shop, _, _, _ = pristine
    cache, folder = _copy(pristine, tmp_path)
    where, damage_it = DAMAGES[name]
    damage_it(folder)
    damaged = folder / where if where else folder

    code = f"import sys; from webshop_gym.cli import main; sys.exit(main({[*DEMO, '--shop', str(shop)]!r}))"
    done = _as_reader(code, cache, base)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"webshop-gym demo: error: the cache folder {damaged} is damaged (")
    assert f"delete {damaged} where the cache is writable" in lines[0]


def test_data_verify_reports_damage(pristine, tmp_path):
    base, shop, _, _, _ = pristine
    cache, folder = _copy(pristine, tmp_path)
    _swap(folder / "title.offsets.npy", folder / "description.offsets.npy")
    done = _cli(["data", "verify", str(shop)], cache, base)
    assert done.returncode == 1
    assert f"DAMAGED  {folder}: description.offsets.npy does not match its checksum" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("10 folders and 1 memo checked, 1 damaged")
    everything = _cli(["data", "verify", "--all"], cache, base)
    assert everything.returncode == 1 and "1 damaged" in everything.stdout

    empty = _cli(["data", "verify", str(shop)], tmp_path / "empty-cache", base)
    assert empty.returncode == 2 and empty.stderr.startswith("webshop-gym data verify: error: nothing compiled in ")


@pytest.mark.parametrize("name", ["4 bytes of asin data", "swapped offset files"])
def test_a_checked_folder_is_read_again_only_after_a_change(pristine, tmp_path, monkeypatch, name):
    # a successful content check leaves a stamp (inode, size, mtime of every file): a later
    # process skips the full read while nothing changed, and reads everything again after a change
    from webshop_gym.utils import integrity

    _, folder = _copy(pristine, tmp_path)
    monkeypatch.delenv(VERIFIED_ENV, raising=False)
    monkeypatch.setattr(integrity, "_checked", set())
    assert damage(folder) is None and (folder / integrity.STAMP).is_file()

    def refuse(path, buffer):
        raise AssertionError(f"read {path} although the stamp matches")

    monkeypatch.setattr(integrity, "_checked", set())  # as a new process sees it
    monkeypatch.delenv(VERIFIED_ENV, raising=False)
    with monkeypatch.context() as patch:
        patch.setattr(integrity, "_crc", refuse)
        assert damage(folder) is None
    monkeypatch.setattr(integrity, "_checked", set())
    monkeypatch.delenv(VERIFIED_ENV, raising=False)
    DAMAGES[name][1](folder)
    assert re.fullmatch(REASONS[name], damage(folder))


def test_a_read_only_cache_is_checked_and_gets_no_stamp(pristine, tmp_path):
    base, shop, _, _, _ = pristine
    cache, folder = _copy(pristine, tmp_path)
    from webshop_gym.utils.integrity import STAMP

    (folder / STAMP).unlink(missing_ok=True)
    code = (f"import sys; from webshop_gym.utils.integrity import damage; "
            f"sys.exit(0 if damage({str(folder)!r}) is None else 1)")
    done = _as_reader(code, cache, base)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (folder / STAMP).exists() and not list(folder.glob(STAMP + ".*"))


def test_the_builder_stamps_what_it_built_so_nothing_is_read_twice(tmp_path, monkeypatch):
    # the builder has just read every file to write the manifest: neither it nor the next
    # process reads the folder in full once more (issue 33: 4.5 s at 1M products)
    from webshop_gym.utils import integrity
    from webshop_gym.utils.paths import build_atomically, is_built

    reads: list[str] = []
    real = integrity._crc

    def counting(path, buffer):
        reads.append(path.name)
        return real(path, buffer)

    def build(tmp: Path) -> None:
        (tmp / "data.bin").write_bytes(bytes(range(256)) * 4096)
        (tmp / "meta.json").write_text("{}")

    monkeypatch.setattr(integrity, "_crc", counting)
    monkeypatch.setattr(integrity, "_checked", set())
    monkeypatch.delenv(VERIFIED_ENV, raising=False)
    folder = tmp_path / "stage"
    build_atomically(folder, build)
    assert sorted(reads) == ["data.bin", "meta.json"]  # once, for the manifest
    assert (folder / integrity.STAMP).is_file() and is_built(folder)
    monkeypatch.setattr(integrity, "_checked", set())  # as a new process sees it
    monkeypatch.delenv(VERIFIED_ENV, raising=False)
    assert is_built(folder) and damage(folder) is None
    assert sorted(reads) == ["data.bin", "meta.json"]
    (tmp_path / "swap.bin").write_bytes(b"\1" + (folder / "data.bin").read_bytes()[1:])  # a replaced file is found
    os.replace(tmp_path / "swap.bin", folder / "data.bin")
    monkeypatch.setattr(integrity, "_checked", set())
    monkeypatch.delenv(VERIFIED_ENV, raising=False)
    assert damage(folder) == "data.bin does not match its checksum"


def test_a_freshly_compiled_cache_is_not_read_again_by_the_next_process(tmp_path):
    # the user's path: `data compile`, then a new process loads the shop and searches while any
    # content read fails loudly
    shop = _small_shop(tmp_path / "shop")
    cache = tmp_path / "cache"
    done = _cli(["data", "compile", str(shop)], cache, tmp_path)
    assert done.returncode == 0, done.stderr
    folders = sorted(p.parent for p in cache.rglob(MANIFEST))
    assert len(folders) >= 5 and all((f / ".verified.json").is_file() for f in folders)
    code = ("from webshop_gym.utils import integrity\n"
            "def refuse(path, buffer):\n"
            "    raise SystemExit(f'read {path} in full although the builder checked it')\n"
            "integrity._crc = refuse\n"
            "from webshop_gym import load_shop\n"
            f"shop = load_shop({str(shop)!r}, progress=False)\n"
            "print(shop.asins(shop.search('peanut butter bars'))[0])\n")
    loaded = subprocess.run([sys.executable, "-c", code], env=_env(cache), cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert loaded.returncode == 0 and loaded.stdout.split() == ["B000000002"], loaded.stdout + loaded.stderr


# -- issue 34: every damage `data verify` reports is repaired by the command it names -------------


def _truncate_lucene_segment(folder: Path) -> Path:
    lucene = folder / "index-v1" / "lucene"
    segment = max((p for p in lucene.iterdir() if p.is_file()), key=lambda p: p.stat().st_size)
    _truncate(segment)
    return segment


def test_a_damaged_lucene_index_is_repaired_by_the_documented_command(pristine, tmp_path):
    # The default (bm25) backend searches its own postings and never reads the Lucene index, so
    # neither a load nor `data compile` used to notice that verify reported it damaged.
    base, shop, _, _, expected = pristine
    cache, folder = _copy(pristine, tmp_path)
    segment = _truncate_lucene_segment(folder)
    index = folder / "index-v1"

    verify = _cli(["data", "verify", str(shop)], cache, base)
    assert verify.returncode == 1
    assert f"DAMAGED  {index}: lucene/{segment.name} has " in verify.stdout
    advice = verify.stdout.strip().splitlines()[-1]
    assert advice.startswith("10 folders and 1 memo checked, 1 damaged (to repair, run `webshop-gym data compile ")
    command = advice.split("`")[1].split()[1:]  # the command verify names, run as it says
    assert command == ["data", "compile", str(shop)]

    compiled = _cli(command, cache, base)
    assert compiled.returncode == 0, compiled.stderr
    assert compiled.stdout.startswith(f"removed {index} (damaged: lucene/{segment.name} has ")
    again = _cli(["data", "verify", str(shop)], cache, base)
    assert again.returncode == 0, again.stdout
    assert f"ok       {index}" in again.stdout and "DAMAGED" not in again.stdout
    assert re.fullmatch(r"\d+ folders and \d+ memos checked, 0 damaged", again.stdout.strip().splitlines()[-1])
    demo = _cli([*DEMO, "--shop", str(shop)], cache, base)
    assert demo.returncode == 0 and demo.stdout == expected
    code = ("from webshop_gym import load_shop; import json, sys; "
            "print(json.dumps([load_shop(sys.argv[1], progress=False, search_backend=b).search('snack bars').tolist() "
            "for b in ('bm25', 'pyserini')]))")
    both = subprocess.run([sys.executable, "-c", code, str(shop)], env=_env(cache), cwd=base, capture_output=True,
                          text=True, timeout=600)
    assert both.returncode == 0, both.stderr
    bm25, pyserini = json.loads(both.stdout)  # the rebuilt index ranks as the postings do
    assert bm25 == pyserini and bm25


def test_data_compile_removes_damaged_folders_it_does_not_compile(pristine, tmp_path):
    base, shop, _, _, _ = pristine
    cache, folder = _copy(pristine, tmp_path)
    human = _cli(["data", "compile", str(shop), "--human-goals", "--no-index"], cache, base)
    assert human.returncode == 0, human.stderr
    _overwrite4(folder / "goals-human-v1" / "seed-0" / "prices.npy")
    assert _cli(["data", "verify", str(shop)], cache, base).returncode == 1
    compiled = _cli(["data", "compile", str(shop), "--no-index"], cache, base)  # without --human-goals
    assert compiled.returncode == 0, compiled.stderr
    assert f"removed {folder / 'goals-human-v1' / 'seed-0'} (damaged: prices.npy does not match" in compiled.stdout
    assert _cli(["data", "verify", str(shop)], cache, base).returncode == 0  # and a human-goal run rebuilds it


BUILDER = """
import sys, time
from pathlib import Path
from webshop_gym.utils.paths import build_atomically

def build(tmp):
    (tmp / "half-written.npy").write_bytes(bytes(4096))
    print(tmp, flush=True)
    time.sleep(600)

build_atomically(Path(sys.argv[1]), build)
"""


def test_a_killed_builders_folder_is_listed_then_removed_but_never_a_running_one(pristine, tmp_path):
    base, shop, _, _, _ = pristine
    cache, folder = _copy(pristine, tmp_path)
    builder = subprocess.Popen([sys.executable, "-c", BUILDER, str(folder / "goals-human-v1")], env=_env(cache),
                               cwd=base, stdout=subprocess.PIPE, text=True)
    try:
        tmp = Path(builder.stdout.readline().strip())
        assert tmp.parent == folder and tmp.name.startswith("goals-human-v1.tmp-")
        running = _cli(["data", "verify", str(shop)], cache, base)
        assert running.returncode == 0 and f"BUILDING {tmp}: a build in progress" in running.stdout
        assert running.stdout.strip().splitlines()[-1] == "10 folders and 1 memo checked, 0 damaged"
        compiled = _cli(["data", "compile", str(shop), "--no-index"], cache, base)  # a concurrent compile
        assert compiled.returncode == 0 and tmp.is_dir() and "removed" not in compiled.stdout
        builder.kill()  # kill -9: no cleanup runs
        builder.wait(30)
    finally:
        builder.kill()
        builder.communicate()
    assert tmp.is_dir()
    stale = _cli(["data", "verify", str(shop)], cache, base)
    assert stale.returncode == 0  # nothing a run reads is damaged
    assert f"STALE    {tmp}: left by an interrupted build" in stale.stdout
    assert stale.stdout.strip().splitlines()[-1].startswith(
        f"10 folders and 2 memos checked, 0 damaged, 1 left by interrupted builds (to repair, run `webshop-gym data compile {shop}`")
    compiled = _cli(["data", "compile", str(shop), "--no-index"], cache, base)
    assert compiled.returncode == 0 and compiled.stdout.startswith(f"removed {tmp} (left by an interrupted build)")
    assert not tmp.exists()
    assert "STALE" not in _cli(["data", "verify", str(shop)], cache, base).stdout


def test_the_next_build_of_a_stage_removes_a_killed_builds_folder(pristine, tmp_path):
    from webshop_gym.utils.paths import build_atomically, interrupted_builds

    base, _, _, _, _ = pristine
    cache, folder = _copy(pristine, tmp_path)
    builder = subprocess.Popen([sys.executable, "-c", BUILDER, str(folder / "stage")], env=_env(cache), cwd=base,
                               stdout=subprocess.PIPE, text=True)
    tmp = Path(builder.stdout.readline().strip())
    assert interrupted_builds(folder) == [(tmp, True)]
    builder.kill()
    builder.communicate()
    assert interrupted_builds(folder) == [(tmp, False)]

    def build(out: Path) -> None:
        (out / "meta.json").write_text("{}")

    build_atomically(folder / "stage", build)
    assert (folder / "stage" / "meta.json").is_file() and not tmp.exists()
    assert interrupted_builds(folder) == []


@pytest.mark.slow
def test_kill_9_during_data_compile_leaves_nothing_that_data_compile_does_not_remove(tmp_path):
    # the issue's own scenario: `data compile` killed while it builds
    tmp_path.chmod(0o755)
    shop = _small_shop(tmp_path / "shop")
    cache = tmp_path / "cache"
    compiling = subprocess.Popen([sys.executable, "-m", "webshop_gym.cli", "data", "compile", str(shop)],
                                 env=_env(cache), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: list[Path] = []
    deadline = time.monotonic() + 300
    while compiling.poll() is None and not seen and time.monotonic() < deadline:
        seen = [p for p in cache.rglob("*.tmp-*") if p.is_dir()] if cache.is_dir() else []
        time.sleep(0.005)
    compiling.kill()
    compiling.wait(30)
    assert seen and compiling.returncode == -signal.SIGKILL, "data compile finished before any build was seen"
    verify = _cli(["data", "verify", str(shop)], cache, tmp_path)
    assert "STALE    " in verify.stdout and "left by an interrupted build" in verify.stdout, verify.stdout
    compiled = _cli(["data", "compile", str(shop)], cache, tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    assert [p for p in cache.rglob("*.tmp-*")] == []
    verify = _cli(["data", "verify", str(shop)], cache, tmp_path)
    assert verify.returncode == 0 and "STALE" not in verify.stdout
    assert re.fullmatch(r"\d+ folders and \d+ memos checked, 0 damaged", verify.stdout.strip().splitlines()[-1])
