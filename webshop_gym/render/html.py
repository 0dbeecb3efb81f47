"""HTML pages from the package's Jinja templates (the ``html`` observation and the server).

The templates render exactly the strings of :mod:`webshop_gym.render.nodes`, in the same order
and inside the same kinds of elements (``button``, ``label``, ``a.product-link``, ``pre``), so
that parsing a page with BeautifulSoup gives the ``text`` observation (a test checks it; the
env's text path never parses HTML).  Pages are standalone: the CSS is inlined and nothing is
fetched from another host.  With ``human=True`` (the play server) pages add a top bar and, on
the done page, the score breakdown and the target.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from urllib.parse import quote

from webshop_gym.core.pages import DONE, ITEM, RESULTS, START, SUB, SUB_PAGES
from webshop_gym.core.sim import BatchState
from webshop_gym.render.nodes import options_json
from webshop_gym.render.text import Renderer

__all__ = ["HtmlRenderer", "Nav", "template_environment"]

PAGE_NAMES = {START: "start", RESULTS: "results", ITEM: "item", SUB: "sub", DONE: "done"}


@dataclass
class Nav:
    """Where a page's controls lead.

    Attributes:
        action: URL that every button's form posts its ``action`` field to.
        click_base: prefix of the GET links that click a product (``click_base + label``).
        menu: URL of the start menu (server only).
    """

    action: str = ""
    click_base: str = "?action="
    menu: str | None = None
    extra: dict = field(default_factory=dict)

    def click(self, label: str) -> str:
        """URL that clicks ``label`` (used by product links)."""
        return self.click_base + quote(f"click[{label}]", safe="")


@functools.lru_cache(maxsize=4)
def template_environment(extra_folder: str | None = None):
    """The Jinja environment of the templates (plus an optional extra template folder)."""
    import jinja2

    loaders = [jinja2.PackageLoader("webshop_gym", "templates")]
    if extra_folder:
        loaders.insert(0, jinja2.FileSystemLoader(extra_folder))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=jinja2.select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )


@functools.lru_cache(maxsize=1)
def stylesheet() -> str:
    """The shop's CSS (inlined into every page)."""
    return resources.files("webshop_gym").joinpath("static/webshop.css").read_text(encoding="utf-8")


def _stars(score: str) -> int:
    try:
        return max(0, min(5, int(float(score))))
    except ValueError:
        return 0


class HtmlRenderer:
    """Renders a slot's page as a standalone HTML document.

    Args:
        renderer: the text renderer of the same simulator context.
        images: show product images (remote URLs; off by default so that no page reaches out).
        extra_templates: a folder searched before the package's templates (the server's).
    """

    def __init__(self, renderer: Renderer, images: bool = False, extra_templates: str | None = None):
        self.renderer = renderer
        self.ctx = renderer.ctx
        self.catalog = renderer.catalog
        self.images = images
        self.env = template_environment(extra_templates)

    def context(self, state: BatchState, slot: int, human: bool = False, nav: Nav | None = None) -> dict:
        """The template variables of a slot's page."""
        page = int(state.page[slot])
        goal = int(state.goal[slot])
        c = self.catalog
        ctx = {
            "css": stylesheet(),
            "page": PAGE_NAMES[page],
            "human": human,
            "nav": nav or Nav(),
            "images": self.images,
            "goal_index": goal,
            "instruction": self.renderer.goals.instruction[goal],
        }
        if page == RESULTS:
            rows = state.page_rows(slot)
            ctx.update(
                page_no=int(state.page_no[slot]),
                total=len(state.results[slot]),
                products=[
                    {
                        "asin": c.asin[int(r)],
                        "label": c.asin[int(r)].lower(),
                        "title": c.title[int(r)],
                        "price": c.price_tag[int(r)],
                        "image": c.main_image[int(r)],
                    }
                    for r in rows
                ],
            )
        elif page in (ITEM, SUB):
            row = int(state.row[slot])
            view = self.ctx.views(row)
            chosen = set(state.selected[slot, : len(view.groups)].tolist())
            ctx.update(
                title=c.title[row],
                price=c.price_tag[row],
                rating=c.rating[row],
                image=c.main_image[row],
                show_attrs=self.ctx.show_attrs,
                groups=[
                    {
                        "name": name,
                        "position": pos,
                        "choices": [{"text": text, "checked": vid in chosen} for vid, text in values],
                    }
                    for pos, (name, values) in enumerate(view.groups)
                ],
            )
            if page == SUB:
                ctx.update(
                    tab=SUB_PAGES[int(state.sub[slot])].lower(),
                    description=c.description[row],
                    bullets=[c.bullet_text[b] for b in c.bullets[row]],
                    reviews=[
                        {"title": c.review_title[r], "score": c.review_score[r], "stars": _stars(c.review_score[r]),
                         "body": c.review_body[r]}
                        for r in c.reviews[row]
                    ],
                    attributes=[c.attribute_names[a] for a in c.attributes[row]],
                    category=c.category_names[c.category[row]],
                    query=c.query_names[c.query[row]],
                    product_category=c.product_category_names[c.product_category[row]],
                )
        elif page == DONE:
            row = int(state.row[slot])
            options = state.options(slot, self.ctx.views)
            purchase = state.purchase[slot] or {}
            goals = self.renderer.goals
            ctx.update(
                asin=c.asin[row].upper(),
                options=options,
                options_json=options_json(options),
                reward=float(state.reward[slot]),
                success=float(state.reward[slot]) == 1.0,
                price=purchase.get("price", 0.0),
                info=purchase.get("reward_info", {}),
                target={
                    "asin": goals.asin[goal],
                    "title": goals.name[goal],
                    "instruction": goals.instruction[goal],
                    "attributes": goals.attributes[goal],
                    "options": ", ".join(
                        f"{k}: {v}" for k, v in goals.options[goal].items()
                    ) if isinstance(goals.options[goal], dict) else ", ".join(goals.options[goal]),
                    "price_upper": float(goals.price_upper[goal]),
                },
            )
        return ctx

    def render(self, state: BatchState, slot: int, human: bool = False, nav: Nav | None = None) -> str:
        """Return the page of ``slot`` as an HTML document."""
        ctx = self.context(state, slot, human=human, nav=nav)
        return self.env.get_template(f"{ctx['page']}.html").render(**ctx)
