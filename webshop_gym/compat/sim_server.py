"""The reference text env's ``SimServer``: one loaded shop shared by many compat envs.

In the reference, ``WebAgentTextEnv(server=other_env.server)`` makes envs share one loaded
shop (products, search index, goals).  Here a :class:`SimServer` holds one
:class:`~webshop_gym.shop.Shop`, the goal list as the reference orders, filters and limits it,
the generator that draws random sessions and goals, the map of session names to goals, and the
episode slots: every env leases one slot of a shared :class:`~webshop_gym.engine.Engine`, so a
process with many envs runs one simulator.

Random numbers follow the reference's global ``random`` stream: after building the goals the
reference calls ``random.seed(233)`` (the verl-agent fork: ``random.seed(seed)``) and shuffles
them, and every later draw (random session names, random goals, ``limit_goals``) continues that
stream.  The server keeps a local :class:`random.Random` in exactly that state, so a fresh server
draws the same sessions and goals as a fresh reference process, without touching the global
generator.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import random
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from webshop_gym.data.goals import GOAL_SHUFFLE_SEED, NO_PRICE_CAP, reshuffled_order
from webshop_gym.data.records import find_shop_files
from webshop_gym.engine import Engine
from webshop_gym.error import GoalNotFound, ShopNotFound
from webshop_gym.render.text import BASE_URL, Renderer
from webshop_gym.shop import Shop, load_shop
from webshop_gym.utils.paths import cache_dir

__all__ = ["SHOP_ENV", "GoalList", "SessionMap", "SimServer", "random_idx", "shop_folder"]

SHOP_ENV = "WEBSHOP_GYM_COMPAT_SHOP"
"""Environment variable naming the shop folder that compat envs load when given no shop or file."""

DEFAULT_SESSION_BYTES = 16 * 2**20
"""Memory budget of the session -> goal map (bytes); the least recently used names go first."""


def random_idx(rng: random.Random, cum_weights: Sequence[float]) -> int:
    """Draw a goal index exactly as the reference's ``web_agent_site.utils.random_idx`` does.

    The reference bisects a uniform draw in ``[0, total]`` into ``[0, w0, w0 + w1, ...]`` and
    uses the insertion point itself as the index, capped at the last goal: goal 0 is (almost)
    never drawn and the last goal gets two goals' weight.  This quirk is kept so that random
    goals match the reference's draw for draw.
    """
    pos = rng.uniform(0, cum_weights[-1])
    idx = bisect.bisect(cum_weights, pos)
    return min(idx, len(cum_weights) - 2)


class GoalList(Sequence):
    """The server's goals as the reference's goal dicts, built on access.

    Behaves like the reference's ``server.goals`` list (``len``, indexing, slicing, iteration,
    ``==`` with a list) without building every dict up front; pickling it (e.g. Ray sending it
    to another worker) sends a plain list of dicts.
    """

    def __init__(self, server: SimServer):
        self._server = server

    def __len__(self) -> int:
        return len(self._server.goal_ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return self._server.goal_dict(index)

    def __iter__(self) -> Iterator[dict]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other) -> bool:
        if isinstance(other, GoalList | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:  # a list is unhashable; so is this
        raise TypeError("unhashable type: 'GoalList'")

    def __reduce__(self):
        return (list, (list(self),))

    def __repr__(self) -> str:
        return f"<GoalList of {len(self)} goals>"


def _sibling(path: Path, stem: str) -> Path | None:
    """The file ``stem<suffix>.json`` beside ``path`` whose suffix matches ``path``'s (``_1000``)."""
    suffix = path.stem[len("items_shuffle"):] if path.stem.startswith("items_shuffle") else ""
    for name in (f"{stem}{suffix}.json", f"{stem}.json", f"{stem}_1000.json"):
        candidate = path.with_name(name)
        if candidate.is_file():
            return candidate
    return None


