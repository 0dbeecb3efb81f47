"""A product's texts: title, bullets, description, attribute fields and reviews.

They are rendered so that a product lacking an attribute never matches it under the reward's rules.
"""

from __future__ import annotations

from typing import Any

from webshop_gym.data.synth import vocab as V
from webshop_gym.data.synth.products import (
    _IMAGE_HOST,
    _hyphenated,
    _pricing_string,
    _Product,
    _title_case,
)
from webshop_gym.data.synth.rand import Draw


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
