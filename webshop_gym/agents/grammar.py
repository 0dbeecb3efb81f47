"""The grammar of model responses: tag blocks, ``Action:`` lines and action strings.

Everything here is pure text processing (no env, no admissible list).  :mod:`.parse` builds the
normalisation and admissibility rules on top of it.

Tag blocks (``<think>``, ``<action>``, ``<answer>``) are found tolerantly:

* tag names are matched case-insensitively and may hold white space (``< Answer >``,
  ``</ answer>``);
* a block runs from an opening tag to the next closing tag of the same name; a second opening
  tag of the same name before that closing tag ends the first block (it stays *unclosed*);
* an opening tag that is never closed gives an unclosed block running to the next known tag
  (or the end of the text): the shape of a generation cut off by ``max_new_tokens``;
* a closing tag with no opening tag (the prompt ended with ``<answer>``) gives an unclosed
  block from the previous known tag (or the start of the text) up to it.

:func:`extract_tag` picks the last closed non-empty block, else the last unclosed non-empty one.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "ACTION_NAMES",
    "Block",
    "action_candidates",
    "choose_block",
    "extract_prefixed",
    "extract_tag",
    "find_blocks",
    "find_tags",
    "split_action",
    "strip_tags",
]

KNOWN_TAGS = ("think", "action", "answer")
ACTION_NAMES = ("search", "click")

# A tag: "<", white space, an optional "/" and white space, the name, white space, ">" (group 2:
# the "/", group 4: the name).  Each run of white space is taken whole, never given back
# (``(?=(\s*))\1`` matches it atomically: a lookahead is never re-entered): giving white space
# back cannot help, since what follows is never white space, and ``<\s*(/?)\s*``, the plain
# way to write it, backtracks through every split of the run, in quadratic time.
_TAG = re.compile(r"<(?=(\s*))\1(?:(/)(?=(\s*))\3)?(think|action|answer)(?=(\s*))\5>", re.IGNORECASE)
# A whole string that is one action: greedy argument (labels may hold brackets, as the reference
# grammar ``(.+)\[(.+)\]`` allows), optional white space between name and bracket.
_FULL_ACTION = re.compile(r"^\s*(search|click)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)
# Actions inside running text: no brackets and no line breaks in the argument.
_INLINE_ACTION = re.compile(r"\b(search|click)\s*\[([^\[\]\n]*)\]", re.IGNORECASE)
_PREFIXED = {
    "action": re.compile(r"^[ \t>*_#-]*action\s*(?:\d+\s*)?[:：][ \t]*(?:\r?\n[ \t]*)*(.*)$", re.IGNORECASE | re.MULTILINE),
    "thought": re.compile(r"^[ \t>*_#-]*thought\s*(?:\d+\s*)?[:：][ \t]*(.*)$", re.IGNORECASE | re.MULTILINE),
}


class Block(NamedTuple):
    """One tag block of a response (a named tuple: a tag soup makes thousands of them).

    Attributes:
        tag: the tag name, lower case.
        content: the text between the tags (not stripped).
        closed: whether both tags were present.
        start: offset of the block's first character (its opening tag, when present).
        end: offset just past the block (its closing tag, when present).
    """

    tag: str
    content: str
    closed: bool
    start: int
    end: int


Tag = tuple[int, int, str, bool]
"""One known tag of a text: (start, end, lower-case name, is_closing)."""


def find_tags(text: str) -> list[Tag]:
    """Every known tag of ``text``, in order (what :func:`find_blocks` and :func:`extract_tag` read).

    >>> find_tags("<think>a</ THINK>")
    [(0, 7, 'think', False), (8, 17, 'think', True)]
    """
    return [(m.start(), m.end(), m.group(4).lower(), m.group(2) is not None) for m in _TAG.finditer(text)]


def find_blocks(text: str, tag: str, tags: list[Tag] | None = None) -> list[Block]:
    """Return every ``<tag>`` block of ``text`` in order (see the module docstring for the rules).

    >>> [b.content for b in find_blocks("<think>a</think><answer>b</answer>", "answer")]
    ['b']
    >>> [(b.content, b.closed) for b in find_blocks("<ANSWER> click[x]", "answer")]
    [(' click[x]', False)]

    ``tags``: :func:`find_tags` of ``text`` when the caller has them already.
    """
    tag = tag.lower()
    if tags is None:
        tags = find_tags(text)
    # ends[i]: the first tag after tag i that ends a block opened at i (a tag of this name, or
    # any opening tag), found in one backward pass (a scan per block was quadratic in the tags).
    ends: list[int | None] = [None] * len(tags)
    following = None
    for i in range(len(tags) - 1, -1, -1):
        ends[i] = following
        if tags[i][2] == tag or not tags[i][3]:
            following = i
    blocks: list[Block] = []
    used_closings: set[int] = set()
    for i, (start, end, name, closing) in enumerate(tags):
        if name != tag or closing:
            continue
        stop = stop_end = len(text)
        closed = False
        j = ends[i]
        if j is not None:
            s2, e2, n2, c2 = tags[j]
            if n2 == tag and c2:
                stop, stop_end, closed = s2, e2, True
                used_closings.add(j)
            else:  # another opening tag ends an unclosed block
                stop = stop_end = s2
        blocks.append(Block(tag, text[end:stop], closed, start, stop_end))
    for j, (start, end, name, closing) in enumerate(tags):
        if name != tag or not closing or j in used_closings:
            continue
        # An orphan closing tag: the block starts after the previous known tag.
        begin = tags[j - 1][1] if j else 0
        blocks.append(Block(tag, text[begin:start], False, begin, end))
    blocks.sort(key=lambda b: b.start)
    return blocks


def extract_tag(text: str, tag: str, tags: list[Tag] | None = None) -> Block | None:
    """The block a parser should read: the last closed non-empty block, else the last unclosed one.

    >>> extract_tag("<answer>click[a]</answer> then <answer>click[b]</answer>", "answer").content
    'click[b]'
    >>> extract_tag("no tags here", "answer") is None
    True
    """
    return choose_block(find_blocks(text, tag, tags))


def choose_block(blocks: list[Block]) -> Block | None:
    """Of :func:`find_blocks`' blocks, the one :func:`extract_tag` reads (rules there)."""
    blocks = [b for b in blocks if b.content.strip()]
    closed = [b for b in blocks if b.closed]
    if closed:
        return closed[-1]
    return blocks[-1] if blocks else None


