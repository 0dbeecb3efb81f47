"""Query corpora for checking a search backend against Pyserini, and the comparison itself.

:func:`parity_queries` mixes what agents type and what breaks analysers: instructions (whole,
without their price clause, word subsets), random word soups (with repeated words, which Lucene
turns into boosts), numbers with dots and commas, apostrophes and possessives, hyphens and
underscores, Lucene query syntax, punctuation soups, mixed case and odd white space, Unicode
(accents, curly quotes, CJK, emoji), very long queries and queries past Lucene's 1,024-clause
limit.  ``tests/search`` runs a few thousand of them on every commit;
``benchmarks/search_parity.py`` runs at least 20,000 per shop.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["parity_queries", "compare", "KINDS", "golden_queries", "typed_queries", "TYPED"]

_PUNCT = "_.,;:'\"-+!?()[]{}*/\\&|^~<>@#$%= \t"
_UNICODE = ["café", "naïve", "crème brûlée", "don’t", "kids’", "“quoted”", "–", "—", "™", "®", "©", "°", "½",
            "¼", "x²", "µm", "€5", "ｆｕｌｌ", "日本", "你好", "한국어", "привет", "ελληνικά", "عربى", "🎁", "😀👍",
            "👩‍👩‍👧", "🇺🇸", "\u00a0", "\u200b", "\ufeff", "é", "e\u0301", "ß", "İstanbul", "ǅ", "ﬁ"]
_SYNTAX = ['"', "(", ")", "AND", "OR", "NOT", "*", "?", "~2", "^3", ":", "title:", "[a TO b]", "{x}", "\\", "!",
           "-", "+", "&&", "||", "/re/", "field:(a b)"]
KINDS = ("instruction", "instruction_head", "subset", "soup", "repeat", "numbers", "apostrophes", "hyphens",
         "syntax", "punctuation", "case", "unicode", "long", "clauses")


def parity_queries(titles: Sequence[str], instructions: Sequence[str], n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` queries as ``(kind, query)``, drawn evenly from :data:`KINDS`.

    Args:
        titles: product titles (their words make the soups).
        instructions: goal instructions.
        n: how many queries.
        seed: seeds the draws.
    """
    rng = random.Random(seed)
    words = " ".join(rng.choice(titles) for _ in range(min(len(titles), 3000))).split() or ["x"]
    instructions = list(instructions) or ["i need a red dress"]

    def soup(lo: int, hi: int) -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi)))

    def make(kind: str) -> str:
        if kind == "instruction":
            return rng.choice(instructions)
        if kind == "instruction_head":
            return rng.choice(instructions).split(", and price")[0]
        if kind == "subset":
            ws = rng.choice(instructions).split()
            return " ".join(rng.sample(ws, rng.randint(1, len(ws))))
        if kind == "soup":
            return soup(1, 12)
        if kind == "repeat":
            w = rng.choice(words)
            return " ".join([w] * rng.randint(2, 6) + [rng.choice(words) for _ in range(rng.randint(0, 4))])
        if kind == "numbers":
            parts = [f"{rng.randint(0, 9999)}{rng.choice(['.', ',', ';', '', ':', chr(39)])}{rng.randint(0, 999)}",
                     f"{rng.randint(1, 99)}{rng.choice(['oz', ' oz', '-pack', 'x', 's', 'in', '.5'])}",
                     f"{rng.choice(['$', ''])}{rng.randint(1, 500)}.{rng.randint(0, 99):02d}", rng.choice(words)]
            rng.shuffle(parts)
            return " ".join(parts[: rng.randint(1, 4)])
        if kind == "apostrophes":
            w = rng.choice(words)
            return " ".join([f"{w}'s", f"{rng.choice(words)}'", "don't", f"'{rng.choice(words)}", "it's",
                             f"{rng.choice(words)}'S", "rock'n'roll", "o'neil's"][: rng.randint(1, 8)])
        if kind == "hyphens":
            return "-".join(rng.choice(words) for _ in range(rng.randint(2, 4))) + rng.choice(["", " x-ray", " _a_b_", " a__1"])
        if kind == "syntax":
            return " ".join(rng.choice(_SYNTAX + words) for _ in range(rng.randint(1, 8)))
        if kind == "punctuation":
            return "".join(rng.choice(_PUNCT + "abcxyz019") for _ in range(rng.randint(1, 40)))
        if kind == "case":
            q = soup(1, 6)
            return rng.choice(["  ", "\t", "\n", " "]).join(w.upper() if rng.random() < 0.5 else w.title() for w in q.split())
        if kind == "unicode":
            ws = [rng.choice(words) for _ in range(rng.randint(0, 5))] + [rng.choice(_UNICODE) for _ in range(rng.randint(1, 3))]
            rng.shuffle(ws)
            return " ".join(ws)
        if kind == "long":
            return soup(60, 400)
        if kind == "clauses":  # around Lucene's 1,024 distinct-term limit
            size = rng.choice([1000, 1023, 1024, 1025, 1100])
            return " ".join(f"w{i}x{rng.randint(0, 9)}" for i in range(size)) + " " + soup(1, 3)
        raise ValueError(kind)

    return [(KINDS[i % len(KINDS)], make(KINDS[i % len(KINDS)])) for i in range(n)]


