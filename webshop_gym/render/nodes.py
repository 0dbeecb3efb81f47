r"""The visible strings of each page, in order, with what element holds them.

This is the single description of page content.  The text observations are built from these
lists directly; the Jinja templates render the same strings into HTML, and a test checks that
parsing the HTML with BeautifulSoup gives the same text (SPEC section 5).

A node is ``(string, kind)``.  Kinds: ``TEXT`` (plain text), ``BUTTON`` (text of a button),
``LABEL`` (an option value's label), ``LINK`` (a product link on a results page) and ``PRE``
(text inside ``<pre>``, where whitespace is kept).  As BeautifulSoup does, a string made only
of ASCII white space becomes ``"\n"`` when it holds a newline and ``" "`` otherwise (outside
``<pre>``); empty strings are no nodes at all.
"""

from __future__ import annotations

import json

__all__ = [
    "BUTTON", "LABEL", "LINK", "PRE", "TEXT", "done_nodes", "done_text", "header_nodes", "item_body_nodes",
    "join_strings", "join_text", "normalize", "product_link_nodes", "product_link_text", "results_header_nodes",
    "results_header_text", "start_nodes",
    "sub_body_nodes", "options_json",
]  # fmt: skip

TEXT, BUTTON, LABEL, LINK, PRE = range(5)
_ASCII_SPACES = frozenset(" \n\t\x0c\r")
SEP = " [SEP] "


def normalize(text: str, kind: int = TEXT) -> str:
    """Return ``text`` as BeautifulSoup's tree holds it (white-space-only strings collapsed)."""
    # isspace() first: one C call rules out almost every string (it is true for more than ASCII white space)
    if kind != PRE and text and text.isspace() and all(ch in _ASCII_SPACES for ch in text):
        return "\n" if "\n" in text else " "
    return text


def join_text(nodes) -> tuple[int, str]:
    """Apply the text-mode rule to nodes: ``(number of strings kept, their stripped join)``."""
    texts = [text for text, _ in nodes if text]
    if not any(map(str.isspace, texts)):  # the common case: no string is only white space
        return len(texts), SEP.join([text.strip() for text in texts])
    kept = []
    for text, kind in nodes:
        if not text:
            continue
        if text.isspace():  # rare: only white space, maybe collapsed (see normalize)
            text = normalize(text, kind)
            if text == "\n":
                continue
        kept.append(text.strip())
    return len(kept), SEP.join(kept)


def join_strings(texts) -> tuple[int, str]:
    """:func:`join_text` of plain ``TEXT``/``LINK`` strings (what the rule does not tell apart)."""
    if all(texts) and not any(map(str.isspace, texts)):
        return len(texts), SEP.join([text.strip() for text in texts])
    return join_text([(text, TEXT) for text in texts])


def start_nodes(instruction: str) -> list:
    """The search (start) page."""
    return [("WebShop", TEXT), ("Instruction: ", TEXT), (instruction, TEXT), ("Search", BUTTON)]


def header_nodes(instruction: str) -> list:
    """The instruction and the ``Back to Search`` button at the top of every inner page."""
    return [("Instruction:", TEXT), (instruction, TEXT), ("Back to Search", BUTTON)]


def results_header_nodes(page_no: int, total: int) -> list:
    """Page counter and paging buttons of a results page."""
    nodes = [(f"Page {page_no} (Total results: {total})", TEXT)]
    if page_no > 1:
        nodes.append(("< Prev", BUTTON))
    nodes.append(("Next >", BUTTON))
    return nodes


def results_header_text(page_no: int, total: int) -> tuple[int, str]:
    """``join_text(results_header_nodes(page_no, total))``, without building the nodes."""
    if page_no > 1:
        return 3, f"Page {page_no} (Total results: {total}){SEP}< Prev{SEP}Next >"
    return 2, f"Page {page_no} (Total results: {total}){SEP}Next >"


def product_link_nodes(catalog, row: int) -> list:
    """One product on a results page: asin link, title, price tag."""
    return [(catalog.asin[row], LINK), (catalog.title[row], TEXT), (catalog.price_tag[row], TEXT)]


def product_link_text(catalog, row: int) -> tuple[int, str]:
    """``join_text(product_link_nodes(catalog, row))``, without building the nodes."""
    return join_strings([catalog.asin[row], catalog.title[row], catalog.price_tag[row]])