def strip_tags(text: str) -> str:
    """Remove every known tag (not its content) from ``text``."""
    return _TAG.sub(" ", text)


def extract_prefixed(text: str, prefix: str) -> str | None:
    r"""The text after the last ``Action:`` (or ``Thought:``) line prefix, or None.

    The prefix is matched case-insensitively at the start of a line, after optional markdown
    decoration (``**Action:**``) and an optional step number (``Action 3:``).  An ``Action:`` that
    ends its line is followed by its action on the next non-blank line (AgentBench's layout: its
    regex ``[Aa]ction: *\n* *`` and its one-shot example write ``Action:\nclick[...]``).

    >>> extract_prefixed("Thought: it fits.\nAction: click[buy now]", "action")
    'click[buy now]'
    >>> extract_prefixed("Thought:\nIt fits.\n\nAction:\nclick[buy now]", "action")
    'click[buy now]'
    """
    pattern = _PREFIXED[prefix.lower()]
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    return matches[-1].group(1)


def split_action(text: str) -> tuple[str, str] | None:
    """Split a string that is exactly one action into (lower-case name, raw argument).

    >>> split_action("Click [Buy Now]")
    ('click', 'Buy Now')
    >>> split_action("buy now") is None
    True
    """
    match = _FULL_ACTION.match(text)
    if match is None:
        return None
    return match.group(1).lower(), match.group(2)


def action_candidates(text: str) -> list[tuple[str, str]]:
    """Every ``search[...]`` / ``click[...]`` written inside ``text``, in order, as (name, argument).

    >>> action_candidates("First click[b0abc], then Click[Buy Now].")
    [('click', 'b0abc'), ('click', 'Buy Now')]
    """
    return [(m.group(1).lower(), m.group(2)) for m in _INLINE_ACTION.finditer(text)]
