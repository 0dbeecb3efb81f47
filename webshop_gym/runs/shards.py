"""Shards of one evaluation (``eval --shard i/n``) read as one run, or merged into one run file.

Several ``eval`` processes can share a split: ``--shard i/n`` plays the ``i``-th of ``n``
contiguous blocks of the goals, each into its own run file.  :func:`group_shards` finds the run
files that are shards of the same evaluation (same shop, goal set, policy, prompt, settings; only
the shard differs) and :func:`merge_runs` reads them as one :class:`~webshop_gym.runs.run.Run`
(episodes in goal order, figures over all of them); ``webshop-gym report`` does this on its
own.  :func:`merge_shards` writes the merged run file (a ``run`` line without ``shard``, the
episodes in goal order, a ``summary`` line) for ``replay`` and the viewer.

A protocol's run (``--protocol``, ``--samples``) is sharded by its plan: shard ``i/n`` plays the
``i``-th block of the plan's episodes, each identified by its ordinal (its goal, price seed and
sample), and every shard records the whole plan's protocol.  Its shards merge in plan order, and
shards of different protocols (fingerprints) refuse to merge, saying how the protocols differ.

One loader: a report over shard files (:func:`group_shards` with a ``folder``) writes their merged
run file there with the code of :func:`merge_shards` and reads everything (figures, failure tags,
examples, exports) from that one file, so a report over the shards equals the report over the
``--merged`` file, table by table and export by export.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from webshop_gym.analysis.figures import summarize
from webshop_gym.error import Error
from webshop_gym.protocols.play import ADHOC, protocol_difference
from webshop_gym.runs.log import FORMAT_VERSION, dumps_line, episode_lines
from webshop_gym.runs.run import Run, RunEpisode, load_run, now_iso

__all__ = ["episode_key", "group_shards", "merge_runs", "merge_shards", "shard_key", "write_merged"]

#: Run-line fields that differ between the shards of one evaluation.
_PER_SHARD = ("run", "created", "shard", "goals", "num_goals", "arguments", "concurrency", "num_envs", "num_workers",
              "package", "protocol")  # protocol: the ad-hoc one of the goals asked, which the goal check compares


def shard_key(header: dict, goals: bool = True) -> str | None:
    """What the shards of one evaluation share (``None`` for a run that is not a shard).

    Args:
        header: the run line.
        goals: include the goals the whole evaluation was asked for (``--num-goals``,
            ``--goals``), which every shard of it shares.
    """
    if not isinstance(header.get("shard"), list):
        return None
    common = {k: v for k, v in header.items() if k not in _PER_SHARD}
    common["shards"] = header["shard"][1]
    if goals:
        common["evaluation goals"] = _asked_goals(header)
    return json.dumps(common, sort_keys=True, default=str)


def _asked_goals(header: dict) -> list:
    arguments = header.get("arguments") if isinstance(header.get("arguments"), dict) else {}
    return [arguments.get("num_goals"), arguments.get("goals")]


def merge_runs(runs: Sequence[Run]) -> tuple[Run, list[str]]:
    """One run of the shards ``runs`` (of one evaluation) and notes on what is missing.

    Raises:
        ValueError: the runs are not shards of one evaluation, or two hold the same goal.
    """
    protocols = [r.header.get("protocol") for r in runs]
    if any(_planned(p) for p in protocols):  # a protocol's plan: every shard records the whole plan's protocol
        for other in protocols[1:]:
            difference = protocol_difference(protocols[0], other)
            if difference:
                raise ValueError(f"the shards were played under different protocols ({difference})")
    keys = {shard_key(r.header) for r in runs}
    if None in keys or len(keys) != 1:
        raise ValueError("only shards of one evaluation (eval --shard i/n, same settings) can be merged")
    total = runs[0].header["shard"][1]
    indices = sorted(r.header["shard"][0] for r in runs)
    notes = []
    if len(set(indices)) != len(indices):
        raise ValueError(f"shard {[i for i in indices if indices.count(i) > 1][0]} of {total} is given twice")
    missing = [i for i in range(total) if i not in indices]
    if missing:
        notes.append(f"shards {', '.join(map(str, missing))} of {total} are missing")
    episodes: list = []
    seen: set[int] = set()
    for run in sorted(runs, key=lambda r: r.header["shard"][0]):
        for e in run.episodes:
            key = episode_key(e)
            if key in seen:
                what = f"episode {key} of the plan" if _ordinal(e.log.episode) is not None else f"goal {key}"
                raise ValueError(f"{what} is in two shards")
            seen.add(key)
            episodes.append(e)
    episodes.sort(key=episode_key)
    merged = [RunEpisode(i, e.log, e.reward, e.success, e.purchased, e.truncated, e.steps, e.invalid_actions, e.causes)
              for i, e in enumerate(episodes)]
    header = {k: v for k, v in runs[0].header.items() if k not in ("shard", "run", "created")}
    ranges = [r.header.get("goals") or [0, 0] for r in runs]
    header.update(shards=total, goals=[min(g[0] for g in ranges), max(g[1] for g in ranges)],
                  num_goals=sum(int(r.header.get("num_goals") or 0) for r in runs),
                  created=min(str(r.header.get("created") or "") for r in runs))
    figures = summarize([e.record() for e in merged], protocol=header.get("protocol"))
    summary = None
    if not missing and all(r.complete for r in runs):
        walls = [float((r.summary.get("result") or {}).get("wall_s") or 0.0) for r in runs]
        summary = {"type": "summary", "result": {**figures, "wall_s": max(walls), "shards": total}}
    elif not missing:
        notes.append("some shards have no summary line (their evaluations did not finish)")
    return Run(runs[0].path, header, merged, summary, figures), notes


def _planned(record) -> bool:
    """A run of a protocol's plan (``--protocol``, ``--samples``): its episodes are keyed by their plan ordinal."""
    return isinstance(record, dict) and (record.get("name") != ADHOC or int(record.get("samples") or 1) > 1)


