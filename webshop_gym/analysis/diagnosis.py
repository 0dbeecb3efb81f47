"""Why an episode failed: the named misses of a purchase, and where the target was.

The failure tag and causes themselves (the taxonomy) are :mod:`webshop_gym.analysis.taxonomy`'s;
this module gathers their inputs from an episode's steps (:func:`facts_of_steps`).

:func:`diagnose` explains one episode for its page: the bought product's title beside the
target's, the chosen options and price beside the asked ones, which attributes and options
missed, whether the type or the price failed, and where the target was in each search (its
rank in the engine's top 50 when the viewer replayed the episode, else on the pages the agent
saw), the first step it appeared and whether it was opened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from webshop_gym.analysis.taxonomy import FAMILY, SOLVED, TAG_RULES, TAGS, EpisodeFacts, failure_tag
from webshop_gym.core.pages import PRODUCTS_PER_PAGE
from webshop_gym.reward.reference import FUZZY_THRESHOLD, option_reward

__all__ = ["SOLVED", "TAGS", "TAG_RULES", "EpisodeFacts", "attribute_misses", "diagnose", "facts_of_steps", "failure_tag",
           "option_misses"]

def _click_target(action: Any) -> str | None:
    if isinstance(action, str) and action.startswith("click[") and action.endswith("]"):
        return action[6:-1].strip()
    return None


_PAGE = re.compile(r"Page (\d+) \(Total results: (\d+)\)")


def facts_of_steps(steps: Sequence[dict], record: dict) -> dict:
    """Per-episode facts from its step records: searched, seen_step, opened, first steps of each.

    Returns:
        ``{"searched", "seen_step" (0 never, None unknown), "opened", "opened_step", "queries",
        "pages"}``, ``queries`` being ``[(step, query, valid), ...]`` and ``pages`` per query's
        step the results pages the agent saw after it (numbers, in order, ``[]`` when the
        observations do not say) and whether the target was on one: ``{step: (pages, seen)}``.
    """
    target = str((record.get("target") or {}).get("asin") or "")
    up, low = target.upper(), target.lower()
    searched, opened, opened_step = False, False, 0
    seen: int | None = None
    queries = []
    pages: dict[int, tuple[list[int], bool]] = {}
    current: int | None = None
    for s in steps:
        action = s.get("action")
        valid = not s.get("invalid_action")
        if isinstance(action, str) and action.startswith("search[") and action.endswith("]"):
            queries.append((int(s["step"]), action[7:-1], valid))
            searched = searched or valid
            if valid:
                current = int(s["step"])
                pages[current] = ([], False)
        obs = s.get("observation")
        if s.get("page") == "results":
            here = isinstance(obs, str) and bool(target) and (up in obs or low in obs)
            if isinstance(obs, str) and target:
                if seen is None:
                    seen = 0
                if not seen and here:
                    seen = int(s["step"])
            if current is not None and isinstance(obs, str):
                m = _PAGE.search(obs)
                numbers, hit = pages[current]
                if m and int(m.group(1)) not in numbers:
                    numbers.append(int(m.group(1)))
                pages[current] = (numbers, hit or here)
        clicked = _click_target(action)
        if valid and target and clicked is not None and clicked.lower() == low:
            if not opened:
                opened_step = int(s["step"])
            opened = True
    return {"searched": searched, "seen_step": seen, "opened": opened, "opened_step": opened_step,
            "queries": queries, "pages": pages}


# -- one episode, explained --------------------------------------------------------------------------

_SEP = " [SEP] "


def _title_from_observations(steps: Sequence[dict], asin: str) -> str:
    """A product's title as a text-mode results page showed it (``ASIN [SEP] title [SEP] price``)."""
    if not asin:
        return ""
    pattern = re.compile(re.escape(asin) + r" \[SEP\] (.*?) \[SEP\]", flags=re.I)
    for s in steps:
        obs = s.get("observation")
        if isinstance(obs, str) and s.get("page") == "results":
            m = pattern.search(obs)
            if m:
                return m.group(1)
    return ""


