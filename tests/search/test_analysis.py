"""The fast analyser and the Porter stemmer against Anserini's analyzer in the JVM."""

from __future__ import annotations

import json
import random

import pytest

from webshop_gym.search import java as _java
from webshop_gym.search.analysis import STOP_WORDS, TOKEN, analyze, analyze_many, term, tokens
from webshop_gym.search.lucene import document_text
from webshop_gym.search.porter import stem


def _check(texts: list[str]) -> int:
    """Compare the analyser with Java on every text; return how many were compared."""
    fast = [analyze(t) for t in texts]
    java = _java.analyze(texts)
    wrong = [(t, f, j) for t, f, j in zip(texts, fast, java) if f != j]
    assert wrong == [], wrong[:5]
    return len(texts)


def test_stop_words_are_lucenes():
    _java.start()  # before jnius is imported
    from jnius import autoclass

    english = autoclass("org.apache.lucene.analysis.en.EnglishAnalyzer").ENGLISH_STOP_WORDS_SET
    assert english.size() == len(STOP_WORDS)
    assert all(english.contains(w) for w in STOP_WORDS)


def test_known_stems():
    # Porter's paper's examples, Lucene's two departures (bli -> ble, logi -> log), tokens with digits
    pairs = {"caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat", "feed": "feed",
             "agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing", "conflated": "conflat",
             "hopping": "hop", "filing": "file", "happy": "happi", "relational": "relat", "conditional": "condit",
             "generalization": "gener", "sensibility": "sensibl", "archaeology": "archaeolog", "controlling": "control",
             "roll": "roll", "electrical": "electr", "40s": "40", "12.5s": "12.5", "as": "as", "yes": "ye", "y": "y"}
    assert {w: stem(w) for w in pairs} == pairs


def test_shop_documents_and_vocabularies(default_shop, real_shop):
    """Every document and every distinct word of both 1,000-product shops (~28,000 texts)."""
    docs, words = [], set()
    for shop in (default_shop, real_shop):
        texts = [document_text(shop.catalog, r) for r in range(len(shop.catalog))]
        docs += texts
        for t in texts:
            words.update(t.split())
    compared = _check(docs + sorted(words))
    assert compared > 25_000
    non_ascii = [d for d in docs if not d.isascii()]
    assert len(non_ascii) > 300  # compared above, with no Java in our analyser


def test_golden_instructions(golden_dir):
    goals = json.loads((golden_dir / "goals.json").read_text())
    texts = [g["instruction_text"] for g in goals]
    texts += [t.split(", and price")[0].lower() for t in texts]
    assert _check(texts) > 13_000


def test_punctuation_numbers_and_word_soups(default_shop):
    rng = random.Random(5)
    alphabet = "abcXYZ019_.,;:'\"-+!?()[]{}*/\\&|^~<>@#$%= \t\n\x00\x7f"
    words = " ".join(default_shop.catalog.title[:300]).split()
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(4000)]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(1000)]
    texts += [f"{rng.randint(0, 9999)}{rng.choice('.,;:')}{rng.randint(0, 999)}{rng.choice(['', 's', 'oz', '.'])}"
              for _ in range(500)]
    texts += ["u.s.a. 1,000.50 1,,000 abc.123 a1.2 x-ray __init__ _ __ a_1 1_a a:b 1:2 a;b 1;2",
              "it's dog's dogs' rock'n'roll don't O'NEIL'S 'quoted' ''", "AND OR NOT title:x^2 [a TO b] {x} ~1 /re/"]
    assert _check(texts) == len(texts)


def test_word_by_word_tokens_are_the_expressions(real_shop):
    """:func:`tokens` (the expression only on words that need it) finds what ``TOKEN.findall`` finds."""
    rng = random.Random(7)
    ascii_all = [chr(c) for c in range(128)]
    joins = list("aZ09_.,;:'") * 6 + [" "] * 4
    texts = ["".join(rng.choice(ascii_all) for _ in range(rng.randint(0, 50))) for _ in range(5000)]
    texts += ["".join(rng.choice(joins + ascii_all) for _ in range(rng.randint(1, 50))) for _ in range(5000)]
    texts += [document_text(real_shop.catalog, r) for r in range(len(real_shop.catalog))]
    texts = [t for t in texts if t.isascii()]
    assert len(texts) > 10_500
    assert [t for t in texts if tokens(t) != TOKEN.findall(t)] == []
    assert tokens("\x1c_a.b_\x1f 'x'; 1,2, ..") == ["_a.b_", "x", "1,2"]


def test_long_tokens_and_unicode_need_no_java():
    assert analyze("x" * 255) == ["x" * 255]
    assert analyze("x" * 256) == ["x" * 255, "x"]  # Lucene chops tokens over 255 characters
    texts = ["café", "don’t", "日本", "🎁", "\u00a0a", "plain words", "crème brûlée", "x" * 300 + " tail"]
    assert [analyze(t) for t in texts] == _java.analyze(texts)
    assert analyze_many(texts) == _java.analyze(texts)
    # a lone surrogate separates tokens, as in a Java String (pyjnius cannot send one: see test_unicode_analysis)
    assert analyze_many(["a\ud800big"]) == [["big"]]


@pytest.mark.parametrize("token", ["Dog's", "IT'S", "the", "Running"])
def test_term_lowercases_strips_possessives_and_stop_words(token):
    assert term(token) == {"Dog's": "dog", "IT'S": None, "the": None, "Running": "run"}[token]
