"""The five page kinds and what can be clicked on each (SPEC section 4).

Clickable labels are listed in the reference's order: buttons in page order, then product links,
then option values (``info["available_actions"]["clickables"]``).  A label that occurs twice
keeps its first position; an option value that occurs in two option groups selects the *last*
group's value, as the reference's label -> element map does.
"""

from __future__ import annotations

from collections import OrderedDict
from enum import IntEnum

__all__ = [
    "DONE",
    "ITEM",
    "PRODUCTS_PER_PAGE",
    "RESULTS",
    "START",
    "SUB",
    "Page",
    "ProductView",
    "ProductViews",
    "SUB_PAGES",
    "SubPage",
]

PRODUCTS_PER_PAGE = 10

BACK_TO_SEARCH = "back to search"
PREV = "< prev"
NEXT = "next >"
BUY_NOW = "buy now"
SEARCH_BUTTON = "search"


class Page(IntEnum):
    """Page kinds."""

    START = 0
    RESULTS = 1
    ITEM = 2
    SUB = 3
    DONE = 4


class SubPage(IntEnum):
    """Tabs of an item page."""

    DESCRIPTION = 0
    FEATURES = 1
    REVIEWS = 2
    ATTRIBUTES = 3


# Plain ints for hot paths (an IntEnum member lookup costs a microsecond).
START, RESULTS, ITEM, SUB, DONE = (int(p) for p in Page)

SUB_PAGES = ("Description", "Features", "Reviews", "Attributes")
"""Tab names as shown (their lower-cased forms are the click labels)."""
SUB_LABELS = {name.lower(): i for i, name in enumerate(SUB_PAGES)}


class ProductView:
    """What the item page of one product needs, computed once per product (read-only by convention).

    Attributes:
        row: the catalog row.
        groups: per option group, ``(name, [(value id, value text), ...])``.
        option_target: clicked value label -> ``(group position, value id)`` (last group wins).
        clickables: the item page's clickable labels in the reference's order.
        clickables_with_attributes: the same with the ``attributes`` tab.
    """

    __slots__ = ("row", "groups", "option_target", "clickables", "clickables_with_attributes")

    def __init__(self, row: int, groups: tuple, option_target: dict, clickables: tuple,
                 clickables_with_attributes: tuple):
        # a plain class: a frozen dataclass sets each field through object.__setattr__ (a new
        # product's item page builds one)
        self.row = row
        self.groups = groups
        self.option_target = option_target
        self.clickables = clickables
        self.clickables_with_attributes = clickables_with_attributes

    def __repr__(self) -> str:
        return f"ProductView(row={self.row}, groups={self.groups!r})"


def _item_clickables(values: list[str], show_attrs: bool) -> tuple:
    buttons = [BACK_TO_SEARCH, PREV, "description", "features", "reviews"]
    if show_attrs:
        buttons.append("attributes")
    buttons.append(BUY_NOW)
    return tuple(dict.fromkeys([*buttons, *values]))


class ProductViews:
    """A bounded cache of :class:`ProductView` per catalog row."""

    def __init__(self, catalog, size: int = 100_000):
        self.catalog = catalog
        self.size = size
        self._cache: OrderedDict[int, ProductView] = OrderedDict()

    def __call__(self, row: int) -> ProductView:
        """Return the view of product ``row``."""
        view = self._cache.get(row)
        if view is not None:
            return view
        c = self.catalog
        groups = []
        target: dict[str, tuple[int, int]] = {}
        values = []
        value_text = c.value_text
        group_values = c.group_values
        for pos, g in enumerate(c.option_groups.row_list(row)):  # Python ints: numpy scalars index slowly
            vals = [(v, value_text[v]) for v in group_values.row_list(g)]
            groups.append((c.group_name[g], tuple(vals)))
            for vid, text in vals:
                target[text] = (pos, vid)
                values.append(text)
        view = ProductView(
            row=row,
            groups=tuple(groups),
            option_target=target,
            clickables=_item_clickables(values, False),
            clickables_with_attributes=_item_clickables(values, True),
        )
        self._cache[row] = view
        if len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return view
