"""A run as the viewer's pages sum it up: its settings in words, Score and SR with their intervals, how far it got.

:func:`stats_of` computes the figures with the one interval method
(:mod:`webshop_gym.analysis.intervals`), cached per file state; :func:`describe` words the run
line (no machine path on shared pages); :func:`progress_of` says whether the run is complete,
still being written or stopped.  The list of runs, a run's page and the comparisons show them.
"""

from __future__ import annotations

from pathlib import Path

from webshop_gym.server.viewer import shared

from webshop_gym.analysis.figures import goal_keys, intervals
from webshop_gym.analysis.intervals import RESAMPLES
from webshop_gym.protocols.naming import bare_name, setting_note
from webshop_gym.runs.index import IndexTable, RunIndex
from webshop_gym.runs.liveness import writer_state
from webshop_gym.runs.run import planned_episodes
from webshop_gym.runs.sharing import shareable_text
from webshop_gym.utils.bytelru import ByteLRU

__all__ = ["describe", "progress_of", "samples_per_goal", "stats_of"]


_INTERVALS = ByteLRU(1 << 20)


def stats_of(index: RunIndex) -> dict:
    """Score and SR with the one interval method (:mod:`webshop_gym.analysis.intervals`), cached per file state."""
    key = (str(index.path), index.size, index.mtime_ns)
    found = _INTERVALS.get(key)
    if found is None:
        t = index.table()
        protocols = [index.protocol_fields(i) for i in range(len(t))] if t.samples is not None else []
        goals = goal_keys(samples_per_goal(t), t.goal.tolist(), protocols)  # a sampled run: by goals, as eval groups them
        found = intervals(t.reward, t.unscored, RESAMPLES, 0, goals)  # errored or cut episodes never enter Score/SR
        _INTERVALS.put(key, found, 1024)
    return found


def samples_per_goal(t: IndexTable) -> int:
    """The samples per goal of a run (1: one play per goal)."""
    return 1 if t.samples is None else t.samples.samples


def describe(header: dict) -> dict:
    """A run's settings for the pages: shop, goal set, policy, prompt, protocol.

    The pages name the shop by its folder's name and its data files' digests (``shop_name``,
    ``shop_files``), never by its absolute path (``shop_path``: cut to its last part on shared
    pages; the folded run line shows the path as recorded).
    """
    fp = header.get("fingerprint") or {}
    shop = header.get("shop") or {}
    path = str(shop.get("path") or "")
    if shared():
        path = shareable_text(path)
    return {"shop": (Path(path).name or path or "?") + (f" ({fp['products']} products)" if fp.get("products") else ""),
            "shop_path": path, "shop_name": Path(path).name or path or "?",
            "shop_files": ", ".join(f"{k} {v}" for k, v in (fp.get("files") or {}).items()),
            "goal_set": fp.get("goal_set") or "-",
            "goals": f"{fp.get('goals', '?')} {fp.get('goal_kind', '')}".strip() if fp else "-",
            "policy": str(header.get("policy") or "?"), "prompt": str(header.get("prompt") or "-"),
            "split": str(header.get("split") or "?"), "seed": header.get("seed"),
            "created": str(header.get("created") or ""), "max_steps": header.get("max_steps"),
            **_protocol_about(header)}


def _protocol_about(header: dict) -> dict:
    """The run's protocol for the pages: its bare name, how the run played it (a note) and its fingerprint.

    ``-`` for a run written before protocols; the note (seed, validation, samples per goal, a
    deviation from the published setting: :func:`~webshop_gym.protocols.naming.setting_note`) is
    ``""`` when there is nothing to say.
    """
    record = header.get("protocol") if isinstance(header.get("protocol"), dict) else None
    return {"protocol": bare_name(record), "protocol_note": setting_note(record),
            "protocol_fingerprint": (record or {}).get("fingerprint") or "-"}


def progress_of(index: RunIndex) -> dict:
    """How far a run got: ``done`` episodes of the ``planned`` ones and its ``state``.

    ``state``: ``"complete"`` (its summary line is there), ``"running"`` (a writer holds the file),
    ``"stopped"`` (no summary line and no writer: it will not grow), or ``"incomplete"`` (no
    summary line; whether a writer is at work cannot be told here).
    """
    state = "complete" if index.summary is not None else (writer_state(index.path) or "incomplete")
    return {"done": index.episodes, "planned": planned_episodes(index.header), "state": state}
