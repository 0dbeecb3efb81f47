"""Title nouns: tagged once with spaCy (parser and NER off) and stored in the catalog."""

from __future__ import annotations

from webshop_gym.data.tagger import NOUN_TAGS, load_full_pipeline
from webshop_gym.data.tagger_pool import tag_nouns


def _full_pipeline_nouns(titles):
    nlp = load_full_pipeline()
    assert {"parser", "ner", "lemmatizer"} <= set(nlp.pipe_names)
    return [[t.text.lower() for t in nlp(title) if t.pos_ in NOUN_TAGS] for title in titles]


def test_fast_tagging_equals_the_full_pipeline(default_shop):
    titles = default_shop.catalog.title.tolist()[:300]
    assert tag_nouns(titles) == _full_pipeline_nouns(titles)


def test_fast_tagging_equals_the_full_pipeline_on_real_titles(real_shop):
    titles = real_shop.catalog.title.tolist()
    assert tag_nouns(titles) == _full_pipeline_nouns(titles)


def test_catalog_stores_nouns(default_shop):
    catalog = default_shop.catalog
    row = 17
    words = catalog.title_nouns(row)
    assert words == tag_nouns([catalog.title[row]])[0]
    assert catalog.noun_count[row] == len(words)
    assert sorted({catalog.noun_names[i] for i in catalog.nouns[row]}) == sorted(set(words))


TRICKY = [
    "There is a cat", "There are Dogs and Cats", "Do Not Disturb Sign", "I have had it", "but what", "That is it",
    "  double  spaces  ", "", "Hello\nWorld Lamp", "Tab\tSeparated\tTitle", "Has Been Used Phone Case",
    "What's in the box? A mug.", "It Does Work - Everything Bagel Seasoning", "anything goes 12 oz",
]


def test_tagging_equals_the_full_pipeline_on_tricky_titles():
    assert tag_nouns(TRICKY) == _full_pipeline_nouns(TRICKY)


def test_spacys_own_ruler_is_the_fallback(default_shop, monkeypatch):
    from webshop_gym.data import tagger as nouns

    titles = default_shop.catalog.title.tolist()[:150] + TRICKY
    expected = tag_nouns(titles)
    monkeypatch.setattr(nouns, "_pos_rules", lambda: None)
    assert nouns.tag_here(titles) == expected


def test_a_few_titles_take_spacys_ruler_with_the_same_nouns(default_shop, monkeypatch):
    """Titles tagged on first use come one or two at a time: spaCy's own ruler, the same nouns."""
    from webshop_gym.data import tagger as nouns

    titles = default_shop.catalog.title.tolist()[:120] + TRICKY
    batched = nouns.tag_here(titles)  # the numpy rules (>= RULES_FROM titles)
    assert len(titles) >= nouns.RULES_FROM

    def no_rules():
        raise AssertionError("a call of a few titles must not use the numpy rules")

    monkeypatch.setattr(nouns, "_pos_rules", no_rules)
    assert [nouns.tag_here([t])[0] for t in titles] == batched
    assert nouns.tag_here(titles[: nouns.RULES_FROM - 1]) == batched[: nouns.RULES_FROM - 1]


def test_tagging_in_worker_processes_gives_the_same_nouns(default_shop, monkeypatch):
    from webshop_gym.data import tagger as nouns

    titles = default_shop.catalog.title.tolist()[:300]
    expected = tag_nouns(titles, processes=1)
    monkeypatch.setattr(nouns, "BATCH_TITLES", 40)  # several chunks for two workers
    assert tag_nouns(titles, processes=2) == expected
