"""Lucene's ``StandardTokenizer`` (9.9) on any text, without Java.

Lucene generates its tokenizer with JFlex from ``StandardTokenizerImpl.jflex``: the word-break
rules of UAX #29 over the character properties of Unicode 9.0 (``Word_Break``, ``Script``,
``Line_Break=Complex_Context``, the ``HalfAndFullForms`` block's digits) and the emoji
properties of emoji-data 11.0.  The scanner takes, at each position, the longest text that one
of its rules matches; a character that starts no token is dropped.  The rules, as kept here
(token types do not matter to the analyser, so only their union is matched):

* **emoji**: an emoji character, presentation or modifier sequence, ZWJ sequences of them, a tag
  sequence, a keycap (``1⃣``, with or without ``U+FE0F``) or a flag (two regional indicators);
* **words and numbers**: letters (``ALetter``, ``Hebrew_Letter``), digits (``Numeric`` and the
  full-width digits) and katakana runs, where two letters may be joined by one ``MidLetter``,
  ``MidNumLet`` or ``Single_Quote`` character, two digits by one ``MidNum``, ``MidNumLet`` or
  ``Single_Quote``, anything by ``ExtendNumLet`` (``_``), and a Hebrew letter takes a ``'`` or
  ``"`` before another Hebrew letter;
* **South-East Asian runs** (``Line_Break=Complex_Context``: Thai, Lao, Myanmar, Khmer...), kept
  whole;
* **one Han or one Hiragana character**.

Every token character carries the ``Extend``, ``Format`` and ``ZWJ`` characters after it
(UAX #29's WB4).  The pattern is built from the ``regex`` module's Unicode property classes
(its Unicode is newer than 9.0) with :data:`~webshop_gym.search.unicode9` corrections: the code
points whose class differs in Unicode 9.0 / emoji 11.0 as Lucene compiled them, found by
comparing every code point with Lucene itself (``benchmarks/analysis_parity.py``).

**Long tokens.**  The scanner reads into a buffer of 255 UTF-16 code units that never grows, so
a token is matched within the 255 units from its start (254 when the 255th is the first half of
a surrogate pair): a longer word gives its longest match there, and scanning resumes after it.
"""

from __future__ import annotations

import functools

import regex

from webshop_gym.search import unicode9 as _u9

__all__ = ["CLASSES", "GRAMMAR", "MAX_UNITS", "pattern", "tokenize", "utf16_length"]

MAX_UNITS = 255
"""The scanner's buffer, in UTF-16 code units: no token is longer."""


CLASSES = {
    "FEZ": r"\p{WB=Format}\p{WB=Extend}\p{WB=ZWJ}",
    "ZWJ": r"\p{WB=ZWJ}",
    "AHLetter": r"\p{WB=ALetter}\p{WB=Hebrew_Letter}",
    "Hebrew_Letter": r"\p{WB=Hebrew_Letter}",
    "Numeric": r"\p{WB=Numeric}[\p{Blk=HalfAndFullForms}&&\p{Nd}]",
    "Katakana": r"\p{WB=Katakana}",
    "MidLetter": r"\p{WB=MidLetter}\p{WB=MidNumLet}\p{WB=Single_Quote}",
    "MidNum": r"\p{WB=MidNum}\p{WB=MidNumLet}\p{WB=Single_Quote}",
    "ExtendNumLet": r"\p{WB=ExtendNumLet}",
    "Single_Quote": r"\p{WB=Single_Quote}",
    "Double_Quote": r"\p{WB=Double_Quote}",
    "Regional_Indicator": r"\p{WB=Regional_Indicator}",
    "Complex_Context": r"\p{LB=Complex_Context}",
    "Han": r"\p{Script=Han}",
    "Hiragana": r"\p{Script=Hiragana}",
    "Emoji_Modifier": r"\p{Emoji_Modifier}",
    "Extended_Pictographic": r"\p{Extended_Pictographic}",
    "Emoji": r"\p{Emoji}",
    "Emoji_Modifier_Base": r"\p{Emoji_Modifier_Base}",
}
"""The character classes of the grammar, as the ``regex`` module's properties (before the corrections)."""


