"""Text observations built straight from the simulator state (no HTML involved).

``text`` joins the page's visible strings, stripped, with ``" [SEP] "``; ``text_rich`` puts one
string per line and marks buttons, options and product links (SPEC section 5).  Both come from
the node lists of :mod:`webshop_gym.render.nodes`; the parts that only depend on a product or a
goal are joined once and cached, so an observation costs a few string concatenations.
"""

from __future__ import annotations

import json
from collections import OrderedDict

from webshop_gym.core.actions import format_click, round_trips
from webshop_gym.core.pages import ITEM, RESULTS, START, SUB, SUB_PAGES
from webshop_gym.core.sim import BatchState, SimContext, clickables
from webshop_gym.render import nodes as N

__all__ = ["BASE_URL", "Renderer", "SEARCH_TEMPLATE", "action_lists_of"]

BASE_URL = "http://127.0.0.1:3000"
SEARCH_TEMPLATE = "search[<query>]"


class _Cache(OrderedDict):
    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def remember(self, key, value):
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)
        return value


def action_lists_of(page_actions: tuple[bool, tuple, tuple]) -> tuple[dict, list[str]]:
    """``(available_actions, valid_actions)`` as ``info`` reports them, fresh lists, from :meth:`Renderer.page_actions`."""
    search_bar, labels, valid = page_actions
    return {"has_search_bar": search_bar, "clickables": list(labels)}, list(valid)


def _compose(parts) -> str:
    return N.SEP.join([text for count, text in parts if count])  # a list: join would build one from a generator


