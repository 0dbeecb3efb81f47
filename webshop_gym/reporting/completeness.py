"""Whether a run scored its whole plan: what a published row must say about a run that did not.

A protocol's row in a paper is the figure over every episode of its plan.  A run cut short (no
summary line), shards with one missing, or a served run whose calls failed on some episodes
(errored: left out of Score and SR) did not score its plan: its figures are over a part of it.
:func:`completeness` says how many of the planned episodes were scored and why not all of them;
the report prints ``scored / planned`` on every published row, gives an incomplete run no
protocol fingerprint there, and ``--format latex`` refuses it unless asked (``--allow-incomplete``),
then marks its row with a footnote saying why (:func:`latex_footnotes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from webshop_gym.runs.run import Run, planned_episodes

__all__ = ["Completeness", "completeness", "completeness_of", "latex_footnotes", "refusal"]

#: The flag that lets ``report --format latex`` print incomplete runs (marked, footnoted).
ALLOW_FLAG = "--allow-incomplete"


@dataclass(frozen=True)
class Completeness:
    """How much of its plan a run scored.

    Attributes:
        scored: episodes scored (errored ones are not).
        planned: episodes the evaluation planned (``None``: the run line does not say).
        reasons: why it is not the whole plan, in words (empty: the run is complete).
    """

    scored: int
    planned: int | None
    reasons: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every planned episode was scored and the evaluation finished."""
        return not self.reasons

    def cell(self) -> str:
        """``scored / planned`` as a table cell (``12 / 256``; ``?`` when the plan is unknown)."""
        return f"{self.scored:,} / " + ("?" if self.planned is None else f"{self.planned:,}")

    def words(self) -> str:
        """Why the run is incomplete, in one line (``""`` when complete)."""
        if self.complete:
            return ""
        head = (f"{self.scored:,} of {self.planned:,} planned episodes scored" if self.planned is not None
                else f"{self.scored:,} episodes scored, of a plan the run line does not give")
        return head + ": " + "; ".join(self.reasons)


def completeness(run: Run, notes: Sequence[str] = ()) -> Completeness:
    """How much of its plan ``run`` scored.

    Args:
        run: the run (shards of one evaluation merged: its header has ``shards``).
        notes: what merging its shards noted (missing shards, shards without a summary line).
    """
    return completeness_of(run.figures, run.header, run.complete, notes)


def completeness_of(figures: dict, header: dict, finished: bool, notes: Sequence[str] = ()) -> Completeness:
    """How much of its plan a run scored, from its figures, its run line and whether its summary line is there."""
    scored = int(figures.get("episodes") or 0)
    errored = int((figures.get("counts") or {}).get("errored") or figures.get("errored") or 0)
    planned = planned_episodes(header)
    reasons = []
    if not finished:
        if "shards" in header and notes:
            reasons += list(notes)
        else:
            reasons.append("no summary line (the evaluation did not finish)")
    if errored:
        reasons.append(f"{errored:,} episodes errored (the model's calls failed; left out of Score and SR)")
    unfinished = int((figures.get("counts") or {}).get("unfinished") or 0)
    if unfinished:
        reasons.append(f"{unfinished:,} episode{'' if unfinished == 1 else 's'} without a terminal record (cut "
                       "mid-episode; not scored, as eval --resume replays them)")
    if planned is None:
        reasons.append("the run line does not say how many episodes were planned")
    elif scored < planned and not reasons:
        reasons.append("fewer episodes than planned")
    return Completeness(scored, planned, tuple(reasons))


def refusal(rows: Sequence[tuple[str, Completeness]]) -> str | None:
    """Why ``report --format latex`` refuses these ``(label, completeness)`` rows (``None``: all complete)."""
    bad = [(label, c) for label, c in rows if not c.complete]
    if not bad:
        return None
    listed = ", ".join(f"{label} ({c.words()})" for label, c in bad)
    return (f"{len(bad)} run{'' if len(bad) == 1 else 's'} did not score {'its' if len(bad) == 1 else 'their'} "
            f"whole plan: {listed}. A published row must be the protocol's whole plan; pass {ALLOW_FLAG} to print "
            "them marked, each with a footnote saying why")


def latex_footnotes(rows: Sequence[tuple[str, Completeness]]) -> dict[str, str]:
    """Per incomplete row's label, its footnote mark (``a``, ``b``, ... ``z``, ``aa``, ...), in row order."""
    marks = {}
    for label, c in rows:
        if not c.complete:
            k = len(marks)
            marks[label] = "".join(chr(ord("a") + d) for d in _digits(k))
    return marks


def _digits(k: int) -> list[int]:
    out = []
    while True:
        out.insert(0, k % 26)
        k = k // 26 - 1
        if k < 0:
            return out