def _ordinal(episode_id: str) -> int | None:
    return int(episode_id[1:]) if episode_id[:1] == "e" and episode_id[1:].isdigit() else None


def episode_key(episode: RunEpisode) -> int:
    """What identifies an episode among the shards: its plan ordinal (goal, price seed, sample), else its goal."""
    ordinal = _ordinal(episode.log.episode)
    return episode.goal_index if ordinal is None else ordinal


def group_shards(labelled: Sequence[tuple[str, Run]], folder: Callable[[], str | os.PathLike] | None = None,
                 steps: bool = False) -> tuple[list[tuple[str, Run]], list[str]]:
    """Merge the shards among ``(label, run)`` pairs (in the place of the first shard of each); other runs stay.

    Args:
        labelled: the runs read, with their labels.
        folder: called once per group of shards, gives a folder to write the group's merged run
            file in (``merged.jsonl``; its summary line only when every shard is there and
            finished, :func:`write_merged`); the group is read back from that file, the one file
            every reader of the merged run then reads.  ``None``: the group is merged in memory
            (its ``path`` is the first shard's).
        steps: with ``folder``, read the merged file with every step (``load_run``'s ``steps``).
    """
    groups: dict[str, list[int]] = {}
    asked: dict[str, tuple[str, list]] = {}
    for i, (label, run) in enumerate(labelled):
        key = shard_key(run.header)
        if key is not None:
            groups.setdefault(key, []).append(i)
            first = asked.setdefault(shard_key(run.header, goals=False), (label, _asked_goals(run.header)))
            if first[1] != _asked_goals(run.header):
                raise Error(f"{first[0]} and {label} are shards of evaluations of different goals "
                            f"(--num-goals/--goals {_goals_text(first[1])} vs {_goals_text(_asked_goals(run.header))}): "
                            "their shards do not make one run")
    out, notes = [], []
    for i, (label, run) in enumerate(labelled):
        key = shard_key(run.header)
        if key is None:
            out.append((label, run))
            continue
        members = groups[key]
        if members[0] != i:
            continue
        name = _common_name([labelled[k][0] for k in members])
        try:
            merged, problems = merge_runs([labelled[k][1] for k in members])
        except ValueError as exc:
            raise Error(f"{name}: {exc}") from None
        notes += [f"{name}: {p}" for p in problems]
        if folder is not None:
            path = Path(folder()) / "merged.jsonl"
            write_merged([labelled[k][1] for k in members], merged, path)
            merged = load_run(path, steps=steps)
        out.append((name, merged))
    return out, notes


def _goals_text(asked: list) -> str:
    num_goals, goals = asked
    return " ".join(str(x) for x in (num_goals, goals) if x is not None) or "all"


def _common_name(labels: list[str]) -> str:
    prefix = os.path.commonprefix(labels).rstrip("._-/ ")
    return (prefix or labels[0]) + f" ({len(labels)} shard{'' if len(labels) == 1 else 's'})"


def merge_shards(paths: Sequence[str | os.PathLike], out: str | os.PathLike) -> Run:
    """Write the shards' merged run file to ``out`` (episodes in goal order, a summary line); return the run."""
    inputs = {Path(p).resolve() for p in paths}
    if Path(out).resolve() in inputs:
        raise Error(f"cannot merge into {out}: it is one of the shards read (choose another file)")
    runs = [load_run(p) for p in paths]
    if len({shard_key(r.header) for r in runs}) > 1 and len({shard_key(r.header, goals=False) for r in runs}) == 1:
        raise Error("cannot merge: the shards come from evaluations of different goals (--num-goals/--goals)")
    try:
        merged, notes = merge_runs(runs)
    except ValueError as exc:

        raise Error(f"cannot merge: {exc}") from None
    if notes:

        raise Error(f"cannot merge: {'; '.join(notes)}")
    write_merged(runs, merged, out)
    return load_run(out)


def write_merged(runs: Sequence[Run], merged: Run, out: str | os.PathLike) -> None:
    """Write ``merged`` (:func:`merge_runs` of the shard files ``runs``) as one run file ``out``.

    The run line of the merged run, each episode's lines as its shard wrote them, in the merged
    order, and a summary line when the merged run has one (every shard there and finished).
    Shards are read one at a time (a shard's lines in memory at most), in the order their
    episodes come; the file appears whole (written beside it, then renamed).
    """
    source = {e.log.episode: run.path for run in runs for e in run.episodes}
    first = runs[0].header
    header = {"type": "run", "format": first.get("format", FORMAT_VERSION), "run": first.get("run"),
              **{k: v for k, v in merged.header.items() if k not in ("type", "format", "run")}}
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    lines: dict[str, list[str]] = {}
    loaded = None
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(dumps_line(header) + "\n")
        for e in merged.episodes:
            path = source[e.log.episode]
            if path != loaded:  # shards are contiguous blocks: each is read once
                lines, loaded = episode_lines(path), path
            for line in lines[e.log.episode]:
                handle.write(line + "\n")
        if merged.summary is not None:
            result = dict(merged.summary["result"])
            handle.write(dumps_line({"type": "summary", "run": header["run"], "finished": now_iso(), "result": result})
                         + "\n")
    os.replace(tmp, out)
