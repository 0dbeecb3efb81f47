"""The start menu: pick a goal by index, a random goal from a split, or any random goal.

Routes:
    ``GET /``: the menu.
    ``POST /new``: start a session on ``goal`` (an index) or on a random goal of ``split``.
    ``GET /goal/<i>``: start a session on goal ``i``.
    ``GET /favicon.ico``: no icon (204), so browsers log no error.

Each starts a new session and redirects (303) to its page, ``/play/<session>``.
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for
from webshop_gym.server.sessions import LogWriteFailed, get_store

from webshop_gym.data.goals import SPLITS
from webshop_gym.error import GoalNotFound
from webshop_gym.render.html import Nav, stylesheet

__all__ = ["bp"]

bp = Blueprint("menu", __name__)


@bp.get("/")
def index():
    """The start page: the shop, its splits and the ways to start a game."""
    store = get_store()
    goals = store.shop.goals
    splits = []
    for name in SPLITS:
        span = store.goal_range(name)
        splits.append({"name": name, "count": len(span),
                       "first": span.start, "last": span.stop - 1 if len(span) else None})
    return render_template(
        "menu.html",
        css=stylesheet(), page="menu", human=True, nav=Nav(menu=url_for("menu.index")),
        shop=store.shop, products=len(store.shop.catalog), num_goals=len(goals), kind=goals.kind,
        splits=splits, max_steps=store.engine.max_steps, sessions=len(store), max_sessions=store.max_sessions,
        config_view_functions=current_app.view_functions,
    )


@bp.post("/new")
def new():
    """Start a session from the menu's forms: ``goal`` (an index) or ``split`` (a random goal)."""
    goal = request.form.get("goal", "").strip()
    split = request.form.get("split", "").strip() or None
    if goal:
        if not goal.isdigit():
            abort(400, f"the goal index must be a whole number from 0 to {len(get_store().shop.goals) - 1}")
        return _start(goal=int(goal))
    if split not in (None, "all", *SPLITS):
        abort(400, f"unknown split {split!r}: expected one of {', '.join([*SPLITS, 'all'])}")
    return _start(split=None if split == "all" else split)


@bp.get("/goal/<int:i>")
def goal(i: int):
    """Start a session on goal ``i``."""
    return _start(goal=i)


@bp.get("/favicon.ico")
def favicon():
    """No icon: an empty 204 answer instead of a 404 in the browser's console."""
    return "", 204


def _start(goal: int | None = None, split: str | None = None):
    try:
        session = get_store().create(goal=goal, split=split)
    except GoalNotFound as exc:
        abort(404, str(exc))
    except LogWriteFailed as exc:
        current_app.logger.error("%s", exc)
        abort(503, "The server could not write the new game's log, so no game was started. "
                   "Try again in a moment; if it keeps happening, tell whoever runs this server.")
    return redirect(url_for("play.show", sid=session.id), code=303)
