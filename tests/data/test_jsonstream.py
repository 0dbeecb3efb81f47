"""The streaming JSON reader: same values as json.load, clear errors, bounded windows."""

from __future__ import annotations

import json
import random

import pytest

from webshop_gym.data.jsonstream import JsonStream
from webshop_gym.error import DataError


def _records(n: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    return [
        {
            "asin": f"B{i:09d}",
            "float": rng.random() * 10 ** rng.randint(-300, 300),
            "int": rng.randint(-(10**30), 10**30),
            "text": "é✓\U0001f600 \" \\ \n" * rng.randint(0, 30),
            "misc": [True, False, None, [], {}, [1, [2, [3]]]],
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("chunk", [1, 7, 4096])
@pytest.mark.parametrize("indent", [None, 1])
def test_lists_and_objects_equal_json_load(tmp_path, chunk, indent):
    data = _records(300)
    path = tmp_path / "list.json"
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=indent is None), encoding="utf-8")
    with JsonStream(path, chunk_bytes=chunk) as stream:
        got = [value for _, value in stream.items("a list")]
        stream.end()
    assert got == data
    mapping = {record["asin"]: record for record in data}
    path.write_text(json.dumps(mapping, indent=indent), encoding="utf-8")
    with JsonStream(path, chunk_bytes=chunk) as stream:
        assert dict(stream.members("an object")) == mapping


def test_progress_callback_reaches_the_file_size(tmp_path):
    path = tmp_path / "list.json"
    path.write_text(json.dumps(_records(50)), encoding="utf-8")
    seen = []
    with JsonStream(path, chunk_bytes=100, on_read=seen.append) as stream:
        list(stream.items("a list"))
    assert seen == sorted(seen) and seen[-1] == path.stat().st_size


def test_a_value_much_longer_than_the_window(tmp_path):
    path = tmp_path / "long.json"
    path.write_text(json.dumps([{"name": "x" * 3_000_000}, {"name": "y"}]), encoding="utf-8")
    with JsonStream(path, chunk_bytes=1024) as stream:
        assert [len(v["name"]) for _, v in stream.items("a list")] == [3_000_000, 1]


def test_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes("\ufeff[1, 2]".encode())
    with JsonStream(path) as stream:
        assert [v for _, v in stream.items("a list")] == [1, 2]


@pytest.mark.parametrize(
    "text, message",
    [
        ('[{"a": 1}, {"a": 2,}]', "not valid JSON (Expecting property name enclosed in double quotes at line 1, column 20)"),
        ('[{"a": 1}, {"a": 2}', "Expecting ',' delimiter, found the end of the file"),
        ('[{"a": 1}\n, {"a": 2}] x', "Extra data at line 2, column 13"),
        ('{"a": 1}', "expected a list at the top level, got dict"),
        ('"text"', "expected a list at the top level, got str"),
        ("", "expected a list, found an empty file"),
    ],
)
def test_invalid_json_names_the_position(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as err, JsonStream(path, chunk_bytes=5) as stream:
        list(stream.items("a list"))
        stream.end()
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_non_utf8_names_the_byte(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"a": "ok"}, {"a": "caf\xe9"}]')
    with pytest.raises(DataError, match=r"not UTF-8 text \(invalid continuation byte at byte 24\)"):
        with JsonStream(path, chunk_bytes=4) as stream:
            list(stream.items("a list"))


def test_too_deep_nesting_names_record_and_field(tmp_path):
    path = tmp_path / "deep.json"
    deep = "[" * 200_000 + "]" * 200_000
    path.write_text(f'[{{"asin": "B1"}}, {{"asin": "B2", "images": {deep}}}]', encoding="utf-8")
    with pytest.raises(DataError) as err, JsonStream(path) as stream:
        list(stream.items("a list"))
    assert "record 1, field 'images'" in str(err.value) and "nested too deeply" in str(err.value)
    path.write_text('{"B1": {"attributes": ' + "{\"x\": " * 100_000 + "1" + "}" * 100_000 + "}}", encoding="utf-8")
    with pytest.raises(DataError, match=r"record B1, field 'attributes'"), JsonStream(path) as stream:
        list(stream.members("an object"))
