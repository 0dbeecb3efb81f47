"""Deterministic generator of synthetic WebShop shops.

A shop is written as the three files of the reference WebShop release (``items_shuffle.json``,
``items_ins_v2.json``, ``items_human_ins.json``; SPEC.md section 1).  Products come in *families*
of one product type: several targets (products with an instruction), each with a distinguishing
attribute that the other members lack, plus decoys and "twins" that copy a target but fail on price
or on an option.  Members that lack an attribute mention it only in a hyphenated, negated form
("not machine-washable"), which the search engine tokenises like the plain phrase while the reward's
substring test does not match it.  So the first search result is often a near miss, as in a real
shop, while the target stays reachable.

Generation is streamed: products are made and shuffled in blocks of ``BLOCK_SIZE`` and written as
they are made, so memory stays bounded whatever ``n_products`` is.  All randomness comes from
``numpy.random.default_rng``; the same ``(n_products, seed)`` gives byte-identical files.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from webshop_gym.data.synth import vocab as V
from webshop_gym.data.synth.rand import Draw, asin_keys, make_asin

__all__ = ["BLOCK_SIZE", "MAX_TARGET_COMBOS", "generate_shop", "normalize_option_value"]

BLOCK_SIZE = 10_000
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


# ----------------------------------------------------------------------------------------------
# Families
# ----------------------------------------------------------------------------------------------
_Plan = list[tuple[str, list[str], int, int, tuple[str, ...]]]


def _family_option_plan(draw: Draw, info: _TypeInfo) -> _Plan:
    """Pick a family's option groups: (name, family value pool, min, max, full value pool)."""
    plan: _Plan = []
    seen_names: list[str] = []
    for key, prob, lo, hi in info.group.options:
        if not draw.chance(prob):
            continue
        name, values = V.OPTION_POOLS[key]
        if name in seen_names:
            continue
        seen_names.append(name)
        size = min(len(values), hi + 3)
        if name in _ORDERED_OPTIONS:
            pool = draw.sample_sorted(values, size)
        else:
            pool = draw.sample(values, size)
        plan.append((name, pool, lo, hi, values))
    return plan


def _pick_options(draw: Draw, plan: _Plan, limit: int | None) -> list[tuple[str, list[str]]]:
    options: list[tuple[str, list[str]]] = []
    for name, pool, lo, hi, _ in plan:
        k = draw.randint(min(lo, len(pool)), min(hi, len(pool)))
        if name in _ORDERED_OPTIONS:
            values = draw.sample_sorted(pool, k)
        else:
            values = draw.sample(pool, k)
        options.append((name, values))
    if limit is not None:
        while _combos(options) > limit:
            i = max(range(len(options)), key=lambda j: (len(options[j][1]), -j))
            name, values = options[i]
            options[i] = (name, values[:-1])
    return options


def _in_pool_order(name: str, values: list[str], pool: tuple[str, ...]) -> list[str]:
    """Values of an ordered option (sizes, counts) sorted as in their pool; others unchanged."""
    if name not in _ORDERED_OPTIONS:
        return list(values)
    return sorted(values, key=pool.index)


def _union_options(products: list[_Product]) -> list[tuple[str, list[str]]]:
    names: list[str] = []
    merged: dict[str, list[str]] = {}
    for p in products:
        for name, values in p.options:
            if name not in merged:
                names.append(name)
                merged[name] = []
            for v in values:
                if v not in merged[name]:
                    merged[name].append(v)
    return [(n, merged[n]) for n in names]


def _synth_instruction(draw: Draw, info: _TypeInfo, attrs: list[_Attr]) -> str:
    pre: list[str] = []
    post_with: list[str] = []
    post_for: list[str] = []
    for a in attrs:
        if a.role == "for":
            post_for.append(a.text)
        elif a.role == "with" and not draw.chance(0.15):
            post_with.append(a.text)
        elif draw.chance(0.7):
            pre.append(a.text)
        else:
            post_with.append(a.text)
    parts = [draw.choice(V.SYNTH_LEADS)]
    if pre:
        parts.append(", ".join(pre))
    parts.append(info.ptype.query)
    if post_with:
        parts.append("with " + ", ".join(post_with))
    if post_for:
        parts.append("for " + ", ".join(post_for))
    return " ".join(parts)


