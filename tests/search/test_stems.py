"""The per-catalog stem table: the stemmer's answer for every word, and consulted before it."""

from __future__ import annotations

import pytest

from webshop_gym.search import analysis
from webshop_gym.search.porter import stem
from webshop_gym.search.stems import StemTable, catalog_words, load_stem_table, stem_table_path


@pytest.fixture
def fresh_memo(monkeypatch):
    """An empty per-process memo of terms, so that every token is looked up again."""
    monkeypatch.setattr(analysis, "_MEMO", {})


def test_table_holds_the_stemmers_stem_of_every_catalog_word(default_shop, real_shop):
    for shop in (default_shop, real_shop):
        table = load_stem_table(shop.catalog)
        words = catalog_words(shop.catalog)
        assert len(table) == len(words) > 1_500
        assert sorted(table.words) == sorted(words)
        wrong = [w for w in words if table.get(w) != stem(w)]
        assert wrong == []
        assert stem_table_path(shop.catalog).is_dir()


def test_table_answers_none_for_words_it_lacks(real_shop):
    table = load_stem_table(real_shop.catalog)
    assert table.get("zzqxunheardofword") is None
    assert table.get("café") is None
    assert table.get("") is None


def test_small_tables_probe_past_collisions():
    words = [f"w{i}ing" for i in range(300)] + ["running", "ponies", "a"]
    table = StemTable.build(words)
    assert len(table.slots) == 1024
    assert all(table.get(w) == stem(w) for w in words)
    assert table.get("walking") is None
    empty = StemTable.build([])
    assert empty.get("running") is None


def test_stemmer_is_not_called_for_a_known_word(real_shop, fresh_memo, monkeypatch):
    table = load_stem_table(real_shop.catalog)
    text = "Machine washable decorative pillows, printing technology"
    expected = analysis.analyze(text)

    def refuse(word):
        raise AssertionError(f"stemmed {word!r} although the table holds it")

    monkeypatch.setattr(analysis, "_MEMO", {})
    monkeypatch.setattr(analysis, "stem", refuse)
    assert analysis.analyze(text, table) == expected == ["machin", "washabl", "decor", "pillow", "print", "technolog"]


def test_unknown_words_fall_back_to_the_stemmer(real_shop, fresh_memo, monkeypatch):
    table = load_stem_table(real_shop.catalog)
    stemmed = []

    def counting(word):
        stemmed.append(word)
        return stem(word)

    monkeypatch.setattr(analysis, "stem", counting)
    assert analysis.analyze("Pillows zzqxflooping's", table) == ["pillow", "zzqxfloop"]
    assert stemmed == ["zzqxflooping"]


def test_the_search_consults_its_catalogs_table(real_shop, fresh_memo, monkeypatch):
    search = real_shop.engine
    search.postings()
    assert isinstance(search._stems, StemTable)
    monkeypatch.setattr(analysis, "stem", lambda word: pytest.fail(f"stemmed {word!r}"))
    rows = search.search_batch(["double sided decorative pillows machine washable"], cache=False)[0]
    assert len(rows) == 50


def test_a_read_only_cache_without_the_table_stems_as_before(real_shop, tmp_path, monkeypatch):
    from webshop_gym.error import CacheNotWritable
    from webshop_gym.search import stems

    def refuse(catalog, progress=False, document_words=None):
        raise CacheNotWritable("read-only")

    monkeypatch.setattr(stems, "stem_table_path", lambda catalog: tmp_path / "absent")
    monkeypatch.setattr(stems, "build_stem_table", refuse)
    assert stems.load_stem_table(real_shop.catalog) is None
    assert stems.load_stem_table(real_shop.catalog, build=False) is None


def test_a_large_catalogs_missing_table_waits_for_data_index(default_shop, tmp_path, monkeypatch):
    """An export made before the table: a load builds it only for a small catalog; prepare(build=True) always."""
    from webshop_gym.search import bm25, stems

    monkeypatch.setattr(stems, "stem_table_path", lambda catalog: tmp_path / "stems")
    monkeypatch.setattr(bm25, "STEMS_AT_LOAD", len(default_shop.catalog) - 1)
    search = bm25.BM25Search(default_shop.catalog, progress=False)
    search.postings()
    assert search._stems is None and not (tmp_path / "stems").exists()
    search.prepare(build=True)  # what `webshop-gym data index` runs
    assert isinstance(search._stems, StemTable) and (tmp_path / "stems" / "meta.json").is_file()

    monkeypatch.setattr(stems, "stem_table_path", lambda catalog: tmp_path / "small")
    monkeypatch.setattr(bm25, "STEMS_AT_LOAD", len(default_shop.catalog))
    small = bm25.BM25Search(default_shop.catalog, progress=False)
    small.postings()
    assert isinstance(small._stems, StemTable) and (tmp_path / "small" / "meta.json").is_file()


def test_the_java_free_build_hands_its_words_to_the_table(real_shop, tmp_path, monkeypatch):
    """Built with the postings, the table reads the instructions only, and holds the same words and stems."""
    from webshop_gym.search import bm25, indexing, stems

    monkeypatch.setattr(stems, "stem_table_path", lambda catalog: tmp_path / "stems")
    monkeypatch.setattr(indexing, "postings_folder_name", lambda: "unused")
    search = bm25.BM25Search(real_shop.catalog, progress=False)
    monkeypatch.setattr(bm25.BM25Search, "postings_path", property(lambda self: tmp_path / "postings"))
    passes = []
    full_pass = stems.catalog_words

    def counted(catalog, progress=False, documents=True):
        passes.append(documents)
        return full_pass(catalog, progress, documents)

    monkeypatch.setattr(stems, "catalog_words", counted)
    search.postings()
    assert passes == [False]  # the documents were read once, by the index build
    table = search._stems
    words = full_pass(real_shop.catalog)
    assert sorted(table.words) == sorted(words) and len(words) > 1_500
    assert [table.get(w) for w in sorted(words)] == [stem(w) for w in sorted(words)]


def test_the_builds_token_memo_is_bounded_in_bytes_and_changes_nothing(real_shop, monkeypatch):
    """A memo that starts afresh many times over gives the same postings and words."""
    import numpy as np

    from webshop_gym.search import indexing

    words: dict[str, str] = {}
    whole = indexing.analysed_postings(real_shop.catalog, words=words)
    monkeypatch.setattr(indexing, "TOKEN_MEMO_BYTES", 20_000)  # about 150 tokens
    cleared = []
    real_clear = dict.clear

    class Memo(dict):
        def clear(self):
            cleared.append(len(self))
            real_clear(self)

    monkeypatch.setattr(indexing._Vocabulary, "__init__", _with_memo(indexing._Vocabulary.__init__, Memo))
    small_words: dict[str, str] = {}
    small = indexing.analysed_postings(real_shop.catalog, words=small_words)
    assert len(cleared) > 50 and max(cleared) < 200
    assert small.terms == whole.terms and small_words == words
    for name in ("term_ptr", "docs", "freqs", "norms", "doc_rows", "idf", "tf", "max_tf"):
        assert np.array_equal(getattr(small, name), getattr(whole, name)), name


def _with_memo(init, memo_type):
    def patched(self, stems):
        init(self, stems)
        self.ids = memo_type()

    return patched