def item_body_nodes(catalog, view, show_attrs: bool) -> list:
    """An item page below its ``< Prev`` button: options, title, price, rating, tabs, buy."""
    row = view.row
    nodes = []
    for name, values in view.groups:
        nodes.append((name, TEXT))
        nodes.extend((text, LABEL) for _, text in values)
    nodes += [
        (catalog.title[row], TEXT),
        (f"Price: {catalog.price_tag[row]}", TEXT),
        (f"Rating: {catalog.rating[row]}", TEXT),
        ("Description", BUTTON),
        ("Features", BUTTON),
        ("Reviews", BUTTON),
    ]
    if show_attrs:
        nodes.append(("Attributes", BUTTON))
    nodes.append(("Buy Now", BUTTON))
    return nodes


def sub_body_nodes(catalog, row: int, sub: int) -> list:
    """The content of a tab: 0 description, 1 features, 2 reviews, 3 attributes."""
    if sub == 0:
        return [(catalog.description[row], TEXT)]
    if sub == 1:
        return [(" " + catalog.bullet_text[b], TEXT) for b in catalog.bullets[row]]
    if sub == 2:
        nodes = []
        for r in catalog.reviews[row]:
            nodes += [
                (f'"{catalog.review_title[r]}"', TEXT),
                (catalog.review_score[r], TEXT),
                (catalog.review_body[r], TEXT),
            ]
        return nodes
    nodes = [(" " + catalog.attribute_names[a], TEXT) for a in catalog.attributes[row]]
    return nodes + [
        (catalog.category_names[catalog.category[row]], TEXT),
        (catalog.query_names[catalog.query[row]], TEXT),
        (catalog.product_category_names[catalog.product_category[row]], TEXT),
    ]


_OPTIONS_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=True)
"""``json.dumps(..., sort_keys=True, ensure_ascii=True)`` without building an encoder per call."""


def options_json(options: dict) -> str:
    """Selected options as the done page prints them (Flask's ``tojson``: sorted, ASCII, HTML-safe)."""
    text = _OPTIONS_ENCODER.encode(options)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")


def done_nodes(asin: str, options: dict, reward: float) -> list:
    """The done page (the reference shows these fields whatever the goal)."""
    return _done_nodes(asin, options_json(options), str(reward))


def done_text(asin: str, options: dict, reward: float) -> str:
    """The done page's ``text`` observation: ``join_text(done_nodes(...))[1]``, from its fixed parts.

    Only the asin, the options and the reward vary; the strings between them are joined once.
    """
    varying = (asin, options_json(options), str(reward))
    if not all(v and not v.isspace() for v in varying):  # an empty or blank string: the general rule
        return join_text(_done_nodes(*varying))[1]
    before, between, after, end = _DONE_PARTS
    return before + varying[0].strip() + between + varying[1].strip() + after + varying[2].strip() + end


def _done_nodes(asin: str, options_text: str, reward_text: str) -> list:
    return [
        ("Thank you for shopping with us!", TEXT),
        ("Your code: ", TEXT),
        ("None", PRE),
        (" (Paste it in your MTurk interface.)", TEXT),
        ("Purchased", TEXT),
        ("asin", TEXT), (asin, PRE),
        ("options", TEXT), (options_text, PRE),
        ("attrs", TEXT), ("None", PRE),
        ("category", TEXT), ("None", PRE),
        ("query", TEXT), ("None", PRE),
        ("product category", TEXT), ("None", PRE),
        ("Target", TEXT),
        ("asin", TEXT), ("options", TEXT), ("attrs", TEXT), ("price upper", TEXT),
        ("instuction text", TEXT), ("category", TEXT), ("product category", TEXT), ("query", TEXT),
        ("Goal ", TEXT), ("None", PRE),
        ("Reward", TEXT),
        ("Your score (min 0.0, max 1.0)", TEXT), (reward_text, PRE),
        ("Reward Details ", TEXT), ("None", PRE),
    ]  # fmt: skip


def _done_parts() -> tuple[str, str, str, str]:
    marked = join_text(_done_nodes("\x01", "\x02", "\x03"))[1]
    before, rest = marked.split("\x01")
    between, rest = rest.split("\x02")
    after, end = rest.split("\x03")
    return before, between, after, end


_DONE_PARTS = _done_parts()
