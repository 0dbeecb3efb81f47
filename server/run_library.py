"""The run viewer's library: the runs of ``serve --runs DIR``, their indexes, and replayed pages.

:class:`RunLibrary` keeps one :class:`~webshop_gym.runs.index.RunIndex` per run file (indexed
once, large files on a background thread), reads an episode from disk when it is opened and
re-creates its pages by replaying the logged actions, within byte budgets.  The routes are in
:mod:`webshop_gym.server.runs`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from flask import abort, current_app

from webshop_gym.error import DataError, Error
from webshop_gym.evaluation.episode import slim_info
from webshop_gym.runs.index import (
    RunIndex,
)
from webshop_gym.runs.replay import Replayer, fingerprint_difference, load_logged_shop
from webshop_gym.runs.run import RunEpisode
from webshop_gym.utils.bytelru import ByteLRU

__all__ = ["Entry", "Replayed", "RunLibrary", "get_library", "init_app"]

EXTENSION = "webshop_gym_runs"
SUFFIX = ".jsonl"
#: Steps of a long episode whose pages are kept on either side of the one shown.
PAGE_WINDOW = 100
#: Steps between two saved env states of a long episode's replay (a later window starts from one).
CHECKPOINT = 500
#: Episodes longer than this are replayed only up to the page shown (and checked that far).
LONG_EPISODE = 2 * PAGE_WINDOW + 2


@dataclass
class Replayed:
    """Pages of an episode re-created by the env: ``pages[k]`` is the state after ``k`` actions.

    Only a window of steps is kept for a long episode (``pages`` maps step -> HTML), and a long
    episode is replayed (and compared with its log) only as far as the pages asked for so far:
    ``made`` states, ``complete`` once the replay reached the log's end.
    """

    n: int
    pages: dict[int, str] = field(default_factory=dict)
    problem: str = ""  # the first difference from the log (among the ``made`` states replayed)
    unavailable: str = ""  # why no page could be made (the run's shop cannot be loaded, ...)
    made: int = 0  # states the replay reached (fewer than n + 1 when the log goes on after the end)
    complete: bool = False  # the replay went as far as it can: every step was compared with the log
    checkpoints: dict[int, Any] = field(default_factory=dict)  # replay snapshots at states i, every CHECKPOINT
    frontier: Any = None  # the snapshot at state made - 1, to go on from (while not complete)

    def has(self, k: int) -> bool:
        """Whether page ``k`` is held."""
        return k in self.pages

    def nbytes(self) -> int:
        """Bytes charged in the page cache."""
        return sum(len(p) for p in self.pages.values()) + 4096 * (len(self.checkpoints) + 1) + 1024


@dataclass
class Entry:
    """A run file's state in the library: its index (when read), or why it cannot be read, or progress."""

    path: Path
    index: RunIndex | None = None
    error: str = ""
    error_stat: tuple = ()
    job: Any = None
    progress: tuple = (0, 0, 0)  # bytes read, file size, episodes
    lock: threading.Lock = field(default_factory=threading.Lock)


