"""The run viewer's list of runs (``GET /runs/``): settings aggregated over seeds, protocols, a form to compare two."""

from __future__ import annotations

from flask import abort, redirect, request, url_for
from webshop_gym.server.run_library import get_library
from webshop_gym.server.run_summary import describe, progress_of, samples_per_goal, stats_of
from webshop_gym.server.viewer import bp, quoted, render_page, shared

from webshop_gym.analysis.intervals import RESAMPLES, method
from webshop_gym.reporting.completeness import completeness_of
from webshop_gym.runs.index import seed_groups

__all__ = ["index"]


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
        abort(404, f"There is no readable run called {quoted(baseline)} to compare the others with.")
    for row in rows:
        ix = row["index"]
        if ix is None:
            continue
        row["about"] = describe(ix.header)
        row["table"] = ix.table()
        row["stats"] = stats_of(ix)
        row["complete"] = ix.summary is not None
        row["status"] = progress_of(ix)
    notes: dict[str, int] = {}  # the protocol cells' footnotes, numbered in listing order (issue 56 item 2)
    for row in rows:
        note = row["about"]["protocol_note"] if row.get("about") else ""
        row["protocol_mark"] = notes.setdefault(note, len(notes) + 1) if note else None
    seeds = seed_groups([(r["name"], r["index"].header, r["table"].figures) for r in rows if r["index"] is not None])
    return render_page("runs/index.html", rows=rows, folder="" if shared() else str(get_library().folder), seeds=seeds,
                   baseline=baseline, compared=[name for name in readable if baseline and name != baseline],
                   protocols=_protocol_groups(rows), protocol_notes=list(notes),
                   method=method(RESAMPLES, 0, [samples_per_goal(r["table"]) for r in rows if r["index"] is not None]))
