"""Title nouns: tagged once with spaCy (parser and NER off) and stored in the catalog."""

from __future__ import annotations

from webshop_gym.nouns import NOUN_TAGS, load_full_pipeline, tag_nouns


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
