"""The Flask server (installed as ``webshop_gym.server``): play UI, reference site, AgentGym API.

A person plays the same episodes as :class:`~webshop_gym.envs.env.WebShopEnv`: the pages are the
package's templates in human mode, and every click or search becomes the env's action string,
applied to a slot of one shared :class:`~webshop_gym.engine.Engine`.  The same app serves the
reference site's URLs (``site.py``, for HTML-scraping agents such as ReAct's) and AgentGym's
env-server API under ``/agentgym`` (``agentgym.py``), all over the same shop.  Start it with
``webshop-gym serve`` (see ``docs/server.md`` and ``docs/compat.md``) or build the app yourself::

    from webshop_gym.server import create_app
    app = create_app({"SHOP": "../shared/webshop-small", "LOG_DIR": "logs"})
    app.run(host="127.0.0.1", port=3000, threaded=True)

Flask is imported inside :func:`create_app`, so ``import webshop_gym.server`` (and the
``webshop-gym`` command line) works without it.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

__all__ = ["DEFAULTS", "create_app"]

#: Configuration keys and their defaults (pass overrides to :func:`create_app`).
DEFAULTS: dict[str, Any] = {
    "SHOP": None,  # shop directory, or a Shop (None: the embedded shop)
    "GOALS": None,  # frozen goal-set file
    "HUMAN_GOALS": False,  # human instructions instead of synthetic goals
    "PRICE_SEED": 0,  # seed of prices and price caps
    "MAX_STEPS": 15,  # actions per episode (0 or None: no cap)
    "SESSION_TTL": 3600,  # seconds a session may stay idle (0 or None: forever)
    "MAX_SESSIONS": 1000,  # sessions alive at once (engine slots); the least recently used is evicted
    "LOG_DIR": None,  # folder of the per-session JSONL logs (None: no logs)
    "LOG_FSYNC": False,  # fsync every log line
    "SHOW_ATTRS": False,  # show the Attributes tab
    "IMAGES": False,  # show product images (remote URLs)
    "SEED": None,  # seed of random goals
    "CLOCK": None,  # monotonic clock for session expiry (tests)
    "MAX_CONTENT_LENGTH": 64 * 1024,  # bytes per request body: 413 past it, on every route
    "AGENTGYM_MAX_ENVS": 1024,  # AgentGym envs alive at once
    "AGENTGYM_ENV_TTL": 3600,  # idle seconds after which an AgentGym env may be evicted (None: never)
    "RUNS": None,  # folder of run files (eval --out) shown at /runs (None: no run viewer)
    "RUNS_BUNDLE": None,  # a bundle's pages being written: {"report": the report beside them, or None}
    "RUNS_SHARED": False,  # the run pages are to be shared (a bundle): machine paths and server addresses cut
}

TEMPLATES = Path(__file__).resolve().parent / "templates"
HEADERS = "webshop_gym_headers"
"""``app.extensions`` key of the headers every response carries (security policy)."""


def create_app(config: dict | None = None):
    """Create the play server's Flask app.

    Args:
        config: overrides of :data:`DEFAULTS` (and any Flask setting, e.g. ``TESTING``).

    Returns:
        The app; its session store is ``app.extensions["webshop_gym"]``.

    Raises:
        DependencyNotInstalled: Flask is missing.
    """
    try:
        import jinja2
        from flask import Flask
    except ImportError as exc:  # pragma: no cover - Flask is installed wherever the tests run
        from webshop_gym.error import DependencyNotInstalled

        raise DependencyNotInstalled(
            f"the play server needs Flask ({exc}); install it with: pip install 'webshop-gym[server]'"
        ) from exc

    app = Flask(__name__, template_folder=str(TEMPLATES), static_folder=None)
    app.config.from_mapping(DEFAULTS)
    if config:
        app.config.update(config)
    # No tracebacks for players: outside tests, errors become the 500 page.
    app.config["PROPAGATE_EXCEPTIONS"] = bool(app.config.get("TESTING"))
    # The server's own templates first, then the package's (one tree serves Flask and render()).
    app.jinja_loader = jinja2.ChoiceLoader([
        jinja2.FileSystemLoader(str(TEMPLATES)),
        jinja2.PackageLoader("webshop_gym", "templates"),
    ])

    from webshop_gym.server import agentgym, errors, menu, play, sessions, site

    store = sessions.init_app(app)
    site.init_app(app, store)
    agentgym.init_app(app, store)
    errors.init_app(app)
    # One line per blueprint; the reference site's catch-all /<session> yields to every fixed route.
    app.register_blueprint(menu.bp)
    app.register_blueprint(play.bp)
    app.register_blueprint(agentgym.bp)
    app.register_blueprint(site.bp)
    if app.config.get("RUNS"):
        from webshop_gym.server import run_library, runs

        run_library.init_app(app)
        app.register_blueprint(runs.bp)
    _security_headers(app)
    _body_limit(app)
    return app


def _body_limit(app) -> None:
    """Every route answers 413 to a body over ``MAX_CONTENT_LENGTH`` (as declared, or counted by the ASGI front).

    Flask refuses such a body only when a route reads it; this refuses it on every route, read or
    not, with the route's own error answer (JSON on the AgentGym API, a page elsewhere).
    """
    from flask import abort, request

    @app.before_request
    def refuse_large_bodies():
        limit = app.config.get("MAX_CONTENT_LENGTH")
        if limit is not None and (request.content_length or 0) > limit:
            abort(413)


def _inline_script_hash() -> str | None:
    """CSP hash of the one inline script of the package's ``base.html`` (None if not found)."""
    from importlib import resources

    text = resources.files("webshop_gym").joinpath("templates/base.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", text, flags=re.S)
    if len(scripts) != 1 or "{" + "{" in scripts[0] or "{%" in scripts[0]:
        return None
    digest = hashlib.sha256(scripts[0].encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _security_headers(app) -> None:
    """Headers on every response: no framing, no sniffing, no referrer, a strict CSP."""
    script = _inline_script_hash() or "'unsafe-inline'"
    images = "'self' data: https: http:" if app.config.get("IMAGES") else "'self' data:"
    policy = (
        f"default-src 'none'; script-src {script}; style-src 'unsafe-inline'; img-src {images}; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    )

    # Session ids are in the URLs: never send them to another site (e.g. an image host).
    fixed = {"Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
             "Referrer-Policy": "no-referrer"}
    app.extensions[HEADERS] = fixed  # the ASGI front (asgi.py) sends the same on the answers it makes itself

    @app.after_request
    def headers(response):
        for key, value in fixed.items():
            response.headers.setdefault(key, value)
        return response