def _cls(name: str) -> str:
    """Class ``name`` of :data:`CLASSES` with its Unicode 9 corrections added and removed."""
    base = CLASSES[name]
    plus, minus = _u9.CORRECTIONS.get(name, ("", ""))
    out = f"[{base}{plus}]" if plus else f"[{base}]"
    return f"[{out}--[{minus}]]" if minus else out


# WB4: what follows every token character (also a ZWJ, whose own class in Unicode 9 is ZWJ).
_FEZ = _cls("FEZ")
_X = f"{_FEZ}*"
_XN = f"[{_FEZ}--[\\uFE0E\\uFE0F]]*"  # the emoji rules keep the presentation selectors apart
_ZWJ = _cls("ZWJ")


def _ex(cls: str, tail: str = _X) -> str:
    return f"(?:{cls}{tail})"


_AH = _ex(_cls("AHLetter"))
_HL = _ex(_cls("Hebrew_Letter"))
_NUM = _ex(_cls("Numeric"))
_KATA = _ex(_cls("Katakana"))
_MIDLETTER = _ex(_cls("MidLetter"))
_MIDNUM = _ex(_cls("MidNum"))
_ENL = _ex(_cls("ExtendNumLet"))
_SQ = _ex(_cls("Single_Quote"))
_DQ = _ex(_cls("Double_Quote"))
_RI = _ex(_cls("Regional_Indicator"))
_SEA = _ex(_cls("Complex_Context"))
_HAN = _ex(_cls("Han"))
_HIRA = _ex(_cls("Hiragana"))

# Emoji (TR #51's emoji_sequence, emoji-data 11.0).  Regional indicators, keycap bases, the
# "accidental" emoji (c) (r) (tm) U+3030 U+303D and the modifiers are emoji only in sequences.
_EMOJI_MODIFIER = _cls("Emoji_Modifier")
_RKAM = f"[0-9#*\\u00A9\\u00AE\\u2122\\u3030\\u303D{_cls('Regional_Indicator')}{_EMOJI_MODIFIER}]"
_PICTOGRAPHIC = _cls("Extended_Pictographic")
_EMOJI_PROPERTY = _cls("Emoji")
_EMOJI_CHAR = _ex(f"[{_PICTOGRAPHIC}[{_EMOJI_PROPERTY}--{_RKAM}]]", _XN)
_EMOJI_BASE = _ex(_cls("Emoji_Modifier_Base"), _XN)
_EMOJI_MOD = _ex(_EMOJI_MODIFIER, _XN)

# Words and numbers (UAX #29 WB5-WB13b), regrouped so that a greedy match is the longest (the same
# language as Lucene's rule): a segment is a katakana run or a run of elements; an element is a
# Hebrew letter with a trailing Single_Quote or a Double_Quote and another Hebrew letter (tried
# first: it leaves the next letter free to start an element), digits joined by MidNum characters,
# or letters joined by MidLetter characters; ExtendNumLet joins any two segments.
_ELEMENT = f"(?:{_HL}(?:{_SQ}|{_DQ}{_HL})|{_NUM}(?:{_MIDNUM}{_NUM})*|{_AH}(?:{_MIDLETTER}{_AH})*)"
_SEGMENT = f"(?:{_KATA}+|{_ELEMENT}+)"
_WORD = f"{_ENL}*{_SEGMENT}(?:{_ENL}+{_SEGMENT})*{_ENL}*"

