"""Lucene itself, through Pyserini's JVM: the oracle of the Java-free analyser (benchmarks and tests only).

* :func:`terms`: Anserini's ``DefaultEnglishAnalyzer`` (what Pyserini indexes and searches with);
* :func:`tokens`: Lucene's bare ``StandardTokenizer`` (a ``CustomAnalyzer`` with no filter);
* :func:`lower`: ``Character.toLowerCase`` per code point.

A Python string is handed to Java as a ``String`` built from its code points when it holds a lone
surrogate (pyjnius cannot encode those), so such strings are analysed as Java would analyse a
``String`` holding them.  Needs Pyserini, pyjnius and Java (``webshop_gym.search.java``).
"""

from __future__ import annotations

from collections.abc import Sequence

from webshop_gym.search import java as _java

_state: dict[str, object] = {}


def _classes():
    if not _state:
        english = _java.analyzer()  # starts the JVM with Pyserini's class path
        from jnius import autoclass

        custom = autoclass("org.apache.lucene.analysis.custom.CustomAnalyzer")
        _state.update(
            english=english,
            standard=custom.builder().withTokenizer("standard", autoclass("java.util.HashMap")()).build(),
            utils=autoclass("io.anserini.analysis.AnalyzerUtils"),
            string=autoclass("java.lang.String"),
            character=autoclass("java.lang.Character"),
        )
    return _state


def _java_text(text: str):
    """``text`` as pyjnius passes it, or a Java ``String`` of its code points when it holds a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        points = [ord(c) for c in text]
        return _classes()["string"](points, 0, len(points))
    return text


def _run(analyzer_name: str, texts: Sequence[str]) -> list[list[str]]:
    state = _classes()
    analyzer, utils = state[analyzer_name], state["utils"]
    out = []
    for text in texts:
        # no token holds a space, so the list's "[a, b]" form splits exactly (one string crosses JNI)
        joined = utils.analyze(analyzer, _java_text(text)).toString()[1:-1]
        out.append(joined.split(", ") if joined else [])
    return out


def terms(texts: Sequence[str]) -> list[list[str]]:
    """Anserini's index terms of each text."""
    return _run("english", texts)


def tokens(texts: Sequence[str]) -> list[list[str]]:
    """Lucene's ``StandardTokenizer`` tokens of each text (no filter)."""
    return _run("standard", texts)


def lower(points: Sequence[int]) -> list[int]:
    """``Character.toLowerCase`` of each code point."""
    to_lower = _classes()["character"].toLowerCase
    return [to_lower(p) for p in points]
