"""The run viewer's blueprint and what its pages share.

:data:`bp` is the ``runs`` blueprint (``/runs``, its script under ``/runs/static``, the security
headers of every page).  The modules of its pages add their routes to it: :mod:`.run_list`,
:mod:`.run_pages`, :mod:`.episode_pages`, :mod:`.comparison_pages` and :mod:`.goal_pages`;
:mod:`webshop_gym.server.runs` imports them all, so an app registers ``runs.bp``.  Here is what
several pages use: rendering with the viewer's stylesheet, quoting what the user sent in a
one-line message, whether the pages are to be shared, paged lists, and finding a run, one of its
episodes and which play of its goal an episode is.  A run's settings and figures as the pages
show them are :mod:`.run_summary`'s.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from importlib import resources

from flask import Blueprint, abort, current_app, render_template, request, url_for
from webshop_gym.server.run_library import Entry, RunLibrary, get_library

from webshop_gym.analysis.diagnosis import TAG_RULES, TAGS
from webshop_gym.analysis.intervals import fmt
from webshop_gym.analysis.taxonomy import CAUSES, FAMILY
from webshop_gym.error import Error
from webshop_gym.render.html import Nav, stylesheet
from webshop_gym.runs.index import IndexTable, RunIndex
from webshop_gym.runs.run import RunEpisode

__all__ = ["action_text", "bp", "episode_at", "find_episode", "indexed_run", "indexing_page", "loaded_run",
           "page_args", "play_of", "quoted", "render_page", "shared", "target_options", "viewer_css"]


#: Episodes per run page (default, most).
PER_PAGE, MAX_PER_PAGE = 100, 1000

#: The episode page's one script (the arrow keys step), served from the blueprint's static folder.
STEPS_SCRIPT = "steps.js"

bp = Blueprint("runs", __name__, url_prefix="/runs", static_folder="static/runs", static_url_path="/static")


# -- the pages: rendering, security headers, messages --------------------------------------------


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


def render_page(template: str, **context):
    """A viewer template rendered with what every page has: the stylesheet, the menu, the taxonomy's names."""
    bundled = current_app.config.get("RUNS_BUNDLE") is not None  # static pages: no server, no game to start
    menu = url_for("menu.index") if "menu.index" in current_app.view_functions and not bundled else None
    return render_template(template, css=viewer_css(), page="runs", human=True, nav=Nav(menu=menu), causes=CAUSES,
                           tags=TAGS, tag_rules=TAG_RULES, tag_family=FAMILY, pct=fmt, steps_script=STEPS_SCRIPT,
                           **context)


def indexing_page(name: str, entry: Entry):
    """The page of a run still being indexed: how far it got (202; the browser asks again in 2 s)."""
    done, total, episodes = entry.progress
    share = 100.0 * done / total if total else 0.0
    response = current_app.make_response(render_page("runs/indexing.html", name=name, share=share, episodes=episodes,
                                                  total_mb=total / 2**20))
    response.status_code = 202
    response.headers["Retry-After"] = "2"
    return response


def quoted(value: str, most: int = 80) -> str:
    """A value the user sent, quoted in words for a one-line message: control characters as spaces, cut at ``most``."""
    text = re.sub(r"[\x00-\x1f\x7f\u2028\u2029]", " ", str(value))
    return "“" + (text if len(text) <= most else text[: most - 1] + "…") + "”"


def target_options(options) -> str:
    """The target's options in words (``size: M, color: red``)."""
    if isinstance(options, dict):
        return ", ".join(f"{k}: {v}" for k, v in options.items())
    return ", ".join(str(v) for v in options or [])


def page_args(args) -> tuple[int, int]:
    """The ``page`` and ``per`` arguments of a paged list (400 unless whole numbers in range)."""
    try:
        page = int(args.get("page", 1))
        per = int(args.get("per", PER_PAGE))
    except ValueError:
        abort(400, "page and per must be whole numbers")
    if page < 1 or not 1 <= per <= MAX_PER_PAGE:
        abort(400, f"page must be >= 1 and per from 1 to {MAX_PER_PAGE}")
    return page, per


def shared() -> bool:
    """The pages are to be shared (a bundle, ``RUNS_SHARED``): no machine path, no server address on them."""
    return bool(current_app.config.get("RUNS_SHARED"))


# -- finding a run, an episode, a play -----------------------------------------------------------


def indexed_run(run: str) -> RunIndex:
    """The run called ``run``, indexed; while it is still being indexed, its indexing page answers instead (202)."""
    loaded = get_library().load(run)
    if isinstance(loaded, Entry):
        abort(indexing_page(run, loaded))
    return loaded


def loaded_run(run: str) -> RunIndex:
    """The run called ``run``, indexed (503 while it is still being indexed)."""
    loaded = get_library().load(run)
    if isinstance(loaded, Entry):
        abort(503, f"The run {quoted(run)} is being indexed ({loaded.progress[2]:,} episodes so far); try again shortly.")
    return loaded


def find_episode(run: str, position: int) -> tuple[RunLibrary, RunIndex, RunEpisode]:
    """The library, the run called ``run`` and its episode at ``position`` (503 while indexing, 404: no such one)."""
    library = get_library()
    loaded = loaded_run(run)
    return library, loaded, episode_at(library, loaded, position)


def episode_at(library: RunLibrary, loaded: RunIndex, position: int) -> RunEpisode:
    """The episode at ``position`` of the run (404 when there is none, 409 when the file changed as it was read)."""
    if not 0 <= position < loaded.episodes:
        abort(404, f"The run has {loaded.episodes} episodes (0 to {loaded.episodes - 1}); "
                   f"there is no episode {position}.")
    try:
        return library.episode(loaded, position)
    except (Error, OSError, ValueError) as exc:
        abort(409, f"The run changed while it was read ({exc}); reload the page.")


def action_text(record: dict) -> str:
    """An action as the pages show it (a logged action that was not a string: its type and repr)."""
    if record.get("action") is None and "action_repr" in record:
        return f"(not a string: {record.get('action_type')} {record['action_repr']})"
    return str(record.get("action"))


def play_of(t: IndexTable, position: int) -> int:
    """Which play of its goal the episode at ``position`` is (0: the first in the file)."""
    return int((t.goal[:position] == t.goal[position]).sum())
