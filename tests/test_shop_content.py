"""Issue 43 item 11: a shop is identified by its canonical content; formatting does not count.

AgentGym's and webshop-minimal's ``items_shuffle_1000.json`` (git blob 08dfda9a) are byte-different
from the copy tested here (586c287c); whether their content differs could not be checked here (the
file is over 4 MiB: no snapshot holds it).  These tests show that a copy written differently
(indentation, key order, escapes, line ends, a byte-order mark) has the same content digest, shop
identity and protocol fingerprint, and that any changed value does not.
"""

from __future__ import annotations

import json

from tests.helpers import product, write_shop
from webshop_gym.data.catalog import load_catalog
from webshop_gym.data.records import content_sha256, record_options
from webshop_gym.protocols import get_protocol, shop_identity


def _products():
    return [product(f"B00000000{i}", name=f"Café crème {i}", pricing=f"${i + 1}.50") for i in range(6)]


def _rewrite(path, data, **dump):
    text = json.dumps(data, **dump)
    path.write_bytes(("\ufeff" + text.replace("\n", "\r\n")).encode("utf-8"))


def test_the_content_digest_ignores_formatting_and_sees_every_value(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    records = _products()
    compact, pretty, changed = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    compact.write_text(json.dumps(records), encoding="utf-8")
    reordered = [dict(reversed(list(r.items()))) for r in records]
    _rewrite(pretty, reordered, indent=4, ensure_ascii=False)
    assert compact.read_bytes() != pretty.read_bytes()
    assert content_sha256(compact) == content_sha256(pretty)
    records[3] = {**records[3], "pricing": "$4.51"}
    changed.write_text(json.dumps(records), encoding="utf-8")
    assert content_sha256(changed) != content_sha256(compact)
    objects = tmp_path / "o1.json", tmp_path / "o2.json"
    objects[0].write_text(json.dumps({"B1": {"attributes": ["x"]}, "B2": {"attributes": ["y"]}}))
    objects[1].write_text(json.dumps({"B2": {"attributes": ["y"]}, "B1": {"attributes": ["x"]}}, indent=2))
    assert content_sha256(objects[0]) == content_sha256(objects[1])  # members in another order: the same object


def test_two_copies_of_a_shop_written_differently_are_the_same_shop(tmp_path, monkeypatch):
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    records = _products()
    one = write_shop(tmp_path / "one", records, {})
    two = write_shop(tmp_path / "two", records, {})
    _rewrite(two / "items_shuffle.json", [dict(sorted(r.items(), reverse=True)) for r in records], indent=2)
    a, b = load_catalog(one, progress=False), load_catalog(two, progress=False)
    assert a.key != b.key and a.meta["files"]["items_shuffle.json"] != b.meta["files"]["items_shuffle.json"]
    assert a.content_digests() == b.content_digests() and set(a.content_digests()) == {"items_shuffle.json", "items_ins_v2.json"}
    fp = {"catalog": a.key, "files": a.meta["files"], "content": a.content_digests(), "products": 6, "goals": 0,
          "goal_kind": "synthetic", "price_seed": 0, "goal_set": "g"}
    other = {**fp, "catalog": b.key, "files": b.meta["files"], "content": b.content_digests()}
    assert shop_identity(fp) == shop_identity(other)
    p = get_protocol("webshop-gym")
    resolution = p.resolve(num_goals=500)
    assert p.fingerprint(resolution, fp) == p.fingerprint(resolution, other)
    three = write_shop(tmp_path / "three", [*records[:5], {**records[5], "name": "Café crème 6"}], {})
    c = load_catalog(three, progress=False)
    assert c.content_digests()["items_shuffle.json"] != a.content_digests()["items_shuffle.json"]


def test_the_1k_protocols_pin_the_content_of_both_files(real_shop):
    content = real_shop.fingerprint()["content"]
    assert content["items_shuffle_1000.json"] == "f207cbbedfa38eac" and content["items_ins_v2_1000.json"] == "8447a900e7c5e996"
    for name in ("verl-agent", "agentgym", "ragen", "seed-fairness", "verl-agent-500"):
        assert get_protocol(name).shop["content"] == {k: content[k] for k in ("items_ins_v2_1000.json", "items_shuffle_1000.json")}
        get_protocol(name).check_shop(real_shop)


def test_the_digest_covers_what_the_agent_sees_on_the_real_shop(real_dir, tmp_path, monkeypatch):
    """Issue 53 item 3: a copy with sorted JSON keys reorders option groups on item pages: another shop.

    A re-indented copy with CRLF line ends and a byte-order mark shows every page the same: the same shop.
    """
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(tmp_path / "cache"))
    source = real_dir / "items_shuffle_1000.json"
    records = json.loads(source.read_text(encoding="utf-8"))
    pinned = get_protocol("verl-agent").shop["content"]["items_shuffle_1000.json"]
    assert content_sha256(source)[:16] == pinned
    reindented, sorted_keys = tmp_path / "reindented.json", tmp_path / "sorted.json"
    _rewrite(reindented, records, indent=4, ensure_ascii=False)
    sorted_keys.write_text(json.dumps(records, sort_keys=True), encoding="utf-8")
    assert content_sha256(reindented)[:16] == pinned
    # the sorted copy's item pages list option groups in another order (the reference reads them in file order)
    resorted = json.loads(sorted_keys.read_text(encoding="utf-8"))
    moved = [i for i, (a, b) in enumerate(zip(records, resorted, strict=True))
             if list(record_options(a, source, i)) != list(record_options(b, sorted_keys, i))]
    assert len(moved) > 0
    assert content_sha256(sorted_keys)[:16] != pinned
    # key order no page shows (a record's own fields) still does not count
    shuffled = tmp_path / "fields.json"
    shuffled.write_text(json.dumps([dict(reversed(list(r.items()))) for r in records]), encoding="utf-8")
    assert content_sha256(shuffled)[:16] == pinned
