"""The Java-free analyser against Anserini's (Pyserini's JVM) on a fuzz corpus and every shop document.

The corpus (seeded) mixes the shops' own texts (titles, descriptions, bullets, options,
instructions) with what models and shoppers type: curly quotes and apostrophes, accented Latin,
``×``, ``½``, CJK, Thai and other South-East Asian scripts, emoji (ZWJ sequences, flags, keycaps,
skin tones, tag sequences), combining marks, right-to-left text, zero-width characters, numbers
with separators, URLs, e-mails, words of 255+ characters, random code points of every plane and
lone surrogates.  For every string, ``webshop_gym.search.analysis.analyze`` must give Lucene's
terms.  Also measured: how far plain library segmentation gets (the ``regex`` module's Unicode
word boundaries, ``(?w)``, with our filters after it), and the speed of both analysers.

    python benchmarks/analysis_parity.py [--strings 1000000] [--seed 0]
    python benchmarks/analysis_parity.py --shop /path/to/shop-1m --strings 0 --no-library --out analysis_parity_1m

Writes benchmarks/results/analysis_parity.json (or ``--out``'s name).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import sys
import time
from pathlib import Path

import regex

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lucene_oracle as oracle  # noqa: E402
from _common import save, table  # noqa: E402

from webshop_gym.search import analysis  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("WEBSHOP_GYM_SHARED", ROOT.parent / "shared")) / "webshop-small"

APOSTROPHES = "'’‘＇ʼ‛`´′"
QUOTES = '"“”„«»‹›〝〞'
ACCENTED = "café crème brûlée naïve señor Zürich Ærøskøbing İstanbul ΟΔΟΣ straße Ŀlibre ǅemal ﬁligree Ångström".split()
SYMBOLS = "×½¼¾°™®©€£¥§¶•·…–—‐‑‒−±÷²³¹µ‰′″№℃Ω"
CJK = "中文字日本語の商品カタカナひらがな한국어〇々ー〆ヶ㐀𠀀𪜀ｶﾀｶﾅ１２３"
SOUTH_EAST_ASIAN = "ภาษาไทย ສະບາຍດີ မြန်မာ ខ្មែរ ᦀᦁ ꪀꪁ".split()
EMOJI = [
    "😀", "👍🏽", "👩\u200d❤️\u200d👨", "🇺🇸", "🇬🇧", "1️⃣", "#⃣", "*️⃣", "🏴\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
    "❤️", "☺︎", "👨\u200d👩\u200d👧\u200d👦", "🧑🏿\u200d🦱", "✌🏻", "🤷\u200d♀️", "⭐", "★", "☆", "♥", "🏻", "\u200d", "🫠", "🥲",
    "©️", "®", "™", "〰️", "〽", "🇦", "🏳️\u200d🌈", "👁\u200d🗨", "🔟", "Ⓜ️", "ℹ",
]  # fmt: skip
MARKS = "\u0301\u0308\u0327\u20e3\u0e31\u0e48\u05bc\u093f\u0b3e\u1ab0\u1dc0\u20d0\ufe20\U0001d165\U000e0100"
RIGHT_TO_LEFT = "עברית שָׁלוֹם ג'ירפה צה\"ל العربية مرحبا ٣٤٥ ‎ ‏ \u202e \u202b ܐܪܡܝܐ".split()
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u202f\u00a0\u2009\u3000\u0085\u2028\x0b\x0c\u061c\ufe0e\ufe0f"
NUMBERS = ["1,234", "1.234,56", "12'000", "3/4", "1e10", "٣٤٥", "１２３", "²", "1_000", "9:30", "4.5\"", "10%", "$19.99",
           "1,2,3", "0.5mm", "2x4", "12×12", "½\"", "v1.2.3", "№5", "١٢٫٥", "3٫5", "৪৫", "１，０００"]
URLS = ["https://www.example.com/path?q=1&x=y", "http://amazon.com/dp/B06Y3VLDFB", "www.shop.co.uk", "ftp://a.b/c_d",
        "john.doe@example.co.uk", "a_b@c-d.org", "user+tag@mail.com", "C:\\Users\\x", "#hashtag", "@mention"]
SURROGATES = ["\ud800", "\udfff", "\ud83d", "\ude00", "\udb40", "\udc00"]


def _shop_texts() -> list[str]:
    """Titles, descriptions, bullets, options and instructions of the embedded and the real 1k shop."""
    texts: list[str] = []
    for path in (ROOT / "data" / "items_shuffle.json", SHARED / "items_shuffle_1000.json"):
        if path.is_file():
            for item in json.loads(path.read_text()):
                texts += [item.get("name") or "", item.get("full_description") or "", str(item.get("small_description") or ""),
                          str(item.get("customization_options") or ""), item.get("query") or ""]
    for path in (ROOT / "data" / "items_human_ins.json", SHARED / "items_human_ins.json"):
        if path.is_file():
            for value in json.loads(path.read_text()).values():
                texts += [str(ins.get("instruction") or "") for ins in value if isinstance(ins, dict)]
    goals = SHARED / "golden" / "goals.json"
    if goals.is_file():
        texts += [str(g.get("instruction_text") or "") for g in json.loads(goals.read_text())]
    return [t for t in texts if t]


def _random_point(rng: random.Random) -> str:
    plane = rng.random()
    if plane < 0.5:
        return chr(rng.randrange(0x80, 0x10000))
    if plane < 0.8:
        return chr(rng.randrange(0x10000, 0x30000))
    return chr(rng.randrange(0x110000))


def _special(rng: random.Random) -> str:
    kind = rng.randrange(13)
    if kind == 0:
        return rng.choice(APOSTROPHES) + rng.choice("sStd ")
    if kind == 1:
        return rng.choice(QUOTES)
    if kind == 2:
        return rng.choice(ACCENTED)
    if kind == 3:
        return rng.choice(SYMBOLS)
    if kind == 4:
        return "".join(rng.choice(CJK) for _ in range(rng.randint(1, 4)))
    if kind == 5:
        return rng.choice(SOUTH_EAST_ASIAN)
    if kind == 6:
        return "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3)))
    if kind == 7:
        return rng.choice(MARKS)
    if kind == 8:
        return rng.choice(RIGHT_TO_LEFT)
    if kind == 9:
        return rng.choice(INVISIBLE)
    if kind == 10:
        return rng.choice(NUMBERS)
    if kind == 11:
        return rng.choice(URLS)
    return _random_point(rng) if rng.random() < 0.9 else rng.choice(SURROGATES)


def _long_word(rng: random.Random) -> str:
    alphabet = rng.choice(["abcdefghij", "0123456789", "ab1_", "a.b", "1,2.3", "é中ภ", "a\U0001d400", "\U0001d400",
                           "x\u0301", "カ", "🇦", "😀\u200d", "a'’"])
    word = "".join(rng.choice(alphabet) for _ in range(rng.randint(240, 540)))
    if rng.random() < 0.3:
        pos = rng.randrange(len(word))
        word = word[:pos] + _special(rng) + word[pos:]
    return word


def corpus(n: int, seed: int, texts: list[str]) -> list[str]:
    """``n`` fuzz strings (seeded): shop text slices with specials mixed in, soups, long words."""
    rng = random.Random(seed)
    words = sorted({w for t in texts[:20000] for w in t.split()})
    out = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.35:  # a query-like mix of shop words and specials
            parts = [rng.choice(words) if rng.random() < 0.7 else _special(rng) for _ in range(rng.randint(1, 12))]
            glue = rng.choice([" ", " ", "", "-", rng.choice(INVISIBLE)])
            out.append(glue.join(parts))
        elif roll < 0.55:  # a slice of a shop text with specials inserted (also inside words)
            text = rng.choice(texts)
            start = rng.randrange(len(text))
            piece = text[start : start + rng.randint(1, 300)]
            for _ in range(rng.randint(0, 4)):
                pos = rng.randrange(len(piece) + 1)
                piece = piece[:pos] + _special(rng) + piece[pos:]
            out.append(piece)
        elif roll < 0.75:  # a soup of specials, letters and digits
            out.append("".join(_special(rng) if rng.random() < 0.5 else rng.choice("ab1 .'_-s") for _ in range(rng.randint(1, 16))))
        elif roll < 0.9:  # random code points of every plane among letters
            out.append("".join(_random_point(rng) if rng.random() < 0.6 else rng.choice("xy1 ") for _ in range(rng.randint(1, 10))))
        elif roll < 0.97:  # emoji sequences and their parts
            out.append("".join(rng.choice(EMOJI + list(MARKS) + ["a", "1", " "]) for _ in range(rng.randint(1, 8))))
        else:  # words of 255+ characters (Lucene chops them)
            out.append(" ".join(_long_word(rng) if rng.random() < 0.7 else rng.choice(words) for _ in range(rng.randint(1, 3))))
    return out


_BOUNDARY = regex.compile(r"(?wV1)\b")
_WORDLIKE = regex.compile(r"[\w\p{Extended_Pictographic}\p{Emoji_Modifier}\p{Regional_Indicator}]")


def library_terms(text: str) -> list[str]:
    """What plain library segmentation gives: the ``regex`` module's Unicode word boundaries, then our filters."""
    out = []
    for piece in _BOUNDARY.split(text):
        if _WORDLIKE.search(piece):
            t = analysis.term(piece)
            if t is not None:
                out.append(t)
    return out


