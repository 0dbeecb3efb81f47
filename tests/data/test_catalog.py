"""Loading rules of SPEC section 1, the compiled cache, and bad data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.helpers import product, write_shop
from webshop_gym.data.catalog import load_catalog
from webshop_gym.data.records import DUMMY_ATTR, find_shop_files, parse_pricing
from webshop_gym.error import DataError, ShopNotFound


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(folder))
    return folder


def _shop(tmp_path, products, attributes=None, human=None):
    return write_shop(tmp_path / "shop", products, attributes if attributes is not None else {}, human)


# -- pricing ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, numbers, tag",
    [
        ("$12.99", [12.99], "$12.99"),
        ("$12", [12.0], "$12.0"),
        ("$10.00 - $25.50", [10.0, 25.5], "$10.0 to $25.5"),
        ("$1,299.00", [1299.0], "$1299.0"),
        ("$3.00$4.00$5.00", [3.0, 4.0], "$3.0 to $4.0"),
        ("", [100.0], "$100.0"),
        (None, [100.0], "$100.0"),
    ],
)
def test_pricing_rules(raw, numbers, tag):
    assert parse_pricing(raw) == (numbers, tag)


@pytest.mark.parametrize("raw", ["12.99", "$", "$abc", "$1.2.3"])
def test_malformed_pricing_names_the_field(raw):
    with pytest.raises(DataError) as err:
        parse_pricing(raw, "items.json", 7)
    assert "items.json" in str(err.value) and "record 7" in str(err.value) and "'pricing'" in str(err.value)


# -- records ------------------------------------------------------------------------------------


def test_loader_rules(tmp_path, cache):
    products = [
        product("B000000001", customization_options={"Size": [{"value": " 8 Ounce/2 Pack ", "image": None}],
                                                      "Color": None, "Flavor Name": [{"value": "BBQ"}]}),
        product("nan"),
        product("B0000000011"),  # 11 characters: skipped
        product("B000000002", small_description="one bullet as a string", pricing="$5.00 - $7.50",
                query="  Mixed CASE Query ", images=[]),
        product("B000000001", name="a duplicate, the first record wins"),
        product("B000000003", customization_options=None, pricing=""),
    ]
    attributes = {
        "B000000001": {"attributes": ["gluten free", "low sugar"], "instruction": "Find me bars",
                       "instruction_attributes": ["gluten free"]},
        "B000000002": {"attributes": []},
    }
    catalog = load_catalog(_shop(tmp_path, products, attributes), progress=False)
    assert len(catalog) == 3
    assert catalog.meta["counts"] == {"products": 3, "skipped": 2, "duplicates": 1, "records": 6}
    first = catalog.product_record(0)
    assert first["Title"] == "Product B000000001"
    assert first["options"] == {"size": ["8 ounce | 2 pack"], "flavor name": ["bbq"]}
    assert first["Attributes"] == ["gluten free", "low sugar"]
    assert first["query"] == "snack bars"
    assert first["MainImage"] == "https://img.invalid/B000000001.jpg"
    assert first["Rating"] == "N.A." and first["Reviews"] == []
    second = catalog.product_record(1)
    assert second["BulletPoints"] == ["one bullet as a string"]
    assert second["Price"] == "$5.0 to $7.5" and second["pricing"] == [5.0, 7.5]
    assert second["Attributes"] == []
    assert second["query"] == "mixed case query"
    assert second["MainImage"] == ""  # no images (the reference would fail on this record)
    third = catalog.product_record(2)
    assert third["Attributes"] == [DUMMY_ATTR]
    assert third["options"] == {}
    assert third["Price"] == "$100.0"
    assert bool(catalog.has_instruction[0]) and not catalog.has_instruction[1]
    assert catalog.row_of("B000000002") == 1 and catalog.row_of("B999999999") == -1


def test_num_products_keeps_the_first_records(tmp_path, cache):
    products = [product(f"B00000000{i}") for i in range(6)]
    catalog = load_catalog(_shop(tmp_path, products), num_products=4, progress=False)
    assert catalog.asin.tolist() == [f"B00000000{i}" for i in range(4)]


def test_option_names_collapse_like_a_dict(tmp_path, cache):
    options = {"Color": [{"value": "Red"}], "Size": [{"value": "S"}], "color": [{"value": "Blue"}]}
    catalog = load_catalog(_shop(tmp_path, [product("B000000001", customization_options=options)]), progress=False)
    assert catalog.options_of(0) == {"color": ["blue"], "size": ["s"]}


def test_reviews_extension(tmp_path, cache):
    record = product("B000000001", reviews=[{"title": "Great", "score": 5, "body": "Loved it"},
                                            {"title": "Meh", "stars": 2, "review": "ok"}], average_rating=3.5)
    catalog = load_catalog(_shop(tmp_path, [record, product("B000000002", average_rating=4.4)]), progress=False)
    assert catalog.product_record(0)["Reviews"] == [
        {"title": "Great", "score": "5", "body": "Loved it"}, {"title": "Meh", "score": "2", "body": "ok"}]
    assert catalog.product_record(0)["Rating"] == "3.5"
    # Without our `reviews` key the reference shows no rating, whatever `average_rating` says.
    assert catalog.product_record(1)["Rating"] == "N.A."


# -- malformed data ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "records, message",
    [
        ([product("B000000001"), "not an object"], "record 1"),
        ([product("B000000001"), {"name": "no asin"}], "record 1, field 'asin'"),
        ([product("B000000001"), product("B000000002", name=None)], "record 1, field 'name'"),
        ([product("B000000001", small_description=[1, 2])], "record 0, field 'small_description'"),
        ([product("B000000001", customization_options=["red"])], "record 0, field 'customization_options'"),
        ([product("B000000001", customization_options={"Color": [{"image": None}]})], "field 'customization_options'"),
        ([product("B000000001", pricing="$x")], "record 0, field 'pricing'"),
        ([product("B000000001", category=3)], "record 0, field 'category'"),
    ],
)
def test_bad_records_name_file_record_and_field(tmp_path, cache, records, message):
    with pytest.raises(DataError) as err:
        load_catalog(_shop(tmp_path, records), progress=False)
    assert "items_shuffle.json" in str(err.value) and message in str(err.value)


def test_bad_json_and_bad_attribute_files(tmp_path, cache):
    folder = _shop(tmp_path, [product("B000000001")])
    (folder / "items_shuffle.json").write_text('[{"asin": "B000000001",', encoding="utf-8")
    with pytest.raises(DataError, match="items_shuffle.json: not valid JSON"):
        load_catalog(folder, progress=False)
    folder = write_shop(tmp_path / "shop2", [product("B000000001")],
                        {"B000000001": {"attributes": "gluten free"}})
    with pytest.raises(DataError, match="items_ins_v2.json, record B000000001, field 'attributes'"):
        load_catalog(folder, progress=False)
    folder = write_shop(tmp_path / "shop3", [product("B000000001")], {},
                        {"B000000001": [{"instruction": "i need bars", "instruction_attributes": "x"}]})
    with pytest.raises(DataError, match=r"items_human_ins.json, record B000000001\[0\], field 'instruction_attributes'"):
        load_catalog(folder, progress=False)


def test_missing_shop_is_a_clear_error(tmp_path, cache):
    with pytest.raises(ShopNotFound, match="does not exist"):
        find_shop_files(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ShopNotFound, match="items_shuffle.json"):
        find_shop_files(tmp_path / "empty")


# -- the cache ---------------------------------------------------------------------------------------


def test_cache_is_reused_memory_mapped_and_invalidated(tmp_path, cache):
    folder = _shop(tmp_path, [product("B000000001"), product("B000000002")])
    first = load_catalog(folder, progress=False)
    again = load_catalog(folder, progress=False)
    assert again.folder == first.folder and again.meta == first.meta
    assert len(list((cache / "catalogs").iterdir())) == 2  # the folder and its lock file
    # Columns are read-only views of memory-mapped files.
    assert not first.title.offsets.flags.writeable
    assert isinstance(first.title.offsets.base, np.memmap)
    # Changing an input file changes the key and compiles anew.
    records = json.loads((folder / "items_shuffle.json").read_text())
    records[0]["name"] = "Renamed"
    (folder / "items_shuffle.json").write_text(json.dumps(records))
    changed = load_catalog(folder, progress=False)
    assert changed.folder != first.folder and changed.title[0] == "Renamed"
    assert first.title[0] == "Product B000000001"


@pytest.mark.parametrize("where", ["save_array", "StringColumnWriter.append"])
def test_interrupted_compile_leaves_no_cache(tmp_path, cache, monkeypatch, where):
    import webshop_gym.data.compiler as compiler

    folder = _shop(tmp_path, [product("B000000001")])

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    if where == "save_array":  # at the very end
        monkeypatch.setattr(compiler, "save_array", boom)
    else:  # while streaming the products, with column files open
        monkeypatch.setattr(compiler.StringColumnWriter, "append", boom)
    with pytest.raises(KeyboardInterrupt):
        load_catalog(folder, progress=False)
    leftovers = [p.name for p in (cache / "catalogs").iterdir() if not p.name.endswith(".lock")]
    assert leftovers == []
    monkeypatch.undo()
    monkeypatch.setenv("WEBSHOP_GYM_CACHE", str(cache))
    assert len(load_catalog(folder, progress=False)) == 1


# -- the real shop -----------------------------------------------------------------------------------


def _reference_product(p: dict, attributes: dict) -> dict:
    """SPEC section 1 written out independently of the compiler."""
    pricing = p.get("pricing")
    if not pricing:
        numbers, tag = [100.0], "$100.0"
    else:
        numbers = [float("".join(ch for ch in part if ch.isdigit() or ch == ".")) for part in pricing.split("$")[1:]]
        tag = f"${numbers[0]}" if len(numbers) == 1 else f"${numbers[0]} to ${numbers[1]}"
        numbers = numbers[:2]
    options = {}
    for name, contents in (p.get("customization_options") or {}).items():
        if contents is not None:
            options[name.lower()] = [c["value"].strip().replace("/", " | ").lower() for c in contents]
    entry = attributes.get(p["asin"], {})
    bullets = p["small_description"] if isinstance(p["small_description"], list) else [p["small_description"]]
    return {
        "asin": p["asin"], "Title": p["name"], "name": p["name"], "Description": p["full_description"],
        "BulletPoints": bullets, "Price": tag, "pricing": numbers, "options": options,
        "Attributes": entry["attributes"] if "attributes" in entry else [DUMMY_ATTR],
        "category": p["category"], "query": p["query"].lower().strip(), "product_category": p["product_category"],
        "MainImage": p["images"][0], "Rating": "N.A.", "Reviews": [],
    }


def test_real_shop_matches_spec_record_by_record(real_dir):
    catalog = load_catalog(real_dir, progress=False)
    products = json.loads((real_dir / "items_shuffle_1000.json").read_text())
    attributes = json.loads((real_dir / "items_ins_v2_1000.json").read_text())
    assert len(catalog) == 1000
    for row, p in enumerate(products):
        expected = _reference_product(p, attributes)
        got = catalog.product_record(row)
        for key, value in expected.items():
            if key == "pricing":
                assert all(math.isclose(a, b) for a, b in zip(got[key], value)), (row, key)
            else:
                assert got[key] == value, (row, key)


# -- malformed shops that spaCy or Python's decoder would choke on ------------------------------------


def test_untaggable_titles_are_data_errors(tmp_path, cache):
    from webshop_gym.data.tagger import MAX_TITLE_CHARS

    lone = _shop(tmp_path / "lone", [product("B000000001"), product("B000000002", name="Bacon \ud800 Bits")])
    with pytest.raises(DataError, match=r"items_shuffle.json, record 1, field 'name': holds a lone surrogate \(\\ud800"):
        load_catalog(lone, progress=False)
    huge = _shop(tmp_path / "huge", [product("B000000001", name="bacon " * (MAX_TITLE_CHARS // 6 + 1))])
    with pytest.raises(DataError, match=r"record 0, field 'name': a title of 1,000,002 characters is longer than spaCy tags"):
        load_catalog(huge, progress=False)


def test_deeply_nested_values_are_data_errors(tmp_path, cache):
    folder = _shop(tmp_path, [product("B000000001")])
    deep = "[" * 200_000 + "]" * 200_000
    text = json.dumps([product("B000000001"), product("B000000002", images=["PLACEHOLDER"])])
    (folder / "items_shuffle.json").write_text(text.replace('["PLACEHOLDER"]', deep), encoding="utf-8")
    with pytest.raises(DataError, match=r"items_shuffle.json, record 1, field 'images': .*nested too deeply"):
        load_catalog(folder, progress=False)
    folder = _shop(tmp_path / "attrs", [product("B000000001")])
    (folder / "items_ins_v2.json").write_text('{"B000000001": {"attributes": ' + deep + "}}", encoding="utf-8")
    with pytest.raises(DataError, match=r"items_ins_v2.json, record B000000001, field 'attributes'"):
        load_catalog(folder, progress=False)


def test_long_titles_are_tagged_alone_and_exactly(tmp_path, cache):
    from webshop_gym.data import tagger as nouns

    titles = ["Gluten Free Smoked Bacon 4 oz", "x" * 150_000, "Organic Maple Syrup"] + ["Dog Toy"] * 1200
    batches = list(nouns._batches(titles))
    assert [len(b) for b in batches[:3]] == [1, 1, nouns.BATCH_TITLES]  # the long title alone
    assert all(sum(map(len, b)) <= nouns.BATCH_CHARS or len(b) == 1 for b in batches)
    long_title = " ".join(["Stainless Steel Kitchen Knife Set with Wooden Block"] * 400)  # 20,800 characters
    catalog = load_catalog(_shop(tmp_path, [product("B000000001", name=long_title), product("B000000002")]),
                           progress=False)
    full = nouns.load_full_pipeline()
    expected = [t.text.lower() for t in full(long_title) if t.pos_ in nouns.NOUN_TAGS]
    assert catalog.title_nouns(0) == expected and len(expected) > 1000


def test_streaming_compile_keeps_the_first_records_only(tmp_path, cache):
    folder = _shop(tmp_path, [product(f"B00000000{i}") for i in range(3)])
    text = (folder / "items_shuffle.json").read_text()
    (folder / "items_shuffle.json").write_text(text[:-1] + ", {broken", encoding="utf-8")
    assert len(load_catalog(folder, num_products=2, progress=False)) == 2  # never reads the bad tail
    with pytest.raises(DataError, match="not valid JSON"):
        load_catalog(folder, progress=False)
