"""StringColumn reads a string by index as a list does (its offsets are read as Python ints)."""

import numpy as np
import pytest

from webshop_gym.data.columns import StringColumn

STRINGS = ["", "B00ASIN", "héllo wörld", "\ud800 lone surrogate", "last"]


def test_every_index_kind_reads_the_same_string(tmp_path):
    column = StringColumn.build(STRINGS)
    StringColumn.build(STRINGS).save(tmp_path, "s")
    mapped = StringColumn.load(tmp_path, "s")  # memory-mapped, as a compiled catalog is read
    for col in (column, mapped):
        assert len(col) == len(STRINGS)
        for i, text in enumerate(STRINGS):
            assert col[i] == text
            assert col[np.int64(i)] == text and col[np.int32(i)] == text
            assert col[i - len(STRINGS)] == text
        assert col[1:3] == STRINGS[1:3]
        assert list(col) == STRINGS


@pytest.mark.parametrize("index", [5, -6, 10**6, np.int64(5)])
def test_out_of_range_is_an_index_error(index):
    column = StringColumn.build(STRINGS)
    with pytest.raises(IndexError, match="out of range for 5 strings"):
        column[index]


def test_empty_column():
    column = StringColumn.build([])
    assert len(column) == 0 and list(column) == []
    with pytest.raises(IndexError):
        column[0]


def test_text_bytes_sums_the_encoded_lengths():
    from webshop_gym.data.columns import StringColumn

    strings = ["abc", "", "caf\u00e9", "\U0001f600 x"]
    column = StringColumn.build(strings)
    for rows in ([], [0], [1, 2], [3, 0, 3], list(range(4))):
        assert column.text_bytes(rows) == sum(len(strings[r].encode("utf-8")) for r in rows)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16])
def test_ragged_row_list_is_the_row_as_python_ints(tmp_path, dtype):
    """``Ragged.row_list`` (memoryviews) gives what ``ragged[i].tolist()`` gives, empty rows and a mapped file too."""
    from webshop_gym.data.columns import Ragged

    rows = [[3, 1, 2], [], [7], [], [0, 5, 5, 9]]
    ragged = Ragged.build(rows, dtype=dtype)
    ragged.save(tmp_path, "r")
    for r in (ragged, Ragged.load(tmp_path, "r"), Ragged.build([[], []], dtype=dtype)):
        for i in range(len(r)):
            got = r.row_list(i)
            assert got == r[i].tolist() and all(type(x) is int for x in got)
    assert [ragged.row_list(i) for i in range(len(rows))] == rows


def test_release_drops_mapped_pages_and_keeps_the_values(tmp_path):
    """A mapped column's pages leave the process's resident memory and are read back unchanged."""
    import psutil

    from webshop_gym.data.columns import Ragged, release_pages

    strings = [f"product {i} " + "x" * (i % 97) for i in range(200_000)]
    StringColumn.build(strings).save(tmp_path, "t")
    Ragged.build([[i, i + 1] for i in range(200_000)]).save(tmp_path, "r")
    column, rows = StringColumn.load(tmp_path, "t"), Ragged.load(tmp_path, "r")
    me = psutil.Process()
    column.release()
    rows.release()
    before = me.memory_info().rss
    total = int(column.data.sum()) + int(rows.values.sum())  # every mapped page read, no Python objects made
    resident = me.memory_info().rss - before
    assert resident > 12 * 2**20  # 11 MB of text and 3 MB of rows
    column.release()
    rows.release()
    assert me.memory_info().rss - before < resident / 4
    assert int(column.data.sum()) + int(rows.values.sum()) == total
    assert list(column) == strings and rows[199_999].tolist() == [199_999, 200_000]
    release_pages(np.arange(3), column.data)  # an array in memory: nothing to do
