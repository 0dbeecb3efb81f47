r"""Action strings: ``search[<keywords>]`` and ``click[<label>]`` (SPEC section 4).

The reference splits an action with the regular expression ``(.+)\[(.+)\]`` (``re.match``,
greedy, no end anchor) and lower-cases the argument.  We keep that grammar exactly, quirks
included: ``Search[x]`` is not a search (names are case-sensitive), ``click[a]b]`` clicks
``a]b``, trailing text after the last ``]`` is ignored, and a newline ends the match.
"""

from __future__ import annotations

import re
from enum import IntEnum

__all__ = ["ActionKind", "parse_action", "format_click", "format_search", "round_trips"]

_PATTERN = re.compile(r"(.+)\[(.+)\]")


class ActionKind(IntEnum):
    """What a parsed action asks for."""

    INVALID = 0
    SEARCH = 1
    CLICK = 2


def parse_action(action) -> tuple[str | None, str | None]:
    """Split an action into (name, lower-cased argument) as the reference does.

    Non-strings give ``(None, None)``; strings without a bracketed argument give
    ``(action, None)``.
    """
    if not isinstance(action, str):
        return None, None
    match = _PATTERN.match(action)
    if match is None:
        return action, None
    name, arg = match.groups()
    return name, arg.lower()


def format_click(label: str) -> str:
    """Return the action that clicks ``label``."""
    return f"click[{label}]"


def format_search(keywords: str) -> str:
    """Return the action that searches ``keywords``."""
    return f"search[{keywords}]"


def round_trips(label: str) -> bool:
    """Whether ``click[label]`` parses back to a click on ``label`` (so the label is clickable)."""
    return label != "search" and parse_action(format_click(label)) == ("click", label)
