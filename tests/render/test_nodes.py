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