# Emoji elements joined by ZWJ: an element's own tail may take the ZWJs, so a next element needs a
# ZWJ right before it (the greedy form of Lucene's rule).
_EMOJI_CORE = f"(?:{_EMOJI_CHAR}\\uFE0F?|(?:{_EMOJI_BASE})?{_EMOJI_MOD})"
_EMOJI_FIRST = f"(?:{_ZWJ}*{_EMOJI_CHAR}\\uFE0F?|(?:{_ZWJ}*{_EMOJI_BASE})?{_EMOJI_MOD})"  # a lone modifier takes no ZWJ
_EMOJI_SEQUENCE = (f"(?:{_EMOJI_FIRST}(?:[\\U000E0020-\\U000E007E]+\\U000E007F"  # a tag sequence first: longer
                   f"|(?:{_ZWJ}*(?<={_ZWJ}){_EMOJI_CORE})*)"
                   f"|[0-9#*]{_XN}\\uFE0F?\\u20E3{_XN}|{_RI}{{2}})")

RULES = (_EMOJI_SEQUENCE, _WORD, f"{_SEA}+", _HAN, _HIRA)
"""Lucene's token rules (emoji, words and numbers, South-East Asian runs, Han, Hiragana), each greedy."""
GRAMMAR = "(?V1)" + "|".join(RULES)
"""Any token (the leftmost start; the longest of the rules there is the token)."""


# what a run of "_" in a token can touch: letters, digits, katakana, ExtendNumLet, Extend/Format/ZWJ
# and the Single_Quote ending a Hebrew letter's element (א'__)
_TOUCHING = (f"[{_cls('AHLetter')}{_cls('Numeric')}{_cls('Katakana')}{_cls('ExtendNumLet')}{_FEZ}"
             f"{_cls('Single_Quote')}]")
_BARRIER = f"(?V1)(?<!{_TOUCHING})(?:{_ENL}){{2,}}(?!{_TOUCHING})"
"""A run of ExtendNumLet characters (``_``, ``＿``, ``‿``...) touching no token character: in no token."""


@functools.lru_cache(maxsize=1)
def _compiled() -> tuple[regex.Pattern, tuple[regex.Pattern, ...], regex.Pattern, regex.Pattern]:
    return (regex.compile(GRAMMAR), tuple(regex.compile(f"(?V1){rule}") for rule in RULES), regex.compile(_BARRIER),
            regex.compile(f"(?V1)(?:{_ENL})+"))


def pattern() -> regex.Pattern:
    """:data:`GRAMMAR` compiled, on first use (it takes a few tenths of a second; ASCII text never needs it)."""
    return _compiled()[0]


def _longest(text: str, start: int, stop: int) -> int | None:
    """Where the longest token from ``start`` within ``text[:stop]`` ends (JFlex's longest match), if any."""
    ends = [m.end() for rule in _compiled()[1] if (m := rule.match(text, start, stop)) is not None]
    return max(ends) if ends else None


def utf16_length(text: str) -> int:
    """How many UTF-16 code units Java needs for ``text`` (a lone surrogate is one)."""
    return len(text) + sum(1 for c in text if c > "\uffff")


def _window_end(text: str, start: int) -> int:
    """Where the scanner's 255-unit buffer ends for a token starting at ``start`` (a code point index)."""
    piece = text[start : start + MAX_UNITS]
    if not piece or max(piece) < "\ud800":  # one unit each
        return start + len(piece)
    units = 0
    i = start
    n = len(text)
    while i < n:
        width = 2 if text[i] > "\uffff" else 1
        if units + width > MAX_UNITS:
            break  # the first half of a pair in the last unit is held back, with its second half
        if units + width == MAX_UNITS and "\ud800" <= text[i] <= "\udbff":
            break  # a lone first half in the last unit is held back too
        units += width
        i += 1
    return i


def tokenize(text: str) -> list[str]:
    """The raw tokens of ``text``, in order, as Lucene's ``StandardTokenizer`` cuts them.

    Example:
        >>> tokenize("Women’s café, 12,5 kg ×2 中文 👍🏽")
        ['Women’s', 'café', '12,5', 'kg', '2', '中', '文', '👍🏽']
    """
    if text and "\ud800" <= text[-1] <= "\udbff":
        return _lone_high_at_end(text)
    # a run of ExtendNumLet characters touching no token character is in no token: one "_" does the
    # same, and the scan stays linear (a run of 100,000 "＿" took minutes before)
    text = _compiled()[2].sub("_", text)
    out: list[str] = []
    _scan(text, 0, out)
    return out


