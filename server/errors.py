"""Error pages: every HTTP error (404, 400, 405, 413, ...) and any crash render a page, never a traceback.

Three kinds: JSON under ``/agentgym``; on the reference site's URLs (every path that is not one
of the server's own, see :func:`on_reference_site`) a page with the visible text structure of
the reference's own error pages (Werkzeug's defaults: a title, one ``<h1>``, one ``<p>``), so
that scrapers such as ReAct's read them as they read the reference's; the play UI's styled page
elsewhere.
"""

from __future__ import annotations

import json

from flask import Response, current_app, render_template, request, url_for
from werkzeug.exceptions import HTTPException, InternalServerError

from webshop_gym.render.html import Nav, stylesheet

__all__ = ["init_app"]


def render_error(error: HTTPException):
    """Render ``error`` as the shop's error page (its description is escaped like all text).

    Under ``/agentgym`` (a JSON API) the error is FastAPI's ``{"detail": ...}`` instead.
    """
    if request.path == "/agentgym" or request.path.startswith("/agentgym/"):
        body = json.dumps({"detail": error.description if error.code != 404 else "Not Found"})
        response = Response(body, status=error.code, mimetype="application/json")
        if error.code == 405 and getattr(error, "valid_methods", None):
            response.headers["Allow"] = ", ".join(error.valid_methods)
        return response
    if on_reference_site(request.path):
        return render_template("site/error.html", code=error.code, name=error.name,
                               description=error.description), error.code
    body = render_template(
        "error.html", css=stylesheet(), page="error", human=True, nav=Nav(menu=url_for("menu.index")),
        code=error.code, name=error.name, description=error.description, runs=_runs_link(),
    )
    return body, error.code


def _runs_link() -> str | None:
    """The run list's URL on an error page of the run viewer (``/runs/...``), so every error there leads back."""
    if request.path != "/runs" and not request.path.startswith("/runs/"):
        return None
    return url_for("runs.index") if "runs.index" in current_app.view_functions else None


def on_reference_site(path: str) -> bool:
    """Whether ``path`` is one of the reference site's URLs (anything but the server's own pages).

    The server's own pages are ``/`` and the paths whose first segment is one of
    :data:`~webshop_gym.server.site.RESERVED` (the play UI, the AgentGym API, the run viewer).
    Every other path is the reference site's: it served nothing else, so a path no route
    matches (a ReAct URL cut at ``?``, say) is answered as the reference would answer it.
    """
    from webshop_gym.server.site import RESERVED

    first = path.lstrip("/").split("/", 1)[0]
    return bool(first) and first not in RESERVED


def init_app(app) -> None:
    """Register the error handlers on ``app``."""

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        return render_error(error)

    @app.errorhandler(Exception)
    def crash(error: Exception):  # only reached when PROPAGATE_EXCEPTIONS is off (not in tests)
        app.logger.exception("unhandled error")
        return render_error(InternalServerError("Something went wrong on the server; the error has been logged."))
