"""The run viewer: ``webshop-gym serve --runs DIR`` shows the runs of ``eval --out`` in the browser.

Routes (``<run>`` is a run file's name in ``DIR`` without ``.jsonl``, ``<episode>`` the
episode's position in the file, from 0):

* ``GET /runs/``: the runs (state, done / planned, shop, goal set, policy, prompt, split, Score
  and SR with their intervals, date), settings that differ only by seed aggregated, and a form to
  compare two (``?baseline=NAME``: every other run's comparison with ``NAME``, listed).
* ``GET /runs/<run>``: the run's settings, figures and failure tags, and its episodes, a page
  at a time, sorted and filtered on the server (query ``sort``, ``desc``, ``q``, ``outcome``,
  ``cause``, ``tag``, ``category``, ``page``, ``per``).
* ``GET /runs/<run>/episodes.csv`` and ``.../episodes.jsonl``: the episodes (the filtered,
  sorted set) as ``eval --json --episodes`` reports them, plus the viewer's columns.
* ``GET /runs/<run>/<episode>?step=k``: the episode's diagnosis (what was bought against the
  target, the named misses, where the target was in each search, the failure tag) and its
  stepper: the page the agent saw before action ``k + 1`` (re-created by replaying the logged
  actions in a :class:`~webshop_gym.envs.env.WebShopEnv` in ``html`` mode), with the element it
  clicked and the target product highlighted, the action and the model's output.
* ``GET /runs/<run>/<episode>/page/<k>``: that page itself, exactly the env's HTML
  (``?mark=1``: with the viewer's highlights, as the stepper shows it).
* ``GET /runs/<run>/goal/<goal>?play=k``: one goal of a run: every play of it (a goal played
  several times: ``eval --samples K``, a protocol's repeats or price seeds) with its sample,
  price seed, reward, success and failure tag, the goal's successes of its plays, and the
  ``k``-th play (default the first) with its diagnosis and actions.
* ``GET /runs/<a>/vs/<b>``: goal by goal, which run solved what, when both runs played the same
  shop and goal set (else the figures side by side only); ``.../vs/<b>/<goal>?play=k``: the two
  runs' plays of one goal, and the ``k``-th of each side by side (``play_b``: run b's).

Each run file is indexed once (:class:`~webshop_gym.runs.index.RunIndex`: byte offsets and a
compact summary per episode; a file that grows is read on from where it was, one that is
replaced is read again); files above ``RUNS_INDEX_INLINE_BYTES`` are indexed on a background
thread, with a progress line on stderr, while every page stays available.  An episode is read
from disk when it is opened.  Parsed episodes, re-created pages (per episode, a window of
steps around the one shown) and sorted orders are cached within byte budgets.
"""

from __future__ import annotations

import base64
import csv
import functools
import hashlib
import io
import json
import math
import re
from collections import Counter
from importlib import resources
from pathlib import Path

import numpy as np
from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for
from markupsafe import escape
from webshop_gym.server.run_library import Entry, RunLibrary, get_library

from webshop_gym.agents.openai import request_messages
from webshop_gym.analysis.diagnosis import SOLVED, TAG_RULES, TAGS, diagnose
from webshop_gym.analysis.figures import (
    compare_goals,
    goal_keys,
    intervals,
    pairing_goals,
    pairing_order,
)
from webshop_gym.analysis.intervals import (
    RESAMPLES,
    SAMPLES_DEFINITION,
    fmt,
    goal_intervals,
    method,
)
from webshop_gym.analysis.stats import paired_cells, paired_columns
from webshop_gym.analysis.taxonomy import CAUSES, FAMILIES, FAMILY
from webshop_gym.error import Error
from webshop_gym.protocols.comparable import comparison, refusal
from webshop_gym.protocols.play import ADHOC, display_name, protocol_difference
from webshop_gym.render.html import Nav, stylesheet
from webshop_gym.reporting.completeness import completeness_of
from webshop_gym.runs.index import (
    CSV_COLUMNS,
    IndexTable,
    RunIndex,
    csv_row,
    export_record,
    seed_groups,
)
from webshop_gym.runs.liveness import STOPPED, writer_state
from webshop_gym.runs.run import RunEpisode, planned_episodes
from webshop_gym.runs.sharing import shareable, shareable_text
from webshop_gym.utils.bytelru import ByteLRU
from webshop_gym.utils.paths import default_shop_dir

__all__ = ["bp", "stats_of", "viewer_css"]

#: Episodes per run page (default, most).
PER_PAGE, MAX_PER_PAGE = 100, 1000
#: Steps listed on either side of the current one in the stepper.
LIST_WINDOW = 50

#: The episode page's one script (the arrow keys step), served from the blueprint's static folder.
STEPS_SCRIPT = "steps.js"

bp = Blueprint("runs", __name__, url_prefix="/runs", static_folder="static/runs", static_url_path="/static")


