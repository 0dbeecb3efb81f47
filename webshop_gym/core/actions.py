r"""Action strings: ``search[<keywords>]`` and ``click[<label>]`` (SPEC section 4).

The reference splits an action with the regular expression ``(.+)\[(.+)\]`` (``re.match``,
greedy, no end anchor) and lower-cases the argument.  We keep that grammar exactly, quirks
included: ``Search[x]`` is not a search (names are case-sensitive), ``click[a]b]`` clicks
``a]b``, trailing text after the last ``]`` is ignored, and a newline ends the match.

Actions longer than :data:`MAX_ACTION_LENGTH` characters (the action space's ``max_length``)
are invalid no-ops like any unparsable action: that bounds the work and the memory one action
can cost (a search's text is analysed, kept on the page and cached).

The split runs in linear time (:func:`split_reference`): ``re`` backtracks through that pattern
in quadratic time on a string of many ``[`` (a 100,000-character action took a 24 s step).
"""

from __future__ import annotations

import functools
import re
from enum import IntEnum

__all__ = ["ActionKind", "CLICK", "INVALID", "SEARCH", "MAX_ACTION_LENGTH", "REFERENCE_PATTERN", "parse_action", "split_reference", "format_click", "format_search", "round_trips"]

MAX_ACTION_LENGTH = 100_000
"""Longest action accepted (characters); the envs declare it as their action space's ``max_length``."""

REFERENCE_PATTERN = re.compile(r"(.+)\[(.+)\]")
"""The reference's grammar, kept to document and test :func:`split_reference` (never run on actions)."""


class ActionKind(IntEnum):
    """What a parsed action asks for."""

    INVALID = 0
    SEARCH = 1
    CLICK = 2


# Plain ints for numpy: a numpy operation on an IntEnum member looks up ``__array_ufunc__`` and
# friends on its class, which runs ``EnumType.__getattr__`` (Python code, before Python 3.12);
# a Ctrl-C that lands there is raised inside numpy's lookup, and numpy clears it, so the
# KeyboardInterrupt is lost.  Hot paths therefore never hand an enum member to numpy.
INVALID, SEARCH, CLICK = (int(k) for k in ActionKind)


PARSED_MEMO = 8192
"""Actions of at most :data:`PARSED_MEMO_LENGTH` characters whose split a process remembers (at
most 8,192 x 128 characters: a few MB at worst; the memo starts afresh when full)."""
PARSED_MEMO_LENGTH = 128
_PARSED: dict[str, tuple[str, str | None]] = {}


def parse_action(action) -> tuple[str | None, str | None]:
    """Split an action into (name, lower-cased argument) as the reference does.

    Non-strings and strings longer than :data:`MAX_ACTION_LENGTH` give ``(None, None)``;
    strings without a bracketed argument give ``(action, None)``.  Short actions are remembered
    (agents repeat ``click[buy now]``, ``click[< prev]`` and the like).
    """
    if type(action) is str:  # (a str subclass takes the long way, uncached)
        parsed = _PARSED.get(action)
        if parsed is not None:
            return parsed
    if not isinstance(action, str) or len(action) > MAX_ACTION_LENGTH:
        return None, None
    split = split_reference(action)
    if split is None:
        parsed = action, None
    else:
        name, arg = split
        parsed = name, arg.lower()
    if type(action) is str and len(action) <= PARSED_MEMO_LENGTH:
        if len(_PARSED) >= PARSED_MEMO:
            _PARSED.clear()
        _PARSED[action] = parsed
    return parsed


def split_reference(text: str) -> tuple[str, str] | None:
    r"""``REFERENCE_PATTERN.match(text).groups()`` (``None`` for no match), in linear time.

    ``.`` matches anything but ``\n``, so a match lies inside the first line.  Both groups are
    greedy: the argument ends at the line's last ``]``, and the name at the last ``[`` that leaves
    the name and the argument one character at least.

    Example:
        >>> split_reference("click[a]b]"), split_reference("[x]"), split_reference("search[]")
        (('click', 'a]b'), None, None)
    """
    end = text.find("\n")
    line = text if end < 0 else text[:end]
    close = line.rfind("]")
    if close < 3:  # no room for a name, "[" and an argument (and no negative bound below)
        return None
    open_ = line.rfind("[", 1, close - 1)
    if open_ < 0:
        return None
    return line[:open_], line[open_ + 1 : close]


def format_click(label: str) -> str:
    """Return the action that clicks ``label``."""
    return f"click[{label}]"


def format_search(keywords: str) -> str:
    """Return the action that searches ``keywords``."""
    return f"search[{keywords}]"


def round_trips(label: str) -> bool:
    """Whether ``click[label]`` parses back to a click on ``label`` (so the label is clickable)."""
    if "[" in label or "]" in label or "\n" in label:
        return _round_trips_parsed(label)
    # No bracket and no newline: the grammar splits "click[label]" at its only "[" and its final
    # "]", so the click parses back to ``label`` lower-cased (an empty label does not parse).
    return label != "search" and label != "" and len(label) <= MAX_ACTION_LENGTH - 7 and label.lower() == label


@functools.lru_cache(maxsize=2**14)  # labels with brackets recur (product titles as option values); 16k at most
def _round_trips_parsed(label: str) -> bool:
    return label != "search" and parse_action(format_click(label)) == ("click", label)
