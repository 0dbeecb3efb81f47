"""The run viewer: ``webshop-gym serve --runs DIR`` shows the runs of ``eval --out`` in the browser.

Routes (``<run>`` is a run file's name in ``DIR`` without ``.jsonl``, ``<episode>`` the
episode's position in the file, from 0):

* ``GET /runs/``: the runs (policy, split, Score, SR, date), and a form to compare two.
* ``GET /runs/<run>``: the run's settings and figures and a sortable, filterable episode table
  (query ``sort``, ``desc``, ``q``, ``outcome``, ``cause``, ``category``).
* ``GET /runs/<run>/<episode>?step=k``: the episode's stepper: the page the agent saw before
  its action ``k + 1`` (the env's HTML of that state, re-created by replaying the logged
  actions in a :class:`~webshop_gym.env.WebShopEnv` in ``html`` mode, so text-mode runs show
  pages too), the action, the model's output, and after the last step the score breakdown and
  the target.
* ``GET /runs/<run>/<episode>/page/<k>``: that page itself, exactly the env's HTML (shown in a
  sandboxed frame of the stepper).
* ``GET /runs/<a>/vs/<b>``: goal by goal, which run solved what; ``.../vs/<b>/<goal>``: the two
  episodes of one goal side by side.

Replays run on one worker thread (the search engine's Java VM is entered from it only), and
both the parsed runs and the re-created pages are cached within a byte budget
(``RUNS_CACHE_BYTES``, ``RUNS_PAGE_CACHE_BYTES``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import threading
from collections import Counter, OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for

from webshop_gym.error import DataError, Error
from webshop_gym.recorder import fingerprint_difference, load_logged_shop, replay_episode
from webshop_gym.render.html import Nav, stylesheet
from webshop_gym.runs import CAUSES, Run, RunEpisode, load_run

__all__ = ["RunLibrary", "bp", "get_library", "init_app"]

EXTENSION = "webshop_gym_runs"
SUFFIX = ".jsonl"
#: Estimated bytes of memory per byte of run file once parsed (measured: docs/runs.md).
PARSED_PER_FILE_BYTE = 4

bp = Blueprint("runs", __name__, url_prefix="/runs")


class ByteLRU:
    """A least-recently-used map bounded by the total size of its values (as the caller states it)."""

    def __init__(self, budget: int):
        self.budget = int(budget)
        self.used = 0
        self._items: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        """The value of ``key`` (``None`` when absent), now the most recently used."""
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key, value, size: int) -> None:
        """Keep ``value`` (not at all when it alone exceeds the budget), evicting the oldest."""
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.used -= old[1]
            if size > self.budget:
                return
            while self._items and self.used + size > self.budget:
                _, (_, freed) = self._items.popitem(last=False)
                self.used -= freed
            self._items[key] = (value, size)
            self.used += size


@dataclass
class Replayed:
    """An episode's pages re-created by the env: ``pages[k]`` is the state after ``k`` actions."""

    pages: list[str]
    problem: str = ""  # the first difference from the log
    unavailable: str = ""  # why no page could be made (the run's shop cannot be loaded, ...)


