r"""The reference site's URLs (``web_agent_site/app.py``), for agents that scrape its HTML.

ReAct's WebShop client (and LATS/Reflexion, which reuse it) build these URLs themselves and read
the returned pages by their visible text nodes and the tags around them.  The pages here are our
own templates (``templates/site/``) that give the same text nodes, in the same order, inside the
same kinds of elements as the reference's pages: ``<button>`` for buttons, ``<label>`` for option
values after radio inputs, ``a.product-link`` for products, ``#search_input``, and the done
page's ``Your score (min 0.0, max 1.0)`` followed by the score.  A test compares them node by node
with the reference site's own pages.

Routes (GET and POST, as the reference serves them):
    ``/<session>``: the search page.  ``fixed_<i>`` plays goal ``i``; any other new name gets a
    random goal (weighted).  A POST with ``search_query`` redirects to the results.
    ``/search_results/<session>/<keywords>/<page>``
    ``/item_page/<session>/<asin>/<keywords>/<page>/<options>``
    ``/item_sub_page/<session>/<asin>/<keywords>/<page>/<sub_page>/<options>``
    ``/done/<session>/<asin>/<options>``: the purchase and its reward.

The pages hold no episode state: everything is in the URL, as in the reference.  ``<keywords>``
(a list repr, or plain words) and ``<options>`` (a dict repr) are parsed by a small parser that
accepts only string literals, never evaluated; malformed input gets 400, an unknown session,
product or page 404, never a traceback.  Pages link to nothing outside the server.

A ``/`` inside a keyword or an option value (``3/4 inch rug``) cannot travel in a path segment
(a redirect to a URL with the ``/`` in it, as the reference's form makes, ends in a 404): the links
and redirects made here write it as ``\x2f`` inside the segment's string literals, which parse
back to ``/``.  Search queries from the form are limited to :data:`MAX_QUERY` characters.
Results pages are numbered ``1`` to one past the last page of results (the empty page the last
page's ``Next >`` opens, as on the reference), written in ASCII digits; other numbers are 404.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import pprint
import re
import threading
from pathlib import Path

import numpy as np
from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.exceptions import MethodNotAllowed

from webshop_gym.compat.sim_server import SessionMap
from webshop_gym.core.pages import PRODUCTS_PER_PAGE, ProductViews

__all__ = ["RESERVED", "SiteState", "bp", "init_app", "parse_options", "parse_keywords", "segment"]

bp = Blueprint("site", __name__)

EXTENSION = "webshop_gym_site"
SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")
RESERVED = frozenset({"new", "play", "goal", "agentgym", "runs", "static", "favicon.ico"})
"""First path segments that belong to the server's own pages, never session names."""
MAX_SEGMENT = 8192
"""Longest ``<keywords>`` or ``<options>`` segment parsed (characters)."""
MAX_QUERY = 2000
"""Longest search query the search form takes (characters); its keyword list always fits :data:`MAX_SEGMENT`."""
SESSION_BYTES = 16 * 2**20
"""Memory budget of the site's session -> goal map."""

_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


class SiteState:
    """The site's sessions (name -> goal, bounded in bytes) and its random-goal generator.

    Args:
        store: the app's :class:`~webshop_gym.server.sessions.SessionStore` (shop and engine thread).
        seed: seed of the random goals of new session names (``None``: fresh entropy).
        session_bytes: memory budget of the session map.
    """

    def __init__(self, store, seed: int | None = None, session_bytes: int = SESSION_BYTES):
        self.store = store
        self.shop = store.shop
        self.views = ProductViews(self.shop.catalog, size=20_000)
        self.sessions = SessionMap(session_bytes)
        self.rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def goal(self, session: str, create: bool) -> int | None:
        """The goal of ``session`` (``fixed_<i>``: goal ``i``); a new name gets one when ``create``.

        Raises:
            ValueError: a ``fixed`` name whose number is not a goal index.
        """
        n = len(self.shop.goals)
        with self._lock:
            known = self.sessions.get(session)
            if known is not None:
                return known
            if "fixed" in session:  # the reference's own test: a substring, then the last _-part
                tail = session.split("_")[-1]
                if not re.fullmatch(r"[+-]?\d{1,18}", tail.strip()) or not -n <= int(tail) < n:
                    raise ValueError(f"{session!r} names no goal: this server has {n} goals (fixed_0 to fixed_{n - 1})")
                return int(tail) % n
            if not create:
                return None
            goal = int(self.shop.goals.sample(self.rng))
            self.sessions.put(session, goal)
            return goal


def init_app(app, store) -> SiteState:
    """Attach the site's state to ``app``."""
    state = SiteState(store, seed=app.config.get("SEED"))
    app.extensions[EXTENSION] = state
    return state


def _state() -> SiteState:
    return current_app.extensions[EXTENSION]


# -- safe parsing of URL segments ------------------------------------------------------------------