def shop_folder(file_path: str | os.PathLike, attr_path: str | os.PathLike | None = None) -> Path:
    """A shop folder holding exactly the reference files named by ``file_path`` and ``attr_path``.

    ``file_path`` is the reference's product file (``items_shuffle_1000.json``); the attribute
    file defaults to the one beside it with the same suffix (``items_ins_v2_1000.json``) and the
    human instructions are ``items_human_ins.json`` beside it, as the reference finds them.  When
    the product file's own folder would resolve to other files (e.g. it also holds the full
    ``items_shuffle.json``), a folder of links to the named files is made in the cache.

    Raises:
        ShopNotFound: a named file does not exist.
    """
    products = Path(file_path).expanduser().resolve()
    if not products.is_file():
        raise ShopNotFound(f"file_path {str(file_path)!r} is not a file (expected the reference's items_shuffle*.json)")
    if attr_path is not None:
        attributes = Path(attr_path).expanduser().resolve()
        if not attributes.is_file():
            raise ShopNotFound(f"attr_path {str(attr_path)!r} is not a file (expected the reference's items_ins_v2*.json)")
    else:
        attributes = _sibling(products, "items_ins_v2")
    human = products.with_name("items_human_ins.json")
    human = human if human.is_file() else None
    found = find_shop_files(products.parent)
    same = (Path(found.products).resolve() == products
            and (found.attributes and Path(found.attributes).resolve()) == (attributes or None)
            and (found.human and Path(found.human).resolve()) == (human or None))
    if same:
        return products.parent
    digest = hashlib.sha256("\0".join(str(p) for p in (products, attributes, human)).encode()).hexdigest()[:16]
    folder = cache_dir() / "compat-shops" / digest
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in (("items_shuffle.json", products), ("items_ins_v2.json", attributes),
                         ("items_human_ins.json", human)):
        link = folder / name
        if target is None:
            if link.is_symlink() or link.exists():
                link.unlink()
            continue
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        tmp = folder / f".{name}.{os.getpid()}"
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(target)
        os.replace(tmp, link)
    return folder


class _SessionRenderer(Renderer):
    """The engine's renderer with each slot's reference session name in its URLs."""

    def __init__(self, ctx, num_slots: int):
        super().__init__(ctx)
        self.sessions = [""] * num_slots

    def session_id(self, state, slot: int) -> str:
        """The slot's session name (the reference's ``env.session``)."""
        return self.sessions[slot]


class _Block:
    """One engine with its own slots; a server grows by adding blocks."""

    def __init__(self, shop: Shop, size: int, show_attrs: bool):
        self.engine = Engine(shop, size, observation_mode="text", max_steps=None, show_attrs=show_attrs)
        self.engine.renderer = _SessionRenderer(self.engine.ctx, size)
        self.free = list(range(size - 1, -1, -1))


class SessionMap:
    """Session name -> goal index, bounded in bytes (least recently used names are dropped)."""

    ENTRY_OVERHEAD = 120  # dict slot, OrderedDict link, int object

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self._goals: OrderedDict[str, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._goals)

    def __contains__(self, name: str) -> bool:
        return name in self._goals

    def get(self, name: str) -> int | None:
        """The goal of ``name`` (``None``: unknown), marking it used."""
        goal = self._goals.get(name)
        if goal is not None:
            self._goals.move_to_end(name)
        return goal

    def put(self, name: str, goal: int) -> None:
        """Remember ``name``'s goal, dropping the least recently used names beyond the budget."""
        if name not in self._goals:
            self.bytes += sys.getsizeof(name) + self.ENTRY_OVERHEAD
        self._goals[name] = goal
        self._goals.move_to_end(name)
        while self.bytes > self.max_bytes and len(self._goals) > 1:
            old, _ = self._goals.popitem(last=False)
            self.bytes -= sys.getsizeof(old) + self.ENTRY_OVERHEAD