TYPED = ["\u2019", "\u2018", "\u201c", "\u201d", "\u2032", "\u2033", "\u00d7", "\u00bd", "\u00be", "\u00b0",
         "\u2013", "\u2014", "\u2026", "\u00a0", "\u200b", "\u200d", "\u2060", "\ufeff", "\u0301", "\u0308",
         "\u00e9", "\u00e8", "\u00fc", "\u00f1", "\u00e7", "\u00c5", "\u00df", "\u0131", "\u0130", "\u00f8",
         "\u4e2d\u6587", "\u65e5\u672c\u8a9e", "\u3053\u3093\u306b\u3061\u306f", "\ud55c\uad6d\uc5b4",
         "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22", "\u05e2\u05d1\u05e8\u05d9\u05ea",
         "\u0627\u0644\u0639\u0631\u0628\u064a\u0629", "\u202e", "\u200f", "\U0001f600", "\U0001f44d\U0001f3fd",
         "\U0001f469\u200d\U0001f469\u200d\U0001f467", "\U0001f1fa\U0001f1f8", "\u2764\ufe0f", "\u2122",
         "\u00ae", "\uff46\uff55\uff4c\uff4c", "\u2160", "\u2460", "\u00b2", "\u00b5m", "\u20ac5", "\u00a3",
         "\u0915\u093f", "\u0434\u0435\u0442\u0441\u043a\u0438\u0439", "\u1e9e", "\ufb01", "\u01c5"]
"""Characters and words beyond ASCII that models and shoppers type (and the shops' own texts hold)."""


