"""A recorded protocol named for a table cell: the bare name, and how the run played it as a note of its own.

A published table's protocol cell holds the protocol's name (``verl-agent``), as a paper names
it; the seed, the validation draws, the samples per goal and any deviation from the protocol's
published setting (another prompt or observation mode) are a footnote of the cell
(:func:`setting_note`), never part of the name.  :func:`~webshop_gym.protocols.play.display_name`
joins both for a sentence.
"""

from __future__ import annotations

from collections.abc import Mapping

from webshop_gym.protocols.play import ADHOC, played_parts

__all__ = ["bare_name", "setting_note"]


def bare_name(record: Mapping | None) -> str:
    """The protocol's name alone (``verl-agent``; ``ad-hoc`` for a run without ``--protocol``; ``-`` without a record).

    Example:
        >>> bare_name({"name": "verl-agent", "seed": 0, "samples": 4, "deviations": ["prompt react"]})
        'verl-agent'
    """
    if not isinstance(record, Mapping):
        return "-"
    return str(record.get("name") or "?")


def setting_note(record: Mapping | None) -> str:
    """How the run played its protocol, for a footnote (``""``: nothing to say beyond the name).

    Example:
        >>> setting_note({"name": "verl-agent", "seed": 0, "samples": 4, "deviations": ["prompt react"]})
        'seed 0, 4 samples per goal; not its published setting: prompt react'
    """
    if not isinstance(record, Mapping):
        return ""
    parts = []
    if record.get("name") == ADHOC and record.get("equivalent"):
        parts.append(f"the same rules as {record['equivalent']}")
    parts += played_parts(record)
    text = ", ".join(parts)
    if record.get("deviations"):
        text += ("; " if text else "") + "not its published setting: " + "; ".join(record["deviations"])
    return text
