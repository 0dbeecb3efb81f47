"""Which runs a report reads, and under which names: one loader for run files and shards.

:func:`read_runs` reads each run file as a run and the shards of one evaluation as one run,
through one loader: each group of shards is merged into a private folder with the code of
``report --merged`` (:func:`webshop_gym.runs.shards.write_merged`) and read back from that one
file, so every table and export of a report over the shards equals the report over the merged
file.  :func:`labels_of` names the runs (their file names; where two clash, as much of their
folders as tells them apart, never a machine path unless asked).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections import Counter
from pathlib import Path

from webshop_gym.runs.run import Run, load_run
from webshop_gym.runs.shards import group_shards

__all__ = ["SHARDS_FOLDER", "labels_of", "merged_here", "read_runs"]


def labels_of(paths: list[Path], keep_paths: bool = False) -> list[str]:
    """The runs' names in a report: file names without ``.jsonl``, and where two clash, more of their paths.

    As much of their folders as tells them apart (``a/qwen``, ``b/qwen``); the whole path with
    ``keep_paths``; a file given twice: ``qwen (2)``.
    """
    names = [p.name[:-6] if p.name.endswith(".jsonl") else p.stem for p in paths]
    clash = {n for n, c in Counter(names).items() if c > 1}
    parts = [Path(os.path.abspath(p)).parts for p in paths]

    def tail(i: int, k: int) -> str:
        return "/".join((*parts[i][-k:-1], names[i]))

    out: list[str] = []
    for i, name in enumerate(names):
        if name not in clash:
            out.append(name)
            continue
        if keep_paths:
            out.append(str(paths[i]))
            continue
        others = [j for j, m in enumerate(names) if m == name and parts[j] != parts[i]]
        k = 2
        while k < len(parts[i]) and any(tail(j, k) == tail(i, k) for j in others):
            k += 1
        out.append(tail(i, k))
    seen: Counter = Counter()
    for i, label in enumerate(out):  # the same file twice
        seen[label] += 1
        if seen[label] > 1:
            out[i] = f"{label} ({seen[label]})"
    return out


#: The prefix of the private folders a report merges shards into.
SHARDS_FOLDER = "webshop-gym-shards-"


def merged_here(run: Run) -> bool:
    """Whether ``run`` is shards the report merged itself (no file of it is in the viewer's folder)."""
    return run.path.name == "merged.jsonl" and run.path.parent.name.startswith(SHARDS_FOLDER)


def read_runs(files: list[Path], keep_paths: bool = False) -> tuple[list[tuple[str, Run]], list[str]]:
    """The runs of a report, labelled, and notes: each file a run, the shards of one evaluation one run.

    The one loader of a report: shards are merged into a private folder per group (the same
    file ``--merged`` writes) and read from it by every table and export; the folder goes with
    the merged run (removed when it is no longer used, or at exit).
    """
    made: list[str] = []

    def folder() -> str:
        made.append(tempfile.mkdtemp(prefix=SHARDS_FOLDER))
        return made[-1]

    try:
        labelled = [(label, load_run(path, steps=False)) for label, path in zip(labels_of(files, keep_paths), files)]
        runs, notes = group_shards(labelled, folder=folder)
    except BaseException:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)
        raise
    for _, run in runs:
        if str(run.path.parent) in made:
            weakref.finalize(run, shutil.rmtree, str(run.path.parent), True)
    return runs, notes


