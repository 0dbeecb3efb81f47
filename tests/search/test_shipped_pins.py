"""Shipped files are checked before use (issue 51, item 2).

The embedded shop's search postings and the protocols' goal-id lists are checked against sizes and
SHA-256 pinned in the package's code (webshop_gym/utils/shipped_digests.py), not against digests
they carry: an altered ``tf.npy``, a truncated ``terms.txt``, an edited id list whose own digests
were edited to match, or a list that is not JSON, each fails in one line naming the package file
(or, for the postings where Pyserini is installed, the postings are exported from Lucene instead),
and ``webshop-gym data verify`` lists them.  The package's own files are never touched: each test
damages a copy and points the package at it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from webshop_gym.cli import main
from webshop_gym.data.catalog import load_catalog
from webshop_gym.error import ProtocolError, ShippedFileDamaged
from webshop_gym.protocols import idlists
from webshop_gym.search import BM25Search
from webshop_gym.search import shipped as shipped_module
from webshop_gym.search.release import ID_LISTS_DIR, PINS_MODULE, render_pins
from webshop_gym.utils.paths import default_shop_dir
from webshop_gym.utils.shipped_digests import ID_LISTS, SEARCH_POSTINGS


def test_the_pins_are_today_s_shipped_files():
    """Changing a shipped file without writing the pins again (docs/release.md, step 1) fails here."""
    assert render_pins() == PINS_MODULE.read_text(encoding="utf-8"), (
        "the shipped files changed: run `python -c \"from webshop_gym.search.release import write_pins; write_pins()\"`")
    assert set(ID_LISTS) == {p.name for p in ID_LISTS_DIR.glob("*.json")}
    assert "tf.npy" in SEARCH_POSTINGS and "source.json" in SEARCH_POSTINGS


@pytest.fixture
def postings_copy(tmp_path, monkeypatch):
    """A copy of the shipped postings that the package reads instead of its own; a fresh cache."""
    copy = tmp_path / "search-postings"
    shutil.copytree(shipped_module.shipped_folder(), copy)
    monkeypatch.setattr(shipped_module, "shipped_folder", lambda: copy)
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    return copy


def _alter_tf(folder: Path) -> None:
    """Altered values, same size and shape (the issue's case: the Score fell from 76.5 to 1.3, unnoticed)."""
    tf = np.load(folder / "tf.npy")
    np.save(folder / "tf.npy", (tf[::-1] + 1).astype(tf.dtype))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", ["altered tf.npy", "truncated terms.txt", "missing meta.json"])
def test_damaged_shipped_postings_without_pyserini_are_one_error_naming_the_file(postings_copy, monkeypatch, damage):
    monkeypatch.setattr(shipped_module, "lucene_available", lambda: False)
    if damage == "altered tf.npy":
        _alter_tf(postings_copy)
        name, problem = "tf.npy", "has SHA-256 "
    elif damage == "truncated terms.txt":
        _truncate(postings_copy / "terms.txt")
        name, problem = "terms.txt", f"has {SEARCH_POSTINGS['terms.txt'][0] // 2:,} bytes instead of the pinned"
    else:
        (postings_copy / "meta.json").unlink()
        name, problem = "meta.json", "is missing"
    engine = BM25Search(load_catalog(default_shop_dir(), progress=False), progress=False)
    with pytest.raises(ShippedFileDamaged) as caught:
        engine.search("red dress")
    message = str(caught.value)
    assert message.startswith(f"the package file {postings_copy / name} {problem}")
    assert "reinstall webshop-gym (`pip install --force-reinstall --no-deps webshop-gym`)" in message
    assert "\n" not in message
    assert not engine.postings_path.exists()  # nothing damaged was installed into the cache


def test_intact_shipped_postings_are_installed(postings_copy, monkeypatch):
    monkeypatch.setattr(shipped_module, "lucene_available", lambda: False)
    engine = BM25Search(load_catalog(default_shop_dir(), progress=False), progress=False)
    assert len(engine.search("red dress")) == 50
    for name in SEARCH_POSTINGS:
        if name != "source.json":
            assert (engine.postings_path / name).read_bytes() == (postings_copy / name).read_bytes()


@pytest.mark.slow
def test_damaged_shipped_postings_with_pyserini_are_exported_from_lucene(postings_copy, caplog):
    if importlib.util.find_spec("pyserini") is None:
        pytest.skip("Pyserini exports the postings: pip install --no-deps pyserini==1.6.0")
    catalog = load_catalog(default_shop_dir(), progress=False)
    good = postings_copy.parent / "good"
    shutil.copytree(postings_copy, good)
    _alter_tf(postings_copy)
    with caplog.at_level(logging.WARNING, logger="webshop_gym"):
        engine = BM25Search(catalog, progress=False)
        results = [engine.search(q) for q in ("red dress", "wireless bluetooth headphones", "gluten free snacks")]
    warnings = [r.getMessage() for r in caplog.records if "package file" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"webshop-gym: warning: the package file {postings_copy / 'tf.npy'} has SHA-256 ")
    assert "exporting the embedded shop's search postings from a Lucene index instead" in warnings[0]
    # exported from Lucene: the intact shipped values, not the altered ones
    assert np.array_equal(np.load(engine.postings_path / "tf.npy"), np.load(good / "tf.npy"))
    assert all(len(r) == 50 for r in results)


@pytest.fixture
def ids_copy(tmp_path, monkeypatch):
    """A copy of the shipped id lists that the package reads instead of its own."""
    copy = tmp_path / "ids"
    shutil.copytree(ID_LISTS_DIR, copy)
    monkeypatch.setattr(idlists, "_data_dir", lambda: copy)
    idlists.id_list.cache_clear()
    idlists.id_list_names.cache_clear()
    yield copy
    idlists.id_list.cache_clear()
    idlists.id_list_names.cache_clear()


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def test_an_edited_id_list_with_its_own_digests_edited_to_match_is_refused(ids_copy):
    path = ids_copy / "eto-test.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["ids"][0] += 1
    rendered = idlists.render(data["source"]["layout"], data["ids"])
    data["source"].update(bytes=len(rendered), sha256=hashlib.sha256(rendered).hexdigest(), git_blob=_git_blob(rendered))
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ProtocolError) as caught:
        idlists.id_list("eto-test")
    message = str(caught.value)
    assert message.startswith("id list 'eto-test' (webshop_gym/protocols/data/ids/eto-test.json): the file has ")
    assert "not the file this version shipped (reinstall webshop-gym" in message and "\n" not in message