def _option_pairs(options) -> list[tuple[str, str]]:
    if isinstance(options, dict):
        return [(str(k), str(v)) for k, v in options.items()]
    return [("", str(v)) for v in options or []]


def option_misses(chosen: dict, asked, offered: Sequence[str] | None = None) -> list[dict]:
    """Per asked option: ``{"name", "value", "matched", "chosen", "offered"}``, by the reward's own rule.

    Each asked option is scored alone with :func:`webshop_gym.reward.reference.option_reward`
    against every chosen value, so "matched" is exactly what the reward counted.  ``chosen``
    names what was chosen as ``name: value`` pairs: the chosen value of the asked option's
    name (synthetic goals), else the pair that matched, else every pair chosen (human goals ask
    for bare values); ``""`` when nothing was chosen.  ``offered``: whether any option value of
    the bought product (``offered``, from the shop) matches the asked one by the same rule
    (``None``: unknown, the shop is not here).
    """
    chosen = {str(k): str(v) for k, v in dict(chosen or {}).items()}
    values = list(chosen.values())
    pairs = [f"{k}: {v}" for k, v in chosen.items()]
    out = []
    for name, value in _option_pairs(asked):
        goal = {name: value} if name else [value]
        _, hits = option_reward(values, goal)
        if name and name in chosen:
            said = f"{name}: {chosen[name]}"
        elif hits:
            said = next(p for p, v in zip(pairs, values) if option_reward([v], goal)[1])
        else:
            said = ", ".join(pairs)
        there = None if offered is None else bool(option_reward(list(offered), goal)[1])
        out.append({"name": name, "value": value, "matched": hits == 1, "chosen": said, "offered": there,
                    "asked": f"{name}: {value}" if name else value})
    return out


def _offered_values(shop, row: int) -> list[str]:
    catalog = shop.catalog
    return [str(catalog.value_text[int(v)]) for g in catalog.option_groups[row] for v in catalog.group_values[g]]


def attribute_misses(product: dict, attributes: Sequence[str]) -> list[dict]:
    """Per asked attribute: ``{"attribute", "matched", "where"}`` with the reward's own rule."""
    from thefuzz import fuzz


    title = product.get("Title", "").lower()
    bullets = " ".join(product.get("BulletPoints") or []).lower()
    description = (product.get("Description") or "").lower()
    out = []
    for attr in attributes:
        where = ""
        if any(fuzz.token_set_ratio(p, attr) > FUZZY_THRESHOLD for p in product.get("Attributes") or []):
            where = "attributes"
        elif attr in title:
            where = "title"
        elif attr in bullets:
            where = "bullet points"
        elif attr in description:
            where = "description"
        out.append({"attribute": attr, "matched": bool(where), "where": where})
    return out