class Renderer:
    """Renders observations of a :class:`~webshop_gym.core.sim.BatchState` slot.

    Args:
        ctx: the simulator context (shop and settings).
        cache_size: entries per cache (goals, products).
    """

    def __init__(self, ctx: SimContext, cache_size: int = 50_000):
        self.ctx = ctx
        self.catalog = ctx.shop.catalog
        self.goals = ctx.shop.goals
        self._goal = _Cache(cache_size)
        self._link = _Cache(cache_size)
        self._item = _Cache(cache_size)
        self._sub = _Cache(cache_size)
        self._valid = _Cache(cache_size)
        self._clicks = _Cache(cache_size)  # a results page's label -> its click action ("": none)
        self._fixed: dict[int, tuple] = {}  # page kind -> page_actions of the pages whose actions are fixed
        self._prev = N.join_text([("< Prev", N.BUTTON)])

    # -- pieces -----------------------------------------------------------------------------

    def _goal_parts(self, goal: int):
        parts = self._goal.get(goal)
        if parts is None:
            instruction = self.goals.instruction[goal]
            parts = self._goal.remember(
                goal, (N.join_text(N.start_nodes(instruction)), N.join_text(N.header_nodes(instruction)))
            )
        return parts

    def _link_text(self, row: int):
        got = self._link.get(row)
        if got is None:
            got = self._link.remember(row, N.product_link_text(self.catalog, row))
        return got

    def _item_text(self, row: int):
        key = (row, self.ctx.show_attrs)
        got = self._item.get(key)
        if got is None:
            body = N.item_body_nodes(self.catalog, self.ctx.views(row), self.ctx.show_attrs)
            got = self._item.remember(key, N.join_text(body))
        return got

    def _sub_text(self, row: int, sub: int):
        key = (row, sub)
        got = self._sub.get(key)
        if got is None:
            got = self._sub.remember(key, N.join_text(N.sub_body_nodes(self.catalog, row, sub)))
        return got

    # -- observations -------------------------------------------------------------------------

    def text(self, state: BatchState, slot: int) -> str:
        """The ``text`` observation of a slot."""
        page = state.page.item(slot)  # Python ints: comparisons on numpy scalars cost ~5x
        start, header = self._goal_parts(state.goal.item(slot))
        if page == START:
            return start[1]
        if page == RESULTS:
            page_no = state.page_no.item(slot)
            view = self.ctx.results_view(state.results[slot], page_no)
            body = view.memo.get("text")
            if body is None:
                parts = [N.results_header_text(page_no, len(state.results[slot]))]
                links, link_text = self._link, self._link_text
                parts += [links.get(r) or link_text(r) for r in view.rows.tolist()]
                body = view.memo["text"] = (1, _compose(parts))
            return header[1] + N.SEP + body[1]  # _compose: the header holds strings, the body its page line
        if page == ITEM:
            return _compose([header, self._prev, self._item_text(state.row.item(slot))])
        if page == SUB:
            return _compose([header, self._prev, self._sub_text(int(state.row[slot]), int(state.sub[slot]))])
        return N.done_text(*self._done_fields(state, slot))

    def nodes(self, state: BatchState, slot: int) -> list:
        """All visible strings of a slot's page, in order, with their element kinds."""
        page = state.page[slot]
        instruction = self.goals.instruction[int(state.goal[slot])]
        if page == START:
            return N.start_nodes(instruction)
        if page == RESULTS:
            out = N.header_nodes(instruction) + N.results_header_nodes(int(state.page_no[slot]), len(state.results[slot]))
            for r in state.page_rows(slot):
                out += N.product_link_nodes(self.catalog, int(r))
            return out
        head = N.header_nodes(instruction) + [("< Prev", N.BUTTON)]
        row = int(state.row[slot])
        if page == ITEM:
            return head + N.item_body_nodes(self.catalog, self.ctx.views(row), self.ctx.show_attrs)
        if page == SUB:
            return head + N.sub_body_nodes(self.catalog, row, int(state.sub[slot]))
        return self.done_nodes(state, slot)

    def done_nodes(self, state: BatchState, slot: int) -> list:
        """The done page's strings for a finished slot."""
        return N.done_nodes(*self._done_fields(state, slot))

    def _done_fields(self, state: BatchState, slot: int) -> tuple[str, dict, float]:
        """The done page's asin, options and reward (the options as the purchase recorded them)."""
        purchase = state.purchase[slot]
        options = purchase["options"] if purchase is not None else state.options(slot, self.ctx.views)
        return self.catalog.asin[int(state.row[slot])].upper(), options, float(state.reward[slot])

    def text_rich(self, state: BatchState, slot: int) -> str:
        """The ``text_rich`` observation of a slot."""
        page = state.page[slot]
        url = self.url(state, slot) if page == ITEM else ""
        visited = ()
        if page == RESULTS and state.visited[slot]:
            visited = {self.catalog.asin[r].upper() for r in state.visited[slot]}
        clicked = []
        lines = []
        for text, kind in self.nodes(state, slot):
            if not text:
                continue
            t = N.normalize(text, kind)
            if t == "\n":
                continue
            if kind == N.BUTTON:
                lines.append(f"[button] {t} [button_]\n")
            elif kind == N.LABEL:
                if f'"{t}"' in url:
                    lines.append(f"  [clicked button] {t} [clicked button_]\n")
                    clicked.append(f"You have clicked {t}.\n")
                else:
                    lines.append(f"  [button] {t} [button_]\n")
            elif kind == N.LINK:
                mark = "clicked button" if t in visited else "button"
                lines.append(f"\n[{mark}] {t} [{mark}_]\n")
            else:
                lines.append(t + "\n")
        return "".join(reversed(clicked)) + "".join(lines)

    # -- URL and actions ----------------------------------------------------------------------

    def session_id(self, state: BatchState, slot: int) -> str:
        """The session part of the URL: the goal index (as ``env.reset(session=i)`` in the reference)."""
        return str(int(state.goal[slot]))

    def url(self, state: BatchState, slot: int) -> str:
        """The reference's URL of the slot's page (the ``url`` observation)."""
        sid = self.session_id(state, slot)
        page = state.page[slot]
        if page == START:
            return f"{BASE_URL}/{sid}"
        keywords = (state.keywords[slot] or "").replace(" ", "+")
        if page == RESULTS:
            return f"{BASE_URL}/search_results/{sid}/{keywords}/{int(state.page_no[slot])}"
        asin = self.catalog.asin[int(state.row[slot])].upper()
        options = state.options(slot, self.ctx.views)
        if page == ITEM:
            return f"{BASE_URL}/item_page/{sid}/{asin}/{keywords}/{int(state.page_no[slot])}/{json.dumps(options)}"
        if page == SUB:
            name = SUB_PAGES[int(state.sub[slot])]
            return f"{BASE_URL}/item_sub_page/{sid}/{asin}/{keywords}/{int(state.page_no[slot])}/{name}/{options}"
        return f"{BASE_URL}/done/{sid}/{asin}/{options}"

    def available_actions(self, state: BatchState, slot: int) -> dict:
        """``{"has_search_bar": bool, "clickables": [labels]}`` as the reference reports it."""
        return {"has_search_bar": bool(state.page[slot] == START), "clickables": list(clickables(self.ctx, state, slot))}

    def action_lists(self, state: BatchState, slot: int) -> tuple[dict, list[str]]:
        """``(available_actions(...), valid_actions(...))`` of a slot, its page looked at once (fresh lists)."""
        return action_lists_of(self.page_actions(state, slot))

    def page_actions(self, state: BatchState, slot: int) -> tuple[bool, tuple, tuple]:
        """``(has_search_bar, clickables, valid_actions)`` of a slot's page as tuples (shared: do not copy)."""
        page = state.page.item(slot)
        if page == RESULTS:
            view = self.ctx.results_view(state.results[slot], state.page_no.item(slot))
            return False, view.clickables, self._results_valid(view)
        if page == ITEM:
            labels, valid = self._item_actions(state.row.item(slot))
            return False, labels, valid
        fixed = self._fixed.get(page)  # the start, tab and done pages' actions never vary
        if fixed is None:
            fixed = self._fixed[page] = (page == START, tuple(clickables(self.ctx, state, slot)),
                                         tuple(self.valid_actions(state, slot)))
        return fixed

    def valid_actions(self, state: BatchState, slot: int) -> list[str]:
        """Complete action strings valid now (the search as one template on the start page)."""
        page = int(state.page[slot])
        if page == START:
            return [SEARCH_TEMPLATE]
        if page == RESULTS:
            return list(self._results_valid(self.ctx.results_view(state.results[slot], int(state.page_no[slot]))))
        if page == ITEM:
            return list(self._item_actions(int(state.row[slot]))[1])
        return [format_click(c) for c in clickables(self.ctx, state, slot) if round_trips(c)]

    def _results_valid(self, view) -> tuple:
        """A results page's valid actions (kept in the page's memo; each label's click remembered)."""
        valid = view.memo.get("valid")
        if valid is None:
            clicks, out = self._clicks, []
            for label in view.clickables:
                click = clicks.get(label)
                if click is None:  # "": the label's click does not parse back to it
                    click = clicks.remember(label, format_click(label) if round_trips(label) else "")
                if click:
                    out.append(click)
            valid = view.memo["valid"] = tuple(out)
        return valid

    def _item_actions(self, row: int) -> tuple[tuple, tuple]:
        """An item page's clickable labels and valid actions (the latter cached per product)."""
        view = self.ctx.views(row)
        labels = view.clickables_with_attributes if self.ctx.show_attrs else view.clickables
        key = (row, self.ctx.show_attrs)
        valid = self._valid.get(key)
        if valid is None:
            valid = self._valid.remember(key, tuple([format_click(c) for c in labels if round_trips(c)]))
        return labels, valid
