"""The WebShop reward in plain Python (SPEC section 6), written to be read.

This is the specification the Numba kernel in :mod:`webshop_gym.reward._kernels` is tested
against.  It takes the reference's dicts (a processed product, a goal) and compares strings with
``thefuzz`` itself.  Title nouns are passed in (tagged once at compile time) instead of being
re-tagged with spaCy on every call as the reference does.
"""

from __future__ import annotations

from collections.abc import Sequence

from thefuzz import fuzz

from webshop_gym.data.colors import normalize_color

__all__ = ["attribute_reward", "option_reward", "reward", "type_reward"]

FUZZY_THRESHOLD = 85


def type_reward(product: dict, goal: dict, product_nouns: Sequence[str], goal_nouns: Sequence[str]) -> dict:
    """Return the type factor and its parts.

    ``product_nouns`` / ``goal_nouns`` are the lower-cased NOUN/PROPN tokens of the product's
    and the goal's titles, duplicates kept (the goal's count is the denominator).
    """
    query_match = product["query"] == goal["query"]
    product_parts = {x.strip() for x in product["product_category"].split("›")}
    goal_parts = {x.strip() for x in goal["product_category"].split("›")}
    category_match = len(product_parts & goal_parts) >= 2
    if len(goal_nouns) == 0:
        title_score = 0.2
    else:
        title_score = len(set(product_nouns) & set(goal_nouns)) / len(goal_nouns)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match, "title_score": title_score}


def attribute_reward(product: dict, goal: dict) -> tuple[float, int]:
    """Return (share of goal attributes matched, number matched)."""
    title = product["Title"].lower()
    bullets = " ".join(product["BulletPoints"]).lower()
    description = product["Description"].lower()
    matches = 0
    for goal_attr in goal["attributes"]:
        if any(fuzz.token_set_ratio(p, goal_attr) > FUZZY_THRESHOLD for p in product["Attributes"]):
            matches += 1
        elif goal_attr in title or goal_attr in bullets or goal_attr in description:
            matches += 1
    return matches / len(goal["attributes"]), matches


def option_reward(selected: Sequence[str], goal_options) -> tuple[float | None, int]:
    """Return (share of goal options matched or None without goal options, number matched).

    ``goal_options`` is a list of values (human goals) or a ``name -> value`` dict (synthetic
    goals), whose ``(name, value)`` *pairs* are compared, as the reference does.
    """
    goal_list = list(goal_options.items()) if isinstance(goal_options, dict) else list(goal_options)
    chosen = [normalize_color(v) for v in selected]
    wanted = [normalize_color(o) for o in goal_list]
    matches = 0
    for goal_option in wanted:
        for value in chosen:
            if fuzz.token_set_ratio(value, goal_option) > FUZZY_THRESHOLD:
                matches += 1
                break
    return (matches / len(wanted) if wanted else None), matches


def reward(
    product: dict,
    goal: dict,
    price: float,
    options: dict,
    product_nouns: Sequence[str],
    goal_nouns: Sequence[str],
) -> tuple[float, dict]:
    """Return the reward of buying ``product`` with ``options`` at ``price`` for ``goal``.

    Returns:
        ``(total, info)``; ``info`` holds ``r_type, r_att, w_att, query_match,
        category_match, title_score``, then ``r_option, w_option`` when the goal has options,
        then ``r_price`` (a bool) and ``w_price``, as the reference reports them.
    """
    typed = type_reward(product, goal, product_nouns, goal_nouns)
    r_price = price <= goal["price_upper"]
    r_att, n_att = attribute_reward(product, goal)
    r_option, n_opt = option_reward(list(options.values()), goal["goal_options"])
    n_goal_attrs, n_goal_opts = len(goal["attributes"]), len(goal["goal_options"])
    denominator = n_goal_attrs + n_goal_opts + 1
    total = (n_att + n_opt + r_price) / denominator
    total *= typed["r_type"]
    info = {
        "r_type": typed["r_type"],
        "r_att": r_att,
        "w_att": n_goal_attrs / denominator,
        "query_match": typed["query_match"],
        "category_match": typed["category_match"],
        "title_score": typed["title_score"],
    }
    if r_option is not None:
        info["r_option"] = r_option
        info["w_option"] = n_goal_opts / denominator
    info["r_price"] = r_price
    info["w_price"] = 1 / denominator
    return total, info
