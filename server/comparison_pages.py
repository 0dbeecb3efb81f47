"""Two runs compared goal by goal (``GET /runs/<a>/vs/<b>``), and whether two runs can be compared at all.

Runs are paired goal by goal only when they played the same thing (protocol records compared
field by field, or, for older runs, the shop fingerprints); otherwise the page says why in one
line, the fields side by side behind a fold.  Paired, the page lists which run solved what, the
report's paired statistics on the common goals and the table of failure-tag transitions.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
from flask import abort, current_app, request, url_for
from webshop_gym.server.run_summary import describe, progress_of, samples_per_goal, stats_of
from webshop_gym.server.viewer import (
    PER_PAGE,
    bp,
    loaded_run,
    page_args,
    play_of,
    quoted,
    render_page,
)

from webshop_gym.analysis.at_k import AT_K_COLUMNS, at_k_cells, paired_at_k
from webshop_gym.analysis.diagnosis import SOLVED, TAGS
from webshop_gym.analysis.figures import compare_goals, pairing_goal, pairing_goals, pairing_order
from webshop_gym.analysis.intervals import RESAMPLES, goal_intervals, method
from webshop_gym.analysis.stats import paired_cells, paired_columns
from webshop_gym.protocols.comparable import comparison, refusal
from webshop_gym.protocols.play import ADHOC, protocol_difference
from webshop_gym.runs.index import IndexTable, RunIndex
from webshop_gym.utils.bytelru import ByteLRU
from webshop_gym.utils.paths import default_shop_dir

__all__ = ["compare", "pairing_refusal", "refused_page", "side_by_side_url"]


# -- whether two runs can be paired goal by goal ---------------------------------------------------


def _shop_name(header: dict) -> str:
    path = str((header.get("shop") or {}).get("path") or "")
    if not path:
        return "an unnamed shop"
    name = Path(path).name or path
    try:
        embedded = Path(path).resolve() == default_shop_dir().resolve()
    except OSError:
        embedded = False
    return f"embedded shop `{name}`" if embedded else f"`{name}`"


def _fingerprint_text(key: str, value) -> str:
    """A fingerprint field as words (never a Python repr): files as ``name hash`` pairs, counts with commas."""
    if value is None:
        return "not recorded"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


#: Fingerprint fields, in words, for the folded details of a refused comparison.
FINGERPRINT_FIELDS = {"files": "data files (SHA-256, first 16 hex)", "products": "products", "goals": "goals",
                      "goal_kind": "goal kind", "price_seed": "price seed", "goal_set": "goal-set digest",
                      "catalog": "compiled catalog (not compared)"}


def _shop_refusal(run_a: RunIndex, run_b: RunIndex) -> tuple[str, list[tuple[str, str, str]]]:
    """Why two runs cannot be paired goal by goal (``""``: they can), and the fingerprint fields side by side.

    The reason is one line of words, e.g. ``embedded shop `data` vs shop `webshop-small`:
    different products and goals``; the details (field, run a, run b) go behind a fold.
    """
    if run_a.path == run_b.path:
        return "", []
    fa, fb = run_a.header.get("fingerprint"), run_b.header.get("fingerprint")
    if not fa or not fb:  # logs without a run line: the same shop record (path, goals, price seed)
        shop_a = run_a.header.get("shop") or run_a.first_shop
        if shop_a and shop_a == (run_b.header.get("shop") or run_b.first_shop) and not fa and not fb:
            return "", []
        which = "neither run records" if not fa and not fb else "one of the runs records no"
        return (f"{which} a shop fingerprint, so it cannot be told whether they played the same goals "
                "(logs written without a run line)"), []
    keys = [k for k in FINGERPRINT_FIELDS if k in fa or k in fb] + sorted((set(fa) | set(fb)) - set(FINGERPRINT_FIELDS))
    details = [(FINGERPRINT_FIELDS.get(k, k), _fingerprint_text(k, fa.get(k)), _fingerprint_text(k, fb.get(k)))
               for k in keys]
    differ = {k for k in keys if k != "catalog" and fa.get(k) != fb.get(k)}  # catalog: changes with the compiler
    if not differ:
        return "", details
    name_a, name_b = _shop_name(run_a.header), _shop_name(run_b.header)
    if differ & {"files", "products"}:
        if name_a == name_b:  # the same folder, other data (a shop rebuilt, or a log edited by hand)
            name_b = f"another version of it ({_fingerprint_text('products', fb.get('products'))} products, other data files)"
        return f"{name_a} vs {name_b}: different products and goals", details
    if "goal_kind" in differ:
        return (f"{fa.get('goal_kind') or 'unknown'} goals vs {fb.get('goal_kind') or 'unknown'} goals of the same "
                "shop: different instructions"), details
    if "goals" in differ:
        return (f"{_fingerprint_text('goals', fa.get('goals'))} vs {_fingerprint_text('goals', fb.get('goals'))} "
                "goals of the same shop: different goal sets"), details
    if "price_seed" in differ:
        return (f"price seed {fa.get('price_seed')} vs {fb.get('price_seed')}: different prices and price caps, "
                "so the same goal asks for another price"), details
    return ("the same shop and number of goals, but different goals or prices (their goal-set digests differ)",
            details)


def pairing_refusal(run_a: RunIndex, run_b: RunIndex) -> tuple[str, list[tuple[str, str, str]]]:
    """Why two runs cannot be paired goal by goal, and the details (field, run a, run b[, differs]).

    Runs with protocol records are compared on what they played
    (:mod:`webshop_gym.protocols.comparable`: episodes, step cap, success rule, shop,
    observation mode, prompt), each field listed once.  Older runs: other products or goals are
    the reason when they differ; runs of the same shop and goals whose protocols differ are
    refused for that, in its words.
    """
    if run_a.path == run_b.path:
        return "", []
    played = comparison(run_a.header, run_b.header)  # what they played, each field once (issue 42 item 5)
    if played is not None:
        return refusal(played), [(f.name, f.a, f.b, f.differs) for f in played]
    reason, details = _shop_refusal(run_a, run_b)
    refused = protocol_difference(run_a.header.get("protocol"), run_b.header.get("protocol"))
    if not refused:
        return reason, details
    named = any(str((r.header.get("protocol") or {}).get("name") or ADHOC) != ADHOC for r in (run_a, run_b))
    prices_only = not reason or (named and reason.startswith("price seed "))  # a named protocol's own price seeds
    return (f"they played different protocols ({refused})" if prices_only else reason), details


def refused_page(a: str, b: str, refused: str, details: list, status: int = 409):
    """A comparison refused: the reason in one line, the fingerprints folded away, the way back to the runs."""
    response = current_app.make_response(render_page("runs/refused.html", a=a, b=b, refused=refused, details=details))
    response.status_code = status
    return response


# -- the comparison ------------------------------------------------------------------------------


_PAIRED = ByteLRU(1 << 20)


def _on_common_goals(key: tuple, ta: IndexTable, tb: IndexTable) -> dict | None:
    """The figures on the goals both runs played, cached per file state (``None``: no goal in common).

    The report's paired statistics of b against a (:func:`~webshop_gym.analysis.figures.compare_goals`,
    as :func:`~webshop_gym.analysis.stats.paired_cells` prints them: a sampled run's goals each with
    all its samples) and each run's Score and SR with their intervals on those goals.
    """
    found = _PAIRED.get(key)
    if found is None:
        samples = max(samples_per_goal(ta), samples_per_goal(tb))
        ga, gb = (pairing_goals(t.pairing, t.reward, t.unscored.tolist(), samples) for t in (ta, tb))
        compared = compare_goals(ga, gb, RESAMPLES, 0, samples)
        if compared is None:
            return None
        common, result = compared
        sides = [goal_intervals(g.take(common), RESAMPLES, 0) for g in (ga, gb)]
        at_k = (paired_at_k(ga.take(common), gb.take(common), samples, RESAMPLES, 0, result) if samples > 1 else [])
        found = {"paired": dict(zip(paired_columns(samples), paired_cells(result), strict=True)), "goals": len(common),
                 "score": [side["score"] for side in sides], "sr": [side["sr"] for side in sides],
                 "at_k": [dict(zip(AT_K_COLUMNS, at_k_cells(row), strict=True)) for row in at_k]}
        _PAIRED.put(key, found, 4096)
    return found


def _tag_of(t: IndexTable, positions: np.ndarray) -> np.ndarray:
    """Tag numbers of ``positions`` as indices into ``(*TAGS, SOLVED)`` (solved last)."""
    return np.where(t.tag[positions] < 0, len(TAGS), t.tag[positions])


def _transitions(tags_a: np.ndarray, tags_b: np.ndarray) -> dict:
    """A's tag x B's tag over the common goals: the tags that occur (taxonomy order, solved last) and the counts."""
    names = [*TAGS, SOLVED]
    counts = np.zeros((len(names), len(names)), np.int64)
    np.add.at(counts, (tags_a, tags_b), 1)
    rows = [i for i in range(len(names)) if counts[i].any()]
    cols = [j for j in range(len(names)) if counts[:, j].any()]
    return {"rows": [names[i] for i in rows], "cols": [names[j] for j in cols],
            "counts": [[int(counts[i, j]) for j in cols] for i in rows]}


@bp.get("/<a>/vs/<b>")
def compare(a: str, b: str):
    """Goal by goal, which run solved what, on the same goals only.

    Query: ``show`` (all, differ, a, b), ``tag_a`` / ``tag_b`` (a failure tag or ``solved``: the
    goals with that tag in run a / b, as the tag-transition table links them), ``page``, ``per``.
    """
    run_a, run_b = loaded_run(a), loaded_run(b)
    ta, tb = run_a.table(), run_b.table()
    show = request.args.get("show", "all")
    if show not in ("all", "differ", "a", "b"):
        abort(400, "show must be all, differ, a or b")
    names = [*TAGS, SOLVED]
    tag_a, tag_b = request.args.get("tag_a", ""), request.args.get("tag_b", "")
    for value in (tag_a, tag_b):
        if value and value not in names:
            abort(400, f"unknown failure tag {quoted(value)}; expected one of {', '.join(names)}")
    page, per = page_args(request.args)
    refused, details = pairing_refusal(run_a, run_b)
    sides = [{"name": a, "index": run_a, "about": describe(run_a.header), "stats": stats_of(run_a), "table": ta,
              "progress": progress_of(run_a)},
             {"name": b, "index": run_b, "about": describe(run_b.header), "stats": stats_of(run_b), "table": tb,
              "progress": progress_of(run_b)}]
    context = {"a": a, "b": b, "sides": sides, "refused": refused, "details": details, "show": show,
               "tag_a": tag_a, "tag_b": tag_b, "method": method(RESAMPLES, 0, [samples_per_goal(ta), samples_per_goal(tb)]),
               "paired_columns": paired_columns(max(samples_per_goal(ta), samples_per_goal(tb))), "resamples": RESAMPLES}
    if refused:
        return render_page("runs/compare.html", rows=[], counts=Counter(), common=0, unit="goals", page_no=1, pages=1,
                       paired=None,
                       on_common=None, transitions=None, **context)
    samples = max(samples_per_goal(ta), samples_per_goal(tb))
    if samples > 1:  # a goal is the unit: a row per goal with each run's successes of its samples (issue 56 item 1)
        return _sampled_compare(a, b, run_a, run_b, ta, tb, show, tag_a, tag_b, page, per, samples, context)
    goals_a, goals_b = ta.by_pairing(), tb.by_pairing()  # as report pairs them; an errored episode is no loss
    common = sorted(set(goals_a) & set(goals_b), key=pairing_order)
    pa = np.array([goals_a[g] for g in common], np.int64)
    pb = np.array([goals_b[g] for g in common], np.int64)
    ra, rb = ta.reward[pa], tb.reward[pb]
    sa, sb = ta.success[pa], tb.success[pb]
    counts = Counter({"a": int((ra > rb).sum()), "b": int((rb > ra).sum()), "tie": int((ra == rb).sum()),
                      "both": int((sa & sb).sum()), "a only": int((sa & ~sb).sum()), "b only": int((sb & ~sa).sum()),
                      "neither": int((~sa & ~sb).sum())})
    key = (str(run_a.path), run_a.size, run_a.mtime_ns, str(run_b.path), run_b.size, run_b.mtime_ns)
    on_common = _on_common_goals(key, ta, tb) if common else None
    tags_a, tags_b = _tag_of(ta, pa), _tag_of(tb, pb)
    keep = {"all": np.ones(len(common), bool), "differ": ra != rb, "a": ra > rb, "b": rb > ra}[show]
    picked, pages = _filtered_pages(keep, tags_a, tags_b, tag_a, tag_b, names, per, page)
    rows = []
    for j in picked[(page - 1) * per : page * per].tolist():
        i, jb = int(pa[j]), int(pb[j])
        goal = int(ta.goal[i])
        rows.append({"goal": goal, "instruction": ta.instructions[i], "pa": i, "pb": jb,
                     "side_url": side_by_side_url(a, b, goal, play_of(ta, i), play_of(tb, jb)),
                     "ra": float(ta.reward[i]), "rb": float(tb.reward[jb]), "sa": bool(ta.success[i]),
                     "sb": bool(tb.success[jb]), "tag_a": names[int(tags_a[j])], "tag_b": names[int(tags_b[j])],
                     "verdict": "a" if ra[j] > rb[j] else "b" if rb[j] > ra[j] else "tie"})

    def query(**changes):
        args = {"show": show, "tag_a": tag_a, "tag_b": tag_b, "per": per if per != PER_PAGE else "", **changes}
        return url_for("runs.compare", a=a, b=b, **{k: v for k, v in args.items() if v not in ("", None, "all")})

    # a row per goal, unless a goal recurs among the rows (its samples, its price seeds): then per planned episode
    unit = "planned episodes (goal, price seed, sample)" if len({k[0] for k in common}) < len(common) else "goals"
    return render_page("runs/compare.html", rows=rows, counts=counts, common=len(common), unit=unit, page_no=page,
                   pages=pages,
                   per=per, matched=len(picked), paired=on_common and on_common["paired"], on_common=on_common,
                   transitions=_transitions(tags_a, tags_b),
                   query=query, **context)


def _samples_by_goal(t: IndexTable) -> dict:
    """Per pairing goal (the key without its sample), the positions of its scored samples in file order."""
    found: dict = {}
    for i, (key, bad) in enumerate(zip(t.pairing, t.errored.tolist(), strict=True)):
        if not bad:
            found.setdefault(pairing_goal(key), []).append(i)
    return found


def goal_tag(t: IndexTable, positions: list[int]) -> int:
    """A goal's tag over its samples: the tag most of them got (a tie: the first in the taxonomy's order, solved last).

    Returned as an index into ``(*TAGS, SOLVED)``, as :func:`_tag_of`.
    """
    return int(np.argmax(np.bincount(_tag_of(t, np.array(positions, np.int64)), minlength=len(TAGS) + 1)))


def _filtered_pages(keep, tags_a, tags_b, tag_a, tag_b, names, per: int, page: int):
    """The goals a comparison shows (``keep`` narrowed by the tag filters) and how many pages they fill; 404 past the last."""
    if tag_a:
        keep = keep & (tags_a == names.index(tag_a))
    if tag_b:
        keep = keep & (tags_b == names.index(tag_b))
    picked = np.flatnonzero(keep)
    pages = max(1, math.ceil(len(picked) / per))
    if page > pages:
        abort(404, f"The goals shown fill {pages} page(s); there is no page {page}.")
    return picked, pages


def _sampled_compare(a, b, run_a, run_b, ta, tb, show, tag_a, tag_b, page, per, samples, context):
    """The comparison of runs that played each goal K times: a row per goal ("2 of 4" against "1 of 4").

    Who did better is decided by the goal's mean reward over its samples (as the paired table's
    won / lost / tied), the success columns by the share of samples solved, the tag transitions
    and tag filters by each goal's tag over its samples (:func:`goal_tag`).
    """
    names = [*TAGS, SOLVED]
    by_a, by_b = _samples_by_goal(ta), _samples_by_goal(tb)
    common = sorted(set(by_a) & set(by_b), key=pairing_order)
    ma = np.array([ta.reward[by_a[g]].mean() for g in common])
    mb = np.array([tb.reward[by_b[g]].mean() for g in common])
    ca = np.array([int(ta.success[by_a[g]].sum()) for g in common], np.int64)
    cb = np.array([int(tb.success[by_b[g]].sum()) for g in common], np.int64)
    na = np.array([len(by_a[g]) for g in common], np.int64)
    nb = np.array([len(by_b[g]) for g in common], np.int64)
    higher = cb * na - ca * nb  # B's share of samples solved minus A's, over na * nb
    neither = (ca == 0) & (cb == 0)
    counts = Counter({"a": int((ma > mb).sum()), "b": int((mb > ma).sum()), "tie": int((ma == mb).sum()),
                      "a only": int((higher < 0).sum()), "b only": int((higher > 0).sum()), "neither": int(neither.sum()),
                      "both": int(((higher == 0) & ~neither).sum())})
    key = (str(run_a.path), run_a.size, run_a.mtime_ns, str(run_b.path), run_b.size, run_b.mtime_ns)
    on_common = _on_common_goals(key, ta, tb) if common else None
    tags_a = np.array([goal_tag(ta, by_a[g]) for g in common], np.int64)
    tags_b = np.array([goal_tag(tb, by_b[g]) for g in common], np.int64)
    keep = {"all": np.ones(len(common), bool), "differ": ma != mb, "a": ma > mb, "b": mb > ma}[show]
    picked, pages = _filtered_pages(keep, tags_a, tags_b, tag_a, tag_b, names, per, page)
    rows = []
    for j in picked[(page - 1) * per : page * per].tolist():
        first_a, first_b = by_a[common[j]][0], by_b[common[j]][0]
        goal = int(ta.goal[first_a])
        rows.append({"goal": goal, "instruction": ta.instructions[first_a], "pa": first_a, "pb": first_b,
                     "side_url": side_by_side_url(a, b, goal, play_of(ta, first_a), play_of(tb, first_b)),
                     "ra": float(ma[j]), "rb": float(mb[j]), "ca": int(ca[j]), "cb": int(cb[j]),
                     "na": int(na[j]), "nb": int(nb[j]), "play_a": play_of(ta, first_a), "play_b": play_of(tb, first_b),
                     "tag_a": names[int(tags_a[j])], "tag_b": names[int(tags_b[j])],
                     "verdict": "a" if ma[j] > mb[j] else "b" if mb[j] > ma[j] else "tie"})

    def query(**changes):
        args = {"show": show, "tag_a": tag_a, "tag_b": tag_b, "per": per if per != PER_PAGE else "", **changes}
        return url_for("runs.compare", a=a, b=b, **{k: v for k, v in args.items() if v not in ("", None, "all")})

    return render_page("runs/compare.html", rows=rows, counts=counts, common=len(common), unit="goals", page_no=page,
                       pages=pages, per=per, matched=len(picked), paired=on_common and on_common["paired"],
                       on_common=on_common, transitions=_transitions(tags_a, tags_b), query=query,
                       sampled=samples, **context)


def side_by_side_url(a: str, b: str, goal: int, play_a: int, play_b: int) -> str:
    """The side-by-side page of ``goal`` at run a's ``play_a``-th and run b's ``play_b``-th play of it."""
    args = {"play": play_a or None, "play_b": play_b if play_b != play_a else None}
    return url_for("runs.compare_goal", a=a, b=b, goal=goal, **{k: v for k, v in args.items() if v is not None})
