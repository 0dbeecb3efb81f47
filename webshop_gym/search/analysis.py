"""Anserini's default English analysis of a text, without Java, where we can guarantee it.

Pyserini indexes and searches with Anserini's ``DefaultEnglishAnalyzer``: Lucene's
``StandardTokenizer`` (Unicode word breaks, UAX #29), ``EnglishPossessiveFilter`` (a trailing
``'s`` goes), ``LowerCaseFilter``, ``StopFilter`` (Lucene's 33 English stop words) and
``PorterStemFilter``.  :func:`analyze` reproduces that chain for ASCII text; for anything else
it returns ``None`` and the caller asks the Java analyser (:func:`analyze_with_java`).

The word-break rules restricted to ASCII: a token is a run of letters and digits, possibly with
``_`` anywhere (also leading and trailing), where two letters may also be joined by one of
``:.'`` and two digits by one of ``,;.'``; every other character separates tokens.  Tokens
longer than Lucene's 255-character limit are chopped by Lucene in ways we do not model, so a
text with one goes to Java as well.  :mod:`tests.search.test_analysis` compares both analysers
on every golden instruction, every word of the real and generated shops, random word soups and
punctuation mixes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from webshop_gym.search.porter import stem

__all__ = ["STOP_WORDS", "MAX_TOKEN_LENGTH", "TOKEN", "StemLookup", "find_tokens", "tokens", "word_of", "analyze",
           "analyze_with_java", "analyze_many", "term"]

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

_EDGES = "".join(c for c in map(chr, range(128)) if not (c.isalnum() or c == "_" or c.isspace()))
"""ASCII characters that can neither start nor end a token (every one but letters, digits, ``_`` and white space)."""


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


def tokens(text: str) -> list[str]:
    """``TOKEN.findall(text)`` of an ASCII text, the regular expression run only on words that need it.

    No token spans white space, and none starts or ends with a character of :data:`_EDGES`
    (tokens start with ``_`` or a letter or digit and end likewise), so a word's tokens are those
    of the word with such characters stripped from its ends, and a stripped word of letters and
    digits only is one token: most words of a query.
    """
    out = []
    for word in text.split():
        word = word.strip(_EDGES)
        if word.isalnum():
            out.append(word)
        elif word:
            out.extend(find_tokens(word))
    return out


def word_of(token: str) -> str | None:
    """What the stemmer gets of a raw ASCII token: lower case, a trailing ``'s`` dropped (``None``: a stop word)."""
    word = token.lower()
    if word.endswith("'s"):
        word = word[:-2]
    return None if word in STOP_WORDS else word


MEMO_SIZE = 65536
"""Tokens whose terms a process remembers (of at most 255 characters: about 40 MB at worst)."""
_MEMO: dict[str, str | None] = {}
_MISSING = object()


def term(token: str, stems: StemLookup | None = None) -> str | None:
    """The index term of one raw ASCII token (``None``: a stop word).

    Memoised per process (:data:`MEMO_SIZE` tokens; the memo starts afresh when full).  A token
    not remembered is looked up in ``stems`` (a catalog's
    :class:`~webshop_gym.search.stems.StemTable`) and stemmed only when the table lacks it.
    """
    got = _MEMO.get(token, _MISSING)
    if got is not _MISSING:
        return got  # type: ignore[return-value]
    word = word_of(token)
    if word is None:
        got = None
    else:
        got = stems.get(word) if stems is not None else None
        if got is None:
            got = stem(word)
    if len(_MEMO) >= MEMO_SIZE:
        _MEMO.clear()
    _MEMO[token] = got
    return got


def analyze(text: str, stems: StemLookup | None = None, most_distinct: int | None = None) -> list[str] | None:
    """Return the index terms of ``text`` in order, or ``None`` when only Java can tell.

    ``stems``: a catalog's stem table, consulted for words the process has not seen yet.
    ``most_distinct``: stop once more than this many distinct terms are found (the terms so far
    are returned): a query past Lucene's clause limit fails whatever its other words are, so a
    search of 100,000 characters of new words stems about a thousand of them, not every one.

    Example:
        >>> analyze("Gluten-free snack bars, 12.5 oz (pack of 2)")
        ['gluten', 'free', 'snack', 'bar', '12.5', 'oz', 'pack', '2']
        >>> analyze("café") is None
        True
    """
    if not text.isascii():
        return None
    found = tokens(text)
    if len(text) > MAX_TOKEN_LENGTH and any(len(t) > MAX_TOKEN_LENGTH for t in found):
        return None
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
    """Analyse texts with Anserini's analyser in the JVM (started on first use)."""
    from webshop_gym.search import java as _java

    return _java.analyze(texts)


def analyze_many(texts: Sequence[str]) -> list[list[str]]:
    """Analyse texts: the fast analyser where it is exact, Java for the rest (in one call)."""
    out: list[list[str] | None] = [analyze(t) for t in texts]
    rest = [i for i, terms in enumerate(out) if terms is None]
    if rest:
        for i, terms in zip(rest, analyze_with_java([texts[i] for i in rest])):
            out[i] = terms
    return out  # type: ignore[return-value]
