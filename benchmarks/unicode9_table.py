"""Write webshop_gym/search/unicode9.py: where Lucene's character classes differ from the ``regex`` module's.

Lucene's ``StandardTokenizer`` uses Unicode 9.0 and emoji-data 11.0; the ``regex`` module has
a newer Unicode.  Every code point is run through Lucene's tokenizer (Pyserini's JVM) and ours in
the contexts of :data:`CONTEXTS`; for each code point that differs, Lucene's behaviour in all
contexts is matched to that of a code point that agrees (the nearest in class membership), and
the differing one gets that code point's classes.  Rerun after the ``regex`` module's Unicode
changes; ``--check`` only compares (prints the count of differing code points per context).

    python benchmarks/unicode9_table.py [--check]
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

import regex

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lucene_oracle as oracle  # noqa: E402

from webshop_gym.search import tokenizer  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "webshop_gym" / "search" / "unicode9.py"
CONTEXTS = [
    "{c}", "x{c}x", "1{c}1", "\u05d0{c}\u05d0", "\u05d0{c}", "\u30ab{c}\u30ab", "{c}{c}", "_{c}_", "{c}x", "x{c}",
    "{c}1", "1{c}", "\u0e01{c}\u0e01", "\U0001F600{c}", "{c}\U0001F3FB", "\U0001F44D{c}", "\U0001F600\u200d{c}",
    "{c}\u200d\U0001F600", "{c}\ufe0f\u20e3", "{c}\u20e3", "{c}\U000E0041\U000E007F", "\U0001F1E6{c}", "{c}\ufe0f",
    "\u4e2d{c}", "\u3042{c}",
]  # fmt: skip
"""Where each code point is tried ({c}): alone, between letters, digits, Hebrew, katakana, Thai, in emoji sequences."""
MARK = "\nqzq\n"
BATCH = 400
POINTS = range(0x110000)


def _tokens_per_context(context: str, points: list[int], lucene: bool) -> list[list[str]]:
    """The tokens of ``context`` with each code point, batched (a marker token between them)."""
    texts = [MARK.join(context.replace("{c}", chr(c)) for c in points[i : i + BATCH]) for i in range(0, len(points), BATCH)]
    found = oracle.tokens(texts) if lucene else [tokenizer.tokenize(t) for t in texts]
    out: list[list[str]] = []
    for tokens in found:
        group: list[str] = []
        for t in tokens:
            if t == "qzq":
                out.append(group)
                group = []
            else:
                group.append(t)
        out.append(group)
    assert len(out) == len(points), (context, len(out), len(points))
    return out


def relevant() -> list[int]:
    """The code points worth trying beyond "alone": those assigned in the ``regex`` module's Unicode or in a class.

    Any other code point is unassigned (or private use, or a surrogate) there, hence also in
    Unicode 9.0, and in no class of either tokenizer: it only ever separates tokens.
    """
    every = "".join(map(chr, POINTS))
    classes = "".join(tokenizer.CLASSES.values())
    return [m.start() for m in regex.finditer(f"(?V1)[[^\\p{{Cn}}\\p{{Co}}\\p{{Cs}}]{classes}]", every)]


def differing(points: list[int], contexts: list[str] = CONTEXTS) -> dict[str, list[int]]:
    """Per context, the code points whose tokens differ (ours vs Lucene's): ``points`` alone, the relevant ones in context."""
    out = {}
    near = sorted(set(relevant()).intersection(points))
    print(f"{len(near):,} code points tried in every context", flush=True)
    alone = points
    for context in contexts:
        points = alone if context == "{c}" else near
        ours = _tokens_per_context(context, points, lucene=False)
        theirs = _tokens_per_context(context, points, lucene=True)
        out[context] = [c for c, a, b in zip(points, ours, theirs) if a != b]
    return out


def _membership() -> dict[str, set[int]]:
    every = "".join(map(chr, POINTS))
    return {name: {m.start() for m in regex.finditer(f"(?V1)[{base}]", every)} for name, base in tokenizer.CLASSES.items()}


def _ranges(points: set[int]) -> list[str]:
    runs: list[list[int]] = []
    for c in sorted(points):
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return [f"\\U{a:08X}" if a == b else f"\\U{a:08X}-\\U{b:08X}" for a, b in runs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only count the differing code points")
    args = parser.parse_args()
    start = time.time()
    diff = differing(list(POINTS))
    for context, bad in diff.items():
        print(f"{context!r:>32}: {len(bad):6d} code points differ", flush=True)
    wrong = sorted(set().union(*diff.values()))
    print(f"{len(wrong)} code points differ in some context ({time.time() - start:.0f} s)")
    if args.check:
        return 1 if wrong else 0
    member = _membership()
    names = list(member)

    def vector(c: int) -> tuple[bool, ...]:
        return tuple(c in member[n] for n in names)

    # candidate representatives: a few agreeing code points of every membership vector
    wrong_set = set(wrong)
    pool: dict[tuple[bool, ...], list[int]] = collections.defaultdict(list)
    for c in POINTS:
        if c not in wrong_set:
            v = vector(c)
            if len(pool[v]) < 3:
                pool[v].append(c)
    candidates = [c for cs in pool.values() for c in cs]
    signature = {}
    for context in CONTEXTS:
        for c, toks in zip(candidates + wrong, _tokens_per_context(context, candidates + wrong, lucene=True)):
            shape = [t.replace(chr(c), "C") for t in toks]
            signature.setdefault(c, []).append(tuple(shape))
    by_signature: dict[tuple, list[int]] = collections.defaultdict(list)
    for c in candidates:
        by_signature[tuple(signature[c])].append(c)
    plus: dict[str, set[int]] = collections.defaultdict(set)
    minus: dict[str, set[int]] = collections.defaultdict(set)
    unmatched = []
    for c in wrong:
        reps = by_signature.get(tuple(signature[c]))
        if not reps:
            unmatched.append(c)
            continue
        mine = vector(c)
        rep = min(reps, key=lambda r: sum(a != b for a, b in zip(vector(r), mine)))
        for name, want, have in zip(names, vector(rep), mine):
            if want and not have:
                plus[name].add(c)
            elif have and not want:
                minus[name].add(c)
    print(f"unmatched: {len(unmatched)} {[hex(c) for c in unmatched[:20]]}")
    lines = [
        '"""Where Lucene\'s Unicode 9.0 / emoji 11.0 character classes differ from the ``regex`` module\'s.',
        "",
        "Written by ``benchmarks/unicode9_table.py`` from a comparison of every code point with Lucene's",
        f"tokenizer ({len(wrong)} code points differed before these corrections; mostly characters",
        "assigned after Unicode 9.0, which Lucene treats as unassigned, and the emoji-data 11.0",
        "``Extended_Pictographic`` symbols).  Do not edit by hand.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        f'REGEX_VERSION = "{regex.__version__}"',
        '"""The ``regex`` release whose Unicode data these corrections were computed against."""',
        "",
        "CORRECTIONS: dict[str, tuple[str, str]] = {",
    ]
    for name in names:
        if plus[name] or minus[name]:
            lines.append(f'    "{name}": (')
            for part in (plus[name], minus[name]):
                pieces = _ranges(part)
                chunks = ["".join(pieces[i : i + 4]) for i in range(0, len(pieces), 4)] or [""]
                for k, chunk in enumerate(chunks):
                    end = "," if k == len(chunks) - 1 else ""
                    lines.append(f'        "{chunk}"{end}')
            lines.append("    ),")
    lines += [
        "}",
        '"""Per class of :data:`webshop_gym.search.tokenizer.CLASSES`: (code points to add, code points to remove)."""',
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT} ({sum(map(len, plus.values()))} added, {sum(map(len, minus.values()))} removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
