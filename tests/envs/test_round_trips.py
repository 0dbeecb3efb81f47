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