class RunLibrary:
    """The run files of a folder, parsed and replayed on demand, cached within byte budgets.

    Args:
        folder: the folder of ``*.jsonl`` run files.
        cache_bytes: memory for parsed runs (estimated as ``PARSED_PER_FILE_BYTE`` x file size).
        page_cache_bytes: memory for re-created pages (their characters).
    """

    def __init__(self, folder: str | Path, cache_bytes: int = 512 << 20, page_cache_bytes: int = 64 << 20):
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise DataError(str(folder), "the runs folder does not exist")
        self.runs = ByteLRU(cache_bytes)
        self.pages = ByteLRU(page_cache_bytes)
        self._shops: dict[str, tuple[Any, str]] = {}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="webshop-runs")

    def close(self) -> None:
        """Stop the replay thread."""
        self._worker.shutdown(wait=True)

    # -- files ----------------------------------------------------------------------------------

    def files(self) -> dict[str, Path]:
        """Run name -> file, sorted by name (only regular ``*.jsonl`` files directly in the folder)."""
        found = {}
        for path in sorted(self.folder.iterdir()):
            if path.name.endswith(SUFFIX) and len(path.name) > len(SUFFIX) and path.is_file():
                name = path.name[: -len(SUFFIX)]
                found[path.name if name.strip(".") == "" else name] = path  # clients resolve /runs/.. to /
        return found

    def load(self, name: str) -> Run:
        """The run called ``name`` (404 when there is none; the read error as a 422 page)."""
        path = self.files().get(name)
        if path is None:
            abort(404, f"There is no run called {name!r} in the runs folder.")
        try:
            return self._load(path)
        except (Error, OSError) as exc:
            abort(422, f"The run {name!r} cannot be read: {exc}")

    def _load(self, path: Path) -> Run:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        run = self.runs.get(key)
        if run is None:
            run = load_run(path, require_episodes=False)
            self.runs.put(key, run, PARSED_PER_FILE_BYTE * stat.st_size)
        return run

    def listing(self) -> list[dict]:
        """A row per run file: the run, or the reason it cannot be read."""
        rows = []
        for name, path in self.files().items():
            try:
                rows.append({"name": name, "run": self._load(path), "error": ""})
            except (Error, OSError) as exc:
                rows.append({"name": name, "run": None, "error": str(exc)})
        return rows

    # -- replays --------------------------------------------------------------------------------

    def replayed(self, run: Run, episode: RunEpisode) -> Replayed:
        """The pages of ``episode`` (re-created once, then cached)."""
        key = (str(run.path), run.header.get("run"), episode.position, episode.log.episode, len(episode.log.steps))
        done = self.pages.get(key)
        if done is None:
            done = self._worker.submit(self._replay, run, episode).result()
            self.pages.put(key, done, sum(len(p) for p in done.pages) + 1024)
        return done

    def _shop(self, run: Run, episode: RunEpisode):
        record = episode.log.shop
        key = json.dumps(record, sort_keys=True)
        if key not in self._shops:  # only loaded shops are kept: a shop that appears later is found
            try:
                shop = load_logged_shop(record)
            except (Error, OSError) as exc:
                return None, f"the run's shop cannot be loaded here ({exc})"
            problem = None
            recorded = run.header.get("fingerprint")
            if recorded is not None and record == run.header.get("shop"):
                problem = fingerprint_difference(recorded, shop)
            self._shops[key] = (None, f"the shop here differs from the run's ({problem})") if problem else (shop, "")
        return self._shops[key]

    def _replay(self, run: Run, episode: RunEpisode) -> Replayed:
        from webshop_gym.env import WebShopEnv

        shop, why = self._shop(run, episode)
        if shop is None:
            return Replayed([], unavailable=why)
        if episode.goal_index >= len(shop.goals):
            return Replayed([], unavailable=f"the shop has no goal {episode.goal_index}")
        mode = episode.log.record.get("observation_mode") or run.header.get("observation_mode") or "text"
        env = WebShopEnv(shop=shop, max_steps=episode.log.max_steps, observation_mode="html")
        pages: list[str] = []
        _, problem = replay_episode(env, episode.log, mode=mode, on_state=pages.append)
        return Replayed(pages, problem)


def init_app(app) -> RunLibrary:
    """Attach a :class:`RunLibrary` of the app's ``RUNS`` folder to ``app``."""
    library = RunLibrary(app.config["RUNS"], cache_bytes=int(app.config.get("RUNS_CACHE_BYTES") or 512 << 20),
                         page_cache_bytes=int(app.config.get("RUNS_PAGE_CACHE_BYTES") or 64 << 20))
    app.extensions[EXTENSION] = library
    return library


def get_library() -> RunLibrary:
    """The :class:`RunLibrary` of the current app."""
    return current_app.extensions[EXTENSION]