# -- page helpers ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def viewer_css() -> str:
    """The viewer's stylesheet (the shop's and the run pages'), inlined in every page (a bundle links it once)."""
    return stylesheet() + resources.files("webshop_gym.server").joinpath("templates/runs/runs.css").read_text(
        encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _script_hash() -> str:
    """CSP source of the one inline script of the package's ``base.html`` (every page has it)."""
    text = resources.files("webshop_gym").joinpath("templates/base.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", text, flags=re.S)
    if len(scripts) != 1:
        return "'none'"
    return "'sha256-" + base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode("ascii") + "'"


NONE, SELF = "'none'", "'self'"


@bp.after_request
def _headers(response):
    # Viewer pages embed the env's pages in a same-origin frame; the frame's page may be framed
    # by them only, and posts nowhere (its forms are the agent's, not ours).
    framed = request.endpoint == "runs.page"
    # Our one script file, by its exact path (a host-source with a path: no other script of this origin runs).
    steps = request.host_url.rstrip("/") + url_for("runs.static", filename=STEPS_SCRIPT)
    policy = (f"default-src 'none'; script-src {_script_hash()} {steps}; style-src 'unsafe-inline'; img-src 'self' data:; "
              f"frame-src 'self'; form-action {NONE if framed else SELF}; base-uri 'none'; "
              f"frame-ancestors {SELF if framed else NONE}")
    response.headers["Content-Security-Policy"] = policy
    response.headers["X-Frame-Options"] = "SAMEORIGIN" if framed else "DENY"
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


def _render(template: str, **context):
    menu = url_for("menu.index") if "menu.index" in current_app.view_functions else None
    return render_template(template, css=viewer_css(), page="runs", human=True, nav=Nav(menu=menu), causes=CAUSES,
                           tags=TAGS, tag_rules=TAG_RULES, tag_family=FAMILY, pct=fmt, steps_script=STEPS_SCRIPT,
                           **context)


def _indexing_page(name: str, entry: Entry):
    done, total, episodes = entry.progress
    share = 100.0 * done / total if total else 0.0
    response = current_app.make_response(_render("runs/indexing.html", name=name, share=share, episodes=episodes,
                                                  total_mb=total / 2**20))
    response.status_code = 202
    response.headers["Retry-After"] = "2"
    return response


def _quoted(value: str, most: int = 80) -> str:
    """A value the user sent, quoted in words for a one-line message: control characters as spaces, cut at ``most``."""
    text = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]", " ", str(value))
    return "“" + (text if len(text) <= most else text[: most - 1] + "…") + "”"


def _target_options(options) -> str:
    if isinstance(options, dict):
        return ", ".join(f"{k}: {v}" for k, v in options.items())
    return ", ".join(str(v) for v in options or [])


_INTERVALS = ByteLRU(1 << 20)


def stats_of(index: RunIndex) -> dict:
    """Score and SR with the one interval method (:mod:`webshop_gym.analysis.intervals`), cached per file state."""
    key = (str(index.path), index.size, index.mtime_ns)
    found = _INTERVALS.get(key)
    if found is None:
        t = index.table()
        protocols = [index.protocol_fields(i) for i in range(len(t))] if t.samples is not None else []
        goals = goal_keys(_samples(t), t.goal.tolist(), protocols)  # a sampled run: by goals, as eval groups them
        found = intervals(t.reward, t.errored, RESAMPLES, 0, goals)  # errored episodes never enter Score/SR
        _INTERVALS.put(key, found, 1024)
    return found


def _shared() -> bool:
    """The pages are to be shared (a bundle, ``RUNS_SHARED``): no machine path, no server address on them."""
    return bool(current_app.config.get("RUNS_SHARED"))


def _describe(header: dict) -> dict:
    fp = header.get("fingerprint") or {}
    shop = header.get("shop") or {}
    path = str(shop.get("path") or "")
    if _shared():
        path = shareable_text(path)
    return {"shop": (Path(path).name or path or "?") + (f" ({fp['products']} products)" if fp.get("products") else ""),
            "shop_path": path, "goal_set": fp.get("goal_set") or "-",
            "goals": f"{fp.get('goals', '?')} {fp.get('goal_kind', '')}".strip() if fp else "-",
            "policy": str(header.get("policy") or "?"), "prompt": str(header.get("prompt") or "-"),
            "split": str(header.get("split") or "?"), "seed": header.get("seed"),
            "created": str(header.get("created") or ""), "max_steps": header.get("max_steps"),
            **_protocol_about(header)}


def _protocol_about(header: dict) -> dict:
    """The run's protocol for the pages: its name and fingerprint (``-`` for a run written before protocols)."""
    record = header.get("protocol") if isinstance(header.get("protocol"), dict) else None
    return {"protocol": display_name(record), "protocol_fingerprint": (record or {}).get("fingerprint") or "-"}