def typed_queries(titles: Sequence[str], instructions: Sequence[str], n: int, seed: int = 0) -> list[str]:
    """``n`` queries made from the shop's words as models and shoppers type them, mostly beyond ASCII.

    Each takes an instruction's head or a few title words and changes it: a curly apostrophe or
    quote in place of a straight one (``women’s``), accents and combining marks inside words,
    ``×``/``½``/``″`` in sizes, CJK, Thai, Hebrew, Arabic, emoji (ZWJ sequences, skin tones, flags),
    zero-width and bidirectional marks, full-width letters, numbers with separators, URLs and
    e-mails, long words (up to 255 characters: words Lucene chops are ``benchmarks/analysis_parity.py``'s).
    """
    rng = random.Random(seed)
    words = " ".join(rng.choice(titles) for _ in range(min(len(titles), 3000))).split() or ["x"]
    instructions = list(instructions) or ["i need a red dress"]

    def base() -> str:
        if rng.random() < 0.5:
            return rng.choice(instructions).split(", and price")[0]
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))

    def change(q: str) -> str:
        kind = rng.randrange(10)
        ws = q.split() or ["x"]
        i = rng.randrange(len(ws))
        if kind == 0:
            return q.replace("'", rng.choice(["\u2019", "\u2018", "\u02bc", "\uff07"])) + rng.choice([" women\u2019s", " men\u2019s", ""])
        if kind == 1:  # a character inside a word
            w = ws[i]
            at = rng.randint(0, len(w))
            ws[i] = w[:at] + rng.choice(TYPED) + w[at:]
            return " ".join(ws)
        if kind == 2:  # sizes
            return q + " " + rng.choice([f"{rng.randint(1, 99)}\u00d7{rng.randint(1, 99)}", f"{rng.randint(1, 9)}\u00bd",
                                         f"{rng.randint(10, 60)}\u2033", f"{rng.randint(1, 9)}\u2032{rng.randint(0, 11)}\u2033",
                                         f"{rng.randint(1, 40)}\u00b0C", f"{rng.randint(1, 9)},{rng.randint(100, 999)}.{rng.randint(0, 99)}",
                                         f"{rng.randint(1, 9)}\u00a0{rng.randint(100, 999)}", f"{rng.randint(1, 99)}\u2009oz"])
        if kind == 3:  # words of other scripts
            ws.insert(i, rng.choice(TYPED[30:]))
            return " ".join(ws)
        if kind == 4:  # marks between words
            return rng.choice(["\u200b", "\u200d", "\u2060", "\ufeff", "\u00a0", "\u3000", "\u202f", "\u200e"]).join(ws)
        if kind == 5:  # accents and combining marks
            return "".join(c + rng.choice(["\u0301", "\u0308", "\u0327", ""]) if c.isalpha() and rng.random() < 0.2 else c
                           for c in q)
        if kind == 6:
            return q + " " + rng.choice([f"https://www.example.com/{rng.choice(words)}?q={rng.randint(1, 99)}",
                                         f"{rng.choice(words).lower()}@example.co.uk", f"www.{rng.choice(words).lower()}.com",
                                         f"#{rng.choice(words)}", f"@{rng.choice(words)}"])
        if kind == 7:  # a long word (up to Lucene's 255; longer ones are the analyser's own corpus)
            return q + " " + (rng.choice(words) * 300)[: rng.choice([64, 128, 200, 254, 255])]
        if kind == 8:  # emoji
            return q + " " + rng.choice(TYPED[37:])
        return "\u201c" + q + "\u201d"

    return [change(base()) for _ in range(n)]


def golden_queries(golden: str | Path, n: int = 600) -> list[str]:
    """``n`` distinct queries of a golden folder: what its trajectories search, then goal instructions.

    The search queries of ``trajectories.jsonl`` (and ``human/trajectories.jsonl``) in order, then
    each goal instruction of ``goals.json`` (and ``human/goals.json``) whole and without its price
    clause, until there are ``n``.
    """
    golden = Path(golden)
    found: dict[str, None] = {}
    for sub in (golden, golden / "human"):
        path = sub / "trajectories.jsonl"
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                for step in json.loads(line)["steps"]:
                    action = step.get("action") or ""
                    if action.startswith("search[") and action.endswith("]"):
                        found.setdefault(action[7:-1])
    for sub in (golden, golden / "human"):
        path = sub / "goals.json"
        if path.is_file():
            for goal in json.loads(path.read_text(encoding="utf-8")):
                text = goal["instruction_text"]
                found.setdefault(text)
                found.setdefault(text.split(", and price")[0])
                if len(found) >= n:
                    return list(found)[:n]
    return list(found)[:n]


def compare(a, b, queries: Sequence[str], k: int = 50, chunk: int = 256) -> list[int]:
    """Indices of the queries on which backends ``a`` and ``b`` return different rows."""
    bad: list[int] = []
    for start in range(0, len(queries), chunk):
        part = list(queries[start : start + chunk])
        for i, (x, y) in enumerate(zip(a.search_batch(part, k), b.search_batch(part, k))):
            if not np.array_equal(x, y):
                bad.append(start + i)
    return bad
