"""The run viewer: ``webshop-gym serve --runs DIR`` shows the runs of ``eval --out`` in the browser.

Routes (``<run>`` is a run file's name in ``DIR`` without ``.jsonl``, ``<episode>`` the
episode's position in the file, from 0):

* ``GET /runs/``: the runs (state, done / planned, shop, goal set, policy, prompt, split, Score
  and SR with their intervals, date), settings that differ only by seed aggregated, and a form to
  compare two (``?baseline=NAME``: every other run's comparison with ``NAME``, listed).
* ``GET /runs/<run>``: the run's settings, figures and failure tags, and its episodes, a page
  at a time, sorted and filtered on the server (query ``sort``, ``desc``, ``q``, ``outcome``,
  ``cause``, ``tag``, ``category``, ``page``, ``per``).
* ``GET /runs/<run>/episodes.csv`` and ``.../episodes.jsonl``: the episodes (the filtered,
  sorted set) as ``eval --json --episodes`` reports them, plus the viewer's columns.
* ``GET /runs/<run>/<episode>?step=k``: the episode's diagnosis (what was bought against the
  target, the named misses, where the target was in each search, the failure tag) and its
  stepper: the page the agent saw before action ``k + 1`` (re-created by replaying the logged
  actions in a :class:`~webshop_gym.envs.env.WebShopEnv` in ``html`` mode), with the element it
  clicked and the target product highlighted, the action and the model's output.
* ``GET /runs/<run>/<episode>/page/<k>``: that page itself, exactly the env's HTML
  (``?mark=1``: with the viewer's highlights, as the stepper shows it).
* ``GET /runs/<run>/goal/<goal>?play=k``: one goal of a run: every play of it (a goal played
  several times: ``eval --samples K``, a protocol's repeats or price seeds) with its sample,
  price seed, reward, success and failure tag, the goal's successes of its plays, and the
  ``k``-th play (default the first) with its diagnosis and actions.
* ``GET /runs/<a>/vs/<b>``: goal by goal, which run solved what, when both runs played the same
  shop and goal set (else the figures side by side only); ``.../vs/<b>/<goal>?play=k``: the two
  runs' plays of one goal, and the ``k``-th of each side by side (``play_b``: run b's).

Each run file is indexed once (:class:`~webshop_gym.runs.index.RunIndex`: byte offsets and a
compact summary per episode; a file that grows is read on from where it was, one that is
replaced is read again); files above ``RUNS_INDEX_INLINE_BYTES`` are indexed on a background
thread, with a progress line on stderr, while every page stays available.  An episode is read
from disk when it is opened.  Parsed episodes, re-created pages (per episode, a window of
steps around the one shown) and sorted orders are cached within byte budgets.

The routes live in one module per kind of page, on the blueprint of :mod:`.viewer` (with what
the pages share; a run's settings and figures as they show them: :mod:`.run_summary`):
:mod:`.run_list`, :mod:`.run_pages` (a run and its exports), :mod:`.episode_pages` (stepper,
prompt, answer, page), :mod:`.comparison_pages` and :mod:`.goal_pages`.  Importing this module
registers them all, in the order above (the URL map's order); register :data:`bp` from here.
"""

from __future__ import annotations

# The route modules register their routes as they are imported, in this order: the URL map's.
# isort: off
from webshop_gym.server import run_list, run_pages, episode_pages, comparison_pages, goal_pages  # noqa: F401
# isort: on
from webshop_gym.server.viewer import bp

__all__ = ["bp"]
