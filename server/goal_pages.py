"""A goal's pages: every play of one goal in a run (``GET /runs/<run>/goal/<goal>``), or in two runs side by side.

``.../goal/<goal>?play=k`` lists the plays of the goal (its samples, repeats or price seeds) and
shows the ``k``-th with its diagnosis and actions; ``GET /runs/<a>/vs/<b>/<goal>`` shows one play
of each run next to each other, for two runs that can be compared.
"""

from __future__ import annotations

import numpy as np
from flask import abort, request, url_for
from webshop_gym.server.comparison_pages import pairing_refusal, refused_page, side_by_side_url
from webshop_gym.server.run_library import RunLibrary, get_library
from webshop_gym.server.run_summary import describe
from webshop_gym.server.viewer import (
    action_text,
    bp,
    episode_at,
    indexed_run,
    loaded_run,
    render_page,
    target_options,
)

from webshop_gym.analysis.diagnosis import diagnose
from webshop_gym.runs.index import RunIndex

__all__ = ["compare_goal", "goal_page"]


def _plays(loaded: RunIndex, goal: int) -> list[dict]:
    """Every play of ``goal`` in the run, in file order: play number, sample, price seed, reward, success, tag."""
    t = loaded.table()
    default_seed = (loaded.header.get("fingerprint") or {}).get("price_seed")
    out = []
    for k, position in enumerate(np.flatnonzero(t.goal == goal).tolist()):
        protocol = loaded.protocol_fields(position)  # indexed: no episode read per play
        out.append({"play": k, "position": position, "sample": protocol.get("sample"),
                    "price_seed": protocol.get("price_seed", default_seed), "reward": float(t.reward[position]),
                    "success": bool(t.success[position]), "errored": bool(t.errored[position]),
                    "tag": t.tag_name(position)})
    return out


def _play_arg(name: str, default: int = 0) -> int:
    try:
        value = int(request.args.get(name, default))
    except ValueError:
        abort(400, f"{name} must be a whole number")
    if value < 0:
        abort(400, f"{name} must be 0 or more")
    return value


def _side(library: RunLibrary, name: str, loaded: RunIndex, goal: int, play: int, side: str) -> dict:
    """One run's plays of ``goal`` and its ``play``-th episode, with its diagnosis (a goal page's column)."""
    plays = _plays(loaded, goal)
    if not plays:
        abort(404, f"Goal {goal} was not played by {name}.")
    if play >= len(plays):
        abort(404, f"{name} played goal {goal} {len(plays)} time(s) (plays 0 to {len(plays) - 1}); there is no "
                   f"play {play}.")
    position = plays[play]["position"]
    episode = episode_at(library, loaded, position)
    n = len(episode.log.steps)
    bought = episode.purchased and n >= 1
    shown = n - 1 if bought else n
    replayed = library.replayed(loaded, episode, shown)
    shop = None if replayed.unavailable else library.shop_of(loaded, episode)
    diagnosis = diagnose(episode, shop=shop, searches=None if shop is None else library.searches(loaded, episode))
    target = dict(episode.log.record.get("target") or {})
    scored = [p for p in plays if not p["errored"]]
    return {"name": name, "side": side, "number": "ab".index(side) + 1, "run": loaded, "policy": describe(loaded.header)["policy"],
            "episode": episode, "replayed": replayed, "tag": loaded.table().tag_name(position),
            "steps": [(i, action_text(s), s) for i, s in enumerate(episode.log.steps[:500])],
            "shown": shown if replayed.has(shown) else -1,
            "shown_label": "the page it bought from" if bought else "the last page",
            "info": episode.reward_info or {}, "last": episode.last, "diagnosis": diagnosis,
            "target_options": target_options(target.get("options")),
            "step_url": url_for("runs.episode_page", run=name, position=position),
            "plays": plays, "play": play, "successes": sum(p["success"] for p in scored), "scored": len(scored),
            "errored": len(plays) - len(scored)}


@bp.get("/<run>/goal/<int:goal>")
def goal_page(run: str, goal: int):
    """One goal of a run: every play of it (sample, price seed, reward, tag) and the ``?play=k``-th (default 0) in full."""
    library = get_library()
    loaded = indexed_run(run)
    play = _play_arg("play")
    side = _side(library, run, loaded, goal, play, "a")
    side["play_url"] = lambda k: url_for("runs.goal_page", run=run, goal=goal, **({"play": k} if k else {}))
    return render_page("runs/goal.html", goal=goal, sides=[side], instruction=side["episode"].instruction, crumb=run,
                   crumb_url=url_for("runs.run_page", run=run))


@bp.get("/<a>/vs/<b>/<int:goal>")
def compare_goal(a: str, b: str, goal: int):
    """The two runs' episodes of one goal side by side, each with its diagnosis (same shop and goal set only).

    Query: ``play`` (default 0): which play of the goal each run shows (``play_b``: run b's, when
    it differs), for a goal played several times (``eval --samples K``, a protocol's repeats).
    """
    library = get_library()
    run_a, run_b = loaded_run(a), loaded_run(b)
    refused, details = pairing_refusal(run_a, run_b)
    if refused:
        return refused_page(a, b, refused, details)
    play_a = _play_arg("play")
    play_b = _play_arg("play_b", play_a)
    missing = [n for n, r in ((a, run_a), (b, run_b)) if not (r.table().goal == goal).any()]
    if missing:
        abort(404, f"Goal {goal} was not played by {' and '.join(missing)}: the side-by-side view needs a goal of "
                   "both runs.")
    sides = [_side(library, a, run_a, goal, play_a, "a"), _side(library, b, run_b, goal, play_b, "b")]

    sides[0]["play_url"] = lambda k: side_by_side_url(a, b, goal, k, play_b)
    sides[1]["play_url"] = lambda k: side_by_side_url(a, b, goal, play_a, k)
    return render_page("runs/goal.html", goal=goal, sides=sides, instruction=sides[0]["episode"].instruction,
                   crumb=f"{a} vs {b}", crumb_url=url_for("runs.compare", a=a, b=b))