# -- page helpers ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _css() -> str:
    return stylesheet() + resources.files("webshop_gym.server").joinpath("templates/runs/runs.css").read_text(
        encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _script_hash() -> str:
    """CSP source of the one inline script of the package's ``base.html`` (every page has it)."""
    text = resources.files("webshop_gym").joinpath("templates/base.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", text, flags=re.S)
    if len(scripts) != 1:
        return "'none'"
    return "'sha256-" + base64.b64encode(hashlib.sha256(scripts[0].encode("utf-8")).digest()).decode("ascii") + "'"


NONE, SELF = "'none'", "'self'"


@bp.after_request
def _headers(response):
    # Viewer pages embed the env's pages in a same-origin frame; the frame's page may be framed
    # by them only, and posts nowhere (its forms are the agent's, not ours).
    framed = request.endpoint == "runs.page"
    policy = (f"default-src 'none'; script-src {_script_hash()}; style-src 'unsafe-inline'; img-src 'self' data:; "
              f"frame-src 'self'; form-action {NONE if framed else SELF}; base-uri 'none'; "
              f"frame-ancestors {SELF if framed else NONE}")
    response.headers["Content-Security-Policy"] = policy
    response.headers["X-Frame-Options"] = "SAMEORIGIN" if framed else "DENY"
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response


def _render(template: str, **context):
    menu = url_for("menu.index") if "menu.index" in current_app.view_functions else None
    return render_template(template, css=_css(), page="runs", human=True, nav=Nav(menu=menu), causes=CAUSES,
                           **context)


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def _target_options(options) -> str:
    if isinstance(options, dict):
        return ", ".join(f"{k}: {v}" for k, v in options.items())
    return ", ".join(str(v) for v in options or [])


def _stats(run: Run) -> dict:
    from webshop_gym.report_stats import bootstrap_ci

    rewards = [e.reward for e in run.episodes]
    return {"score": bootstrap_ci(rewards, resamples=2000), "sr": bootstrap_ci([e.success for e in run.episodes],
                                                                              resamples=2000)}


# -- routes -----------------------------------------------------------------------------------------


@bp.get("/", strict_slashes=False)  # /runs too (and before any catch-all of another blueprint)
def index():
    """The runs, and a form that compares two of them."""
    a, b = request.args.get("a"), request.args.get("b")
    if a and b:
        return redirect(url_for("runs.compare", a=a, b=b), code=303)
    rows = get_library().listing()
    return _render("runs/index.html", rows=rows, pct=_pct, folder=str(get_library().folder))


SORT_KEYS = {
    "position": lambda e: e.position,
    "goal": lambda e: e.goal_index,
    "instruction": lambda e: e.instruction.lower(),
    "reward": lambda e: e.reward,
    "success": lambda e: e.success,
    "steps": lambda e: e.steps,
    "invalid": lambda e: e.invalid_actions,
    "cause": lambda e: (e.cause == "", e.cause),
    "category": lambda e: e.category,
}


@bp.get("/<run>")
def run_page(run: str):
    """A run: settings, figures and its episodes (sortable, filterable)."""
    loaded = get_library().load(run)
    args = request.args
    sort = args.get("sort", "position")
    if sort not in SORT_KEYS:
        abort(400, f"unknown sort column {sort!r}; expected one of {', '.join(SORT_KEYS)}")
    desc = args.get("desc") == "1"
    q = args.get("q", "").strip().lower()
    outcome, cause, category = args.get("outcome", ""), args.get("cause", ""), args.get("category", "")
    shown = [e for e in loaded.episodes
             if (not q or q in e.instruction.lower() or q == str(e.goal_index))
             and (outcome != "success" or e.success) and (outcome != "failure" or not e.success)
             and (not cause or cause in e.causes) and (not category or e.category == category)]
    shown.sort(key=SORT_KEYS[sort], reverse=desc)
    return _render(
        "runs/run.html", run=loaded, name=run, episodes=shown, pct=_pct, stats=_stats(loaded),
        sort=sort, desc=desc, q=args.get("q", ""), outcome=outcome, cause=cause, category=category,
        categories=sorted({e.category for e in loaded.episodes}),
        cause_counts=Counter(c for e in loaded.episodes for c in e.causes),
        header=json.dumps({k: v for k, v in loaded.header.items() if k not in ("type",)}, indent=1, ensure_ascii=False),
        query=lambda **changes: url_for("runs.run_page", run=run, **{
            k: v for k, v in {**args.to_dict(), **changes}.items() if v not in ("", None)}),
    )


def _episode(loaded: Run, position: int) -> RunEpisode:
    if not 0 <= position < len(loaded.episodes):
        abort(404, f"The run has {len(loaded.episodes)} episodes (0 to {len(loaded.episodes) - 1}); "
                   f"there is no episode {position}.")
    return loaded.episodes[position]


def _observation(episode: RunEpisode, k: int) -> str | None:
    if k == 0:
        return episode.log.record.get("observation")
    return episode.log.steps[k - 1].get("observation")


def _action_text(record: dict) -> str:
    if record.get("action") is None and "action_repr" in record:
        return f"(not a string: {record.get('action_type')} {record['action_repr']})"
    return str(record.get("action"))


@bp.get("/<run>/<int:position>")
def episode_page(run: str, position: int):
    """Step through an episode: the page the agent saw, its action, the model's output, the outcome."""
    library = get_library()
    loaded = library.load(run)
    episode = _episode(loaded, position)
    n = len(episode.log.steps)
    try:
        k = int(request.args.get("step", 0))
    except ValueError:
        abort(400, "step must be a whole number")
    if not 0 <= k <= n:
        abort(404, f"The episode has {n} steps; states run from 0 to {n}.")
    replayed = library.replayed(loaded, episode)
    record = episode.log.steps[k] if k < n else None
    target = dict(episode.log.record.get("target") or {})
    target.setdefault("instruction", episode.instruction)
    last = episode.last
    return _render(
        "runs/episode.html", run=loaded, name=run, episode=episode, k=k, n=n, record=record,
        action=_action_text(record) if record else None, replayed=replayed, has_page=k < len(replayed.pages),
        observation=_observation(episode, k),
        steps=[(i, _action_text(s), s) for i, s in enumerate(episode.log.steps)],
        score={"reward": episode.reward, "success": episode.success, "asin": str(last.get("purchased_asin", "")).upper(),
               "options": last.get("purchased_options") or {}, "price": float(last.get("purchased_price") or 0.0),
               "info": last.get("reward_info") or {},
               "target": {"instruction": target.get("instruction", ""), "asin": target.get("asin", "?"),
                          "title": target.get("title", ""), "attributes": target.get("attributes", []),
                          "options": _target_options(target.get("options")),
                          "price_upper": float(target.get("price_upper") or 0.0)}},
        has_target=bool(episode.log.record.get("target")), plain_nav=Nav(),
    )


@bp.get("/<run>/<int:position>/page/<int:k>")
def page(run: str, position: int, k: int):
    """The env's HTML of the state after ``k`` actions of the episode, exactly as the env renders it."""
    library = get_library()
    loaded = library.load(run)
    episode = _episode(loaded, position)
    replayed = library.replayed(loaded, episode)
    if replayed.unavailable:
        abort(404, f"The pages of this episode cannot be re-created: {replayed.unavailable}.")
    if not 0 <= k < len(replayed.pages):
        abort(404, f"The episode's pages run from 0 to {len(replayed.pages) - 1}; there is no page {k}.")
    return current_app.response_class(replayed.pages[k], mimetype="text/html")


def _pair(a: str, b: str) -> tuple[Run, Run]:
    library = get_library()
    return library.load(a), library.load(b)


@bp.get("/<a>/vs/<b>")
def compare(a: str, b: str):
    """Goal by goal: which run solved what (query ``show``: all, differ, a, b)."""
    run_a, run_b = _pair(a, b)
    goals_a, goals_b = run_a.by_goal(), run_b.by_goal()
    common = sorted(set(goals_a) & set(goals_b))
    show = request.args.get("show", "all")
    if show not in ("all", "differ", "a", "b"):
        abort(400, "show must be all, differ, a or b")
    rows = []
    counts = Counter()
    for goal in common:
        ea, eb = goals_a[goal], goals_b[goal]
        verdict = "a" if ea.reward > eb.reward else "b" if eb.reward > ea.reward else "tie"
        counts[verdict] += 1
        counts["both" if ea.success and eb.success else "a only" if ea.success else "b only" if eb.success else "neither"] += 1
        if show == "all" or (show == "differ" and verdict != "tie") or show == verdict:
            rows.append({"goal": goal, "a": ea, "b": eb, "verdict": verdict})
    same_goals = run_a.goal_set is None or run_b.goal_set is None or run_a.goal_set == run_b.goal_set
    return _render("runs/compare.html", a=a, b=b, run_a=run_a, run_b=run_b, rows=rows, counts=counts,
                   common=len(common), show=show, same_goals=same_goals, pct=_pct)


@bp.get("/<a>/vs/<b>/<int:goal>")
def compare_goal(a: str, b: str, goal: int):
    """The two runs' episodes of one goal, side by side."""
    library = get_library()
    run_a, run_b = _pair(a, b)
    ea, eb = run_a.by_goal().get(goal), run_b.by_goal().get(goal)
    if ea is None or eb is None:
        abort(404, f"Goal {goal} is not in both runs.")
    sides = []
    for name, run, episode in ((a, run_a, ea), (b, run_b, eb)):
        replayed = library.replayed(run, episode)
        bought = episode.purchased and len(replayed.pages) >= 2
        sides.append({"name": name, "run": run, "episode": episode, "replayed": replayed,
                      "steps": [(i, _action_text(s), s) for i, s in enumerate(episode.log.steps)],
                      "shown": len(replayed.pages) - (2 if bought else 1),
                      "shown_label": "the page it bought from" if bought else "the last page",
                      "info": episode.reward_info or {}, "last": episode.last})
    return _render("runs/compare_goal.html", a=a, b=b, goal=goal, sides=sides, instruction=ea.instruction)
