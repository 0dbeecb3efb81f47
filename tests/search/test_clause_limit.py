"""A search past Lucene's clause limit fails whatever its other words are: it stops analysing there.

Issue 46: a search of 100,000 characters of words the process had never seen took about 100 ms
a step, nearly all of it in the Porter stemmer, stemming some 14,000 words of a query that
Lucene refuses after its 1,024th distinct term.  The analysis now stops at the 1,025th.
"""

from __future__ import annotations

import numpy as np

from webshop_gym.search import BM25Search, analysis
from webshop_gym.search.scoring import MAX_CLAUSES


def _fresh_words(n: int, tag: str) -> list[str]:
    return [f"q{tag}{i}x" for i in range(n)]  # never in a shop, never remembered by another test


def test_analyze_stops_after_most_distinct_terms():
    text = "red dress red shoes blue dress green hat"
    assert analysis.analyze(text) == ["red", "dress", "red", "shoe", "blue", "dress", "green", "hat"]
    assert analysis.analyze(text, most_distinct=3) == ["red", "dress", "red", "shoe", "blue"]  # 4th distinct: stop
    assert analysis.analyze(text, most_distinct=6) == analysis.analyze(text)
    assert analysis.analyze("café crème brûlée à la mode", most_distinct=3) == ["café", "crème", "brûlée", "à"]


def test_a_search_of_new_words_stems_no_more_than_the_clause_limit(default_shop, monkeypatch):
    stemmed = []
    real_stem = analysis.stem

    def counting(word):
        stemmed.append(word)
        return real_stem(word)

    monkeypatch.setattr(analysis, "stem", counting)
    engine = BM25Search(default_shop.catalog, cache_bytes=0, progress=False)
    words = _fresh_words(14_000, "a")
    assert len(" ".join(words)) > 90_000
    assert engine.query_terms(" ".join(words)) is None  # past the limit: Lucene fails, no result
    assert len(engine.search(" ".join(words))) == 0
    assert MAX_CLAUSES < len(stemmed) <= 2 * (MAX_CLAUSES + 1)  # two searches, each stopped at the 1,025th


def test_queries_at_the_limit_keep_every_clause(default_shop):
    """Up to 1,024 distinct terms, repeated any number of times, the clauses are those of the whole query."""
    engine = BM25Search(default_shop.catalog, cache_bytes=0, progress=False)
    titles = " ".join(default_shop.catalog.title[:400]).split()
    seen, known = set(), []  # title words of one distinct term each: terms the index holds
    for word in titles:
        terms = analysis.analyze(word) or []
        if len(terms) == 1 and terms[0] not in seen:
            seen.add(terms[0])
            known.append(word)
    assert len(known) > 500
    for distinct in (MAX_CLAUSES - 1, MAX_CLAUSES):
        words = (known + _fresh_words(MAX_CLAUSES, f"b{distinct}"))[:distinct]
        query = " ".join(words * 3)
        ids, boosts = engine.query_terms(query)
        full = analysis.analyze(query)
        assert len(set(full)) == distinct
        expected = [engine.postings().term_ids[t] for t in dict.fromkeys(full) if t in engine.postings().term_ids]
        assert ids.tolist() == expected and np.all(boosts == 3)
    assert engine.query_terms(" ".join(known + _fresh_words(MAX_CLAUSES, "c"))) is None
