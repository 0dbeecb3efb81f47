"""Families of one product type: targets with their instructions, decoys, twins and fillers.

Each target (with a synthetic or human instruction) has a distinguishing attribute the other
members lack; decoys and twins miss it on an attribute, the price or an option.
"""

from __future__ import annotations

from webshop_gym.data.synth import vocab as V
from webshop_gym.data.synth.products import (
    _DECOY_COUNT_WEIGHTS,
    _HUMAN_COUNT_WEIGHTS,
    _ORDERED_OPTIONS,
    _P_HUMAN,
    _P_KEY_IN_BULLETS_ONLY,
    _P_MENTION_IN_TARGET,
    _P_OPTION_TWIN,
    _P_PRICE_TWIN,
    _P_TARGET_SHORT,
    _TARGET_COUNT_WEIGHTS,
    _TWIN_OPTION_PREFERENCE,
    MAX_TARGET_COMBOS,
    _Attr,
    _brand,
    _combos,
    _draw_price,
    _nice_cents,
    _Product,
    _TypeInfo,
    _values_clash,
    _without_conflicts,
    normalize_option_value,
)
from webshop_gym.data.synth.rand import Draw

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