def _literal(text: str, what: str):
    if len(text) > MAX_SEGMENT:
        abort(400, f"the {what} segment is longer than {MAX_SEGMENT} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        abort(400, f"the {what} segment is not a valid Python literal: {text[:200]!r}")
    return tree.body


def _string(node, what: str) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    abort(400, f"the {what} segment may hold only quoted strings")


def parse_options(text: str) -> dict[str, str]:
    """Parse the ``<options>`` segment: a dict repr of option name -> value, strings only.

    Only string literals are accepted (no evaluation of any kind); anything else is a 400.
    """
    node = _literal(text, "options")
    if not isinstance(node, ast.Dict) or any(k is None for k in node.keys):
        abort(400, f"the options segment must be a dict of strings like {{'size': 'large'}}, got {text[:200]!r}")
    return {_string(k, "options"): _string(v, "options") for k, v in zip(node.keys, node.values)}


def parse_keywords(text: str) -> list[str]:
    """Parse the ``<keywords>`` segment as the reference does: a list repr, or the words as they are."""
    if len(text) > MAX_SEGMENT:
        abort(400, f"the keywords segment is longer than {MAX_SEGMENT} characters")
    if not text.startswith("["):
        return [text]
    node = _literal(text, "keywords")
    if not isinstance(node, ast.List):
        abort(400, f"the keywords segment must be a list of strings like ['red', 'shoes'], got {text[:200]!r}")
    return [_string(e, "keywords") for e in node.elts]


def _page_number(text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,9}", text):
        abort(404, f"no results page {text[:40]!r}: results pages are numbered 1, 2, 3, ... in ASCII digits")
    return int(text)


def segment(literal: str) -> str:
    r"""A list or dict repr made fit for one URL path segment: each ``/`` written as ``\x2f``.

    ``repr`` never escapes ``/`` and always doubles a backslash, so every ``/`` of such a repr
    sits inside a string literal, where ``\x2f`` is the same character.
    """
    return literal.replace("/", "\\x2f")


# -- views ----------------------------------------------------------------------------------------


def _session(session_id: str, create: bool = False) -> int:
    try:
        goal = _state().goal(session_id, create)
    except ValueError as exc:
        abort(404, str(exc))
    if goal is None:
        abort(404, f"unknown session {session_id!r}: open /{session_id} first to start it")
    return goal


def _row(asin: str) -> int:
    catalog = _state().shop.catalog
    if len(asin) > 64:
        abort(404, "no such product")
    row = catalog.row_of(asin)
    if row < 0:
        row = catalog.row_of(asin.upper())
    if row < 0:
        abort(404, f"no product {asin!r} in this shop")
    return int(row)


def _instruction(goal: int) -> str:
    return _state().shop.goals.instruction[goal]


def _page(template: str, **context) -> Response:
    html = render_template(f"site/{template}", images=bool(current_app.config.get("IMAGES")), **context)
    response = Response(html, mimetype="text/html")
    response.headers["Content-Security-Policy"] = _policy()
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.route("/<session_id>", methods=["GET", "POST"])
def index(session_id: str):
    """The search page of a session (``fixed_<i>``: goal ``i``; a new name: a random goal)."""
    if session_id in RESERVED:
        if session_id == "new":
            raise MethodNotAllowed(valid_methods=["POST"])
        abort(404)
    goal = _session(session_id, create=True)
    if request.method == "POST" and "search_query" in request.form:
        query = request.form["search_query"]
        if len(query) > MAX_QUERY:
            abort(400, f"The search query has {len(query):,} characters; this site takes at most {MAX_QUERY:,}.")
        keywords = segment(str(query.lower().split(" ")))
        if len(keywords) > MAX_SEGMENT:  # characters that repr escapes (control characters) count several times
            abort(400, f"The search query takes {len(keywords):,} characters as a URL segment; this site takes at most "
                       f"{MAX_SEGMENT:,}.")
        return redirect(url_for("site.search_results", session_id=session_id, keywords=keywords, page=1))
    return _page("start.html", session_id=session_id, instruction_text=_instruction(goal))


@bp.route("/search_results/<session_id>/<keywords>/<page>", methods=["GET", "POST"])
def search_results(session_id: str, keywords: str, page: str):
    """A results page: the top 50 products for the keywords, 10 per page."""
    goal = _session(session_id)
    words = parse_keywords(keywords)
    page_no = _page_number(page)
    state = _state()
    rows = state.store.run(state.shop.search, " ".join(words)).tolist()
    last = -(-len(rows) // PRODUCTS_PER_PAGE) + 1  # the empty page after the last, as the reference shows it
    if page_no < 1 or page_no > last:
        abort(404, f"no results page {page_no}: this search has results pages 1 to {last}")
    shown = rows[(page_no - 1) * PRODUCTS_PER_PAGE: page_no * PRODUCTS_PER_PAGE]
    c = state.shop.catalog
    products = [{"asin": c.asin[r], "title": c.title[r], "price": c.price_tag[r], "image": c.main_image[r]}
                for r in shown]
    return _page("results.html", session_id=session_id, instruction_text=_instruction(goal), products=products,
                 keywords=segment(str(words)), page=page_no, total=len(rows))


def _product(row: int) -> dict:
    state = _state()
    c = state.shop.catalog
    view = state.views(row)
    return {
        "asin": c.asin[row],
        "title": c.title[row],
        "price": c.price_tag[row],
        "rating": c.rating[row],
        "image": c.main_image[row],
        "options": [(name, [text for _, text in values]) for name, values in view.groups],
    }


@bp.route("/item_page/<session_id>/<asin>/<keywords>/<page>/<options>", methods=["GET", "POST"])
def item_page(session_id: str, asin: str, keywords: str, page: str, options: str):
    """A product's page with the options of the URL selected."""
    goal = _session(session_id)
    row = _row(asin)
    chosen = parse_options(options)
    product = _product(row)
    groups = []
    for name, values in product["options"]:
        choices = []
        for value in values:
            picked = dict(chosen)
            picked[name] = value
            choices.append({"value": value, "checked": value in chosen.values(),
                            "url": url_for("site.item_page", session_id=session_id, asin=asin, keywords=keywords,
                                           page=page, options=segment(str(picked)))})
        groups.append({"name": name, "choices": choices})
    return _page("item.html", session_id=session_id, instruction_text=_instruction(goal), product=product,
                 groups=groups, asin=asin, keywords=keywords, page=page, options=segment(str(chosen)),
                 show_attrs=bool(current_app.config.get("SHOW_ATTRS")))


@bp.route("/item_sub_page/<session_id>/<asin>/<keywords>/<page>/<sub_page>/<options>", methods=["GET", "POST"])
def item_sub_page(session_id: str, asin: str, keywords: str, page: str, sub_page: str, options: str):
    """A product's Description, Features, Reviews or Attributes page."""
    goal = _session(session_id)
    row = _row(asin)
    if sub_page not in SUB_PAGES:
        abort(404, f"no sub page {sub_page!r}: expected one of {', '.join(SUB_PAGES)}")
    chosen = parse_options(options)
    c = _state().shop.catalog
    return _page(
        f"{sub_page.lower()}.html", session_id=session_id, instruction_text=_instruction(goal), asin=asin,
        keywords=keywords, page=page, options=segment(str(chosen)),
        description=c.description[row],
        bullets=[c.bullet_text[b] for b in c.bullets[row]],
        reviews=[{"title": c.review_title[r], "score": c.review_score[r], "stars": _stars(c.review_score[r]),
                  "body": c.review_body[r]} for r in c.reviews[row]],
        attributes=[c.attribute_names[a] for a in c.attributes[row]],
        category=c.category_names[c.category[row]],
        query=c.query_names[c.query[row]],
        product_category=c.product_category_names[c.product_category[row]],
    )


@bp.route("/done/<session_id>/<asin>/<options>", methods=["GET", "POST"])
def done(session_id: str, asin: str, options: str):
    """The purchase of ``asin`` with ``options``: the reward and what the goal asked for."""
    goal_index = _session(session_id)
    row = _row(asin)
    chosen = parse_options(options)
    state = _state()
    shop = state.shop
    reward, info = state.store.run(shop.reward, goal_index, shop.catalog.asin[row], chosen)
    goal = shop.goals[goal_index]
    if shop.goals.kind == "human" and goal["weight"] == 1:
        goal["weight"] = 1  # the reference's human goals carry the int 1
    c = shop.catalog
    return _page(
        "done.html", session_id=session_id, mturk_code=mturk_code(session_id), asin=asin,
        options_json=_tojson(chosen), purchased_attrs=str([c.attribute_names[a] for a in c.attributes[row]]),
        category=c.category_names[c.category[row]], query=c.query_names[c.query[row]],
        product_category=c.product_category_names[c.product_category[row]], goal=goal,
        goal_pprint=pprint.pformat(goal), reward=str(float(reward)), reward_info=pprint.pformat(info),
    )


# -- helpers --------------------------------------------------------------------------------------


def mturk_code(session_id: str) -> str:
    """The done page's code for a session (the reference's: SHA-1 of the name, 10 hex digits)."""
    return hashlib.sha1(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:10].upper()


def _tojson(options: dict) -> str:
    from webshop_gym.render.nodes import options_json

    return options_json(options)


def _stars(score: str) -> int:
    try:
        return max(0, min(5, int(float(score))))
    except ValueError:
        return 0


_POLICY: str | None = None


def _policy() -> str:
    """The site pages' Content-Security-Policy: their own inline script only, nothing external."""
    global _POLICY
    if _POLICY is None:
        text = (Path(__file__).resolve().parent / "templates" / "site" / "item.html").read_text(encoding="utf-8")
        scripts = _SCRIPT.findall(text)
        hashes = " ".join("'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
                          for s in scripts)
        _POLICY = (f"default-src 'none'; script-src {hashes or chr(39) + 'none' + chr(39)}; style-src 'unsafe-inline'; "
                   "img-src {images}; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
    images = "'self' data: https: http:" if current_app.config.get("IMAGES") else "'self' data:"
    return _POLICY.replace("{images}", images)