class SimServer:
    """One shop served to many :class:`~webshop_gym.compat.WebAgentTextEnv` (the reference's ``SimServer``).

    Args:
        base_url: the URL prefix of ``env.state["url"]`` (the reference's ``http://127.0.0.1:3000``).
        file_path: the reference's product file (``items_shuffle_1000.json``); ``None`` with
            ``shop=None`` is the folder named by ``$WEBSHOP_GYM_COMPAT_SHOP``, else the package's
            embedded shop.
        filter_goals: keep goal ``i`` only when ``filter_goals(i, goal_dict)`` is true (applied
            after the shuffle, as in the reference).
        limit_goals: keep this many goals, drawn as the reference draws them (``-1``: all).
        num_products: keep the first N product records.
        human_goals: human instructions instead of synthetic goals.
        show_attrs: show the ``Attributes`` tab on item pages.
        attr_path: the reference's attribute file (default: the one beside ``file_path``).
        shop: a shop folder or a loaded :class:`~webshop_gym.shop.Shop` instead of ``file_path``.
        goals: a frozen goal-set file (ours, or a reference ``goals.json`` with ``prices.json``).
        seed: seeds product prices and price caps (0 reproduces the reference's seed-0 run).
        shuffle_seed: seed of the goal shuffle and of the draws after it (``None``: the
            reference's 233; the verl-agent fork uses its ``seed`` here).
        session_bytes: memory budget of the session -> goal map.
        slots: episode slots of the first engine (``None``: 8); when all are leased the server
            adds an engine twice as large, so size it to the envs you expect (one engine is
            one set of page caches).
    """

    def __init__(
        self,
        base_url: str = BASE_URL,
        file_path: str | os.PathLike | None = None,
        filter_goals: Callable[[int, dict], bool] | None = None,
        limit_goals: int = -1,
        num_products: int | None = None,
        human_goals: bool | int | None = False,
        show_attrs: bool = False,
        *,
        attr_path: str | os.PathLike | None = None,
        shop: str | os.PathLike | Shop | None = None,
        goals: str | os.PathLike | None = None,
        seed: int = 0,
        shuffle_seed: int | None = None,
        session_bytes: int = DEFAULT_SESSION_BYTES,
        slots: int | None = None,
    ):
        if isinstance(shop, Shop):
            if file_path is not None or goals is not None or num_products is not None:
                raise ValueError("pass either shop=<a loaded Shop> or file_path/goals/num_products, not both")
            self.shop = shop
        else:
            if shop is not None and file_path is not None:
                raise ValueError("pass either shop=<folder> or file_path=<items_shuffle*.json>, not both")
            if file_path is not None:
                folder = shop_folder(file_path, attr_path)
            else:  # like the reference's data/ folder: the environment names it, else the embedded shop
                folder = shop if shop is not None else (os.environ.get(SHOP_ENV) or None)
            if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
                raise TypeError(f"seed must be an integer, got {seed!r}")
            self.shop = load_shop(folder, goals=goals, human_goals=bool(human_goals), seed=int(seed),
                                  num_products=num_products, progress=False)
        self.base_url = base_url
        self.show_attrs = bool(show_attrs)
        self.shuffle_seed = GOAL_SHUFFLE_SEED if shuffle_seed is None else int(shuffle_seed)
        self._lock = threading.RLock()
        self._rng: random.Random | None = None
        n = len(self.shop.goals)
        ids = np.arange(n, dtype=np.int64)
        if self.shuffle_seed != GOAL_SHUFFLE_SEED:
            ids = reshuffled_order(n, self.shuffle_seed)
        self.goal_ids = ids
        self._no_goals = "the shop has no goals"  # why the goal list is empty, when it is
        if filter_goals is not None:
            keep = [i for i in range(n) if filter_goals(i, self.shop.goals[int(ids[i])])]
            self.goal_ids = ids[np.asarray(keep, dtype=np.int64)] if keep else ids[:0]
            self._no_goals = "filter_goals kept none"
        limit_goals = int(limit_goals)
        if limit_goals != -1 and limit_goals < len(self.goal_ids):
            cum = [0.0, *np.cumsum(self._weights_array()).tolist()]
            picked: list[int] = []
            while len(picked) < limit_goals:
                idx = random_idx(self.rng, cum)
                if idx not in picked:
                    picked.append(idx)
            self.goal_ids = self.goal_ids[np.asarray(picked, dtype=np.int64)]
            self._no_goals = f"limit_goals={limit_goals} keeps none: pass -1 for all goals or a positive number"
        weights = self._weights_array()
        human = self.shop.goals.kind == "human"
        self.weights = [int(w) if human and w == 1 else float(w) for w in weights.tolist()]
        self.cum_weights = [0, *np.cumsum(weights).tolist()]
        self.goals = GoalList(self)
        self.sessions = SessionMap(session_bytes)
        self._first_block = 8 if slots is None else int(slots)
        if self._first_block < 1:
            raise ValueError(f"slots must be at least 1, got {slots!r}")
        self._blocks: list[_Block] = []

    def __repr__(self) -> str:
        return f"SimServer({self.shop!r}, goals={len(self.goal_ids)}, shuffle_seed={self.shuffle_seed})"

    # -- goals ------------------------------------------------------------------------------

    def _weights_array(self) -> np.ndarray:
        return np.asarray(self.shop.goals.weight, dtype=np.float64)[self.goal_ids]

    @property
    def rng(self) -> random.Random:
        """The generator in the state the reference's global ``random`` has after the goal shuffle."""
        if self._rng is None:
            rng = random.Random(self.shuffle_seed)
            rng.shuffle(list(range(len(self.shop.goals))))  # the same draws as shuffling the goal list
            self._rng = rng
        return self._rng

    def goal_dict(self, index: int) -> dict:
        """Goal ``index`` of this server's goal list as the reference's goal dict."""
        shop_index = int(self.goal_ids[index])
        goal = self.shop.goals[shop_index]
        if self.shop.goals.kind == "human" and goal["weight"] == 1:
            goal["weight"] = 1
        if goal["price_upper"] == NO_PRICE_CAP:
            goal["price_upper"] = NO_PRICE_CAP
        return goal

    def shop_goal(self, index: int) -> int:
        """The shop's goal index of this server's goal ``index`` (negative indices count from the end).

        Raises:
            GoalNotFound: the index is outside the goal list.
        """
        n = len(self.goal_ids)
        if n == 0:
            raise GoalNotFound(f"session {index!r} names no goal: this server has no goals ({self._no_goals})")
        if isinstance(index, bool) or not -n <= index < n:
            raise GoalNotFound(f"session {index!r} names no goal: this server has {n} goals (0 to {n - 1})")
        return int(self.goal_ids[index])

    def session_goal(self, session: str, session_int: int | None = None) -> int:
        """The goal index (into this server's list) of a session, assigning one to a new name.

        A known name keeps its goal; a new one gets goal ``session_int`` when given (the
        reference's ``env.reset(session=<int>)``), else a random goal drawn as the reference draws it.
        """
        with self._lock:
            goal = self.sessions.get(session)
            if goal is not None:
                return goal
            if session_int is not None:
                self.shop_goal(session_int)  # validates
                goal = int(session_int) % len(self.goal_ids)
            else:
                if len(self.goal_ids) == 0:
                    raise GoalNotFound(f"this server has no goals ({self._no_goals})")
                goal = random_idx(self.rng, self.cum_weights)
            self.sessions.put(session, goal)
            return goal

    def random_session(self) -> str:
        """A new random session name, drawn as the reference draws it (10 lower-case letters)."""
        import string

        with self._lock:
            return "".join(self.rng.choices(string.ascii_lowercase, k=10))

    # -- slots ------------------------------------------------------------------------------

    def lease(self) -> tuple[Engine, int]:
        """Hand out a free engine slot (the server grows by a new engine when all are taken)."""
        with self._lock:
            for block in self._blocks:
                if block.free:
                    return block.engine, block.free.pop()
            size = self._first_block if not self._blocks else min(2 * self._blocks[-1].engine.num_slots, 4096)
            block = _Block(self.shop, size, self.show_attrs)
            self._blocks.append(block)
            return block.engine, block.free.pop()

    def release(self, engine: Engine, slot: int) -> None:
        """Give a slot back (called when its env is garbage-collected)."""
        with self._lock:
            for block in self._blocks:
                if block.engine is engine:
                    engine.renderer.sessions[slot] = ""
                    block.free.append(slot)
                    return

    @property
    def slots_in_use(self) -> int:
        """Slots currently leased."""
        with self._lock:
            return sum(b.engine.num_slots - len(b.free) for b in self._blocks)