def _next_token(text: str, pos: int) -> tuple[int, int] | None:
    """The next token at or after ``pos``: its start and end, each match taken within the scanner's buffer.

    The search looks ahead at most 510 code points at a time, enough for every start in the first
    255 to have its whole buffer in view, so a long text is scanned in linear time.
    """
    n = len(text)
    search = pattern().search
    run = _compiled()[3].match
    while pos < n:
        joined = run(text, pos)
        if joined is not None and joined.end() - pos > MAX_UNITS and max(joined.group()) < "\ud800":
            pos = joined.end() - MAX_UNITS  # no buffer that holds only ExtendNumLet characters has a token
        limit = min(n, pos + 2 * MAX_UNITS)
        m = search(text, pos, limit)
        if m is None or (m.start() > pos + MAX_UNITS and limit < n):
            if m is None and limit == n:
                return None
            pos += MAX_UNITS + 1  # no start up to here (later starts are looked at again, further ahead)
            continue
        start = m.start()
        end = _longest(text, start, _window_end(text, start))
        if end is None:  # nothing within the buffer: the scanner drops one character
            pos = start + 1
            continue
        return start, end
    return None


def _scan(text: str, pos: int, out: list[str]) -> None:
    """Append the tokens of ``text[pos:]`` (the scanner's buffer refilled as usual)."""
    while (found := _next_token(text, pos)) is not None:
        start, pos = found
        out.append(text[start:pos])


def _alive(text: str, start: int, end: int) -> bool:
    """Whether the scanner, matching from ``start``, is still in a token when it reaches ``end``."""
    if start == end:
        return True
    if " " in text[start:end]:
        return False
    return pattern().fullmatch(text, start, end, partial=True) is not None


def _lone_high_at_end(text: str) -> list[str]:
    """Tokens of a text that ends with a lone high surrogate: the scanner's refill quirk.

    When the read that reaches the end of the text ends with a high surrogate and the text runs
    out before the buffer is full, the scanner's refill reports the end of input at once: if it
    happened between tokens, the rest of the text gives no token (a text of at most 254 units
    gives none at all); if inside a token, the token ends at its longest match so far and the
    rest is scanned as usual.
    """
    off = [0]
    for c in text:
        off.append(off[-1] + (2 if c > "\uffff" else 1))
    n = len(text)
    if off[n] < MAX_UNITS:
        return []
    out: list[str] = []

    def refill(start: int) -> tuple[int, int]:
        """The buffer's end and how far the reader got, after a refill for a match from ``start``."""
        end = _window_end(text, start)
        held = end < n and off[end] - off[start] == MAX_UNITS - 1  # a high half kept back
        return end, end + held

    end, read_to = refill(0)  # the first read fills the buffer
    pos = 0
    while pos < n:
        found = _next_token(text, pos)
        step_end = found[0] if found is not None else n
        # every skipped character and the token's start are where the scanner starts a match
        for start in [*range(pos, step_end), *([] if found is None else [found[0]])]:
            if read_to >= n or start > end or not _alive(text, start, end):
                continue
            if off[n] - off[start] < MAX_UNITS:  # the final read: the end of input is reported now
                if start == end:
                    return out
                cut = _longest(text, start, end)
                if cut is not None:
                    out.append(text[start:cut])
                _scan(text, cut if cut is not None else start + 1, out)
                return out
            end, read_to = refill(start)
        if found is None:
            return out
        start = found[0]
        stop = _longest(text, start, min(end, found[1])) if found[1] > end else found[1]
        if stop is None:  # nothing within the buffer: the scanner drops one character
            stop = start + 1
        else:
            out.append(text[start:stop])
        pos = stop
    return out