def _protocol_groups(rows: list[dict]) -> list[dict]:
    """The readable runs grouped by protocol fingerprint (in listing order): name, fingerprint, run names."""
    groups: dict = {}
    for row in rows:
        if row.get("index") is None:
            continue
        about = row["about"]
        group = groups.setdefault(about["protocol_fingerprint"], {"name": about["protocol"],
                                                                   "fingerprint": about["protocol_fingerprint"],
                                                                   "runs": []})
        group["runs"].append(row["name"])
        if not completeness_of(row["table"].figures, row["index"].header, row["index"].summary is not None).complete:
            group.setdefault("incomplete", []).append(row["name"])  # not the protocol's figure: marked
    return list(groups.values())


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


def _refusal(run_a: RunIndex, run_b: RunIndex) -> tuple[str, list[tuple[str, str, str]]]:
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


def _comparable(run_a: RunIndex, run_b: RunIndex) -> str:
    """Why two runs cannot be paired goal by goal, in one line of words (``""``: they can)."""
    return _refusal(run_a, run_b)[0]


# -- routes: the run list ---------------------------------------------------------------------------


@bp.get("/", strict_slashes=False)  # /runs too (and before any catch-all of another blueprint)
def index():
    """The runs, settings aggregated over seeds, and a form that compares two of them."""
    a, b = request.args.get("a"), request.args.get("b")
    if a and b:
        return redirect(url_for("runs.compare", a=a, b=b), code=303)
    rows = get_library().listing()
    baseline = request.args.get("baseline", "")
    readable = [row["name"] for row in rows if row["index"] is not None]
    if baseline and baseline not in readable:
        abort(404, f"There is no readable run called {_quoted(baseline)} to compare the others with.")
    for row in rows:
        ix = row["index"]
        if ix is None:
            continue
        row["about"] = _describe(ix.header)
        row["table"] = ix.table()
        row["stats"] = stats_of(ix)
        row["complete"] = ix.summary is not None
        row["status"] = progress_of(ix)
    seeds = seed_groups([(r["name"], r["index"].header, r["table"].figures) for r in rows if r["index"] is not None])
    return _render("runs/index.html", rows=rows, folder="" if _shared() else str(get_library().folder), seeds=seeds,
                   baseline=baseline, compared=[name for name in readable if baseline and name != baseline],
                   protocols=_protocol_groups(rows),
                   method=method(RESAMPLES, 0, [_samples(r["table"]) for r in rows if r["index"] is not None]))


# -- routes: a run ----------------------------------------------------------------------------------

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
        abort(400, f"unknown sort column {_quoted(sort)}; expected one of {', '.join(SORT_KEYS)}")
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
        abort(400, f"unknown reward part {_quoted(cause)}; expected one of {', '.join(CAUSES)}")
    if tag and tag not in (*TAGS, SOLVED):
        abort(400, f"unknown failure tag {_quoted(tag)}; expected one of {', '.join(TAGS)}")
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


def _page_args(args) -> tuple[int, int]:
    try:
        page = int(args.get("page", 1))
        per = int(args.get("per", PER_PAGE))
    except ValueError:
        abort(400, "page and per must be whole numbers")
    if page < 1 or not 1 <= per <= MAX_PER_PAGE:
        abort(400, f"page must be >= 1 and per from 1 to {MAX_PER_PAGE}")
    return page, per


#: Seconds between two reloads of the page of a run still being written.
LIVE_REFRESH = 5


