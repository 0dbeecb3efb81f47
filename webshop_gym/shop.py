"""A shop: one catalog, one goal set, their prices, the search engine and the reward.

:func:`load_shop` is the one entry point the envs, the server and the CLIs use.  Shops are
cached per process (creating an env twice does not reload anything).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from webshop_gym.data.catalog import Catalog, load_catalog
from webshop_gym.data.goal_files import load_goal_file
from webshop_gym.data.goals import GoalSet, build_goals
from webshop_gym.data.records import file_sha256
from webshop_gym.error import GoalNotFound, ProductNotFound, expect_one_of
from webshop_gym.reward import RewardBatch, RewardModel
from webshop_gym.reward.reachability import Reachability, goal_best, goal_reachability, memoised
from webshop_gym.search import (
    DEFAULT_SEARCH_BACKEND,
    SEARCH_BACKENDS,
    SEARCH_RETURN_N,
    SearchBackend,
    make_search,
)
from webshop_gym.search.background import IndexBuild
from webshop_gym.search.bm25 import BM25Search
from webshop_gym.utils.paths import default_shop_dir, is_built

__all__ = ["Shop", "load_shop"]

log = logging.getLogger("webshop_gym")

INDEX_AT_LOAD_FROM = 50_000
"""``load_shop`` of a catalog with more products than this builds a missing search index while it
draws the goals and builds the reward tables, in another process; a smaller one waits for the
first search (1.7 s for the real 1k shop)."""


class Shop:
    """A catalog with a goal set, a search engine and a reward model.

    Use :func:`load_shop` to get one.

    Attributes:
        catalog: the compiled, memory-mapped catalog.
        goals: the goal set (ordered as the reference serves them).
        prices: per catalog row, the price the reward compares with the goal's cap.
        engine: the search engine.
        rewards: the reward model (Numba kernel).
        load_report: how :func:`load_shop` got each stage: ``{"catalog": {"cached": bool,
            "seconds": float}, "goals": ..., "prices": ..., "nouns": ..., "reward_tables": ...,
            "seconds": total}`` (a stage that was built, not mapped from the cache, has
            ``"cached": False``).
    """

    def __init__(self, catalog: Catalog, goals: GoalSet, engine: SearchBackend, path: Path):
        self.catalog = catalog
        self.goals = goals
        self.prices = goals.prices
        self.engine = engine
        self.rewards = RewardModel(catalog, goals)
        self.path = path
        self.load_report: dict = {}
        self._reachability = None
        self._derived: dict[int, Shop] = {}  # at_price_seed's shops, sharing this catalog and engine
        self._derived_lock = threading.Lock()
        self._reach_one: dict[int, tuple[bool, str]] = {}  # reachable() of goals computed one by one

    def __repr__(self) -> str:
        return f"Shop({str(self.path)!r}, products={len(self.catalog)}, goals={len(self.goals)} {self.goals.kind})"

    def at_price_seed(self, seed: int) -> Shop:
        """The same shop and goals at another price seed, sharing this one's catalog and search engine.

        Protocols whose workers draw prices with their own seeds (verl-agent: 128 of them) play
        one shop per price seed; sharing the catalog's memory maps and the search index keeps
        their cost to the goal set's prices, caps and reward tables (loading the shop again per
        seed opened the catalog's ~130 files each time: 16,000 file descriptors for verl-agent).

        Raises:
            ValueError: a frozen goal set (``goals=FILE``): its prices are its own, no seed makes them.
        """
        if self.goals.seed is None:
            raise ValueError("a frozen goal set has prices of its own: no price seed applies")
        if int(seed) == self.goals.seed:
            return self
        with self._derived_lock:
            found = self._derived.get(int(seed))
            if found is None:
                started = time.perf_counter()
                report: dict = {"catalog": {**self.load_report.get("catalog", {}), "cached": True, "shared": True}}
                goals = build_goals(self.catalog, human_goals=self.goals.kind == "human", seed=int(seed), progress=False,
                                    report=report)
                found = Shop(self.catalog, goals, self.engine, self.path)
                found.rewards.prepare(progress=False, report=report)
                found.rewards.warmup()
                report["seconds"] = round(time.perf_counter() - started, 3)
                found.load_report = report
                self._derived[int(seed)] = found
        return found

    def fingerprint(self) -> dict:
        """What identifies this shop and goal set, so two runs can tell they used the same ones.

        Keys: ``catalog`` (the compiled catalog's cache key), ``files`` (SHA-256 of each input
        file's bytes), ``content`` (SHA-256 of each file's canonical content: formatting does
        not count, see :func:`~webshop_gym.data.records.content_sha256`), ``products``,
        ``goals``, ``goal_kind``, ``price_seed`` and ``goal_set`` (a digest of every goal and
        product price, see :meth:`~webshop_gym.data.goals.GoalSet.digest`).  ``webshop-gym data
        info`` prints it and every evaluation run records it.
        """
        files = self.catalog.meta.get("files")
        if files is None:  # a cache compiled before file hashes were recorded

            files = {name: file_sha256(Path(p)) for name, p in self.catalog.meta.get("source", {}).items()
                     if Path(p).is_file()}
        return {
            "catalog": self.catalog.key,
            "files": {name: digest[:16] for name, digest in sorted(files.items())},
            "content": self.catalog.content_digests(),
            "products": len(self.catalog),
            "goals": len(self.goals),
            "goal_kind": self.goals.kind,
            "price_seed": self.goals.seed,
            "goal_set": self.goals.digest(),
        }

    def reachability(self) -> Reachability:
        """Which goals a purchase can score 1.0 on, and why not: :func:`webshop_gym.reward.reachability.goal_reachability`.

        Computed once per shop and goal set (memoised in the cache beside the goal set's prices).
        """
        if self._reachability is None or self._reachability is False:
            self._reachability = goal_reachability(self.catalog, self.goals, self.rewards)
        return self._reachability

    def reachable(self, goal: int) -> tuple[bool, str]:
        """``(reachable, reason)`` of one goal: from the goal set's memo when it has one, else computed for that goal.

        A run marks only the goals it plays; computing every goal of a set costs about 8 s on
        the real 1k shop, and a protocol with per-worker prices (verl-agent) has 128 such sets.
        """
        if self._reachability is None:
            self._reachability = memoised(self.goals) or False
        if self._reachability is not False:
            return self._reachability.of(goal)
        with self._derived_lock:
            found = self._reach_one.get(goal)
            if found is None:
                best, reason = goal_best(self.catalog, self.goals, self.rewards, goal)
                found = self._reach_one[goal] = (best >= 1.0, reason)
        return found

    # -- search -----------------------------------------------------------------------------

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> np.ndarray:
        """Return the catalog rows (int32) of the top ``k`` products for ``query``."""
        return self.engine.search(query, k)

    def search_batch(self, queries: Sequence[str], k: int = SEARCH_RETURN_N) -> list[np.ndarray]:
        """Search many queries at once (cache first, then one batch for the misses)."""
        return self.engine.search_batch(queries, k)

    def asins(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """Return the asins of catalog rows."""
        return [self.catalog.asin[int(r)] for r in rows]

    def row(self, asin: str) -> int:
        """Return the catalog row of an asin.

        Raises:
            ProductNotFound: when the catalog has no such asin.
        """
        row = self.catalog.row_of(asin)
        if row < 0:
            row = self.catalog.row_of(asin.upper())
        if row < 0:
            raise ProductNotFound(asin, self.catalog.asin[: min(len(self.catalog), 5000)])
        return row

    # -- reward -------------------------------------------------------------------------------

    def _check_goal(self, goal_index: int) -> int:
        if not 0 <= int(goal_index) < len(self.goals):
            raise GoalNotFound(f"goal index {goal_index} is out of range: this shop has {len(self.goals)} goals")
        return int(goal_index)

    def reward(
        self, goal_index: int, asin: str, options: Mapping[str, str] | None = None, price: float | None = None
    ) -> tuple[float, dict]:
        """Score one purchase with the pure-Python reference scorer (SPEC section 6).

        Args:
            goal_index: index into :attr:`goals`.
            asin: the purchased product.
            options: selected options, ``name -> value``.
            price: the price paid; ``None`` uses the shop's price of ``asin``.

        Returns:
            ``(total, breakdown)`` with the reference's breakdown keys.
        """
        goal_index = self._check_goal(goal_index)
        row = self.row(asin)
        paid = float(self.prices[row]) if price is None else float(price)
        return self.rewards.reference(goal_index, row, options or {}, paid)

    def reward_batch(
        self,
        goal_indices: Sequence[int],
        asins: Sequence[str],
        options_list: Sequence[Mapping[str, str] | None],
        prices: Sequence[float | None] | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Score many purchases with the Numba kernel.

        Returns:
            ``(totals, breakdown)``: ``breakdown`` maps each key of
            :data:`webshop_gym.reward.BREAKDOWN_KEYS` to an array (``r_option``/``w_option``
            are NaN for goals without options).
        """
        batch = self.score_batch(goal_indices, asins, options_list, prices)
        return batch.total, batch.arrays()

    def score_batch(self, goal_indices, asins, options_list, prices=None) -> RewardBatch:
        """Like :meth:`reward_batch` but returns the :class:`~webshop_gym.reward.RewardBatch`."""
        if not (len(goal_indices) == len(asins) == len(options_list)):
            raise ValueError(
                f"goal_indices ({len(goal_indices)}), asins ({len(asins)}) and options_list "
                f"({len(options_list)}) must have one entry per purchase"
            )
        rows = np.array([self.row(a) for a in asins], dtype=np.int64)
        if prices is None:
            prices = [None] * len(rows)
        paid = np.array(
            [float(self.prices[r]) if p is None else float(p) for r, p in zip(rows, prices)], dtype=np.float64
        )
        selected = []
        for row, options in zip(rows, options_list):
            values = list((options or {}).values())
            selected.append(self._selected_fz(int(row), values))
        return self.rewards.score(np.asarray(goal_indices, dtype=np.int64), rows, selected, paid)

    def _selected_fz(self, row: int, values: list[str]) -> list[int]:
        catalog = self.catalog
        own = {}
        for g in catalog.option_groups[row]:
            for v in catalog.group_values[g]:
                own.setdefault(catalog.value_text[v], int(v))
        known = [own.get(v) for v in values]
        if all(k is not None for k in known):
            return [int(x) for x in self.rewards.value_ids(known)] if known else []
        return self.rewards.string_ids(values)


@functools.lru_cache(maxsize=16)
def _load(path: str, goals: str | None, human_goals: bool, seed: int, num_products: int | None,
          index: str | None, progress: bool, search_backend: str = DEFAULT_SEARCH_BACKEND) -> Shop:
    if goals is None and seed != 0:
        # Another price seed of the same shop shares the seed-0 shop's catalog and search engine:
        # a protocol with per-worker prices (verl-agent: 128 seeds), or the replay of its run,
        # otherwise opened the catalog's ~130 files once per seed.  Every call touches the seed-0
        # entry, so it stays in this cache while its seeds are in use.
        base = _load(path, None, human_goals, 0, num_products, index, progress, search_backend)
        return base.at_price_seed(seed)
    started = time.perf_counter()
    report: dict = {}
    catalog = load_catalog(path, num_products=num_products, progress=progress, report=report)
    engine = make_search(catalog, backend=search_backend, index=index, progress=progress)
    background = None
    if (isinstance(engine, BM25Search) and index is None and len(catalog) > INDEX_AT_LOAD_FROM
            and not is_built(engine.postings_path)):
        # A large shop's index would take minutes at the first search: build it now, in another
        # process, while this one draws the goals and builds the reward tables (two cores busy).
        background = IndexBuild(path, num_products)
    try:
        if goals:
            goal_set = load_goal_file(goals, catalog, report=report)
        else:
            goal_set = build_goals(catalog, human_goals=human_goals, seed=seed, progress=progress, report=report)
        shop = Shop(catalog, goal_set, engine, Path(path))
        shop.rewards.prepare(progress=progress, report=report)
    except BaseException:
        if background is not None:
            background.stop()
        raise
    if background is not None:
        if not background.wait(progress=progress):
            engine.prepare(build=True)
        report["search"] = {"cached": False, "seconds": round(time.perf_counter() - background.started, 3)}
    shop.rewards.warmup()  # the reward kernel now, not at the first purchase
    engine.prepare(build=False)  # an already exported search index and its kernel, not at the first search
    report["seconds"] = round(time.perf_counter() - started, 3)
    shop.load_report = report
    built = [stage for stage, entry in report.items() if isinstance(entry, dict) and not entry.get("cached", True)]
    log.log(logging.INFO if built else logging.DEBUG, "loaded %s in %.2f s (%s)", shop, report["seconds"],
            "built: " + ", ".join(built) if built else "everything cached")
    return shop


def load_shop(
    path: str | os.PathLike | None = None,
    goals: str | os.PathLike | None = None,
    human_goals: bool = False,
    seed: int = 0,
    num_products: int | None = None,
    index: str | os.PathLike | None = None,
    progress: bool = True,
    search_backend: str = DEFAULT_SEARCH_BACKEND,
) -> Shop:
    """Load a shop: catalog + goal set + search engine + reward kernel.

    Args:
        path: a directory in the reference format (e.g. ``../shared/webshop-small``);
            ``None`` is the embedded default shop in ``data/``.
        goals: a frozen goal-set file (ours, or a reference ``goals.json`` with
            ``prices.json`` beside it); ``None`` builds goals from the shop.
        human_goals: human instructions instead of synthetic goals (when building goals).
        seed: seeds product prices and price caps (``0`` reproduces the reference's seed-0 run).
        num_products: keep only the first N product records.
        index: an existing Lucene index to search instead of the shop's own (built and cached
            on first search).
        progress: show progress bars while compiling (``False`` silences every bar).
        search_backend: ``"bm25"`` (default: Pyserini's ranking from exported postings, no JVM
            at query time) or ``"pyserini"`` (Pyserini's searcher through the JVM); identical
            results (:mod:`webshop_gym.search`).

    Returns:
        The shop (cached per process for equal arguments); ``shop.load_report`` tells which
        stages came from the cache and which were built, and how long each took.
    """
    resolved = Path(path).expanduser().resolve() if path is not None else default_shop_dir()
    goal_path = str(Path(goals).expanduser().resolve()) if goals is not None else None
    index_path = str(Path(index).expanduser().resolve()) if index is not None else None
    expect_one_of("search_backend", search_backend, SEARCH_BACKENDS)
    return _load(str(resolved), goal_path, bool(human_goals), int(seed), num_products, index_path, bool(progress),
                 search_backend)
