"""The products of a synthetic shop: types, attributes, options and prices.

The model the families are made of, and how option values are normalised and compared.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from webshop_gym.data.synth import vocab as V
from webshop_gym.data.synth.rand import Draw

"""Products are generated and shuffled in blocks of this many records."""

MAX_TARGET_COMBOS = 36
"""Upper bound on the product of option-list lengths of a target (one synthetic goal each)."""

_IMAGE_HOST = "https://images.webshop-gym.invalid"
_FILES = ("items_shuffle.json", "items_ins_v2.json", "items_human_ins.json")
_SEPARATORS = (", ", ": ")

# Share of block slots that start a stand-alone filler product instead of a family.
_P_FILLER = 0.12
# Family composition.
_TARGET_COUNT_WEIGHTS = (0.0, 0.0, 0.35, 0.40, 0.25)  # index = number of targets (2-4)
_DECOY_COUNT_WEIGHTS = (0.05, 0.50, 0.45)  # 0-2 decoys
_P_PRICE_TWIN = 0.8
_P_OPTION_TWIN = 0.8
_P_TARGET_SHORT = 0.05  # a target with a short, search-competitive listing
_P_KEY_IN_BULLETS_ONLY = 0.7  # a target names its distinguishing attribute only in later bullets
_P_MENTION_IN_TARGET = 0.6  # a target mentions another target's (lacked) attribute
_P_HUMAN = 0.40  # share of targets with human instructions
_HUMAN_COUNT_WEIGHTS = (0.0, 0.15, 0.35, 0.50)  # index = number of human instructions (1-3)

# The reference's ordered colour list (SPEC.md section 6), used to keep an option twin's values
# clearly different from the target's after the reward's colour normalisation.
_COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper",
    "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso",
    "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather",
    "indigo", "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime",
    "magenta", "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom",
    "mustard", "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum",
    "purple", "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver",
    "skull", "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger",
    "turquoise", "violet", "walnut", "wheat", "white", "wine", "yellow",
)
_ORDERED_OPTIONS = (
    "Size", "Capacity", "Count", "Item Package Quantity", "Number of Items", "Wattage",
)
_TWIN_OPTION_PREFERENCE = ("Color", "Flavor Name", "Scent", "Pattern Name", "Style", "Material")
_UPPER_WORDS = {
    "usb": "USB", "rgb": "RGB", "bpa": "BPA", "uv": "UV", "led": "LED", "rfid": "RFID",
    "gmo": "GMO", "hdmi": "HDMI", "c": "C",
}
_TOKEN_RE = re.compile(r"[a-z0-9]+")
_CONFLICTS = frozenset(
    pair for a, b in V.CONFLICTING_ATTRIBUTES for pair in ((a, b), (b, a))
)


def normalize_option_value(value: str) -> str:
    """Normalise an option value the way the shop loader does (SPEC.md section 1).

    Args:
        value: The raw value as written in ``customization_options``.

    Returns:
        The value stripped, with "/" replaced by " | ", lowercased.
    """
    return value.strip().replace("/", " | ").lower()


@functools.lru_cache(maxsize=4096)
def _normalize_color(value: str) -> str:
    for color in _COLOR_SET:
        if color in value:
            return color
    return value


def _values_clash(a: str, b: str) -> bool:
    """Whether two option values could be taken for one another by the reward (conservative)."""
    a, b = normalize_option_value(a), normalize_option_value(b)
    if _normalize_color(a) == _normalize_color(b):
        return True
    ta, tb = set(_TOKEN_RE.findall(a)), set(_TOKEN_RE.findall(b))
    return bool(ta & tb)


# ----------------------------------------------------------------------------------------------
# Internal model
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Attr:
    text: str
    role: str  # "", "for" or "with"


@dataclass
class _TypeInfo:
    ptype: V.ProductType
    group: V.Group
    attrs: tuple[_Attr, ...]  # full pool
    distinct: tuple[_Attr, ...]  # attributes usable as a family's distinguishing attribute
    breadcrumb: str


@dataclass
class _Product:
    kind: str  # "target", "decoy", "price_twin", "option_twin", "filler"
    info: _TypeInfo
    brand: str
    attrs: list[_Attr]
    options: list[tuple[str, list[str]]]
    price: tuple[int, int] | None  # (lo, hi) in cents; lo == hi for a single price
    lacking: list[str] = field(default_factory=list)  # attribute texts it must not match
    mention: list[str] = field(default_factory=list)  # lacked attributes its text mentions
    short: bool = False
    instruction: str | None = None
    instruction_attrs: list[str] = field(default_factory=list)
    key_attr: _Attr | None = None  # a target's distinguishing attribute
    unindexed: list[str] = field(default_factory=list)  # own attributes kept out of title/desc/bullet 0
    title_attrs: list[str] = field(default_factory=list)  # attributes its title always names
    human: list[dict[str, Any]] = field(default_factory=list)
    null_option: bool = False
    attrs_missing: bool = False  # no entry in items_ins_v2
    string_bullets: bool = False


def _parse_attr(raw: str) -> _Attr:
    for role in ("for", "with"):
        if raw.startswith(role + " "):
            return _Attr(raw[len(role) + 1 :], role)
    if raw.rsplit(" ", 1)[-1] in V.NOUN_HEADS and raw not in V.NOUN_HEADS_EXCLUDE:
        return _Attr(raw, "with")
    return _Attr(raw, "")


def _build_type_infos() -> tuple[_TypeInfo, ...]:
    infos = []
    for ptype in V.PRODUCT_TYPES:
        group = V.GROUPS[ptype.group]
        tweak = V.TYPE_TWEAKS.get(ptype.query, {})
        if "options" in tweak:
            group = dataclasses.replace(group, options=tweak["options"])
        exclude = tweak.get("exclude", ())
        raw = [a for a in group.attributes if _parse_attr(a).text not in exclude]
        raw += [a for a in ptype.extra_attributes + tweak.get("extra", ()) if a not in raw]
        attrs = tuple(_parse_attr(a) for a in raw)
        names = " | ".join((ptype.query, *(n.lower() for n in ptype.nouns)))
        # An attribute that is part of the type's own name cannot be lacked by a family member.
        distinct = tuple(a for a in attrs if a.text not in names)
        infos.append(
            _TypeInfo(ptype, group, attrs, distinct, group.root + V.BREADCRUMB_SEP + ptype.tail)
        )
    return tuple(infos)


_TYPE_INFOS = _build_type_infos()


# ----------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8192)
def _title_case(text: str) -> str:
    return " ".join(_UPPER_WORDS.get(w, w[:1].upper() + w[1:]) for w in text.split(" "))


def _hyphenated(attr: str) -> str:
    """A form that tokenises like ``attr`` but never contains it (first space -> hyphen)."""
    return attr.replace(" ", "-", 1)


def _brand(draw: Draw) -> str:
    if draw.chance(0.6):
        return draw.choice(V.BRANDS)
    return (
        draw.choice(V.BRAND_SYLLABLES_A)
        + draw.choice(V.BRAND_SYLLABLES_B)
        + draw.choice(V.BRAND_SUFFIXES)
    )


def _nice_cents(dollars: float, draw: Draw) -> int:
    whole = int(dollars)
    ending = draw.choice((99, 99, 95, 49, 0, 89, 97, 50, 29))
    cents = whole * 100 + ending
    return max(cents, 149)


def _fmt_cents(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def _pricing_string(price: tuple[int, int] | None) -> str:
    if price is None:
        return ""
    lo, hi = price
    if lo == hi:
        return _fmt_cents(lo)
    return f"{_fmt_cents(lo)} - {_fmt_cents(hi)}"


def _draw_price(draw: Draw, base: float, allow_range: bool) -> tuple[int, int]:
    dollars = base * (0.75 + 0.5 * draw.u())
    lo = _nice_cents(dollars, draw)
    if allow_range and draw.chance(0.11):
        hi = _nice_cents(dollars * (1.15 + 0.8 * draw.u()), draw)
        if hi > lo:
            return lo, hi
    return lo, lo


def _without_conflicts(attrs: list[_Attr]) -> list[_Attr]:
    """Keep attributes in order, dropping any that contradicts one kept before it."""
    kept: list[_Attr] = []
    for a in attrs:
        if not any((a.text, b.text) in _CONFLICTS for b in kept):
            kept.append(a)
    return kept


def _combos(options: list[tuple[str, list[str]]]) -> int:
    n = 1
    for _, values in options:
        n *= len(values)
    return n
