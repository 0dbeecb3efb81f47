"""The Java-free analyser on any text: Lucene's terms, with or without Pyserini.

Without Pyserini (a plain install) the analyser is checked against terms recorded from Lucene
(Anserini 1.7.1 / Lucene 9.9.1 through Pyserini 1.6.0, 2026-12-07); with it, against the JVM
itself on a sample of ``benchmarks/analysis_parity.py``'s fuzz corpus and on every code point
(``benchmarks/unicode9_table.py``'s contexts).  Every document of both 1,000-product shops is
compared in ``test_analysis.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from webshop_gym.search import java as _java
from webshop_gym.search.analysis import analyze, analyze_many, raw_tokens

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
LUCENE = importlib.util.find_spec("pyserini") is not None
needs_lucene = pytest.mark.skipif(not LUCENE, reason="Pyserini (the oracle) is not installed")

# Recorded from Lucene: curly and odd apostrophes, accents, symbols, CJK, South-East Asian scripts,
# emoji sequences, combining marks, right-to-left text, invisible characters, numbers, URLs.
RECORDED = [
    ("women’s shoes", ["women", "shoe"]),
    ("Women’S SHOES", ["women", "shoe"]),
    ("men＇s shirt", ["men", "shirt"]),
    ("kid's", ["kid"]),
    ("kids’", ["kid"]),
    ("x'S y‘s zʼs", ["x", "y‘", "zʼ"]),
    ("don’t stop", ["don’t", "stop"]),
    ("rock ’n’ roll", ["rock", "n", "roll"]),
    ("café crème brûlée", ["café", "crème", "brûlée"]),
    ("Ærøskøbing naïve señor", ["ærøskøbing", "naïv", "señor"]),
    ("İstanbul ΟΔΟΣ Σίσυφος", ["istanbul", "οδοσ", "σίσυφος"]),
    ("STRASSE straße ǅemal ﬁligree", ["strass", "straße", "ǆemal", "ﬁligre"]),
    ("12×12 inch", ["12", "12", "inch"]),
    ("½ cup", ["cup"]),
    ("1½\" pipe", ["1", "pipe"]),
    ("3¼ x 4¾", ["3", "x", "4"]),
    ("25°C 77°F", ["25", "c", "77", "f"]),
    ("10 µm", ["10", "µm"]),
    ("™ ® ©", ["™", "®", "©"]),
    ("2×4 lumber", ["2", "4", "lumber"]),
    ("中文字 日本語の商品", ["中", "文", "字", "日", "本", "語", "の", "商", "品"]),
    ("カタカナ ひらがな ｶﾀｶﾅ", ["カタカナ", "ひ", "ら", "が", "な", "ｶﾀｶﾅ"]),
    ("한국어 텍스트", ["한국어", "텍스트"]),
    ("〇々〆ヶ", ["〇", "々", "ヶ"]),
    ("𠀀𪜀 CJK ext", ["𠀀", "𪜀", "cjk", "ext"]),
    ("ภาษาไทย ไทย๑๒๓", ["ภาษาไทย", "ไทย", "๑๒๓"]),
    ("ສະບາຍດ\u0eb5", ["ສະບາຍດ\u0eb5"]),
    ("မ\u103cန\u103aမ\u102c ខ\u17d2ម\u17c2រ", ["မ\u103cန\u103aမ\u102c", "ខ\u17d2ម\u17c2រ"]),
    ("👩\u200d❤\ufe0f\u200d👨 couple", ["👩\u200d❤\ufe0f\u200d👨", "coupl"]),
    ("👍\U0001f3fd thumbs", ["👍\U0001f3fd", "thumb"]),
    ("🇺🇸🇬🇧🇦", ["🇺🇸", "🇬🇧"]),
    (
        "1\ufe0f\u20e3 #\u20e3 *\ufe0f\u20e3 5\u20e3",
        ["1\ufe0f\u20e3", "#\u20e3", "*\ufe0f\u20e3", "5\u20e3"],
    ),
    (
        "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f flag",
        ["🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "flag"],
    ),
    ("❤\ufe0f ☺\ufe0e ★ ☆ ♥ ♫ ☛", ["❤\ufe0f", "☺", "★", "♥", "♫", "☛"]),
    (
        "140.🏴\U000e0067\U000e0062\U000e0073\ufe0f\U000e0063\U000e0074\U000e007f00",
        ["140", "🏴\U000e0067\U000e0062\U000e0073\ufe0f\U000e0063\U000e0074\U000e007f", "00"],
    ),
    ("🧑\U0001f3ff\u200d🦱 🤷\u200d♀\ufe0f", ["🧑\U0001f3ff\u200d🦱", "🤷\u200d♀\ufe0f"]),
    ("a\U0001f3fbb", ["a\U0001f3fbb"]),
    ("\U0001f3fb alone", ["\U0001f3fb", "alon"]),
    ("x\u200d😀", ["x\u200d", "😀"]),
    ("😀\u200d\u200d😀", ["😀\u200d\u200d😀"]),
    ("e\u0301te\u0301", ["e\u0301te\u0301"]),
    ("a\u0308b\u0327c", ["a\u0308b\u0327c"]),
    ("\u0301leading", ["lead"]),
    ("x\u20e3y", ["x\u20e3y"]),
    (
        "עברית ש\u05b8\u05c1לו\u05b9ם צה\"ל ג'ירפה",
        ["עברית", "ש\u05b8\u05c1לו\u05b9ם", "צה\"ל", "ג'ירפה"],
    ),
    ("العربية مرحبا ٣٤٥", ["العربية", "مرحبا", "٣٤٥"]),
    ("\u202eevil\u202c text", ["evil\u202c", "text"]),
    (
        "a\u200bb c\u200cd e\u2060f g\ufeffh i\u00adj",
        ["b", "c\u200cd", "e\u2060f", "g\ufeffh", "i\u00adj"],
    ),
    ("1,234.56 1.234,56 12'000", ["1,234.56", "1.234,56", "12'000"]),
    ("１２３ ١٢٫٥ ৪৫", ["１２３", "١٢٫٥", "৪৫"]),
    ("v1.2.3 9:30 3/4", ["v1.2.3", "9", "30", "3", "4"]),
    ("a\u202fb", ["a\u202fb"]),
    ("x\u00a0y", ["x", "y"]),
    ("e.g. U.S.A. a.b.", ["e.g", "u.s.a", "a.b"]),
    (
        "https://www.example.com/path?q=1&x=y",
        ["http", "www.example.com", "path", "q", "1", "x", "y"],
    ),
    ("a\ud800big", ["big"]),
    ("\udc00leading lone", ["lead", "lone"]),
    ("x\ud83d\ude00y", ["x", "😀", "y"]),
    ("trailing lone\ud83d", []),
    ("𝐀s 𝐀𝐀ing", ["𝐀", "𝐀𝐀ing"]),
]

# Tokens over 255 UTF-16 units are chopped (Lucene's buffer of 255 units never grows).
LONG = [
    ("x" * 256, ["x" * 255, "x"]),
    ("x" * 600, ["x" * 255, "x" * 255, "x" * 90]),
    ("é" * 300, ["é" * 255, "é" * 45]),
    ("\U0001d400" * 200, ["\U0001d400" * 127, "\U0001d400" * 73]),  # two units each
    ("ab" * 130 + ".cd", ["ab" * 127 + "a", "babab.cd"]),
    ("1" * 254 + ",23", ["1" * 254, "23"]),  # the buffer ends on the comma: the longest match stops before it
    ("x" * 254 + "\U0001d400y", ["x" * 254, "\U0001d400y"]),  # a pair never straddles the buffer's end
    ("_" * 300 + "a", ["_" * 254 + "a"]),
    ("ג'__ x__ __", ["ג'__", "x__"]),  # runs of _ after a Hebrew letter's quote belong to its token  # no token in the first buffers: the scanner moves on
    ("🇦" * 131, ["🇦🇦"] * 65),
]

# Lone surrogates, as a Java String holds them: one separates tokens, a pair is one character, and
# a lone high surrogate at the very end of a short text leaves it without tokens (Lucene's reader).
SURROGATES = [
    ("a\ud800big", ["big"]),
    ("\udc00leading lone", ["lead", "lone"]),
    ("x\ud83d\ude00y", ["x", "😀", "y"]),
    ("trailing lone\ud83d", []),
    ("x\udbd6 y", ["x", "y"]),
]


@pytest.mark.parametrize(("text", "terms"), RECORDED + LONG + SURROGATES)
def test_terms_recorded_from_lucene(text, terms):
    assert analyze(text) == terms


def test_every_string_has_terms_and_java_is_never_asked(monkeypatch):
    def no_java(*args):
        raise AssertionError("the JVM was asked")

    monkeypatch.setattr(_java, "start", no_java)
    monkeypatch.setattr(_java, "analyze", no_java)
    texts = [t for t, _ in RECORDED + LONG + SURROGATES] + ["", " ", "\x00", "\U0010ffff", "\ud800" * 300, "é" + "_" * 5000]
    found = analyze_many(texts)
    assert found == [analyze(t) for t in texts] and all(isinstance(t, list) for t in found)


def test_the_issue_s_apostrophe():
    assert raw_tokens("women’s shoes") == ["women’s", "shoes"]
    assert analyze("women’s shoes") == analyze("women's shoes") == ["women", "shoe"]


def _load(name: str):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


@needs_lucene
def test_recorded_terms_are_still_lucene_s():
    oracle = _load("_lucene_oracle")
    cases = RECORDED + LONG + SURROGATES
    assert oracle.terms([t for t, _ in cases]) == [terms for _, terms in cases]


@needs_lucene
def test_a_sample_of_the_fuzz_corpus_equals_lucene():
    parity = _load("analysis_parity")
    texts = parity.corpus(20_000, seed=52, texts=parity._shop_texts())
    lucene = parity.oracle.terms(texts)
    wrong = [(t, analyze(t), j) for t, j in zip(texts, lucene) if analyze(t) != j]
    assert wrong == [], wrong[:5]


@needs_lucene
def test_every_code_point_alone_equals_lucene():
    table = _load("unicode9_table")
    points = list(range(0, 0x110000, 7))  # a stride (all of them: benchmarks/unicode9_table.py --check)
    assert table.differing(points, contexts=["{c}", "x{c}x"]) == {"{c}": [], "x{c}x": []}


def test_long_runs_of_any_joining_underscore_scan_in_linear_time():
    # ExtendNumLet runs touching no token character ("＿", "‿", "_") are in no token: 100,000 of them
    # took minutes before they were collapsed like ASCII "_" runs; the terms around them are kept
    import time

    from webshop_gym.search.analysis import analyze

    for joiner in ("＿", "‿", "_＿"):
        started = time.perf_counter()
        assert analyze("shoe " + joiner * 50_000 + " boot") == ["shoe", "boot"]
        assert time.perf_counter() - started < 5.0  # linear: about 0.1 s here; quadratic was minutes
    assert analyze("a" + "＿" * 3 + "b") == ["a＿＿＿b"]  # a run inside a word stays in it
