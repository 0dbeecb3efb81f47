"""A run's page (``GET /runs/<run>``) and its exports (``.../episodes.csv``, ``.../episodes.jsonl``).

The page shows the run's settings, figures and failure tags, and its episodes a page at a time,
filtered and sorted on the server (the order cached per file state and query); a sampled run
(``eval --samples K``) also lists its goals with each goal's samples.  The exports stream the
same filtered, sorted episodes.  A run still being written reloads itself every
:data:`LIVE_REFRESH` seconds until its summary line arrives.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter

import numpy as np
from flask import abort, current_app, redirect, request, url_for
from webshop_gym.server.run_library import get_library
from webshop_gym.server.run_summary import describe, progress_of, samples_per_goal, stats_of
from webshop_gym.server.viewer import (
    bp,
    indexed_run,
    page_args,
    play_of,
    quoted,
    render_page,
    shared,
)

from webshop_gym.analysis.diagnosis import SOLVED, TAGS
from webshop_gym.analysis.intervals import RESAMPLES, SAMPLES_DEFINITION, fmt, method
from webshop_gym.analysis.taxonomy import CAUSES, FAMILIES, FAMILY
from webshop_gym.runs.index import CSV_COLUMNS, IndexTable, RunIndex, csv_row, export_record
from webshop_gym.runs.liveness import STOPPED
from webshop_gym.runs.sharing import shareable

__all__ = ["export", "run_page", "run_page_slash"]


def _facts(index: RunIndex) -> list[str]:
    """What ``eval`` printed about the run besides its figures (the oracle's unreachable goals, ...)."""
    f = index.table().figures
    out = []
    if "unreachable" in f:
        episodes = f", {f['unreachable_episodes']} episodes" if f.get("unreachable") and "unreachable_episodes" in f else ""
        out.append(f"{f['unreachable']} unreachable goals{episodes} (no purchase of the target scores 1.0 on them); "
                   f"SR on the others {fmt(f.get('sr_reachable'))}%")
    if index.summary is None and not index.header:
        out.append("no summary line: a trajectory log, or an evaluation that did not finish")
    return out


SORT_KEYS = ("position", "goal", "instruction", "reward", "success", "steps", "invalid", "cause", "tag", "category")


def _sort_key(t: IndexTable, sort: str) -> np.ndarray | None:
    n = len(t)
    if sort == "position":
        return np.arange(n)
    if sort == "goal":
        return t.goal
    if sort == "reward":
        return t.reward
    if sort == "success":
        return t.success.astype(np.int8)
    if sort == "steps":
        return t.steps
    if sort == "invalid":
        return t.invalid
    if sort == "cause":  # by name; successes (no cause) last
        ranks = {c: i for i, c in enumerate(sorted(CAUSES))}
        lookup = np.array([ranks[c] for c in CAUSES] + [len(CAUSES)])
        return lookup[np.where(t.cause < 0, len(CAUSES), t.cause)]
    if sort == "tag":
        names = list(TAGS)
        ranks = {c: i for i, c in enumerate(sorted(names))}
        lookup = np.array([ranks[c] for c in names] + [len(names)])
        return lookup[np.where(t.tag < 0, len(names), t.tag)]
    if sort == "category":
        ranks = {c: i for i, c in enumerate(sorted(t.categories))}
        return np.array([ranks[c] for c in t.categories], np.int64)[t.category] if len(t.categories) else t.category
    return None


def _order(index: RunIndex, args) -> tuple[np.ndarray, dict]:
    """Positions of the episodes shown, filtered and sorted (cached per file state and query)."""
    t = index.table()
    sort = args.get("sort", "position")
    if sort not in SORT_KEYS:
        abort(400, f"unknown sort column {quoted(sort)}; expected one of {', '.join(SORT_KEYS)}")
    desc = args.get("desc") == "1"
    q = args.get("q", "").strip().lower()
    outcome, cause, tag, category = (args.get("outcome", ""), args.get("cause", ""), args.get("tag", ""),
                                     args.get("category", ""))
    reachable = args.get("reachable", "")
    if reachable not in ("", "yes", "no", "unknown"):
        abort(400, "reachable must be yes, no or unknown")
    if outcome not in ("", "success", "failure"):
        abort(400, "outcome must be success or failure")
    if cause and cause not in CAUSES:
        abort(400, f"unknown reward part {quoted(cause)}; expected one of {', '.join(CAUSES)}")
    if tag and tag not in (*TAGS, SOLVED):
        abort(400, f"unknown failure tag {quoted(tag)}; expected one of {', '.join(TAGS)}")
    query = {"sort": sort, "desc": desc, "q": q, "outcome": outcome, "cause": cause, "tag": tag, "category": category,
             "reachable": reachable}
    key = (str(index.path), index.size, index.mtime_ns, json.dumps(query, sort_keys=True))
    found = index_order = get_library().orders.get(key)
    if found is not None:
        return index_order, query
    keep = np.ones(len(t), bool)
    if outcome == "success":
        keep &= t.success
    elif outcome == "failure":  # a scored failure: an errored episode is no failure of the agent (tag "errored")
        keep &= ~t.success & ~t.errored
    if cause:
        keep &= (t.causes >> CAUSES.index(cause) & 1).astype(bool)
    if tag:
        keep &= t.tag == (-1 if tag == SOLVED else TAGS.index(tag))
    if reachable:
        keep &= t.reachable == {"yes": 1, "no": 0, "unknown": -1}[reachable]
    if category:
        keep &= t.category == (t.categories.index(category) if category in t.categories else -2)
    if q:
        goal = int(q) if q.isdigit() else None
        keep &= np.fromiter((q in s for s in t.instructions_lower), bool, len(t)) | (t.goal == goal if goal is not None else False)
    picked = np.flatnonzero(keep)
    if sort == "instruction":
        order = np.array(sorted(picked.tolist(), key=t.instructions_lower.__getitem__, reverse=desc), np.int64)
    else:
        values = _sort_key(t, sort)[picked]
        order = picked[np.argsort(-values if desc else values, kind="stable")]
    get_library().orders.put(key, order, order.nbytes + 256)
    return order, query


#: Seconds between two reloads of the page of a run still being written.
LIVE_REFRESH = 5


def _live(index: RunIndex) -> dict | None:
    """A run still being written (no summary line yet): how far it got, for the page to say and reload.

    ``None`` once the summary line arrived, or when the run stopped (no writer holds its file).
    ``total``: the episodes planned, ``done``: episodes indexed so far, ``refresh``: seconds between reloads.
    """
    progress = progress_of(index)
    if progress["state"] in ("complete", STOPPED):
        return None
    return {"done": progress["done"], "total": progress["planned"], "refresh": LIVE_REFRESH}


@bp.get("/<run>/")
def run_page_slash(run: str):
    """``/runs/<run>/`` is the run page too."""
    return redirect(url_for("runs.run_page", run=run, **request.args.to_dict()), code=308)


@bp.get("/<run>")
def run_page(run: str):
    """A run: settings, figures, failure tags and a page of its episodes (sorted and filtered on the server)."""
    loaded = indexed_run(run)
    args = request.args
    order, query = _order(loaded, args)
    page, per = page_args(args)
    pages = max(1, math.ceil(len(order) / per))
    if page > pages:
        abort(404, f"The episodes shown fill {pages} page(s) of {per}; there is no page {page}.")
    t = loaded.table()
    shown = order[(page - 1) * per : page * per].tolist()
    rows = [{"position": i, "goal": int(t.goal[i]), "instruction": t.instructions[i], "reward": float(t.reward[i]),
             "success": bool(t.success[i]), "errored": bool(t.errored[i]), "steps": int(t.steps[i]), "invalid": int(t.invalid[i]),
             "causes": t.cause_names(i), "tag": t.tag_name(i), "family": t.family(i),
             "reachable": int(t.reachable[i]), "category": t.categories[int(t.category[i])],
             "goal_url": url_for("runs.goal_page", run=run, goal=int(t.goal[i]), **({"play": k} if (k := play_of(t, i)) else {}))}
            for i in shown]
    tag_counts = Counter(int(x) for x in t.tag.tolist())
    examples = {}
    for j, name in enumerate(TAGS):
        if tag_counts.get(j):
            examples[name] = t.examples(np.flatnonzero(t.tag == j).tolist(), 5)  # distinct goals first
    cause_counts = Counter()
    for j, c in enumerate(CAUSES):
        cause_counts[c] = int((t.causes >> j & 1).sum())
    header = {k: v for k, v in loaded.header.items() if k not in ("type",)}
    if shared():
        header = shareable(header)
    return render_page(
        "runs/run.html", index=loaded, name=run, table=t, rows=rows, stats=stats_of(loaded), about=describe(loaded.header),
        facts=_facts(loaded), live=_live(loaded), progress=progress_of(loaded), wall_s=((loaded.summary or {}).get("result") or {}).get("wall_s"), page_no=page, pages=pages, per=per, matched=len(order), total=len(t),
        sort=query["sort"], desc=query["desc"], q=args.get("q", ""), outcome=query["outcome"], cause=query["cause"],
        tag=query["tag"], category=query["category"], categories=sorted(t.categories), reachable=query["reachable"],
        families=_family_counts(t),
        tag_counts={name: tag_counts.get(j, 0) for j, name in enumerate(TAGS)}, solved=tag_counts.get(-1, 0),
        examples=examples, cause_counts=cause_counts, method=method(RESAMPLES, 0, samples_per_goal(t)),
        sampled=_sample_goals(t, args),
        header=json.dumps(header, indent=1, ensure_ascii=False)[:20000],
        query=lambda **changes: url_for("runs.run_page", run=run, **{
            k: v for k, v in {**args.to_dict(), **changes}.items() if v not in ("", None)}),
        export=lambda kind: url_for("runs.export", run=run, kind=kind, **{
            k: v for k, v in args.to_dict().items() if k not in ("page", "per") and v}),
    )


#: The per-goal filters of a sampled run's goal list (``?goals=``): value -> label.
GOAL_FILTERS = {"": "every goal", "flipping": "goals that flip between samples", "always": "goals every sample solved",
                "never": "goals no sample solved"}
#: Goals per page of a sampled run's goal list.
GOALS_PER_PAGE = 100


def _sample_goals(t: IndexTable, args) -> dict | None:
    """A sampled run's goals (``eval --samples K``) for the run page: the filter's page of goal rows.

    The figures are :func:`~webshop_gym.analysis.figures.sample_figures`' (the table's
    ``samples``); this only picks and pages the rows.  ``None`` for a run of one play per goal.
    """
    samples = t.samples
    if samples is None:
        return None
    show = args.get("goals", "")
    if show not in GOAL_FILTERS:
        abort(400, f"unknown goal filter {quoted(show)}; expected one of {', '.join(k for k in GOAL_FILTERS if k)}")
    try:
        page = int(args.get("gpage", 1))
    except ValueError:
        abort(400, "gpage must be a whole number")
    played, flipping = samples.played, samples.flipping
    keep = {"": np.ones(len(played), bool), "flipping": flipping,
            "always": (samples.successes == played) & (played > 0), "never": samples.successes == 0}[show]
    picked = np.flatnonzero(keep)
    pages = max(1, math.ceil(len(picked) / GOALS_PER_PAGE))
    if not 1 <= page <= pages:
        abort(404, f"The goals shown fill {pages} page(s) of {GOALS_PER_PAGE}; there is no goal page {page}.")
    rows = []
    for j in picked[(page - 1) * GOALS_PER_PAGE : page * GOALS_PER_PAGE].tolist():
        members = samples.members[j]
        first = members[0] if members else None
        rows.append({"key": samples.goals[j], "goal": int(t.goal[first]) if first is not None else "-",
                     "instruction": t.instructions[first] if first is not None else "",
                     "successes": int(samples.successes[j]), "played": int(played[j]), "flips": bool(flipping[j]),
                     "samples": [(p, bool(t.success[p])) for p in members]})
    return {"figures": samples, "rows": rows, "show": show, "page": page, "pages": pages, "matched": len(picked),
            "total": len(played), "flipping": int(flipping.sum()), "filters": GOAL_FILTERS,
            "method": SAMPLES_DEFINITION + " (their 95% intervals: over goals, as the run's, above)"}


def _family_counts(t: IndexTable) -> dict[str, int]:
    """Failed episodes per tag family (:data:`~webshop_gym.analysis.taxonomy.FAMILIES`), from the tag column."""
    counts = Counter(FAMILY[TAGS[int(j)]] for j in t.tag.tolist() if j >= 0)
    return {name: counts.get(name, 0) for name in FAMILIES}


@bp.get("/<run>/episodes.<kind>")
def export(run: str, kind: str):
    """The episodes shown by the run page's query (all pages) as CSV or JSON lines, streamed."""
    if kind not in ("csv", "jsonl"):
        abort(404, "exports are episodes.csv and episodes.jsonl")
    loaded = indexed_run(run)
    order, _ = _order(loaded, request.args)
    table = loaded.table()

    def lines():
        if kind == "csv":
            buffer = io.StringIO()
            writer = csv.writer(buffer, lineterminator="\n")
            writer.writerow(CSV_COLUMNS)
        for i in order.tolist():
            record = export_record(loaded.episode(i), table, keep_paths)
            if kind == "jsonl":
                yield json.dumps(record, ensure_ascii=False) + "\n"
            else:
                writer.writerow(csv_row(record))
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        if kind == "csv" and not len(order):
            yield buffer.getvalue()

    mimetype = "text/csv" if kind == "csv" else "application/x-ndjson"
    keep_paths = request.args.get("paths") == "1" and not shared()
    response = current_app.response_class(lines(), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{run}-episodes.{kind}"'
    return response
