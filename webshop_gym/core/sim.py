"""The batched WebShop simulator: episode state as arrays, transitions as functions.

One :class:`BatchState` holds ``n`` episodes ("slots").  :func:`reset_slots` starts episodes
and :func:`step` advances every listed slot by one action: it classifies all actions first,
applies clicks, then runs every search of the step as one deduplicated batch and scores every
purchase of the step with one call of the reward kernel.  Nothing here renders, parses HTML or
imports Flask, Jinja2 or Pyserini: the search engine and the reward come in through the
:class:`SimContext` (a test checks the imports).

The single env is this core with one slot; the vector env and the server use it as well.
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass, field

import numpy as np

from webshop_gym.core.actions import CLICK, INVALID, SEARCH, parse_action
from webshop_gym.core.pages import (
    BACK_TO_SEARCH,
    BUY_NOW,
    DONE,
    ITEM,
    NEXT,
    PREV,
    PRODUCTS_PER_PAGE,
    RESULTS,
    SEARCH_BUTTON,
    START,
    SUB,
    SUB_LABELS,
    ProductViews,
)
from webshop_gym.utils.bytelru import ByteLRU

__all__ = ["BatchState", "SimContext", "StepOutcome", "clickables", "reset_slots", "slot_index", "step", "step_one"]

log = logging.getLogger("webshop_gym")

SPECIAL_QUERIES = ("<r>", "<a>", "<c>", "<q>")
OPTION_CHOSEN = "option chosen"
"""What :func:`_act` returns beside ``CLICK`` for an option value (compared by identity)."""
SEARCH_RETURN_N = 50
PAGE_CACHE_BYTES = 64 * 2**20
"""Budget of the results-page cache (views with their rendered text), per engine."""
PAGE_ENTRY_OVERHEAD = 4096
"""Bytes charged per cached results page besides 3x its titles and prices (view, label dict, tuples).
Measured on the embedded shop with tracemalloc: 5.3 kB per page in all, charged 6.6 kB."""
SPECIAL_CACHE_BYTES = 32 * 2**20
"""Budget of the cache of ``<a>``/``<c>``/``<q>`` filter results (keyed by the query text), per engine."""


@dataclass
class SimContext:
    """Everything a transition reads besides the state: the shop and the episode settings.

    Args:
        shop: the :class:`~webshop_gym.shop.Shop` (search engine, reward, catalog, goals).
        show_attrs: show the ``Attributes`` tab on item pages (the reference's default: off).
    """

    shop: object
    show_attrs: bool = False
    views: ProductViews = field(init=False)
    _special: ByteLRU = field(default_factory=lambda: ByteLRU(SPECIAL_CACHE_BYTES), init=False, repr=False)
    _labels: dict = field(default_factory=dict, init=False, repr=False)  # row -> (label, title + price tag bytes)
    _pages: ByteLRU = field(default_factory=lambda: ByteLRU(PAGE_CACHE_BYTES), init=False, repr=False)
    _last_page: tuple | None = field(default=None, init=False, repr=False)

    def __post_init__(self):
        self.views = ProductViews(self.shop.catalog)

    def label(self, row: int) -> str:
        """The click label of a product link: its asin, lower-cased."""
        return (self._labels.get(row) or self._link(row))[0]

    def _link(self, row: int) -> tuple[str, int]:
        """A product link's label and the bytes of its title and price tag (what a results page charges for it)."""
        if len(self._labels) > 200_000:
            self._labels.clear()
        catalog = self.shop.catalog
        rows = (row,)
        entry = self._labels[row] = (catalog.asin[row].lower(),
                                     catalog.title.text_bytes(rows) + catalog.price_tag.text_bytes(rows))
        return entry

    def results_view(self, results: np.ndarray, page_no: int) -> ResultsView:
        """What one results page shows and what can be clicked on it (cached)."""
        # A step reads the page it is on up to four times (the click, the text, both action lists):
        # the last page asked for answers without the shared cache's lock and bookkeeping.  It
        # holds `results`, so its id is not reused while it is remembered.
        last = self._last_page
        if last is not None and last[0] is results and last[1] == page_no:
            return last[2]
        key = (id(results), page_no)
        cached = self._pages.get(key)
        if cached is not None and cached[0] is results:
            self._last_page = (results, page_no, cached[1])
            return cached[1]
        rows = results[(page_no - 1) * PRODUCTS_PER_PAGE : page_no * PRODUCTS_PER_PAGE]
        row_list = rows.tolist()
        labels = {}
        links = self._labels
        text_bytes = 0
        for r in row_list:
            label, nbytes = links.get(r) or self._link(r)
            text_bytes += nbytes
            if label not in labels:
                labels[label] = r
        buttons = [BACK_TO_SEARCH, PREV, NEXT] if page_no > 1 else [BACK_TO_SEARCH, NEXT]
        view = ResultsView(rows, labels, tuple(dict.fromkeys([*buttons, *labels])))
        # charged: the view, and in its memo the rendered text and the valid actions (each about
        # the size of the page's titles and prices); holding `results` keeps its id from being
        # reused while the entry lives
        self._pages.put(key, (results, view), PAGE_ENTRY_OVERHEAD + 3 * text_bytes + results.nbytes)
        self._last_page = (results, page_no, view)
        return view


class ResultsView:
    """One results page: its rows, its click labels and their rows, and a memo.

    Renderers keep what they derive from the page (its text, its valid actions) in ``memo``.
    """

    __slots__ = ("rows", "label_to_row", "clickables", "memo")

    def __init__(self, rows: np.ndarray, label_to_row: dict, clickables: tuple):
        self.rows = rows
        self.label_to_row = label_to_row
        self.clickables = clickables
        self.memo: dict = {}


@dataclass
class BatchState:
    """Episode state of ``n`` slots.

    Arrays (one entry per slot): ``goal``, ``page`` (:class:`~webshop_gym.core.pages.Page`),
    ``sub`` (tab on a sub page), ``row`` (current product, -1 for none), ``page_no`` (results
    page), ``steps``, ``done``, ``reward``; ``selected[slot, g]`` is the value id chosen in the
    current product's option group ``g`` (-1: none) and ``stamp[slot, g]`` the order in which
    groups were first chosen.  Per-slot objects: ``keywords`` (the last search's lower-cased
    text), ``results`` (its catalog rows), ``visited`` (products opened since the last
    ``back to search``), ``rng`` (the slot's generator, for goal sampling) and ``purchase``
    (the purchase's asin, options, price and reward breakdown once bought).
    """

    goal: np.ndarray
    page: np.ndarray
    sub: np.ndarray
    row: np.ndarray
    page_no: np.ndarray
    steps: np.ndarray
    done: np.ndarray
    reward: np.ndarray
    selected: np.ndarray
    stamp: np.ndarray
    keywords: list
    results: list
    visited: list
    rng: list
    purchase: list

    @classmethod
    def empty(cls, n: int, max_groups: int) -> BatchState:
        """Return ``n`` slots on no page yet (call :func:`reset_slots`)."""
        g = max(1, max_groups)
        return cls(
            goal=np.zeros(n, np.int64),
            page=np.zeros(n, np.int8),
            sub=np.zeros(n, np.int8),
            row=np.full(n, -1, np.int64),
            page_no=np.zeros(n, np.int64),
            steps=np.zeros(n, np.int64),
            done=np.zeros(n, bool),
            reward=np.zeros(n, np.float64),
            selected=np.full((n, g), -1, np.int64),
            stamp=np.zeros((n, g), np.int64),
            keywords=[None] * n,
            results=[None] * n,
            visited=[set() for _ in range(n)],
            rng=[np.random.default_rng() for _ in range(n)],
            purchase=[None] * n,
        )

    def __len__(self) -> int:
        return len(self.goal)

    def options(self, slot: int, views: ProductViews) -> dict[str, str]:
        """Return the selected options of a slot as the reference's dict (selection order)."""
        row = int(self.row[slot])
        if row < 0:
            return {}
        groups = views(row).groups
        chosen = [(int(self.stamp[slot, g]), g) for g in range(len(groups)) if self.selected[slot, g] >= 0]
        out = {}
        for _, g in sorted(chosen):
            name, values = groups[g]
            vid = int(self.selected[slot, g])
            out[name] = next(text for v, text in values if v == vid)
        return out

    def selected_values(self, slot: int) -> list[int]:
        """Return the selected value ids of a slot (selection order)."""
        chosen = [(int(self.stamp[slot, g]), int(self.selected[slot, g]))
                  for g in range(self.selected.shape[1]) if self.selected[slot, g] >= 0]
        return [v for _, v in sorted(chosen)]

    def page_rows(self, slot: int) -> np.ndarray:
        """Return the catalog rows shown on the slot's current results page."""
        results = self.results[slot]
        if results is None:
            return np.zeros(0, np.int32)
        p = int(self.page_no[slot])
        return results[(p - 1) * PRODUCTS_PER_PAGE : p * PRODUCTS_PER_PAGE]


@dataclass
class StepOutcome:
    """Per-slot results of :func:`step` (arrays aligned with the ``slots`` argument)."""

    kind: np.ndarray  # ActionKind per slot
    invalid: np.ndarray
    reward: np.ndarray
    done: np.ndarray
    same_page: np.ndarray | None = None  # on the page it was on (invalid, or an option chosen)
    errors: dict[int, str] = field(default_factory=dict)  # slot -> why its action failed (it is invalid)


# --------------------------------------------------------------------------------------------


def _clear_product(state: BatchState, slot: int) -> None:
    state.row[slot] = -1
    state.selected[slot, :] = -1
    state.stamp[slot, :] = 0


def reset_slots(ctx: SimContext, state: BatchState, slots, goals) -> None:
    """Start a new episode in each of ``slots`` with the given goal indices (start page)."""
    for slot, goal in zip(slots, goals):
        state.goal[slot] = goal
        state.page[slot] = START
        state.sub[slot] = 0
        state.page_no[slot] = 0
        state.steps[slot] = 0
        state.done[slot] = False
        state.reward[slot] = 0.0
        state.keywords[slot] = None
        state.results[slot] = None
        state.visited[slot] = set()
        state.purchase[slot] = None
        _clear_product(state, slot)


def clickables(ctx: SimContext, state: BatchState, slot: int) -> tuple:
    """Return the clickable labels of a slot's current page, in the reference's order."""
    page = state.page[slot]
    if page == START:
        return (SEARCH_BUTTON,)
    if page == RESULTS:
        return ctx.results_view(state.results[slot], int(state.page_no[slot])).clickables
    if page == ITEM:
        view = ctx.views(int(state.row[slot]))
        return view.clickables_with_attributes if ctx.show_attrs else view.clickables
    if page == SUB:
        return (BACK_TO_SEARCH, PREV)
    return ()


def _is_clickable(ctx: SimContext, state: BatchState, slot: int, label: str) -> bool:
    page = state.page.item(slot)  # ``item``: a Python int (comparisons on a numpy scalar cost ~5x)
    if page == START or page == DONE:
        return False  # "search" is never clicked; the done page has no clickables
    if label == BACK_TO_SEARCH or label == PREV and page != RESULTS:
        return True
    if page == RESULTS:
        if label == NEXT or (label == PREV and state.page_no.item(slot) > 1):
            return True
        return _result_row(ctx, state, slot, label) >= 0
    if page == ITEM:
        option_target = ctx.views(state.row.item(slot)).option_target
        if label in SUB_LABELS and label != "attributes":
            return True
        if label == "attributes":  # the tab, or an option value that happens to read "attributes"
            return ctx.show_attrs or label in option_target
        return label == BUY_NOW or label in option_target
    return False


def _result_row(ctx: SimContext, state: BatchState, slot: int, label: str) -> int:
    return ctx.results_view(state.results[slot], state.page_no.item(slot)).label_to_row.get(label, -1)


def _special_results(ctx: SimContext, state: BatchState, slot: int, keywords: list[str]) -> np.ndarray:
    """The reference's debugging queries: ``<r>`` random, ``<a>``/``<c>``/``<q>`` exact filters."""
    catalog = ctx.shop.catalog
    head = keywords[0]
    if head == "<r>":
        # The reference draws from Python's global RNG; ours is a pure function of the episode
        # (goal, step, keywords), so shards and processes need not share generators.
        seed = [zlib.crc32(" ".join(keywords).encode("utf-8", "surrogatepass")), int(state.goal[slot]), int(state.steps[slot])]
        n = len(catalog)
        return np.random.default_rng(seed).choice(n, size=min(SEARCH_RETURN_N, n), replace=False).astype(np.int32)
    if head == "<a>":
        wanted = " ".join(keywords[1:]).strip()
    elif head == "<c>":  # the reference reads one word after <c>, the rest of the line after <q>
        wanted = keywords[1].strip() if len(keywords) > 1 else None
    else:
        wanted = " ".join(keywords[1:]).strip()
    key = (head, wanted)
    rows = ctx._special.get(key)
    if rows is None:
        rows = _filter_rows(catalog, head, wanted)
        ctx._special.put(key, rows, int(rows.nbytes) + len(wanted or "") + 256)
    return rows


def _filter_rows(catalog, head: str, wanted: str | None) -> np.ndarray:
    """Rows whose attribute (``<a>``), category (``<c>``) or query (``<q>``) is exactly ``wanted``."""
    if head == "<a>":
        names = catalog.attribute_names
        ids = [i for i in range(len(names)) if names[i] == wanted]
        values = np.asarray(catalog.attributes.values)
        offsets = np.asarray(catalog.attributes.offsets)
        hit = np.isin(values, ids)
        owner = np.repeat(np.arange(len(catalog)), np.diff(offsets))
        return np.unique(owner[hit]).astype(np.int32)
    ids, names = (catalog.category, catalog.category_names) if head == "<c>" else (catalog.query, catalog.query_names)
    matching = [i for i, name in enumerate(names.tolist()) if name == wanted]
    return np.flatnonzero(np.isin(np.asarray(ids), matching)).astype(np.int32)


def slot_index(slots) -> tuple[np.ndarray, list[int]]:
    """``slots`` as an index array and as a list of Python ints.

    Fancy indexing with an integer array costs ~0.2 µs; with a list, numpy first converts the
    list (~1 µs for one slot, ~9 µs for 256), so the step indexes its arrays with the array and
    loops over the list.  An integer array passes through without a copy.
    """
    if type(slots) is np.ndarray and slots.dtype == np.intp and slots.ndim == 1:
        return slots, slots.tolist()  # the engine's own index array
    if isinstance(slots, np.ndarray) and slots.dtype.kind in "iu":
        index = slots.astype(np.intp, copy=False).reshape(-1)
        return index, index.tolist()
    listed = [int(s) for s in slots]
    return np.array(listed, dtype=np.intp), listed


def _act(ctx: SimContext, state: BatchState, slot: int, action) -> tuple[int, str | None]:
    """Count a step and apply ``action`` to ``slot`` unless it must wait for its batch.

    Returns the action's kind and, for a search, its text, for ``buy now``, :data:`BUY_NOW`: the
    caller runs searches and purchases together (:func:`_search`, :func:`_buy`).  Every other
    click is applied here (an option value returns :data:`OPTION_CHOSEN`: the same page, only
    its selection changed); an invalid action (and anything on a finished episode) changes nothing
    but the step count (and not even that once finished).
    """
    if state.done.item(slot):
        return INVALID, None
    state.steps[slot] += 1
    name, arg = parse_action(action)
    if arg is None:
        return INVALID, None
    if name == "search":
        return SEARCH, arg
    if name != "click" or not _is_clickable(ctx, state, slot, arg):
        return INVALID, None
    page = state.page.item(slot)
    if arg == BUY_NOW:
        return CLICK, BUY_NOW
    if arg == BACK_TO_SEARCH:
        state.page[slot] = START
        state.keywords[slot] = None
        state.results[slot] = None
        state.page_no[slot] = 0
        state.visited[slot] = set()
        _clear_product(state, slot)
    elif arg == NEXT and page == RESULTS:
        state.page_no[slot] += 1
    elif arg == PREV and page == RESULTS:
        state.page_no[slot] -= 1
    elif arg == PREV and page == SUB:
        state.page[slot] = ITEM
    elif arg == PREV and page == ITEM:
        state.page[slot] = RESULTS
        _clear_product(state, slot)
    elif arg in SUB_LABELS:
        state.page[slot] = SUB
        state.sub[slot] = SUB_LABELS[arg]
    elif page == RESULTS:
        row = _result_row(ctx, state, slot, arg)
        state.row[slot] = row
        state.visited[slot].add(row)
        state.page[slot] = ITEM
    else:  # an option value on an item page
        group, value = ctx.views(int(state.row[slot])).option_target[arg]
        if state.selected[slot, group] < 0:
            state.stamp[slot, group] = max(state.stamp[slot].tolist()) + 1  # a Python max: no ufunc reduce
        state.selected[slot, group] = value
        return CLICK, OPTION_CHOSEN
    return CLICK, None


def _search(ctx: SimContext, state: BatchState, searches: list[tuple[int, str]]) -> dict[int, str]:
    """Run the searches ``(slot, text)`` of a step as one batch and show their first results page.

    A search the engine fails on never fails the others: when the batch raises, each search is run
    alone, and a slot whose own search raises keeps its page (its action is invalid).  Returns
    those slots with the reason, which is also logged.
    """
    plain = [(slot, arg) for slot, arg in searches if arg.split(" ", 1)[0] not in SPECIAL_QUERIES]
    failed: dict[int, str] = {}
    try:
        found = ctx.shop.search_batch([arg for _, arg in plain]) if plain else []
    except Exception:  # one query's trouble: find it, search the rest
        found = []
        for slot, arg in plain:
            try:
                found.append(ctx.shop.search_batch([arg])[0])
            except Exception as exc:
                failed[slot] = _failure(arg, exc)
                found.append(None)
    rows_for = {slot: rows for (slot, _), rows in zip(plain, found)}
    for slot, arg in searches:
        if slot in failed:
            continue
        rows = rows_for.get(slot)
        if rows is None:
            try:
                rows = _special_results(ctx, state, slot, arg.split(" "))
            except Exception as exc:
                failed[slot] = _failure(arg, exc)
                continue
        state.keywords[slot] = arg
        state.results[slot] = rows
        state.page_no[slot] = 1
        state.page[slot] = RESULTS
        _clear_product(state, slot)
    return failed


def _failure(query: str, exc: Exception) -> str:
    """The one-line reason of a failed search (logged once per failure)."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    reason = f"the search failed ({type(exc).__name__}: {message})"
    shown = query if len(query) <= 80 else query[:77] + "..."
    log.warning("webshop-gym: warning: search[%s]: %s; the action is invalid", shown, reason)
    return reason


def _buy(ctx: SimContext, state: BatchState, bslots: list[int]) -> np.ndarray:
    """Score the purchases of ``bslots`` with one reward call, record them and end their episodes."""
    shop = ctx.shop
    rows = state.row[bslots]
    row_list = rows.tolist()
    chosen = [_chosen(state, s) for s in bslots]
    selected = [shop.rewards.value_ids([v for _, v in c]).tolist() for c in chosen]
    prices = shop.prices[rows]
    batch = shop.rewards.score(state.goal[bslots], rows, selected, prices)
    totals, prices, infos = batch.total.tolist(), prices.tolist(), batch.infos()
    for j, slot in enumerate(bslots):
        _record_purchase(ctx, state, slot, row_list[j], chosen[j], prices[j], totals[j], infos[j])
    return batch.total


def _buy_one(ctx: SimContext, state: BatchState, slot: int) -> float:
    """:func:`_buy` of one slot (``WebShopEnv.step``'s purchase): Python numbers, no batch arrays."""
    shop = ctx.shop
    row = int(state.row[slot])
    chosen = _chosen(state, slot)
    price = shop.prices[row].item()
    total, info = shop.rewards.score_one(int(state.goal[slot]), row, shop.rewards.value_ids([v for _, v in chosen]),
                                         price)
    _record_purchase(ctx, state, slot, row, chosen, price, total, info)
    return total


def _record_purchase(ctx: SimContext, state: BatchState, slot: int, row: int, chosen: list[tuple[int, int]], price: float,
                     total: float, info: dict) -> None:
    """Record a scored purchase (the reference's purchase record) and end the slot's episode on the done page."""
    state.reward[slot] = total
    state.purchase[slot] = {
        "asin": ctx.shop.catalog.asin[row],
        "options": _options(ctx.views(row), chosen),
        "price": price,
        "reward_info": info,
    }
    state.page[slot] = DONE
    state.done[slot] = True


def _chosen(state: BatchState, slot: int) -> list[tuple[int, int]]:
    """``(option group, value id)`` of each group chosen on the slot's product, in selection order."""
    selected, stamp = state.selected[slot].tolist(), state.stamp[slot].tolist()
    chosen = sorted((stamp[g], g, v) for g, v in enumerate(selected) if v >= 0)
    return [(g, v) for _, g, v in chosen]


def _options(view, chosen: list[tuple[int, int]]) -> dict[str, str]:
    """The reference's selected-options dict of ``chosen`` (see :meth:`BatchState.options`)."""
    out = {}
    groups = view.groups
    for g, vid in chosen:
        if g >= len(groups):  # as BatchState.options: only the product's own groups
            continue
        name, values = groups[g]
        out[name] = next(text for v, text in values if v == vid)
    return out


def step(ctx: SimContext, state: BatchState, slots, actions) -> StepOutcome:
    """Apply one action to each of ``slots``.

    Invalid actions (unparsable, unknown names, empty searches, labels not on the page,
    anything on a finished episode) change nothing and give reward 0.

    Args:
        ctx: shop and settings.
        state: the batch state (modified in place).
        slots: slot indices to step.
        actions: one action string per slot.

    Returns:
        Per-slot kind, invalid flag, reward and done flag.
    """
    index, slots = slot_index(slots)
    n = len(slots)
    kind = np.zeros(n, np.int8)
    reward = np.zeros(n, np.float64)
    searches: list[tuple[int, str]] = []
    buys: list[tuple[int, int]] = []
    options: list[int] = []

    for i, (slot, action) in enumerate(zip(slots, actions)):
        k, arg = _act(ctx, state, slot, action)
        if k == INVALID:
            continue
        kind[i] = k
        if k == SEARCH:
            searches.append((slot, arg))
        elif arg is BUY_NOW:
            buys.append((i, slot))
        elif arg is OPTION_CHOSEN:
            options.append(i)

    errors: dict[int, str] = {}
    if searches:
        errors = _search(ctx, state, searches)
        if errors:
            kind[[i for i, slot in enumerate(slots) if slot in errors]] = INVALID
    if buys:
        reward[[i for i, _ in buys]] = _buy(ctx, state, [slot for _, slot in buys])

    invalid = kind == INVALID
    same_page = invalid.copy()
    if options:
        same_page[options] = True
    return StepOutcome(kind=kind, invalid=invalid, reward=reward, done=state.done[index], same_page=same_page,
                       errors=errors)


def step_one(ctx: SimContext, state: BatchState, slot: int, action) -> tuple[int, float, bool, bool, str | None]:
    """:func:`step` for one slot, with Python scalars: ``(kind, reward, done, same_page, error)``.

    The same transition (the same helpers) without the batch's arrays, for the single env.
    ``same_page``: the slot is on the page it was on, only an option selection may have changed
    (an invalid action, or an option value clicked on an item page).  ``error``: why the action
    failed (a search the engine failed on: the action is invalid), else ``None``.
    """
    k, arg = _act(ctx, state, slot, action)
    reward = 0.0
    error = None
    if k == SEARCH:
        error = _search(ctx, state, [(slot, arg)]).get(slot)
        if error is not None:
            k = INVALID
    elif arg is BUY_NOW:
        reward = _buy_one(ctx, state, slot)
    return k, reward, bool(state.done[slot]), k == INVALID or (k == CLICK and arg is OPTION_CHOSEN), error