def _article(plural: bool, next_word: str, draw: Draw) -> str:
    if plural:
        return draw.choice(("", "some "))
    return "an " if next_word[:1] in "aeiou" else "a "


def _human_instruction(
    draw: Draw,
    product: _Product,
    attrs: list[_Attr],
    said_options: list[tuple[str, str]],
) -> str:
    info = product.info
    pre: list[str] = []
    post: list[str] = []
    be = "that are " if info.ptype.plural else "that is "
    for a in attrs:
        if a.role == "for":
            post.append(draw.choice(("for ", "for ", "suited for ")) + a.text)
        elif a.role == "with":
            if draw.chance(0.2):
                pre.append(a.text)
            else:
                post.append(draw.choice(("with ", "with ", "featuring ")) + a.text)
        elif draw.chance(0.55):
            pre.append(a.text)
        else:
            post.append(be + a.text)
    noun_phrase = " and ".join(pre) + " " + info.ptype.query if pre else info.ptype.query
    text = draw.choice(V.HUMAN_LEADS) + " " + _article(info.ptype.plural, noun_phrase, draw)
    text += noun_phrase
    if post:
        text += " " + " and ".join(post)
    phrases = []
    for name, value in said_options:
        templates = V.HUMAN_OPTION_PHRASES.get(name.lower(), ("in {v}",))
        phrases.append(draw.choice(templates).format(v=value))
    if phrases:
        joiner = draw.choice((", ", " and ", " "))
        text += (", " if draw.chance(0.4) else " ") + joiner.join(phrases)
    if product.price is not None and draw.chance(0.10):
        cap = (product.price[1] // 1000 + 1 + draw.below(3)) * 10
        text += draw.choice(V.BUDGET_PHRASES).format(cap=cap)
    text += draw.choice(V.HUMAN_TAILS)
    return text.lower()


def _add_human(draw: Draw, product: _Product) -> None:
    count = draw.weighted(_HUMAN_COUNT_WEIGHTS)
    distinct = product.key_attr
    assert distinct is not None
    # The other attributes a shopper names are among those its listing's title shows, so that
    # the instruction finds the product; with the distinguishing attribute kept out of the
    # search index, name at least one of them.
    others = [a for a in product.attrs if a.text in product.title_attrs and a != distinct]
    least = 1 if product.unindexed and others else 0
    for _ in range(count):
        k = max(least, draw.weighted((0.5, 0.4, 0.1)))
        chosen = [distinct] + draw.sample(others, k)
        draw.shuffle(chosen)
        combo = [(name, draw.choice(values)) for name, values in product.options]
        said: list[tuple[str, str]] = []
        if combo:
            k = draw.randint(1, len(combo)) if not draw.chance(0.1) else 0
            said = draw.sample_sorted(combo, k)
        said_norm = [(n, normalize_option_value(v)) for n, v in said]
        product.human.append(
            {
                "instruction": _human_instruction(draw, product, chosen, said_norm),
                "options": [f"{n.lower()}: {normalize_option_value(v)}" for n, v in combo],
                "instruction_attributes": [a.text for a in chosen],
                "instruction_options": [v for _, v in said_norm],
            }
        )


def _make_family(draw: Draw, info: _TypeInfo, capacity: int) -> list[_Product]:
    """Make one family of ``<= capacity`` products (at least 2) of one product type."""
    n_targets = min(draw.weighted(_TARGET_COUNT_WEIGHTS), capacity)
    n_decoys = min(draw.weighted(_DECOY_COUNT_WEIGHTS), capacity - n_targets)
    pool = _without_conflicts(draw.sample(info.distinct, len(info.distinct)))
    n_base = draw.randint(1, 3)
    base, unique, extra = pool[:n_base], pool[n_base : n_base + n_targets], pool[n_base + n_targets :]
    unique_texts = [a.text for a in unique]
    plan = _family_option_plan(draw, info)
    ptype = info.ptype
    base_price = draw.skewed(ptype.price_lo, ptype.price_hi)
    family_brands = [_brand(draw) for _ in range(3)]

    members: list[_Product] = []
    targets: list[_Product] = []
    for u in unique:
        own_extra = draw.sample(extra, draw.randint(0, 2))
        attrs = list(base) + [u] + own_extra
        draw.shuffle(attrs)
        price = _draw_price(draw, base_price, allow_range=True)
        if price[1] > 94_000:  # keep the goal's price cap below 990 dollars
            price = (min(price[0], 94_000), min(price[0], 94_000))
        lacking = [t for t in unique_texts if t != u.text]
        target = _Product(
            kind="target",
            info=info,
            brand=draw.choice(family_brands) if draw.chance(0.5) else _brand(draw),
            attrs=attrs,
            options=_pick_options(draw, plan, MAX_TARGET_COMBOS),
            price=price,
            lacking=lacking,
            mention=[x for x in lacking if draw.chance(_P_MENTION_IN_TARGET)],
            short=draw.chance(_P_TARGET_SHORT),
        )
        # Instruction attributes: the distinguishing one plus 0-2 of the family's shared ones.
        chosen = [u] + draw.sample(base, draw.weighted((0.2, 0.55, 0.25)))
        draw.shuffle(chosen)
        target.instruction = _synth_instruction(draw, info, chosen)
        target.instruction_attrs = [a.text for a in chosen]
        target.key_attr = u
        if len(chosen) > 1 and draw.chance(_P_KEY_IN_BULLETS_ONLY):
            target.unindexed = [u.text]
        target.title_attrs = [a for a in target.instruction_attrs if a not in target.unindexed]
        if draw.chance(_P_HUMAN):
            _add_human(draw, target)
        targets.append(target)
        members.append(target)

    room = capacity - len(members)
    # Twins of one target: same attributes, but priced above any cap or missing option values.
    if targets and room > 0 and draw.chance(_P_PRICE_TWIN):
        t = draw.choice(targets)
        hi = t.price[1] if t.price else 10_000
        lo = _nice_cents(max(hi * 1.3, hi + 4_500) / 100 * (1.0 + 0.4 * draw.u()), draw)
        twin_options = [
            (n, _in_pool_order(n, vs + [v for v in pool_vs if v not in vs][: draw.below(2)], full))
            for (n, vs), (_, pool_vs, _, _, full) in zip(t.options, plan, strict=True)
        ]
        members.append(
            _Product(
                kind="price_twin", info=info, brand=draw.choice(family_brands),
                attrs=list(t.attrs), options=twin_options, price=(lo, lo),
                lacking=[x for x in unique_texts if x not in {a.text for a in t.attrs}],
                mention=[], short=True, title_attrs=[a.text for a in base],
            )
        )
        members[-1].mention = list(members[-1].lacking)
        room -= 1
    if targets and room > 0 and draw.chance(_P_OPTION_TWIN):
        t = draw.choice(targets)
        twin_options = _option_twin_options(draw, t, plan)
        if twin_options is not None:
            hi = t.price[1] if t.price else 10_000
            lo = _nice_cents(hi / 100 * (0.8 + 0.2 * draw.u()), draw)
            members.append(
                _Product(
                    kind="option_twin", info=info, brand=draw.choice(family_brands),
                    attrs=list(t.attrs), options=twin_options, price=(lo, lo),
                    lacking=[x for x in unique_texts if x not in {a.text for a in t.attrs}],
                    short=True, title_attrs=[a.text for a in base],
                )
            )
            members[-1].mention = list(members[-1].lacking)
            room -= 1
    union = _union_options(targets)
    n_decoys = max(n_decoys, 3 - len(members))  # every target has at least two same-type rivals
    for _ in range(min(n_decoys, room)):
        attrs = list(base) + draw.sample(extra, draw.randint(0, 2))
        draw.shuffle(attrs)
        members.append(
            _Product(
                kind="decoy", info=info, brand=draw.choice(family_brands), attrs=attrs,
                options=[
                    (n, _in_pool_order(n, vs, full))
                    for (n, vs), (*_, full) in zip(union, plan, strict=True)
                ],
                price=_draw_price(draw, base_price * 0.85, allow_range=True)
                if not draw.chance(0.03) else None,
                lacking=list(unique_texts), mention=list(unique_texts), short=True,
                title_attrs=[a.text for a in base],
            )
        )
    # Every distinguishing attribute is named (negated, hyphenated) by at least one member that
    # lacks it, so a near miss always competes with the target in search.
    for t in targets:
        key = t.key_attr.text if t.key_attr else ""
        rivals = [m for m in members if key in m.lacking]
        if rivals and not any(key in m.mention for m in rivals):
            draw.choice(rivals).mention.append(key)
    return members


def _option_twin_options(
    draw: Draw, target: _Product, plan: _Plan
) -> list[tuple[str, list[str]]] | None:
    """The target's options with one group's values swapped for clearly different ones."""
    candidates = [i for i, (name, _) in enumerate(target.options) if name in _TWIN_OPTION_PREFERENCE]
    candidates += [i for i in range(len(target.options)) if i not in candidates]
    for i in candidates:
        name, values = target.options[i]
        pool = plan[i][4]
        fresh = [v for v in pool if not any(_values_clash(v, w) for w in values)]
        if len(fresh) >= 2:
            new_values = draw.sample(fresh, min(len(values) + draw.below(2), len(fresh)))
            new_values = _in_pool_order(name, new_values, pool)
            options = [(n, list(vs)) for n, vs in target.options]
            options[i] = (name, new_values)
            return options
    return None


def _make_filler(draw: Draw, info: _TypeInfo) -> _Product:
    plan = _family_option_plan(draw, info)
    attrs = _without_conflicts(draw.sample(info.attrs, draw.randint(1, 5)))
    base_price = draw.skewed(info.ptype.price_lo, info.ptype.price_hi)
    product = _Product(
        kind="filler", info=info, brand=_brand(draw), attrs=attrs,
        options=_pick_options(draw, plan, None),
        price=_draw_price(draw, base_price, allow_range=True) if not draw.chance(0.05) else None,
        short=draw.chance(0.3),
    )
    r = draw.u()
    if r < 0.04:
        product.attrs_missing = True
    elif r < 0.08:
        product.attrs = []
    return product


# ----------------------------------------------------------------------------------------------
# Text rendering
# ----------------------------------------------------------------------------------------------
def _fields(draw: Draw, p: _Product, attrs: list[str]) -> dict[str, str]:
    g = p.info.group
    noun = p.info.ptype.nouns[0] if p.info.ptype.nouns else _title_case(p.info.ptype.query)
    m1, m2 = draw.sample(g.materials, 2)
    u1, u2 = draw.sample(g.uses, 2)
    if attrs:
        a1 = draw.choice(attrs)
        rest = [a for a in attrs if a != a1]
        a2 = draw.choice(rest) if rest else "quality " + m2
    else:
        a1, a2 = "quality " + m1, "quality " + m2
    adj = draw.choice(g.adjectives)
    return {
        "brand": p.brand, "noun": noun, "noun_lc": noun.lower(), "material": m1, "material2": m2,
        "MATERIAL": m1.upper(), "use": u1, "use2": u2, "user": draw.choice(g.users), "attr": a1,
        "attr2": a2, "ATTR": _title_case(a1), "ATTR2": _title_case(a2), "ATTR_UP": a1.upper(),
        "adj": adj, "adj_lc": adj.lower(),
    }


def _attr_bullet(draw: Draw, p: _Product, attr: str) -> str:
    f = _fields(draw, p, [a.text for a in p.attrs if a.text != attr])
    f.update(attr=attr, ATTR=_title_case(attr), ATTR_UP=attr.upper())
    if f["attr2"] == attr or not p.attrs[1:]:
        f.update(attr2="quality " + f["material2"], ATTR2=_title_case("quality " + f["material2"]))
    return draw.choice(V.ATTR_BULLET_TEMPLATES).format(**f)


def _render_texts(draw: Draw, p: _Product) -> tuple[str, list[str], str]:
    """Return (title, bullets, description) for a product."""
    ptype = p.info.ptype
    nouns = ptype.nouns or (_title_case(ptype.query),)
    own = [a.text for a in p.attrs]
    g = p.info.group
    # Title.
    parts: list[str] = [p.brand]
    if draw.chance(0.6):
        parts.append(draw.choice(g.adjectives))
    parts.append(nouns[0])
    visible = [a for a in own if a not in p.unindexed]
    # A target's title names its instruction attributes (except a hidden distinguishing one), so
    # that its instruction always finds it.
    shown = [a for a in p.title_attrs if a not in p.unindexed]
    rest = [a for a in visible if a not in shown]
    shown += draw.sample(rest, max(0, draw.randint(1, 3) - len(shown)))
    draw.shuffle(shown)
    parts.extend(_title_case(a) for a in shown)
    if p.short:
        parts.append(draw.choice(nouns))
    elif draw.chance(0.3):
        parts.append(draw.choice(nouns))
    # the title is comma-separated parts, each a list of pieces the scrubber may drop one by one
    title_parts = [parts]
    if draw.chance(0.8):
        title_parts.append([draw.choice(g.specs)])
    if not p.short and draw.chance(0.4):
        title_parts.append(["for " + _title_case(draw.choice(g.users))])
    # Bullets: one per own attribute (targets: their instruction attributes at least).
    f = _fields(draw, p, own)
    bullets: list[str] = []
    if p.short:
        lead = f"{nouns[0]} - " + (", ".join(_title_case(a) for a in own[:3]) if own else f["adj"])
        bullets.append(lead + ".")
    need = list(p.instruction_attrs) if p.kind == "target" else []
    for a in own:
        if a not in need and draw.chance(0.5 if p.short else 0.7):
            need.append(a)
    draw.shuffle(need)
    for a in need:
        bullets.append(_attr_bullet(draw, p, a))
    n_plain = draw.randint(1, 2) if p.short else draw.randint(2, 4)
    for tpl in draw.sample(V.PLAIN_BULLET_TEMPLATES, n_plain):
        bullets.append(tpl.format(**_fields(draw, p, own)))
    if not p.short:
        draw.shuffle(bullets)
        if p.unindexed and len(bullets) > 1:
            # keep the first bullet (which the search index reads) free of the hidden attribute
            first = next((i for i, b in enumerate(bullets) if not _mentions(b, p.unindexed)), 0)
            bullets.insert(0, bullets.pop(first))
    # Description.
    sentences: list[str] = []
    n_desc = draw.randint(1, 2) if p.short else draw.randint(4, 8)
    if draw.chance(0.03 if p.short else 0.06):
        n_desc = 0  # an empty description, as some scraped listings have
    for tpl in draw.sample(V.DESCRIPTION_SENTENCES, n_desc):
        sentences.append(tpl.format(**_fields(draw, p, visible)))
    title = ", ".join(" ".join(part) for part in title_parts)
    if ptype.query not in title.lower():
        # the listing names its type the way shoppers search for it (stems can differ:
        # "scarf" / "scarves")
        sentences.insert(
            draw.below(len(sentences) + 1),
            draw.choice(V.QUERY_SENTENCES).format(query=ptype.query, brand=p.brand),
        )
    for x in p.mention:
        sentences.append(draw.choice(V.LACKING_TEMPLATES).format(X=_hyphenated(x)))
    if sentences and p.mention:
        draw.shuffle(sentences)
    return _scrub(p, title, title_parts, bullets, sentences, nouns)


def _mentions(text: str, attrs: list[str]) -> bool:
    low = text.lower()
    return any(a in low for a in attrs)


def _scrub(
    p: _Product,
    title: str,
    title_parts: list[list[str]],
    bullets: list[str],
    sentences: list[str],
    nouns: tuple[str, ...],
) -> tuple[str, list[str], str]:
    """Drop any text piece that would let a lacked attribute match by substring."""
    if not p.lacking:
        return title, bullets, " ".join(sentences)

    def clean(text: str) -> bool:
        low = text.lower()
        return not any(a in low for a in p.lacking)

    if not clean(title):
        kept = [[x for x in part if clean(x)] for part in title_parts]
        title = ", ".join(" ".join(part) for part in kept if part)
        if not title or not clean(title):
            title = f"{p.brand} {nouns[0]}"
    bullets = [b for b in bullets if clean(b)]
    if not bullets or not clean(" ".join(bullets)):
        bullets = [f"{nouns[0]} by {p.brand}."]
    sentences = [s for s in sentences if clean(s)]
    description = " ".join(sentences)
    if not clean(description):
        description = ""
    return title, bullets, description


def _reviews(draw: Draw, p: _Product) -> tuple[float | str, list[dict[str, Any]]]:
    if draw.chance(0.3):
        return "", []
    rating_tenths = 50 - int(20 * draw.u() * draw.u())  # 3.0 - 5.0, mostly high
    reviews = []
    own = [a.text for a in p.attrs]
    for _ in range(draw.randint(0, 5)):
        score = rating_tenths // 10 + (1 if draw.chance(rating_tenths % 10 / 10) else 0)
        score = max(1, min(5, score - (2 if draw.chance(0.12) else 0)))
        f = _fields(draw, p, own)
        reviews.append(
            {
                "title": draw.choice(V.REVIEW_TITLES[score]),
                "score": score,
                "body": draw.choice(V.REVIEW_BODIES[score]).format(**f),
            }
        )
    return rating_tenths / 10, reviews


def _render(draw: Draw, p: _Product, asin: str) -> dict[str, Any]:
    title, bullets, description = _render_texts(draw, p)
    options: dict[str, Any] | str = ""
    if p.options or p.null_option:
        opts: dict[str, Any] = {}
        swatches = draw.chance(0.4)
        for name, values in p.options:
            with_image = swatches and name == "Color"
            opts[name] = [
                {
                    "value": v,
                    "image": f"{_IMAGE_HOST}/{asin}/swatch-{j}.jpg" if with_image else None,
                }
                for j, v in enumerate(values)
            ]
        if p.null_option:
            opts.setdefault("Style", None)
        options = opts
    rating, reviews = _reviews(draw, p)
    record: dict[str, Any] = {
        "asin": asin,
        "name": title,
        "full_description": description,
        "small_description": " ".join(bullets) if p.string_bullets else bullets,
        "pricing": _pricing_string(p.price),
        "customization_options": options,
        "images": [f"{_IMAGE_HOST}/{asin}/{i}.jpg" for i in range(draw.randint(1, 6))],
        "category": p.info.group.category,
        "query": p.info.ptype.query,
        "product_category": p.info.breadcrumb,
        "average_rating": rating,
        "page": draw.randint(1, 400),
        "reviews": reviews,
    }
    return record


# ----------------------------------------------------------------------------------------------
# Blocks and files
# ----------------------------------------------------------------------------------------------
def _make_block(draw: Draw, n: int) -> list[_Product]:
    """Make exactly ``n`` products: families and fillers over a shuffled cycle of all types."""
    products: list[_Product] = []
    order: list[int] = []
    while len(products) < n:
        if not order:
            order = list(range(len(_TYPE_INFOS)))
            draw.shuffle(order)
        info = _TYPE_INFOS[order.pop()]
        room = n - len(products)
        if room < 3 or draw.chance(_P_FILLER):
            products.append(_make_filler(draw, info))
        else:
            products.extend(_make_family(draw, info, min(room, draw.randint(4, 8))))
    for p in products:
        if p.kind in ("decoy", "filler") and draw.chance(0.02):
            p.null_option = True
        if draw.chance(0.02):
            p.string_bullets = True
    return products


def _human_record(asin: str, attrs: list[str], h: dict[str, Any]) -> dict[str, Any]:
    return {
        "asin": asin,
        "instruction": h["instruction"],
        "attributes": attrs,
        "options": h["options"],
        "instruction_attributes": h["instruction_attributes"],
        "instruction_options": h["instruction_options"],
    }


class _JsonStream:
    """Write a JSON list or object one line per entry, to a temporary file renamed at the end."""

    def __init__(self, path: Path, is_object: bool) -> None:
        self.path = path
        self.tmp = path.with_name(path.name + ".tmp")
        self.is_object = is_object
        self.fh = open(self.tmp, "w", encoding="utf-8", newline="\n")
        self.fh.write("{" if is_object else "[")
        self.count = 0

    def add(self, value: Any, key: str | None = None) -> None:
        line = json.dumps(value, ensure_ascii=False, separators=_SEPARATORS)
        if key is not None:
            line = json.dumps(key, ensure_ascii=False) + ": " + line
        self.fh.write(("\n" if self.count == 0 else ",\n") + line)
        self.count += 1

    def close(self) -> int:
        self.fh.write(("\n" if self.count else "") + ("}" if self.is_object else "]") + "\n")
        self.fh.close()
        os.replace(self.tmp, self.path)
        return self.path.stat().st_size

    def abort(self) -> None:
        self.fh.close()
        if self.tmp.exists():
            self.tmp.unlink()


def generate_shop(
    out_dir: str | os.PathLike[str], n_products: int, seed: int = 0, progress: bool = True
) -> dict[str, Any]:
    """Generate a synthetic shop and write it in the reference WebShop file formats.

    Writes ``items_shuffle.json`` (product records), ``items_ins_v2.json`` (attributes and
    synthetic instructions) and ``items_human_ins.json`` (human-style instructions) into
    ``out_dir``.  The same ``(n_products, seed)`` always gives byte-identical files.  Products are
    generated and shuffled in blocks of :data:`BLOCK_SIZE`, so memory stays bounded for any
    ``n_products`` and the first N records of a large shop are a representative mix.

    Args:
        out_dir: Directory to write into (created if missing).
        n_products: Number of product records (>= 0).
        seed: Non-negative integer seed.
        progress: Show a tqdm progress bar for large shops (from 20,000 products).

    Returns:
        A summary: ``out_dir``, ``n_products``, ``seed``, ``products``, ``targets`` (products with a
        synthetic instruction), ``synthetic_goals`` (sum over targets of the option combinations),
        ``human_instructions``, ``human_targets``, ``categories`` (category -> product count),
        ``product_types`` (distinct queries), ``bytes`` (file name -> size), ``bytes_total`` and
        ``seconds``.

    Raises:
        ValueError: If ``n_products`` or ``seed`` is negative or not an integer.
    """
    if isinstance(n_products, bool) or not isinstance(n_products, (int, np.integer)) or n_products < 0:
        raise ValueError(f"n_products must be a non-negative integer, got {n_products!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    n_products, seed = int(n_products), int(seed)
    start = time.perf_counter()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"cannot write the shop into {str(out)!r}: it is a file, not a folder")
    if not out.parent.is_dir():
        raise FileNotFoundError(f"cannot create {str(out)!r}: folder {str(out.parent)!r} does not exist")
    out.mkdir(exist_ok=True)
    keys = asin_keys(seed)
    streams = [
        _JsonStream(out / _FILES[0], is_object=False),
        _JsonStream(out / _FILES[1], is_object=True),
        _JsonStream(out / _FILES[2], is_object=True),
    ]
    products_out, ins_out, human_out = streams
    categories = {c: 0 for c in V.CATEGORIES}
    queries: dict[str, None] = {}
    targets = synthetic_goals = human_instructions = human_targets = 0
    bar = None
    if progress and n_products >= 20_000:
        from tqdm import tqdm

        from webshop_gym.utils import progress as _progress

        bar = tqdm(disable=_progress.disable(), total=n_products, unit="product", desc="generating shop")
    try:
        for block, first in enumerate(range(0, n_products, BLOCK_SIZE)):
            n = min(BLOCK_SIZE, n_products - first)
            draw = Draw(np.random.default_rng([seed, block + 1]))
            block_products = _make_block(draw, n)
            asins = [make_asin(first + i, keys) for i in range(n)]
            order = list(range(n))
            draw.shuffle(order)
            for i in order:
                p, asin = block_products[i], asins[i]
                products_out.add(_render(draw, p, asin))
                categories[p.info.group.category] += 1
                queries.setdefault(p.info.ptype.query, None)
                if not p.attrs_missing:
                    entry: dict[str, Any] = {"attributes": [a.text for a in p.attrs]}
                    if p.instruction is not None:
                        entry["instruction"] = p.instruction
                        entry["instruction_attributes"] = p.instruction_attrs
                        targets += 1
                        synthetic_goals += _combos(p.options)
                    ins_out.add(entry, key=asin)
                if p.human:
                    attrs = [a.text for a in p.attrs]
                    human_out.add([_human_record(asin, attrs, h) for h in p.human], key=asin)
                    human_instructions += len(p.human)
                    human_targets += 1
            del block_products
            if bar is not None:
                bar.update(n)
        sizes = {name: s.close() for name, s in zip(_FILES, streams, strict=True)}
    except BaseException:
        for s in streams:
            s.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
    return {
        "out_dir": str(out),
        "n_products": n_products,
        "seed": seed,
        "products": products_out.count,
        "targets": targets,
        "synthetic_goals": synthetic_goals,
        "human_instructions": human_instructions,
        "human_targets": human_targets,
        "categories": categories,
        "product_types": len(queries),
        "bytes": sizes,
        "bytes_total": sum(sizes.values()),
        "seconds": round(time.perf_counter() - start, 3),
    }
