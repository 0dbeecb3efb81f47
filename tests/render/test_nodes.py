"""The text-mode rule for page strings: white-space-only strings collapse as BeautifulSoup's do."""

from __future__ import annotations

import pytest

from webshop_gym.render.nodes import BUTTON, PRE, TEXT, join_text, normalize


@pytest.mark.parametrize(("text", "kind", "expected"), [
    (" \t ", TEXT, " "),
    ("\n  \n", TEXT, "\n"),
    ("\r\x0c", BUTTON, " "),
    (" \n ", PRE, " \n "),  # <pre> keeps its white space
    ("\u00a0", TEXT, "\u00a0"),  # white space to str.isspace, not to BeautifulSoup: kept
    ("\u2003 \n", TEXT, "\u2003 \n"),
    ("a b", TEXT, "a b"),
    ("", TEXT, ""),
])
def test_only_ascii_white_space_collapses(text, kind, expected):
    assert normalize(text, kind) == expected


def test_join_text_drops_newline_strings_and_strips_the_rest():
    nodes = [("", TEXT), ("\n \n", TEXT), ("  Title  ", TEXT), ("\u00a0", TEXT), (" \n ", PRE), ("  ", TEXT),
             ("Buy Now", BUTTON)]
    assert join_text(nodes) == (5, "Title [SEP]  [SEP]  [SEP]  [SEP] Buy Now")


@pytest.mark.parametrize(("asin", "options", "reward"), [
    ("B07XYZ1234", {"size": "x-large", "color": "navy <blue> & 'white'"}, 0.6666666666666666),
    ("B000000001", {}, 1.0),
    ("B000000001", {"flavor": "café crème", "pack": " 2 "}, 0.0),
    ("", {"a": "b"}, 0.5),  # an empty string is no node at all: the general rule answers
    ("  ", {}, 0.25),  # a blank string collapses to " " and is kept empty: the general rule too
    (" B0PADDED \n", {}, 0.1),
])
def test_done_text_equals_joining_the_done_nodes(asin, options, reward):
    from webshop_gym.render.nodes import done_nodes, done_text

    assert done_text(asin, options, reward) == join_text(done_nodes(asin, options, reward))[1]


def _join_text_by_the_rule(nodes) -> tuple[int, str]:
    """The text-mode rule node by node (the general path of join_text, without its fast path)."""
    kept = []
    for text, kind in nodes:
        if not text:
            continue
        text = normalize(text, kind)
        if text == "\n":
            continue
        kept.append(text.strip())
    return len(kept), " [SEP] ".join(kept)


@pytest.mark.parametrize("strings", [
    ["B07ABC", "  A title  ", "$12.99"],
    ["B07ABC", "", "$1"],  # an empty string: no node
    ["B07ABC", " \n ", "$1"],  # white space with a newline: dropped
    ["B07ABC", "   ", "$1"],  # white space alone: kept, empty
    ["", "", ""],
    ["\u00a0", "t", "p"],
])
def test_join_text_and_join_strings_follow_the_rule(strings):
    from webshop_gym.render.nodes import LINK, join_strings

    nodes = [(strings[0], LINK), *((s, TEXT) for s in strings[1:])]
    expected = _join_text_by_the_rule(nodes)
    assert join_text(nodes) == expected
    assert join_strings(strings) == expected


def test_product_link_text_joins_the_link_nodes(real_shop):
    from webshop_gym.render.nodes import product_link_nodes, product_link_text

    catalog = real_shop.catalog
    assert all(product_link_text(catalog, r) == _join_text_by_the_rule(product_link_nodes(catalog, r))
               for r in range(len(catalog)))


@pytest.mark.parametrize(("page_no", "total"), [(1, 50), (2, 50), (5, 3), (1, 0), (-1, 7)])
def test_results_header_text_joins_the_header_nodes(page_no, total):
    from webshop_gym.render.nodes import results_header_nodes, results_header_text

    assert results_header_text(page_no, total) == _join_text_by_the_rule(results_header_nodes(page_no, total))