def test_the_shipped_id_lists_load(ids_copy):
    for name in idlists.id_list_names():
        assert len(idlists.id_list(name).ids) > 0
    assert idlists.id_list_damage() == []


def test_an_id_list_that_is_not_json_is_one_line_naming_it(ids_copy, capsys):
    (ids_copy / "ipr-test.json").write_bytes(b"\x00\x01 not json")
    status = main(["protocols", "show", "ipr"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("webshop-gym protocols: error: ")
    assert ("id list 'ipr-test' (webshop_gym/protocols/data/ids/ipr-test.json): the file is not JSON (Expecting "
            "value: line 1 column 1 (char 0)) and has 11 bytes instead of the pinned ") in err[0]
    assert "internal error" not in err[0]


def _verify(capsys, shop: Path) -> tuple[int, list[str]]:
    status = main(["data", "verify", str(shop)])
    return status, capsys.readouterr().out.strip().splitlines()


@pytest.fixture
def compiled_small_shop(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    shop = tmp_path / "shop"
    assert main(["data", "synth", "--products", "5", "--out", str(shop), "--quiet"]) == 0
    load_catalog(shop, progress=False)
    capsys.readouterr()
    return shop


def test_data_verify_checks_the_shipped_files(compiled_small_shop, postings_copy, ids_copy, capsys):
    status, lines = _verify(capsys, compiled_small_shop)
    assert status == 0
    assert f"ok       {postings_copy}" in lines and f"ok       {ids_copy}" in lines
    assert lines[-1].endswith(" checked, 0 damaged")

    _alter_tf(postings_copy)
    (ids_copy / "eto-train.json").write_text("[]")
    status, lines = _verify(capsys, compiled_small_shop)
    assert status == 1
    assert f"DAMAGED  {postings_copy}: tf.npy has SHA-256 " in "\n".join(lines)
    assert any(line.startswith(f"DAMAGED  {ids_copy}: eto-train.json has 2 bytes instead of the pinned ")
               and line.endswith("(shipped with the package)") for line in lines)
    assert lines[-1].endswith("checked, 2 damaged (the package's own files are damaged: reinstall webshop-gym, "
                              "`pip install --force-reinstall --no-deps webshop-gym`)")
    assert "data compile" not in lines[-1]  # compiling repairs nothing of the package's own files