def progress_of(index: RunIndex) -> dict:
    """How far a run got: ``done`` episodes of the ``planned`` ones and its ``state``.

    ``state``: ``"complete"`` (its summary line is there), ``"running"`` (a writer holds the file),
    ``"stopped"`` (no summary line and no writer: it will not grow), or ``"incomplete"`` (no
    summary line; whether a writer is at work cannot be told here).
    """
    state = "complete" if index.summary is not None else (writer_state(index.path) or "incomplete")
    return {"done": index.episodes, "planned": planned_episodes(index.header), "state": state}


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
    loaded = get_library().load(run)
    if isinstance(loaded, Entry):
        return _indexing_page(run, loaded)
    args = request.args
    order, query = _order(loaded, args)
    page, per = _page_args(args)
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
            examples[name] = np.flatnonzero(t.tag == j)[:5].tolist()
    cause_counts = Counter()
    for j, c in enumerate(CAUSES):
        cause_counts[c] = int((t.causes >> j & 1).sum())
    header = {k: v for k, v in loaded.header.items() if k not in ("type",)}
    if _shared():
        header = shareable(header)
    return _render(
        "runs/run.html", index=loaded, name=run, table=t, rows=rows, stats=stats_of(loaded), about=_describe(loaded.header),
        facts=_facts(loaded), live=_live(loaded), progress=progress_of(loaded), wall_s=((loaded.summary or {}).get("result") or {}).get("wall_s"), page_no=page, pages=pages, per=per, matched=len(order), total=len(t),
        sort=query["sort"], desc=query["desc"], q=args.get("q", ""), outcome=query["outcome"], cause=query["cause"],
        tag=query["tag"], category=query["category"], categories=sorted(t.categories), reachable=query["reachable"],
        families=_family_counts(t),
        tag_counts={name: tag_counts.get(j, 0) for j, name in enumerate(TAGS)}, solved=tag_counts.get(-1, 0),
        examples=examples, cause_counts=cause_counts, method=method(RESAMPLES, 0, _samples(t)),
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
        abort(400, f"unknown goal filter {_quoted(show)}; expected one of {', '.join(k for k in GOAL_FILTERS if k)}")
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


def _samples(t: IndexTable) -> int:
    """The samples per goal of a run (1: one play per goal)."""
    return 1 if t.samples is None else t.samples.samples


def _family_counts(t: IndexTable) -> dict[str, int]:
    """Failed episodes per tag family (:data:`~webshop_gym.analysis.taxonomy.FAMILIES`), from the tag column."""
    counts = Counter(FAMILY[TAGS[int(j)]] for j in t.tag.tolist() if j >= 0)
    return {name: counts.get(name, 0) for name in FAMILIES}


@bp.get("/<run>/episodes.<kind>")
def export(run: str, kind: str):
    """The episodes shown by the run page's query (all pages) as CSV or JSON lines, streamed."""
    if kind not in ("csv", "jsonl"):
        abort(404, "exports are episodes.csv and episodes.jsonl")
    library = get_library()
    loaded = library.load(run)
    if isinstance(loaded, Entry):
        return _indexing_page(run, loaded)
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
    keep_paths = request.args.get("paths") == "1" and not _shared()
    response = current_app.response_class(lines(), mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="{run}-episodes.{kind}"'
    return response


# -- routes: an episode ------------------------------------------------------------------------------


def _episode(library: RunLibrary, loaded: RunIndex, position: int) -> RunEpisode:
    if not 0 <= position < loaded.episodes:
        abort(404, f"The run has {loaded.episodes} episodes (0 to {loaded.episodes - 1}); "
                   f"there is no episode {position}.")
    try:
        return library.episode(loaded, position)
    except (Error, OSError, ValueError) as exc:
        abort(409, f"The run changed while it was read ({exc}); reload the page.")


def _observation(episode: RunEpisode, k: int) -> str | None:
    if k == 0:
        return episode.log.record.get("observation")
    return episode.log.steps[k - 1].get("observation")


def _action_text(record: dict) -> str:
    if record.get("action") is None and "action_repr" in record:
        return f"(not a string: {record.get('action_type')} {record['action_repr']})"
    return str(record.get("action"))


def _loaded(run: str) -> RunIndex:
    loaded = get_library().load(run)
    if isinstance(loaded, Entry):
        abort(503, f"The run {_quoted(run)} is being indexed ({loaded.progress[2]:,} episodes so far); try again shortly.")
    return loaded


@bp.get("/<run>/<int:position>")
def episode_page(run: str, position: int):
    """An episode: its diagnosis, then a stepper through the pages the agent saw, its actions and the outcome."""
    library = get_library()
    loaded = library.load(run)
    if isinstance(loaded, Entry):
        return _indexing_page(run, loaded)
    episode = _episode(library, loaded, position)
    n = len(episode.log.steps)
    try:
        k = int(request.args.get("step", 0))
    except ValueError:
        abort(400, "step must be a whole number")
    if not 0 <= k <= n:
        abort(404, f"The episode has {n} steps; states run from 0 to {n}.")
    replayed = library.replayed(loaded, episode, k)
    shop = None if replayed.unavailable else library.shop_of(loaded, episode)
    diagnosis = diagnose(episode, shop=shop, searches=None if shop is None else library.searches(loaded, episode))
    record = episode.log.steps[k] if k < n else None
    target = dict(episode.log.record.get("target") or {})
    target.setdefault("instruction", episode.instruction)
    last = episode.last
    low, high = max(0, k - LIST_WINDOW), min(n, k + LIST_WINDOW + 1)
    done_page = k == n and episode.purchased
    t = loaded.table()
    play = play_of(t, position)
    goal_url = url_for("runs.goal_page", run=run, goal=int(episode.goal_index), **({"play": play} if play else {}))
    return _render(
        "runs/episode.html", index=loaded, name=run, episode=episode, k=k, n=n, record=record, goal_url=goal_url,
        action=_action_text(record) if record else None, replayed=replayed,
        has_page=replayed.has(k) and not done_page, done_page=done_page, diagnosis=diagnosis,
        observation=_observation(episode, k),
        steps=[(i, _action_text(episode.log.steps[i]), episode.log.steps[i]) for i in range(low, high)],
        steps_before=low, steps_after=n - high,
        score={"reward": episode.reward, "success": episode.success, "asin": str(last.get("purchased_asin", "")).upper(),
               "options": last.get("purchased_options") or {}, "price": float(last.get("purchased_price") or 0.0),
               "info": last.get("reward_info") or {},
               "target": {"instruction": target.get("instruction", ""), "asin": target.get("asin", "?"),
                          "title": target.get("title", ""), "attributes": target.get("attributes", []),
                          "options": _target_options(target.get("options")),
                          "price_upper": float(target.get("price_upper") or 0.0)}},
        has_target=bool(episode.log.record.get("target")), plain_nav=Nav(), answer_cut=ANSWER_CUT,
        prompt=_prompt(library, loaded, episode, k) if k < n or episode.log.record.get("errored") else None,
        prompt_cut=PROMPT_CUT,
    )


#: Characters of a model's answer (or reasoning) the step panel shows; the rest behind a link.
ANSWER_CUT = 20_000
#: Characters of each prompt message the step panel shows; the rest behind a link (as answers).
PROMPT_CUT = ANSWER_CUT
#: Messages of a prompt the step panel shows: the first two and the last ones (all of them in the JSON).
PROMPT_MESSAGES = 100


def _prompt_format(header: dict) -> str | None:
    """The prompt format of a served model's run (``eval --policy openai:MODEL``); ``None`` for any other run."""
    if not str(header.get("policy") or "").startswith("openai:"):
        return None
    name = header.get("prompt") or (header.get("policy_settings") or {}).get("prompt")
    return str(name) if name else None


def _prompt(library: RunLibrary, loaded: RunIndex, episode: RunEpisode, k: int) -> dict | None:
    """The messages the served model was sent for action ``k + 1`` (``k`` = the number of actions: the failed request).

    Rebuilt, not stored: :func:`~webshop_gym.agents.openai.request_messages` (the policy's own
    code) over the logged observations and answers and the infos the replay re-creates.
    ``None`` for a run that is not a served model's; else ``{"format", "messages"}`` (and
    ``problem``: the replay differs from the log) or ``{"format", "unavailable"}`` (why not).
    """
    fmt = _prompt_format(loaded.header)
    if fmt is None:
        return None
    log = episode.log
    states, problem, unavailable = library.states(loaded, episode, k)
    if unavailable:
        return {"format": fmt, "unavailable": unavailable}
    if len(states) <= k:
        return {"format": fmt, "unavailable": f"the replay stopped after {len(states)} states "
                                              f"({problem or 'the log goes on after the episode ended'})"}
    # the observations as logged (an errored episode's first one is not: the replay's, which it checks where logged)
    logged = [log.record.get("observation")] + [s.get("observation") for s in log.steps[:k]]
    states = [(seen if isinstance(seen, str) else obs, info) for seen, (obs, info) in zip(logged, states, strict=True)]
    try:
        messages = request_messages(fmt, states, [s.get("model") or {} for s in log.steps[:k]], k, log.max_steps)
    except (Error, ValueError) as exc:
        return {"format": fmt, "unavailable": str(exc).rstrip(".")}
    shown = list(enumerate(messages))
    if len(shown) > PROMPT_MESSAGES:
        shown = [*shown[:2], (None, len(shown) - PROMPT_MESSAGES), *shown[2 - PROMPT_MESSAGES:]]
    return {"format": fmt, "messages": messages, "shown": shown, "problem": problem,
            "characters": sum(len(m.get("content") or "") for m in messages)}


@bp.get("/<run>/<int:position>/prompt/<int:k>")
def prompt(run: str, position: int, k: int):
    """The prompt the served model saw for action ``k + 1``: its messages as JSON (``?message=i``: message i's text)."""
    library = get_library()
    loaded = _loaded(run)
    episode = _episode(library, loaded, position)
    n = len(episode.log.steps)
    if not 0 <= k <= n or (k == n and not episode.log.record.get("errored")):
        abort(404, f"The episode has {n} actions; there is no request for action {k + 1}.")
    found = _prompt(library, loaded, episode, k)
    if found is None:
        abort(404, "Only a served model's run (eval --policy openai:MODEL) has prompts.")
    if "unavailable" in found:
        abort(409, f"The prompt cannot be rebuilt: {found['unavailable']}.")
    messages = found["messages"]
    if "message" not in request.args:
        return current_app.response_class(json.dumps(messages, ensure_ascii=False, indent=1) + "\n",
                                          mimetype="application/json")
    try:
        i = int(request.args["message"])
    except ValueError:
        abort(400, "message must be a whole number")
    if not 0 <= i < len(messages):
        abort(404, f"The prompt has {len(messages)} messages (0 to {len(messages) - 1}); there is no message {i}.")
    return current_app.response_class(str(messages[i].get("content") or ""), mimetype="text/plain")


@bp.get("/<run>/<int:position>/answer/<int:k>")
def answer(run: str, position: int, k: int):
    """The whole model answer (``?part=response``) or reasoning (``part=reasoning``) of action ``k + 1``, as plain text."""
    library = get_library()
    episode = _episode(library, _loaded(run), position)
    if not 0 <= k < len(episode.log.steps):
        abort(404, f"The episode has {len(episode.log.steps)} actions; there is no action {k + 1}.")
    step = episode.log.steps[k]
    part = request.args.get("part", "response")
    if part not in ("response", "reasoning"):
        abort(400, "part must be response or reasoning")
    text = (step.get("model") or {}).get("response") if part == "response" else step.get("reasoning")
    if text is None:
        abort(404, f"Action {k + 1} has no model {part}.")
    return current_app.response_class(str(text), mimetype="text/plain")


def _css_string(text: str) -> str:
    """``text`` as a CSS string literal that cannot end the ``<style>`` element."""
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ").replace("\r", "\\d ")
    return '"' + out.replace("<", "\\3c ").replace(">", "\\3e ") + '"'


def _marked(html: str, episode: RunEpisode, k: int) -> str:
    """The env's page as the stepper shows it: marked, without its script, without image placeholders.

    Marks: the element action ``k + 1`` clicked (or the search box with the query typed) and the
    target product's row on a results page.
    """
    rules = ["span.thumb { display: none !important; }",
             ".results li { min-height: 0 !important; }"]
    record = episode.log.steps[k] if k < len(episode.log.steps) else None
    action = record.get("action") if record else None
    if isinstance(action, str) and action.startswith("click["):
        sel = f"[data-action={_css_string(action.lower())} i]"
        rules.append(f"{sel}, {sel} + label {{ outline: 3px solid #e8590c !important; outline-offset: 2px; "
                     "background: #fff4e6 !important; }")
        rules.append(f"li:has(> {sel}) {{ outline: 3px solid #e8590c; outline-offset: 2px; }}")
    elif isinstance(action, str) and action.startswith("search[") and action.endswith("]"):
        query = str(escape(action[7:-1]))
        html = html.replace('<input id="search_input" type="text" name="query"',
                            f'<input id="search_input" type="text" name="query" value="{query}"', 1)
        rules.append("#search_input { outline: 3px solid #e8590c !important; background: #fff4e6 !important; }")
    asin = str((episode.log.record.get("target") or {}).get("asin") or "")
    if asin:
        sel = f"a.product-link[data-action={_css_string('click[' + asin.lower() + ']')} i]"
        rules.append(f"li:has(> {sel}) {{ background: #e6fcf5 !important; box-shadow: inset 4px 0 0 #0ca678; }}")
        rules.append(f"{sel}::after {{ content: \"  \\2190  target\"; color: #0ca678; font-weight: 700; }}")
    # The frame runs no script (its sandbox has no allow-scripts): drop the page's one script and
    # its autofocus, which the browser would only report as blocked.
    html = re.sub(r"<script>.*?</script>", "", html, flags=re.S).replace(" autofocus>", ">")
    style = "<style>" + "\n".join(rules) + "</style>"
    if "</head>" in html:
        return html.replace("</head>", style + "</head>", 1)
    return style + html


@bp.get("/<run>/<int:position>/page/<int:k>")
def page(run: str, position: int, k: int):
    """The env's HTML of the state after ``k`` actions of the episode (``?mark=1``: with the viewer's marks)."""
    library = get_library()
    loaded = _loaded(run)
    episode = _episode(library, loaded, position)
    n = len(episode.log.steps)
    if not 0 <= k <= n:
        abort(404, f"The episode's pages run from 0 to {n}; there is no page {k}.")
    replayed = library.replayed(loaded, episode, k)
    if replayed.unavailable:
        abort(404, f"The pages of this episode cannot be re-created: {replayed.unavailable}.")
    if not replayed.has(k):
        abort(404, f"The replay stopped before page {k} (the log goes on after the episode ended).")
    html = replayed.pages[k]
    if request.args.get("mark") == "1":
        html = _marked(html, episode, k)
    return current_app.response_class(html, mimetype="text/html")


# -- routes: comparisons -----------------------------------------------------------------------------


_PAIRED = ByteLRU(1 << 20)


def _on_common_goals(key: tuple, ta: IndexTable, tb: IndexTable) -> dict | None:
    """The figures on the goals both runs played, cached per file state (``None``: no goal in common).

    The report's paired statistics of b against a (:func:`~webshop_gym.analysis.figures.compare_goals`,
    as :func:`~webshop_gym.analysis.stats.paired_cells` prints them: a sampled run's goals each with
    all its samples) and each run's Score and SR with their intervals on those goals.
    """
    found = _PAIRED.get(key)
    if found is None:
        samples = max(_samples(ta), _samples(tb))
        ga, gb = (pairing_goals(t.pairing, t.reward, t.errored.tolist(), samples) for t in (ta, tb))
        compared = compare_goals(ga, gb, RESAMPLES, 0, samples)
        if compared is None:
            return None
        common, result = compared
        sides = [goal_intervals(g.take(common), RESAMPLES, 0) for g in (ga, gb)]
        found = {"paired": dict(zip(paired_columns(samples), paired_cells(result), strict=True)), "goals": len(common),
                 "score": [side["score"] for side in sides], "sr": [side["sr"] for side in sides]}
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


def _refused_page(a: str, b: str, refused: str, details: list, status: int = 409):
    """A comparison refused: the reason in one line, the fingerprints folded away, the way back to the runs."""
    response = current_app.make_response(_render("runs/refused.html", a=a, b=b, refused=refused, details=details))
    response.status_code = status
    return response


@bp.get("/<a>/vs/<b>")
def compare(a: str, b: str):
    """Goal by goal, which run solved what, on the same goals only.

    Query: ``show`` (all, differ, a, b), ``tag_a`` / ``tag_b`` (a failure tag or ``solved``: the
    goals with that tag in run a / b, as the tag-transition table links them), ``page``, ``per``.
    """
    run_a, run_b = _loaded(a), _loaded(b)
    ta, tb = run_a.table(), run_b.table()
    show = request.args.get("show", "all")
    if show not in ("all", "differ", "a", "b"):
        abort(400, "show must be all, differ, a or b")
    names = [*TAGS, SOLVED]
    tag_a, tag_b = request.args.get("tag_a", ""), request.args.get("tag_b", "")
    for value in (tag_a, tag_b):
        if value and value not in names:
            abort(400, f"unknown failure tag {_quoted(value)}; expected one of {', '.join(names)}")
    page, per = _page_args(request.args)
    refused, details = _refusal(run_a, run_b)
    sides = [{"name": a, "index": run_a, "about": _describe(run_a.header), "stats": stats_of(run_a), "table": ta,
              "progress": progress_of(run_a)},
             {"name": b, "index": run_b, "about": _describe(run_b.header), "stats": stats_of(run_b), "table": tb,
              "progress": progress_of(run_b)}]
    context = {"a": a, "b": b, "sides": sides, "refused": refused, "details": details, "show": show,
               "tag_a": tag_a, "tag_b": tag_b, "method": method(RESAMPLES, 0, [_samples(ta), _samples(tb)]),
               "paired_columns": paired_columns(max(_samples(ta), _samples(tb))), "resamples": RESAMPLES}
    if refused:
        return _render("runs/compare.html", rows=[], counts=Counter(), common=0, unit="goals", page_no=1, pages=1,
                       paired=None,
                       on_common=None, transitions=None, **context)
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
    if tag_a:
        keep = keep & (tags_a == names.index(tag_a))
    if tag_b:
        keep = keep & (tags_b == names.index(tag_b))
    picked = np.flatnonzero(keep)
    pages = max(1, math.ceil(len(picked) / per))
    if page > pages:
        abort(404, f"The goals shown fill {pages} page(s); there is no page {page}.")
    rows = []
    for j in picked[(page - 1) * per : page * per].tolist():
        i, jb = int(pa[j]), int(pb[j])
        goal = int(ta.goal[i])
        rows.append({"goal": goal, "instruction": ta.instructions[i], "pa": i, "pb": jb,
                     "side_url": _side_by_side_url(a, b, goal, play_of(ta, i), play_of(tb, jb)),
                     "ra": float(ta.reward[i]), "rb": float(tb.reward[jb]), "sa": bool(ta.success[i]),
                     "sb": bool(tb.success[jb]), "tag_a": names[int(tags_a[j])], "tag_b": names[int(tags_b[j])],
                     "verdict": "a" if ra[j] > rb[j] else "b" if rb[j] > ra[j] else "tie"})

    def query(**changes):
        args = {"show": show, "tag_a": tag_a, "tag_b": tag_b, "per": per if per != PER_PAGE else "", **changes}
        return url_for("runs.compare", a=a, b=b, **{k: v for k, v in args.items() if v not in ("", None, "all")})

    # a row per goal, unless a goal recurs among the rows (its samples, its price seeds): then per planned episode
    unit = "planned episodes (goal, price seed, sample)" if len({k[0] for k in common}) < len(common) else "goals"
    return _render("runs/compare.html", rows=rows, counts=counts, common=len(common), unit=unit, page_no=page,
                   pages=pages,
                   per=per, matched=len(picked), paired=on_common and on_common["paired"], on_common=on_common,
                   transitions=_transitions(tags_a, tags_b),
                   query=query, **context)


def _plays(loaded: RunIndex, goal: int) -> list[dict]:
    """Every play of ``goal`` in the run, in file order: play number, sample, price seed, reward, success, tag."""
    t = loaded.table()
    default_seed = (loaded.header.get("fingerprint") or {}).get("price_seed")
    out = []
    for k, position in enumerate(np.flatnonzero(t.goal == goal).tolist()):
        protocol = loaded.protocol_fields(position)  # indexed: no episode read per play
        out.append({"play": k, "position": position, "sample": protocol.get("sample"),
                    "price_seed": protocol.get("price_seed", default_seed), "reward": float(t.reward[position]),
                    "success": bool(t.success[position]), "errored": bool(t.errored[position]),
                    "tag": t.tag_name(position)})
    return out


def _play_arg(name: str, default: int = 0) -> int:
    try:
        value = int(request.args.get(name, default))
    except ValueError:
        abort(400, f"{name} must be a whole number")
    if value < 0:
        abort(400, f"{name} must be 0 or more")
    return value


def play_of(t: IndexTable, position: int) -> int:
    """Which play of its goal the episode at ``position`` is (0: the first in the file)."""
    return int((t.goal[:position] == t.goal[position]).sum())


def _side(library: RunLibrary, name: str, loaded: RunIndex, goal: int, play: int, side: str) -> dict:
    """One run's plays of ``goal`` and its ``play``-th episode, with its diagnosis (a goal page's column)."""
    plays = _plays(loaded, goal)
    if not plays:
        abort(404, f"Goal {goal} was not played by {name}.")
    if play >= len(plays):
        abort(404, f"{name} played goal {goal} {len(plays)} time(s) (plays 0 to {len(plays) - 1}); there is no "
                   f"play {play}.")
    position = plays[play]["position"]
    episode = _episode(library, loaded, position)
    n = len(episode.log.steps)
    bought = episode.purchased and n >= 1
    shown = n - 1 if bought else n
    replayed = library.replayed(loaded, episode, shown)
    shop = None if replayed.unavailable else library.shop_of(loaded, episode)
    diagnosis = diagnose(episode, shop=shop, searches=None if shop is None else library.searches(loaded, episode))
    target = dict(episode.log.record.get("target") or {})
    scored = [p for p in plays if not p["errored"]]
    return {"name": name, "side": side, "number": "ab".index(side) + 1, "run": loaded, "policy": _describe(loaded.header)["policy"],
            "episode": episode, "replayed": replayed, "tag": loaded.table().tag_name(position),
            "steps": [(i, _action_text(s), s) for i, s in enumerate(episode.log.steps[:500])],
            "shown": shown if replayed.has(shown) else -1,
            "shown_label": "the page it bought from" if bought else "the last page",
            "info": episode.reward_info or {}, "last": episode.last, "diagnosis": diagnosis,
            "target_options": _target_options(target.get("options")),
            "step_url": url_for("runs.episode_page", run=name, position=position),
            "plays": plays, "play": play, "successes": sum(p["success"] for p in scored), "scored": len(scored),
            "errored": len(plays) - len(scored)}


@bp.get("/<run>/goal/<int:goal>")
def goal_page(run: str, goal: int):
    """One goal of a run: every play of it (sample, price seed, reward, tag) and the ``?play=k``-th (default 0) in full."""
    library = get_library()
    loaded = library.load(run)
    if isinstance(loaded, Entry):
        return _indexing_page(run, loaded)
    play = _play_arg("play")
    side = _side(library, run, loaded, goal, play, "a")
    side["play_url"] = lambda k: url_for("runs.goal_page", run=run, goal=goal, **({"play": k} if k else {}))
    return _render("runs/goal.html", goal=goal, sides=[side], instruction=side["episode"].instruction, crumb=run,
                   crumb_url=url_for("runs.run_page", run=run))


def _side_by_side_url(a: str, b: str, goal: int, play_a: int, play_b: int) -> str:
    """The side-by-side page of ``goal`` at run a's ``play_a``-th and run b's ``play_b``-th play of it."""
    args = {"play": play_a or None, "play_b": play_b if play_b != play_a else None}
    return url_for("runs.compare_goal", a=a, b=b, goal=goal, **{k: v for k, v in args.items() if v is not None})


@bp.get("/<a>/vs/<b>/<int:goal>")
def compare_goal(a: str, b: str, goal: int):
    """The two runs' episodes of one goal side by side, each with its diagnosis (same shop and goal set only).

    Query: ``play`` (default 0): which play of the goal each run shows (``play_b``: run b's, when
    it differs), for a goal played several times (``eval --samples K``, a protocol's repeats).
    """
    library = get_library()
    run_a, run_b = _loaded(a), _loaded(b)
    refused, details = _refusal(run_a, run_b)
    if refused:
        return _refused_page(a, b, refused, details)
    play_a = _play_arg("play")
    play_b = _play_arg("play_b", play_a)
    missing = [n for n, r in ((a, run_a), (b, run_b)) if not (r.table().goal == goal).any()]
    if missing:
        abort(404, f"Goal {goal} was not played by {' and '.join(missing)}: the side-by-side view needs a goal of "
                   "both runs.")
    sides = [_side(library, a, run_a, goal, play_a, "a"), _side(library, b, run_b, goal, play_b, "b")]

    sides[0]["play_url"] = lambda k: _side_by_side_url(a, b, goal, k, play_b)
    sides[1]["play_url"] = lambda k: _side_by_side_url(a, b, goal, play_a, k)
    return _render("runs/goal.html", goal=goal, sides=sides, instruction=sides[0]["episode"].instruction,
                   crumb=f"{a} vs {b}", crumb_url=url_for("runs.compare", a=a, b=b))