class RunLibrary:
    """The run files of a folder, indexed once, read and replayed on demand, cached within byte budgets.

    Args:
        folder: the folder of ``*.jsonl`` run files.
        cache_bytes: memory for episodes read back from disk (charged 3 x their bytes on disk).
        page_cache_bytes: memory for re-created pages (their characters).
        inline_bytes: files up to this size are indexed within the request; larger ones on the
            background thread (the pages say how far it got).
        log: where progress lines of background indexing go (default: stderr).
    """

    def __init__(self, folder: str | Path, cache_bytes: int = 256 << 20, page_cache_bytes: int = 64 << 20,
                 inline_bytes: int = 16 << 20, log=None):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise DataError(str(folder), "the runs folder does not exist")
        self.episodes = ByteLRU(cache_bytes)
        self.pages = ByteLRU(page_cache_bytes)
        self.orders = ByteLRU(32 << 20)
        self.inline_bytes = int(inline_bytes)
        self.log = log
        self._entries: dict[str, Entry] = {}
        self._entries_lock = threading.Lock()
        self._shops: dict[str, tuple[Any, str]] = {}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webshop-runs")
        self._indexer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webshop-runs-index")

    def close(self) -> None:
        """Stop the replay and indexing threads."""
        self._indexer.shutdown(wait=True, cancel_futures=True)
        self._worker.shutdown(wait=True)

    # -- files and indexes -----------------------------------------------------------------------

    def files(self) -> dict[str, Path]:
        """Run name -> file, sorted by name (only regular ``*.jsonl`` files directly in the folder)."""
        found = {}
        for path in sorted(self.folder.iterdir()):
            if path.name.endswith(SUFFIX) and len(path.name) > len(SUFFIX) and path.is_file():
                name = path.name[: -len(SUFFIX)]
                found[path.name if name.strip(".") == "" else name] = path  # clients resolve /runs/.. to /
        return found

    def _entry(self, path: Path) -> Entry:
        with self._entries_lock:
            entry = self._entries.get(str(path))
            if entry is None:
                entry = self._entries[str(path)] = Entry(path)
            return entry

    def state(self, path: Path, wait: bool = False) -> Entry:
        """The file's entry, its index brought up to date (inline when small or ``wait``, else in the background)."""
        entry = self._entry(path)
        try:
            stat = path.stat()
        except OSError as exc:
            entry.error = str(exc)
            return entry
        key = (stat.st_size, stat.st_mtime_ns)
        if entry.error and entry.error_stat == key:
            return entry
        index = entry.index
        if index is not None and (index.size, index.mtime_ns) == key:
            return entry
        if entry.job is not None and not entry.job.done():
            if wait:
                entry.job.result()
            return entry
        grown = 0 if index is None else stat.st_size - index.consumed
        if wait or (index is None and stat.st_size <= self.inline_bytes) or (index is not None and 0 <= grown <= self.inline_bytes):
            self._build(entry, key, incremental=index is not None)
        else:
            entry.progress = (0, stat.st_size, 0)
            entry.job = self._indexer.submit(self._build, entry, key, False, True)
        return entry

    def _build(self, entry: Entry, key: tuple, incremental: bool, background: bool = False) -> None:
        started = time.perf_counter()
        name = entry.path.name

        def progress(done: int, total: int, episodes: int) -> None:
            entry.progress = (done, total, episodes)
            if background:
                self._say(f"indexing {name}: {done / 2**20:,.0f} of {total / 2**20:,.0f} MB, {episodes:,} episodes")

        try:
            if incremental and entry.index is not None:
                with entry.lock:
                    entry.index.refresh(progress)
                    entry.index.table()
            else:
                index = RunIndex(entry.path)
                index.refresh(progress)
                index.table()
                entry.index = index  # swapped in whole: readers never see a half-built index
            entry.error = ""
        except (Error, OSError, ValueError) as exc:
            entry.error, entry.error_stat, entry.index = str(exc), key, None
        if background:
            done = entry.index.episodes if entry.index is not None else 0
            self._say(f"indexed {name}: {done:,} episodes in {time.perf_counter() - started:.1f} s"
                      + (f" (cannot be read: {entry.error})" if entry.error else ""))

    def _say(self, text: str) -> None:
        print(f"webshop-gym: {text}", file=self.log or sys.stderr, flush=True)

    def load(self, name: str) -> RunIndex | Entry:
        """The index of run ``name`` (404 when there is none; 422 when unreadable); an :class:`Entry` while indexing."""
        path = self.files().get(name)
        if path is None:
            abort(404, f"There is no run called “{_said(name)}” in the runs folder.")
        entry = self.state(path)
        if entry.error:
            abort(422, f"The run “{_said(name)}” cannot be read: {entry.error}")
        if entry.index is None:
            return entry
        return entry.index

    def listing(self) -> list[dict]:
        """A row per run file: its index, or that it is being indexed, or why it cannot be read."""
        files = self.files()

        def size(path: Path) -> int:
            try:
                return path.stat().st_size
            except OSError:
                return 0

        # Small files first (indexed inline), so that a big one's background indexing starts last.
        entries = {name: self.state(path) for name, path in sorted(files.items(), key=lambda item: size(item[1]))}
        rows = []
        for name in files:
            entry = entries[name]
            rows.append({"name": name, "index": entry.index, "error": entry.error,
                         "indexing": entry.index is None and not entry.error, "progress": entry.progress})
        return rows

    # -- episodes ---------------------------------------------------------------------------------

    def episode(self, index: RunIndex, position: int) -> RunEpisode:
        """Episode ``position`` of a run, read from disk (cached)."""
        key = (str(index.path), index.size, index.mtime_ns, position)
        found = self.episodes.get(key)
        if found is None:
            start, end = index.span(position)
            found = index.episode(position)
            self.episodes.put(key, found, 3 * (end - start) + 4096)
        return found

    def replayed(self, index: RunIndex, episode: RunEpisode, k: int) -> Replayed:
        """The re-created pages of ``episode`` around step ``k`` (replayed once per window, then cached)."""
        key = (str(index.path), index.header.get("run"), episode.position, episode.log.episode, len(episode.log.steps))
        done = self.pages.get(key)
        if done is None or (not done.unavailable and not done.has(k) and (k < done.made or not done.complete)):
            done = self._worker.submit(self._replay, index, episode, k, done).result()
            self.pages.put(key, done, done.nbytes())
        return done

    def searches(self, index: RunIndex, episode: RunEpisode) -> list[dict] | None:
        """Per search of the episode, the target's rank in the engine's results (``None``: no shop here)."""
        key = ("searches", str(index.path), episode.position, len(episode.log.steps))
        found = self.pages.get(key)
        if found is None:
            found = self._worker.submit(self._searches, index, episode).result()
            self.pages.put(key, found, 200 * len(found or ()) + 256)
        return found or None

    def _searches(self, index: RunIndex, episode: RunEpisode) -> list[dict]:
        from webshop_gym.core.actions import parse_action
        from webshop_gym.core.sim import SPECIAL_QUERIES

        shop, _ = self._shop(index.header, episode)
        if shop is None or episode.goal_index >= len(shop.goals):
            return []
        target = int(shop.goals.target[episode.goal_index])
        asked = []
        for s in episode.log.steps:
            name, arg = parse_action(s.get("action"))
            if name == "search" and arg and not s.get("invalid_action") and arg.split(" ")[0] not in SPECIAL_QUERIES:
                asked.append((int(s["step"]), arg))
        unique = list(dict.fromkeys(arg for _, arg in asked))
        results = dict(zip(unique, shop.search_batch(unique))) if unique else {}
        out = []
        for step, arg in asked:
            rows = np.asarray(results[arg])
            hit = np.flatnonzero(rows == target) if target >= 0 else []
            out.append({"step": step, "query": arg, "rank": int(hit[0]) + 1 if len(hit) else 0, "total": int(len(rows))})
        return out

    def states(self, index: RunIndex, episode: RunEpisode, k: int) -> tuple[list[tuple[str, dict]], str, str]:
        """What a policy was handed at states 0 ... ``k`` of ``episode``, re-created by replaying it (cached).

        Returns:
            (states, problem, unavailable): each state's observation (in the run's observation
            mode) and ``slim_info`` (as the evaluation hands them to the policy); the replay's
            first difference from the log (``""``: none up to ``k``); why nothing could be made
            (the run's shop cannot be loaded here, ...).
        """
        key = ("states", str(index.path), index.header.get("run"), episode.position, episode.log.episode,
               len(episode.log.steps))
        found = self.pages.get(key)
        if found is None or (not found[2] and len(found[0]) <= k and not found[3]):  # replayed not that far yet
            found = self._worker.submit(self._states, index, episode, k).result()
            self.pages.put(key, found, sum(len(o) + len(json.dumps(i)) for o, i in found[0]) + 1024)
        states, problem, unavailable, _ = found
        return states[: k + 1], problem, unavailable

    def _states(self, index: RunIndex, episode: RunEpisode, k: int) -> tuple[list[tuple[str, dict]], str, str, bool]:
        """Replay ``episode`` from its start to state ``k``, keeping each state's observation and info (and whether it ended)."""
        from webshop_gym.envs.env import WebShopEnv

        log = episode.log
        shop, why = self._shop(index.header, episode)
        if shop is None:
            return [], "", why, True
        if episode.goal_index >= len(shop.goals):
            return [], "", f"the shop has no goal {episode.goal_index}", True
        mode = log.record.get("observation_mode") or index.header.get("observation_mode") or "text"
        logged = "observation" in log.record or any("observation" in s for s in log.steps[:1])
        env = WebShopEnv(shop=shop, max_steps=log.max_steps, observation_mode=mode if logged else "url")
        engine = env.unwrapped.engine
        replayer = Replayer(engine, log, mode)
        states: list[tuple[str, dict]] = []

        def keep() -> None:
            states.append((engine.observe(0, mode), slim_info(engine.info(0))))

        try:
            replayer.start(keep)
            replayer.advance(k, keep)
        finally:
            env.close()
        return states, replayer.problem, "", replayer.done

    def _shop(self, header: dict, episode: RunEpisode):
        record = episode.log.shop
        key = json.dumps(record, sort_keys=True)
        if key not in self._shops:  # only loaded shops are kept: a shop that appears later is found
            try:
                shop = load_logged_shop(record)
            except (Error, OSError) as exc:
                return None, f"the run's shop cannot be loaded here ({exc})"
            problem = None
            recorded = header.get("fingerprint")
            if recorded is not None and record == header.get("shop"):
                problem = fingerprint_difference(recorded, shop)
            self._shops[key] = (None, f"the shop here differs from the run's ({problem})") if problem else (shop, "")
        return self._shops[key]

    def shop_of(self, index: RunIndex, episode: RunEpisode):
        """The run's shop when it loads here and matches the run's fingerprint, else ``None``."""
        return self._worker.submit(self._shop, index.header, episode).result()[0]

    def _replay(self, index: RunIndex, episode: RunEpisode, k: int, previous: Replayed | None = None) -> Replayed:
        """Re-create the pages of the window around ``k``; HTML is rendered for the pages kept only.

        The replay compares every step it takes with the log (the env steps in the logged
        observation mode when observations were logged, else in ``url`` mode, the cheapest).  A
        short episode is replayed whole at once.  A long one is replayed only up to the window
        shown, keeping a snapshot every :data:`CHECKPOINT` states and one where it stopped: a
        later window behind that point starts from the nearest snapshot (at most ``CHECKPOINT +
        2 x PAGE_WINDOW`` steps), one beyond it goes on from where the replay stopped.
        """
        from webshop_gym.envs.env import WebShopEnv

        log = episode.log
        n = len(log.steps)
        shop, why = self._shop(index.header, episode)
        if shop is None:
            return Replayed(n, unavailable=why)
        if episode.goal_index >= len(shop.goals):
            return Replayed(n, unavailable=f"the shop has no goal {episode.goal_index}")
        mode = log.record.get("observation_mode") or index.header.get("observation_mode") or "text"
        logged = "observation" in log.record or any("observation" in s for s in log.steps[:1])
        env_mode = mode if logged else "url"
        env = WebShopEnv(shop=shop, max_steps=log.max_steps, observation_mode=env_mode)
        engine = env.unwrapped.engine
        replayer = Replayer(engine, log, mode)
        long = n > LONG_EPISODE
        low, high = (k - PAGE_WINDOW, k + PAGE_WINDOW) if long else (0, n)

        def wanted(i: int) -> bool:
            return i <= 1 or low <= i <= high or i >= n - 1

        out = Replayed(n)
        if previous is not None and previous.made and not previous.unavailable:
            out = Replayed(n, pages={i: p for i, p in previous.pages.items() if wanted(i)},
                           problem=previous.problem, made=previous.made, complete=previous.complete,
                           checkpoints=previous.checkpoints, frontier=previous.frontier)

        def keep() -> None:
            i = replayer.made - 1
            if wanted(i) and i not in out.pages:
                out.pages[i] = engine.observe(0, "html")
            if long and i % CHECKPOINT == 0 and i not in out.checkpoints:
                out.checkpoints[i] = replayer.snapshot()

        try:
            if out.made:  # from the nearest snapshot behind the window, or from where the replay stopped
                replayer.restore(out.frontier if k >= out.made else
                                 out.checkpoints[max(c for c in out.checkpoints if c <= max(0, low))])
                replayer.problem = out.problem
            else:
                replayer.start()
            keep()
            while not replayer.done and replayer.made <= high:
                replayer.advance(replayer.made, keep)  # one step, then keep its page
            if replayer.made >= out.made:  # as far as the replay has been, or further: its new end
                out.problem, out.made, out.complete = replayer.problem, replayer.made, replayer.done
                out.frontier = None if out.complete else replayer.snapshot()
            return out
        finally:
            env.close()


def _said(name: str, most: int = 80) -> str:
    """A run name from the URL for a one-line message: control characters as spaces, cut at ``most``."""
    text = "".join(" " if ord(c) < 32 or c in "\x7f\u2028\u2029" else c for c in name)
    return text if len(text) <= most else text[: most - 1] + "…"


def init_app(app) -> RunLibrary:
    """Attach a :class:`RunLibrary` of the app's ``RUNS`` folder to ``app``."""
    library = RunLibrary(app.config["RUNS"], cache_bytes=int(app.config.get("RUNS_CACHE_BYTES") or 256 << 20),
                         page_cache_bytes=int(app.config.get("RUNS_PAGE_CACHE_BYTES") or 64 << 20),
                         inline_bytes=int(app.config.get("RUNS_INDEX_INLINE_BYTES") or 16 << 20))
    app.extensions[EXTENSION] = library
    return library


def get_library() -> RunLibrary:
    """The :class:`RunLibrary` of the current app."""
    return current_app.extensions[EXTENSION]