def diagnose(episode, shop=None, searches: Sequence[dict] | None = None) -> dict:
    """Explain one episode (a :class:`~webshop_gym.runs.run.RunEpisode`) for its page.

    Args:
        episode: the episode.
        shop: its shop, when loaded (names the attributes that missed, the bought title, ranks).
        searches: per search of the replay, ``{"step", "query", "rank"}`` (``rank`` 1-based in
            the engine's top 50, ``0``: not in it); without them, ranks are unknown.

    Returns:
        A dict the episode template shows: ``tag``, ``target``, ``bought``, ``options``,
        ``attributes``, ``type``, ``price``, ``queries``, ``seen_step``, ``opened``,
        ``target_offered`` (the target's options, name -> values, as its page offers them;
        ``None`` without the shop) ...
    """
    record = episode.log.record
    target = dict(record.get("target") or {})
    steps = episode.log.steps
    last = episode.last
    facts = facts_of_steps(steps, record)
    info = dict(episode.reward_info or {})
    tag = failure_tag(EpisodeFacts(
        purchased=episode.purchased, truncated=episode.truncated, steps=episode.steps,
        invalid=episode.invalid_actions, reward=episode.reward, searched=facts["searched"],
        target=str(target.get("asin") or ""), bought=str(last.get("purchased_asin") or "") if episode.purchased else "",
        seen_step=facts["seen_step"], opened=facts["opened"], reward_info=info,
        errored=bool(record.get("errored")) or bool(last.get("errored")),
        reachable=bool(record["reachable"]) if "reachable" in record else None))
    out: dict[str, Any] = {"tag": tag, "rule": TAG_RULES.get(tag, ""), "family": FAMILY.get(tag, ""),
                           "has_target": bool(target),
                           "reachable": bool(record["reachable"]) if "reachable" in record else None,
                           "unreachable_reason": str(record.get("reason") or "") if record.get("reachable") is False else "",
                           "target": target, "instruction": episode.instruction,
                           "seen_step": facts["seen_step"], "opened": facts["opened"],
                           "opened_step": facts["opened_step"], "purchased": episode.purchased}
    bought_asin = str(last.get("purchased_asin") or "") if episode.purchased else ""
    bought_row = -1
    if shop is not None and bought_asin:
        bought_row = shop.catalog.row_of(bought_asin)
        if bought_row < 0:
            bought_row = shop.catalog.row_of(bought_asin.upper())
    bought_title = ""
    if bought_row >= 0:
        bought_title = str(shop.catalog.title[bought_row])
    elif bought_asin:
        bought_title = _title_from_observations(steps, bought_asin)
    price = last.get("purchased_price") if episode.purchased else None
    upper = target.get("price_upper")
    out["bought"] = {"asin": bought_asin.upper(), "title": bought_title, "options": last.get("purchased_options") or {},
                     "price": price, "same": bool(bought_asin) and bought_asin.upper() == str(target.get("asin", "")).upper()}
    out["price"] = {"paid": price, "cap": upper,
                    "ok": None if price is None or upper is None else float(price) <= float(upper)}
    out["target_offered"] = None  # the target's options as its page offered them (what the agent could click)
    target_asin = str(target.get("asin") or "")
    if shop is not None and target_asin:
        row = shop.catalog.row_of(target_asin)
        row = row if row >= 0 else shop.catalog.row_of(target_asin.upper())
        if row >= 0:
            out["target_offered"] = {str(k): [str(v) for v in values] for k, values in shop.catalog.options_of(row).items()}
    offered = _offered_values(shop, bought_row) if bought_row >= 0 else None
    out["options"] = option_misses(out["bought"]["options"], target.get("options"), offered) if episode.purchased else []
    if episode.purchased and bought_row >= 0:
        out["attributes"] = attribute_misses(shop.catalog.product_record(bought_row), target.get("attributes") or [])
    else:
        out["attributes"] = [{"attribute": a, "matched": None, "where": ""} for a in target.get("attributes") or []]
    out["attributes_matched"] = None
    if info.get("r_att") is not None and target.get("attributes"):
        out["attributes_matched"] = round(float(info["r_att"]) * len(target["attributes"]))
    out["type"] = None
    if info:
        out["type"] = {"ok": float(info.get("r_type", 1.0)) >= 1.0, "r_type": info.get("r_type"),
                       "query_match": info.get("query_match"), "category_match": info.get("category_match"),
                       "title_score": info.get("title_score")}
    ranks = {int(s["step"]): s for s in searches or []}
    queries = []
    for step, query, valid in facts["queries"]:
        found = ranks.get(step)
        rank = None if found is None else found.get("rank")
        seen_pages, hit = facts["pages"].get(step, ([], False))
        queries.append({"step": step, "query": query, "valid": valid, "rank": rank,
                        "total": None if found is None else found.get("total"),
                        "page": (int(rank) - 1) // PRODUCTS_PER_PAGE + 1 if rank else None,
                        "pages_seen": seen_pages, "seen": hit})
    out["queries"] = queries
    return out
