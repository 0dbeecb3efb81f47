"""``round_trips``: its bracket-free shortcut answers as parsing the click back does."""

from __future__ import annotations

import random

import pytest

from webshop_gym.core.actions import MAX_ACTION_LENGTH, format_click, parse_action, round_trips


def _by_parsing(label: str) -> bool:
    return label != "search" and parse_action(format_click(label)) == ("click", label)


@pytest.mark.parametrize("label", [
    "", "search", "Search", "b07abc", "B07ABC", "28\" x 28\"", "a]b", "[x]", "a\nb", "a\rb", "a\u2028b", "\u0130",
    "stra\u00dfe", "\u212a", "x" * (MAX_ACTION_LENGTH - 7), "x" * (MAX_ACTION_LENGTH - 6), "< prev", "next >",
])
def test_round_trips_as_parsing_says(label):
    assert round_trips(label) == _by_parsing(label)


def test_round_trips_on_random_labels():
    rng = random.Random(7)
    alphabet = "ab[]\n \tAZ\u0130\u00df\u212a\r\x0b1_"
    labels = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(20_000)]
    assert [round_trips(x) for x in labels] == [_by_parsing(x) for x in labels]


def test_remembered_splits_equal_fresh_ones_and_the_memo_stays_bounded(monkeypatch):
    """``parse_action`` remembers short actions; a remembered split is the one parsing gives, str
    subclasses and long actions are never remembered, and a full memo starts afresh."""
    from webshop_gym.core import actions

    monkeypatch.setattr(actions, "_PARSED", {})
    monkeypatch.setattr(actions, "PARSED_MEMO", 64)
    rng = random.Random(3)
    alphabet = "ab[]\n cK"
    pool = ["click[" + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5))) + "]" for _ in range(200)]
    pool += ["search[Red Shoes]", "click[Buy Now]", "noop", "x" * 129 + "[a]", "Search[x]", "click[a]b]"]

    def fresh(action):
        match = actions.REFERENCE_PATTERN.match(action)
        return (action, None) if match is None else (match.group(1), match.group(2).lower())

    for _ in range(3000):
        action = rng.choice(pool)
        assert parse_action(action) == fresh(action)
        assert len(actions._PARSED) <= 64
    assert "x" * 129 + "[a]" not in actions._PARSED and actions._PARSED  # long ones pass, short ones kept

    class Sneaky(str):
        def __hash__(self):
            return hash("click[buy now]")

    assert parse_action("click[buy now]") == ("click", "buy now")
    assert parse_action(Sneaky("click[other]")) == ("click", "other")
    assert all(type(k) is str for k in actions._PARSED)  # the subclass was parsed, not remembered
    assert parse_action(7) == (None, None) and parse_action("x" * (MAX_ACTION_LENGTH + 1)) == (None, None)
