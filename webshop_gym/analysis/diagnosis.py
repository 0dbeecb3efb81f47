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

from webshop_gym.analysis.taxonomy import SOLVED, TAG_RULES, TAGS, EpisodeFacts, failure_tag
from webshop_gym.reward.reference import FUZZY_THRESHOLD, option_reward

__all__ = ["SOLVED", "TAGS", "TAG_RULES", "EpisodeFacts", "attribute_misses", "diagnose", "facts_of_steps", "failure_tag",
           "option_misses"]

def _click_target(action: Any) -> str | None:
    if isinstance(action, str) and action.startswith("click[") and action.endswith("]"):
        return action[6:-1].strip()
    return None


def facts_of_steps(steps: Sequence[dict], record: dict) -> dict:
    """Per-episode facts from its step records: searched, seen_step, opened, first steps of each.

    Returns:
        ``{"searched", "seen_step" (0 never, None unknown), "opened", "opened_step", "queries"}``,
        ``queries`` being ``[(step, query, valid), ...]``.
    """
    target = str((record.get("target") or {}).get("asin") or "")
    up, low = target.upper(), target.lower()
    searched, opened, opened_step = False, False, 0
    seen: int | None = None
    queries = []
    for s in steps:
        action = s.get("action")
        valid = not s.get("invalid_action")
        if isinstance(action, str) and action.startswith("search[") and action.endswith("]"):
            queries.append((int(s["step"]), action[7:-1], valid))
            searched = searched or valid
        obs = s.get("observation")
        if s.get("page") == "results":
            if isinstance(obs, str) and target:
                if seen is None:
                    seen = 0
                if not seen and (up in obs or low in obs):
                    seen = int(s["step"])
        clicked = _click_target(action)
        if valid and target and clicked is not None and clicked.lower() == low:
            if not opened:
                opened_step = int(s["step"])
            opened = True
    return {"searched": searched, "seen_step": seen, "opened": opened, "opened_step": opened_step,
            "queries": queries}


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


def option_misses(chosen: dict, asked) -> list[dict]:
    """Per asked option: ``{"name", "value", "matched", "chosen"}``, by the reward's own rule.

    Each asked option is scored alone with :func:`webshop_gym.reward.reference.option_reward`
    against every chosen value, so "matched" is exactly what the reward counted.
    """
    chosen = dict(chosen or {})
    values = [str(v) for v in chosen.values()]
    out = []
    for name, value in _option_pairs(asked):
        _, hits = option_reward(values, {name: value} if name else [value])
        out.append({"name": name, "value": value, "matched": hits == 1,
                    "chosen": str(chosen.get(name, "")) if name else ""})
    return out


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
        ``attributes``, ``type``, ``price``, ``queries``, ``seen_step``, ``opened`` ...
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
        errored=bool(record.get("errored")) or bool(last.get("errored"))))
    out: dict[str, Any] = {"tag": tag, "rule": TAG_RULES.get(tag, ""), "has_target": bool(target),
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
    out["options"] = option_misses(out["bought"]["options"], target.get("options")) if episode.purchased else []
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
        queries.append({"step": step, "query": query, "valid": valid,
                        "rank": None if found is None else found.get("rank"),
                        "total": None if found is None else found.get("total")})
    out["queries"] = queries
    return out
