"""Anserini's default English analysis of any text, without Java.

Pyserini indexes and searches with Anserini's ``DefaultEnglishAnalyzer``: Lucene's
``StandardTokenizer`` (Unicode word breaks, UAX #29), ``EnglishPossessiveFilter`` (a trailing
``'s``, ``’s`` or ``＇s`` goes), ``LowerCaseFilter``, ``StopFilter`` (Lucene's 33 English stop
words) and ``PorterStemFilter``.  :func:`analyze` reproduces that chain exactly for every string.

ASCII words take a fast path: the word-break rules restricted to ASCII make a token a run of
letters and digits, possibly with ``_`` anywhere (also leading and trailing), where two letters
may also be joined by one of ``:.'`` and two digits by one of ``,;.'``; every other character
separates tokens.  A word with any other character goes to :mod:`webshop_gym.search.tokenizer`
(the whole tokenizer: Unicode 9 classes, emoji, tokens chopped at 255 UTF-16 units), as does an
ASCII word longer than 255 characters.  Lower case is Java's ``Character.toLowerCase`` per code
point (Python's ``str.lower`` differs on ``İ`` and on a final ``Σ``), and the stemmer sees UTF-16
code units, as Lucene's does.  ``benchmarks/analysis_parity.py`` and
:mod:`tests.search.test_unicode_analysis` compare it with Lucene.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from webshop_gym.search.porter import stem
from webshop_gym.search.tokenizer import tokenize

__all__ = ["STOP_WORDS", "MAX_TOKEN_LENGTH", "TOKEN", "StemLookup", "find_tokens", "tokens", "word_of", "analyze",
           "analyze_with_java", "analyze_many", "term", "raw_tokens", "lower", "java_stem", "stem_of"]

STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)
"""Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (Anserini's default)."""

MAX_TOKEN_LENGTH = 255
"""``StandardTokenizer``'s default maximum token length."""

_UNIT = "[A-Za-z0-9]"
_JOIN = "(?:_+|(?<=[A-Za-z])[:.'](?=[A-Za-z])|(?<=[0-9])[,;.'](?=[0-9]))"
TOKEN = re.compile(f"_*{_UNIT}(?:{_JOIN}?{_UNIT})*_*")
"""One token of an ASCII text (``TOKEN.findall(text)``; :func:`find_tokens` finds the same in linear time)."""

_BARRIER = re.compile("(?<![A-Za-z0-9_])__+(?![A-Za-z0-9_])")
"""A run of ``_`` with neither a letter nor a digit on either side: it belongs to no token."""


class StemLookup(Protocol):
    """What :func:`term` asks of a stem table (a catalog's :class:`~webshop_gym.search.stems.StemTable`)."""

    def get(self, word: str) -> str | None:
        """The stem of ``word``, or ``None`` when the table lacks it."""


def find_tokens(text: str) -> list[str]:
    """``TOKEN.findall(text)``, in linear time.

    ``re`` tries ``TOKEN`` at every offset of a run of ``_`` that no token can take (no letter or
    digit on either side), scanning the rest of the run each time: quadratic in its length (a
    search of 100,000 ``_`` would take minutes).  Such a run matches nothing wherever it starts,
    so one ``_`` in its place finds the same tokens (tokens never include it, and the characters
    around it stay as they were).

    Example:
        >>> find_tokens("a_b __ ___c. ___")
        ['a_b', '___c']
    """
    if "__" in text:
        text = _BARRIER.sub("_", text)
    return TOKEN.findall(text)


_RUN = re.compile(r"[A-Za-z0-9_]+(?:[:.',;][A-Za-z0-9_]+)*")
"""A run of letters, digits and ``_``, possibly joined by one of ``:.',;``: every token lies inside one."""


def tokens(text: str) -> list[str]:
    """``TOKEN.findall(text)`` of an ASCII text, the full expression run only on the runs that need it.

    Every token lies inside one match of :data:`_RUN` (a token is letters, digits, ``_`` and joiners
    between two letters or two digits), and a run's tokens do not depend on what surrounds it
    (the characters on either side can neither join nor belong to a token).  A run of letters and
    digits only is one token (most runs: one C-level ``findall`` does nearly all the work); any
    other run is cut by :func:`find_tokens`.
    """
    runs = _RUN.findall(text)
    if all(map(str.isalnum, runs)):
        return runs
    out: list[str] = []
    for run in runs:
        if run.isalnum():
            out.append(run)
        else:
            out.extend(find_tokens(run))
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")
_JOINING_SPACE = "\u202f"
"""The one character Python splits on that joins a token (NARROW NO-BREAK SPACE, ``ExtendNumLet``)."""


def raw_tokens(text: str) -> list[str]:
    """Lucene's ``StandardTokenizer`` tokens of any text (before the filters).

    White space other than U+202F never joins or starts a token, so each word is cut on its own:
    an ASCII word of at most 255 characters by the fast path (:func:`tokens`), any other by
    :func:`~webshop_gym.search.tokenizer.tokenize`.

    Example:
        >>> raw_tokens("Women’s café, 2×3 ½ kg")
        ['Women’s', 'café', '2', '3', 'kg']
    """
    if not text.isascii() and max(text) >= "\ud800" and _SURROGATE.search(text):
        # surrogate code points: a pair is one character to Java, a lone one a character of its own
        # (and a lone high surrogate at the very end changes how the whole text is read)
        return tokenize(text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass"))
    if _JOINING_SPACE in text:
        return tokenize(text)
    if text.isascii() and (len(text) <= MAX_TOKEN_LENGTH or max(map(len, text.split()), default=0) <= MAX_TOKEN_LENGTH):
        return tokens(text)
    out: list[str] = []
    for word in text.split():
        if len(word) <= MAX_TOKEN_LENGTH and word.isascii():
            out.extend(tokens(word))
        else:
            out.extend(tokenize(word))
    return out


_APOSTROPHES = "'\u2019\uff07"
"""What ``EnglishPossessiveFilter`` takes for the apostrophe of a trailing ``'s`` (or ``'S``)."""

_LOWER_APART = frozenset("\u0130\u03a3")
"""Where ``str.lower`` is not Java's ``Character.toLowerCase`` per code point: ``İ`` (Python: ``i̇``)
and ``Σ`` (Python: ``ς`` at a word's end); every other code point agrees (all checked against Java 21)."""
_JAVA_LOWER = {"\u0130": "i", "\u03a3": "\u03c3"}


def lower(token: str) -> str:
    """``token`` lower-cased as Lucene's ``LowerCaseFilter`` does (``Character.toLowerCase`` per code point)."""
    if token.isascii() or _LOWER_APART.isdisjoint(token):
        return token.lower()
    return "".join(_JAVA_LOWER.get(c) or c.lower() for c in token)


def java_stem(word: str) -> str:
    """:func:`~webshop_gym.search.porter.stem` over UTF-16 code units, as Lucene's stemmer sees a word.

    Only a word with a character beyond U+FFFF differs: each such character is two consonants.
    """
    if word.isascii() or max(word) <= "\uffff":
        return stem(word)
    units = word.encode("utf-16-le", "surrogatepass")
    halves = "".join(chr(units[i] | units[i + 1] << 8) for i in range(0, len(units), 2))
    return stem(halves).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def word_of(token: str) -> str | None:
    """What the stemmer gets of a raw token: a trailing ``'s`` dropped, lower case (``None``: a stop word)."""
    if len(token) >= 2 and token[-1] in "sS" and token[-2] in _APOSTROPHES:
        token = token[:-2]
    word = lower(token)
    return None if word in STOP_WORDS else word


def stem_of(word: str, stems: StemLookup | None = None) -> str:
    """The stem of a word (:func:`word_of`'s): from ``stems`` (a catalog's stem table) when it holds it, else :func:`java_stem`."""
    got = stems.get(word) if stems is not None else None
    return java_stem(word) if got is None else got


MEMO_SIZE = 65536
"""Tokens whose terms a process remembers (of at most 255 characters: about 40 MB at worst)."""
_MEMO: dict[str, str | None] = {}
_MISSING = object()


def term(token: str, stems: StemLookup | None = None) -> str | None:
    """The index term of one raw token (``None``: a stop word).

    Memoised per process (:data:`MEMO_SIZE` tokens; the memo starts afresh when full).  A token
    not remembered is looked up in ``stems`` (a catalog's
    :class:`~webshop_gym.search.stems.StemTable`) and stemmed only when the table lacks it.
    """
    got = _MEMO.get(token, _MISSING)
    if got is not _MISSING:
        return got  # type: ignore[return-value]
    word = word_of(token)
    got = None if word is None else stem_of(word, stems)
    if len(_MEMO) >= MEMO_SIZE:
        _MEMO.clear()
    _MEMO[token] = got
    return got


def analyze(text: str, stems: StemLookup | None = None, most_distinct: int | None = None) -> list[str]:
    """Return the index terms of ``text`` in order (Lucene's, for every string).

    ``stems``: a catalog's stem table, consulted for words the process has not seen yet.
    ``most_distinct``: stop once more than this many distinct terms are found (the terms so far
    are returned): a query past Lucene's clause limit fails whatever its other words are, so a
    search of 100,000 characters of new words stems about a thousand of them, not every one.

    Example:
        >>> analyze("Gluten-free snack bars, 12.5 oz (pack of 2)")
        ['gluten', 'free', 'snack', 'bar', '12.5', 'oz', 'pack', '2']
        >>> analyze("Women’s CAFÉ shoes")
        ['women', 'café', 'shoe']
    """
    found = raw_tokens(text)
    memo, missing = _MEMO, _MISSING
    out = []
    # only a text with more tokens than the limit can pass it: the others skip the count
    seen: set[str] | None = None if most_distinct is None or len(found) <= most_distinct else set()
    for token in found:
        t = memo.get(token, missing)
        if t is missing:
            t = term(token, stems)
        if t is None:
            continue
        out.append(t)
        if seen is not None and t not in seen:
            seen.add(t)
            if len(seen) > most_distinct:
                break
    return out


def analyze_with_java(texts: Sequence[str]) -> list[list[str]]:
    """Analyse texts with Anserini's analyser in the JVM (started on first use): the oracle of :func:`analyze`."""
    from webshop_gym.search import java as _java

    return _java.analyze(texts)


def analyze_many(texts: Sequence[str]) -> list[list[str]]:
    """Analyse texts (no Java)."""
    return [analyze(t) for t in texts]