def _compare(name: str, texts: list[str], batch: int = 20000, library: bool = True) -> dict:
    ours_time = java_time = lib_time = 0.0
    wrong, lib_wrong, examples = 0, 0, []
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        t0 = time.perf_counter()
        ours = [analysis.analyze(t) for t in chunk]
        t1 = time.perf_counter()
        java = oracle.terms(chunk)
        t2 = time.perf_counter()
        lib = [library_terms(t) for t in chunk] if library else java
        t3 = time.perf_counter()
        ours_time, java_time, lib_time = ours_time + t1 - t0, java_time + t2 - t1, lib_time + t3 - t2
        for text, a, b, c in zip(chunk, ours, java, lib):
            if a != b:
                wrong += 1
                if len(examples) < 20:
                    examples.append({"text": text.encode("utf-8", "surrogatepass").decode("utf-8", "backslashreplace"),
                                     "ours": a, "lucene": b})
            lib_wrong += c != b
        print(f"  {name}: {start + len(chunk):,} compared, {wrong} differ", flush=True)
    return {"corpus": name, "strings": len(texts), "differ": wrong, "library_differ": lib_wrong if library else None,
            "ours_per_s": len(texts) / ours_time, "jvm_per_s": len(texts) / java_time,
            "library_per_s": len(texts) / lib_time if library else None, "examples": examples}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strings", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shop", action="append", default=[], type=Path, metavar="DIR",
                        help="also every document of this shop (repeatable; only its catalog is compiled)")
    parser.add_argument("--no-library", action="store_true", help="skip the regex-module segmentation baseline")
    parser.add_argument("--out", default="analysis_parity", help="name of the JSON in benchmarks/results")
    args = parser.parse_args()
    from webshop_gym import load_shop
    from webshop_gym.data.catalog import load_catalog
    from webshop_gym.search.lucene import document_text

    load = os.getloadavg()[0]
    started = time.time()
    analysis.analyze("é"), oracle.terms(["é"])  # one-time costs out of the timings: the grammar's compile, the JVM's start
    texts = _shop_texts()
    rows = []
    library = not args.no_library
    shops = [("embedded shop documents", None)] + ([("real 1k shop documents", SHARED)] if SHARED.is_dir() else [])
    for name, path in shops:
        shop = load_shop(path) if path else load_shop()
        rows.append(_compare(name, [document_text(shop.catalog, r) for r in range(len(shop.catalog))], library=library))
    for folder in args.shop:
        catalog = load_catalog(folder, progress=True)
        texts_of = [document_text(catalog, r) for r in range(len(catalog))]
        rows.append(_compare(f"{folder.name} documents ({len(catalog):,} products)", texts_of, library=library))
        del texts_of
    if args.strings:
        rows.append(_compare(f"fuzz corpus (seed {args.seed})", corpus(args.strings, args.seed, texts), library=library))
    print(table(rows, ["corpus", "strings", "differ", "library_differ", "ours_per_s", "jvm_per_s", "library_per_s"]))
    path = save(args.out, {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "conditions": f"2-core machine shared with other jobs (load average {load:.1f} at start); one process; "
                      "speeds are strings per second of one thread after warm-up, the JVM's through pyjnius (one JNI call per string)",
        "seconds": round(time.time() - started, 1),
        "rows": rows,
    })
    print(f"wrote {path}")
    return 1 if any(r["differ"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
