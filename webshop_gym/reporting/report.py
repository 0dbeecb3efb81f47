"""``webshop-gym report``: an evaluation report of one or more runs (``eval --out``), HTML or Markdown.

For each run: Score and SR with bootstrap 95% confidence intervals, mean steps, valid-action and
purchase rates, the mean reward breakdown, SR by product category and the failure causes
(rules in ``docs/runs.md``).  Every later run is compared with the first on their common goals:
goals won / lost / tied, paired-bootstrap intervals of the Score and SR differences, a sign
test and McNemar's test (:mod:`webshop_gym.analysis.stats`).  Plots (:mod:`webshop_gym.reporting.plots`,
matplotlib: ``pip install 'webshop-gym[report]'``) show the reward histogram, SR by category,
the steps distribution, the failure causes and the breakdown means.  The HTML file is
self-contained (images embedded as data URIs); Markdown refers to PNG files written beside it.
"""

from __future__ import annotations

import base64
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from webshop_gym.analysis.at_k import AT_K_COLUMNS, AtK, at_k_cells, paired_at_k
from webshop_gym.analysis.figures import (
    billed,
    compare_goals,
    cost,
    goal_keys,
    intervals,
    pairing_goals,
    pairing_key,
    samples_of,
)
from webshop_gym.analysis.intervals import goal_sr_interval
from webshop_gym.analysis.intervals import method as interval_method
from webshop_gym.analysis.stats import (
    Goals,
    Interval,
    NoInterval,
    PairedComparison,
    paired_cells,
    paired_columns,
)
from webshop_gym.analysis.taxonomy import CAUSES, FAMILY, SOLVED, TAG_RULES, TAGS
from webshop_gym.error import Error
from webshop_gym.protocols.comparable import comparison, refusal
from webshop_gym.protocols.decoding import decoding_text
from webshop_gym.protocols.naming import bare_name, setting_note
from webshop_gym.protocols.play import protocol_difference
from webshop_gym.render.html import template_environment
from webshop_gym.reporting.completeness import (
    ALLOW_FLAG,
    Completeness,
    completeness,
    latex_footnotes,
)
from webshop_gym.reporting.completeness import refusal as incomplete_refusal
from webshop_gym.reporting.loading import merged_here, read_runs
from webshop_gym.reporting.plots import PLOTS
from webshop_gym.runs.index import CSV_COLUMNS, RunIndex, csv_row, seed_groups
from webshop_gym.runs.run import Run, now_iso
from webshop_gym.utils.paths import written_whole

__all__ = ["Report", "RunSummary", "build_report", "protocol_groups", "published_table", "to_html", "to_latex",
           "to_markdown"]

#: Resamples of every bootstrap (``--bootstrap``).
RESAMPLES = 10_000


@dataclass
class RunSummary:
    """One run's row of the report.

    Attributes:
        label: the run's name (its file name without ``.jsonl``; the path when two names clash).
        run: the run.
        score, sr: with their 95% intervals (a :class:`~webshop_gym.analysis.stats.NoInterval` where withheld).
        categories: per product category ``{"episodes", "successes", "sr", "low", "high"}`` (SR's 95%
            interval, over goals for a sampled run; where it is withheld, ``low`` and ``high`` are the
            SR and ``withheld`` says why).
        causes: purchases per first reward part short; ``any_causes``: purchases with each part short.
    """

    label: str
    run: Run
    score: Interval | NoInterval | None
    sr: Interval | NoInterval | None
    categories: dict[str, dict]
    causes: Counter
    any_causes: Counter
    _index: Any = field(default=None, repr=False, compare=False)
    _completeness: Completeness | None = field(default=None, repr=False, compare=False)

    @property
    def completeness(self) -> Completeness:
        """How much of its plan the run scored (:mod:`webshop_gym.reporting.completeness`)."""
        if self._completeness is None:
            self._completeness = completeness(self.run)
        return self._completeness

    @property
    def figures(self) -> dict:
        """The run's figures (as ``webshop-gym eval`` reports them)."""
        return self.run.figures

    @property
    def tags(self) -> Counter:
        """Episodes per failure tag (:mod:`webshop_gym.analysis.taxonomy`; ``solved`` and ``errored`` included)."""
        return self.index().tag_counts()

    def index(self):
        """The run file's :class:`~webshop_gym.runs.index.RunIndex` (failure tags, exports), read once."""
        if self._index is None:

            self._index = RunIndex(self.run.path)
            self._index.refresh()
        return self._index


@dataclass
class Comparison:
    """Run ``b`` against the first run ``a`` (``paired`` is ``None`` when they cannot be paired)."""

    a: RunSummary
    b: RunSummary
    paired: PairedComparison | None
    note: str = ""
    at_k: list[AtK] = field(default_factory=list)  # runs of --samples K: mean@K and pass@K, B against A


@dataclass
class Report:
    """Everything a report shows."""

    rows: list[RunSummary]
    comparisons: list[Comparison]
    resamples: int
    seed: int
    created: str
    title: str = "WebShop evaluation report"
    notes: list[str] = field(default_factory=list)
    viewer: str | None = None  # base URL of `serve --runs` for links to episodes (asked for: --viewer-url)
    bundle: dict[str, str] = field(default_factory=dict)  # per run label, its bundle folder relative to the report
    bundle_index: str | None = None  # the bundle's index.html relative to the report (written with --bundle)
    prices: tuple[float | None, float | None] = (None, None)


def summarize_run(label: str, run: Run, resamples: int = RESAMPLES, seed: int = 0) -> RunSummary:
    """A run's report row (errored episodes of a served model are left out: they are counted apart).

    Score and SR with their intervals are :func:`webshop_gym.analysis.figures.intervals`' (over
    goals for a run that played each goal several times), as ``eval`` and the viewer give them.
    """
    scored = [e for e in run.episodes if e.scored]
    keys = goal_keys(samples_of(run.protocol), [e.goal_index for e in run.episodes],
                     [e.log.record.get("protocol") for e in run.episodes])
    categories: dict[str, dict] = {}
    members: dict[str, list[int]] = {}
    for i, e in enumerate(run.episodes):
        if not e.scored:
            continue
        c = categories.setdefault(e.category, {"episodes": 0, "successes": 0})
        c["episodes"] += 1
        c["successes"] += int(e.success)
        members.setdefault(e.category, []).append(i)
    for name, c in categories.items():
        c["sr"] = 100.0 * c["successes"] / c["episodes"]
        picked = members[name]  # the category's SR interval, over its goals as the run's (the plot's error bars)
        found = goal_sr_interval(Goals.of([run.episodes[i].reward for i in picked],
                                          None if keys is None else [keys[i] for i in picked]))
        if isinstance(found, NoInterval):  # a count no interval can stand behind: no error bar, the reason kept
            c["low"] = c["high"] = c["sr"]
            c["withheld"] = found.reason
        else:
            c["low"], c["high"] = found.low, found.high
    found = intervals([e.reward for e in run.episodes], [not e.scored for e in run.episodes], resamples, seed, keys)
    return RunSummary(
        label, run, found["score"], found["sr"],
        dict(sorted(categories.items())), Counter(e.cause for e in scored if e.cause),
        Counter(c for e in scored for c in e.causes),
    )  # fmt: skip


def _pairing_goals(run: Run):
    """A run's goals as a comparison pairs them (:func:`~webshop_gym.analysis.figures.pairing_goals`)."""
    price_seed = (run.header.get("fingerprint") or {}).get("price_seed")
    keys = [pairing_key(e.goal_index, e.log.record.get("protocol"), price_seed) for e in run.episodes]
    return pairing_goals(keys, [e.reward for e in run.episodes], [not e.scored for e in run.episodes],
                         samples_of(run.protocol))


def refusal_of(a: Run, b: Run) -> str:
    """Why runs ``a`` and ``b`` cannot be paired, in one line (``""``: they can).

    Decided from what they played (:mod:`webshop_gym.protocols.comparable`: episodes, step cap,
    success rule, shop, observation mode, prompt); runs written before protocol records are
    compared by their protocols and goal sets as before.
    """
    fields = comparison(a.header, b.header)
    if fields is not None:
        return refusal(fields)
    refused = protocol_difference(a.protocol, b.protocol)
    notes = [f"different protocols ({refused})"] if refused else []
    if a.goal_set and b.goal_set and a.goal_set != b.goal_set:
        notes.insert(0, f"different goal sets ({a.goal_set} vs {b.goal_set})")
    return "; ".join(notes)


def compare(a: RunSummary, b: RunSummary, resamples: int = RESAMPLES, seed: int = 0) -> Comparison:
    """Pair run ``b`` with run ``a`` on their common goals (not when they played different things: :func:`refusal_of`)."""
    refused = refusal_of(a.run, b.run)
    if refused:
        return Comparison(a, b, None, f"not paired: {refused}")
    goals_a, goals_b = _pairing_goals(a.run), _pairing_goals(b.run)
    found = compare_goals(goals_a, goals_b, resamples, seed, samples_of(a.run.protocol))
    if found is None:
        return Comparison(a, b, None, "no goal in common: not paired")
    common, result = found
    note = "" if len(common) == len(goals_a) == len(goals_b) else f"paired on the {len(common)} goals both runs played"
    k = max(samples_of(a.run.protocol), samples_of(b.run.protocol))
    at_k = paired_at_k(goals_a.take(common), goals_b.take(common), k, resamples, seed, result) if k > 1 else []
    return Comparison(a, b, result, note, at_k)


def build_report(paths: list[str | os.PathLike], resamples: int = RESAMPLES, seed: int = 0,
                 title: str | None = None, price_input: float | None = None,
                 price_output: float | None = None, viewer: str | None = None, keep_paths: bool = False) -> Report:
    """Read the runs and compute the report (raises :class:`~webshop_gym.runs.log.LogError` for a bad file).

    Shards of one evaluation (``eval --shard i/n``) are read as one run
    (:func:`webshop_gym.runs.shards.group_shards`); ``price_input`` / ``price_output`` (per million
    prompt / completion tokens) give a served model's runs their cost; ``viewer`` (the base URL of
    ``serve --runs``) links failure examples to the viewer's episodes; ``keep_paths`` names clashing
    runs by their whole paths (else by as much of their folders as tells them apart).
    """
    files = [Path(p) for p in paths]
    runs, notes = read_runs(files, keep_paths)
    rows = [summarize_run(label, run, resamples, seed) for label, run in runs]
    comparisons = [compare(rows[0], row, resamples, seed) for row in rows[1:]]
    for row in rows:  # what merging shards noted, per run: why a merged run is incomplete
        own = [n[len(row.label) + 2:] for n in notes if n.startswith(row.label + ": ")]
        row._completeness = completeness(row.run, own)
    for row in rows:
        errored = int(row.figures["counts"].get("errored", 0))
        if errored:
            notes.append(f"{row.label}: {errored:,} of {errored + row.figures['episodes']:,} episodes errored (the "
                         "model's calls failed): left out of Score, SR and every figure.")
        if not row.run.complete and "shards" not in row.run.header:  # merged shards: noted above
            notes.append(f"{row.label}: the run has no summary line (the evaluation did not finish): "
                         f"{len(row.run.episodes)} episodes.")
        if not row.run.header:
            notes.append(f"{row.label}: a trajectory log without a run line (policy, split and settings unknown).")
        if row.figures.get("unreachable"):
            episodes = f", {row.figures['unreachable_episodes']} episodes" if "unreachable_episodes" in row.figures else ""
            notes.append(f"{row.label}: {row.figures['unreachable']} unreachable goals{episodes} (no purchase of the "
                         f"target scores 1.0 on them); SR on the others {_f(row.figures.get('sr_reachable'))}%.")
    report = Report(rows, comparisons, int(resamples), int(seed), now_iso(), title or "WebShop evaluation report", notes,
                    viewer)
    report.prices = (price_input, price_output)
    return report


# -- rendering ------------------------------------------------------------------------------------


def _f(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ci(interval: Interval | NoInterval | None, digits: int = 1) -> str:
    """``81.9 [72.3, 90.1]``; a withheld interval: ``20.0 (no 95% interval: 2 of 10 episodes)``; ``-``: none."""
    return "-" if interval is None else interval.format(digits)


def tables(report: Report) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The report's tables as (header, rows) of strings, shared by HTML and Markdown."""
    out: dict[str, tuple[list[str], list[list[str]]]] = {}
    header = ["run", "policy", "split", "episodes", "Score [95% CI]", "SR % [95% CI]", "SR % on reachable goals",
              "mean steps", "valid %", "purchased %", "r_type", "r_att", "r_option", "r_price", "done / planned",
              "protocol (fingerprint)"]
    rows = []
    marks = setting_marks(report)
    for row in report.rows:
        f, b, run = row.figures, row.figures["breakdown"], row.run
        errored = f["counts"].get("errored", 0)
        episodes = str(f["episodes"]) + (f" (+{errored} errored)" if errored else "")
        reachable = "-" if f.get("sr_reachable") is None else f"{_f(f['sr_reachable'])} ({f['unreachable']} unreachable)"
        rows.append([row.label, run.policy, run.split, episodes, _ci(row.score), _ci(row.sr), reachable,
                     _f(f["mean_steps"], 2), _f(f["valid_rate"]), _f(b["purchase_rate"]),
                     *(_f(b[k], 3) for k in ("r_type", "r_att", "r_option", "r_price")),
                     f"{len(run.episodes):,} / " + ("?" if run.planned is None else f"{run.planned:,}"),
                     _protocol_cell(run, marks[row.label]) + _incomplete_mark(row)])
    out["runs"] = (header, rows)
    out["published"] = published_table(report)
    if report.comparisons:
        header = ["run vs first", *paired_columns(samples_of(report.rows[0].run.protocol))]
        rows = []
        for c in report.comparisons:
            p = c.paired
            name = f"{c.b.label} vs {c.a.label}"
            if p is None:
                rows.append([name, "-", c.note, "-", "-", "-", "-", "-"])
                continue
            rows.append([name + (f" ({c.note})" if c.note else ""), *paired_cells(p)])
        out["paired"] = (header, rows)
        at_k = [[f"{c.b.label} vs {c.a.label}", *at_k_cells(r)] for c in report.comparisons for r in c.at_k]
        if at_k:
            out["paired-at-k"] = (["run vs first", *AT_K_COLUMNS], at_k)
    if any("tokens" in row.figures for row in report.rows):

        header = ["run", "errored episodes", "tokens / episode", "prompt tokens", "completion tokens", "requests",
                  "retries", "wall time (s)", "cost", "whole run: tokens", "whole run: requests", "whole run: cost"]
        rows = []
        for row in report.rows:
            f = row.figures
            if "tokens" not in f:
                rows.append([row.label] + ["-"] * (len(header) - 1))
                continue
            t = f["tokens"]
            result = (row.run.summary or {}).get("result", {}) if row.run.summary else {}
            sessions = result.get("sessions") or ([{"wall_s": result.get("wall_s")}] if result else [])
            walls = [x.get("wall_s") for x in sessions]
            wall = sum(walls) if walls and None not in walls else None  # every session's time, when all are known
            whole = result.get("billed") or billed(f, None)
            price, whole_price = cost(t, *report.prices), cost(whole["tokens"], *report.prices)
            rows.append([row.label, f"{f['errored']} of {f['episodes'] + f['errored']}", _f(t["per_episode"], 0),
                         f"{t['prompt']:,}", f"{t['completion']:,}", f"{f['requests']:,}", f"{f['retries']:,}",
                         _f(wall, 1), "-" if price is None else f"{price:.4f}", f"{whole['tokens']['total']:,}",
                         f"{whole['requests']:,}", "-" if whole_price is None else f"{whole_price:.4f}"])
        out["served"] = (header, rows)
    categories = sorted({c for row in report.rows for c in row.categories})
    out["categories"] = (["category", *[row.label for row in report.rows]], [
        [c, *(f"{row.categories[c]['sr']:.1f} ({row.categories[c]['successes']}/{row.categories[c]['episodes']})"
              if c in row.categories else "-" for row in report.rows)] for c in categories])
    out["tag-counts"] = tag_table(report)
    out["causes"] = (["reward part short", *[row.label for row in report.rows]], [
        [c, *(str(row.any_causes.get(c, 0)) for row in report.rows)] for c in CAUSES])
    settings = []
    for row in report.rows:
        h = row.run.header
        fp = h.get("fingerprint") or {}
        settings.append([row.label, str(h.get("seed", "?")), str(h.get("max_steps", "?")), str(h.get("prompt") or "-"),
                         f"{fp.get('products', '?')} products, {fp.get('goals', '?')} {fp.get('goal_kind', '')} goals",
                         str(fp.get("goal_set", "?")), str(h.get("package", "?")), str(h.get("created", "?"))])
    out["settings"] = (["run", "seed", "max steps", "prompt", "shop", "goal set", "package", "written"], settings)

    groups = seed_groups([(row.label, row.run.header, row.figures) for row in report.rows])
    if groups:
        out["seeds"] = (["policy", "prompt", "split", "goal set", "seeds", "runs", "Score: mean ± sd", "SR %: mean ± sd"],
                        [[g["policy"], g["prompt"], g["split"], g["goal_set"], ", ".join(g["seeds"]), ", ".join(g["runs"]),
                          f"{g['score'][0]:.1f} ± {g['score'][1]:.1f}", f"{g['sr'][0]:.1f} ± {g['sr'][1]:.1f}"]
                         for g in groups])
    return out


def tag_table(report: Report) -> tuple[list[str], list[list[str]]]:
    """Episodes per failure tag, a column per run (the one taxonomy, :mod:`webshop_gym.analysis.taxonomy`)."""
    counts = [row.tags for row in report.rows]
    rows = [[tag, FAMILY[tag], *(str(c.get(tag, 0)) for c in counts)] for tag in TAGS if any(c.get(tag) for c in counts)]
    rows.append([SOLVED, "", *(str(c.get(SOLVED, 0)) for c in counts)])
    return ["failure tag", "family", *[row.label for row in report.rows]], rows


# -- protocols: groups and the published tables' rows ----------------------------------------------------


def _protocol_cell(run: Run, mark: str = "") -> str:
    record = run.protocol
    if record is None:
        return "- (recorded before protocols)"
    return f"{bare_name(record)}{mark} ({record.get('fingerprint')})"


def setting_marks(report: Report) -> dict[str, str]:
    """Per run label, the footnote mark of its protocol cell (`` [1]``; ``""``: nothing beyond the name to say).

    The protocol cell holds the bare name (``verl-agent``); how the run played it (seed,
    validation, samples per goal, a deviation from the published setting:
    :func:`~webshop_gym.protocols.naming.setting_note`) is a numbered note under the table, one
    number per distinct note.
    """
    numbers: dict[str, int] = {}
    marks = {}
    for row in report.rows:
        note = setting_note(row.run.protocol)
        marks[row.label] = f" [{numbers.setdefault(note, len(numbers) + 1)}]" if note else ""
    return marks


def setting_footnotes(report: Report) -> list[str]:
    """The notes the marks of :func:`setting_marks` point to: ``[1] verl-agent: seed 0, 4 samples per goal (run a, run b)``."""
    found: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for row in report.rows:
        note = setting_note(row.run.protocol)
        if note:
            found.setdefault(note, []).append(row.label)
            names.setdefault(note, bare_name(row.run.protocol))
    return [f"[{i}] {names[note]} as played: {note} ({', '.join(labels)})."
            for i, (note, labels) in enumerate(found.items(), 1)]


def _incomplete_mark(row: RunSummary) -> str:
    """What the runs table adds to the protocol cell of a run that did not score its plan."""
    c = row.completeness
    return "" if c.complete else f" [incomplete: {c.words()}]"


def protocol_groups(report: Report) -> list[dict]:
    """The runs grouped by protocol fingerprint, in order of first appearance.

    Returns:
        Per group: ``name`` (the protocol, for people), ``fingerprint`` (``None``: runs written
        before protocols were recorded), ``rows`` (the :class:`RunSummary` of each run).
    """
    groups: dict = {}
    for row in report.rows:
        record = row.run.protocol
        key = None if record is None else record.get("fingerprint")
        group = groups.setdefault((key, row.completeness.complete), {"name": "-" if record is None else bare_name(record), "fingerprint": key,
                                        "rows": []})
        group["rows"].append(row)
    return list(groups.values())


SR_COLUMN = 6
"""Where SR stands in :func:`published_table`'s columns."""


def published_table(report: Report) -> tuple[list[str], list[list[str]]]:
    """The rows in the shape published WebShop tables use, grouped by protocol, ready to paste.

    Columns: the run (method), the protocol (its bare name, a footnote mark when the run played it
    with a seed, samples or a deviation to say: :func:`setting_marks`) and its fingerprint, the
    decoding its policy played (``no decoding`` for rule, random and oracle), scored / planned
    episodes, Score and SR with their 95% intervals, the valid-action rate, mean steps and, when a
    run played each goal several times (``eval --samples K``), mean@K and pass@K with their 95%
    intervals over goals (mean@K and SR in one column, ``SR = mean@K``, when they are the same
    figure with the same interval on every such run), then the protocols' own metrics.  Figures come from the run's figures
    (:func:`webshop_gym.analysis.figures.summarize`), never recomputed here.
    A run that did not score its whole plan (:mod:`webshop_gym.reporting.completeness`) gets no
    fingerprint (``incomplete: 5 / 12 scored``) and a block of its own.
    """
    sampled = sorted({int((row.figures.get("protocol") or {}).get("samples", 1)) for row in report.rows} - {1})
    family = _family_metrics(report)
    rows, merged = [], set(sampled)
    marks = setting_marks(report)
    for group in protocol_groups(report):
        for row in group["rows"]:
            f = row.figures
            pf = f.get("protocol") or {}
            c = row.completeness
            fingerprint = (group["fingerprint"] or "-") if c.complete else f"incomplete: {c.cell()} scored"
            cells = [row.label, group["name"] + marks[row.label], fingerprint, _decoding(row.run.protocol), c.cell(),
                     _ci(row.score), _ci(row.sr),
                     _f(f["valid_rate"]), _f(f["mean_steps"], 2)]
            for k in sampled:
                mine = pf.get("samples") == k
                if mine and _sampled_cell(pf, f"mean@{k}") != cells[SR_COLUMN]:
                    merged.discard(k)  # SR is not mean@K here (an incomplete run, unequal samples): both columns
                cells += [_sampled_cell(pf, f"mean@{k}") if mine else "-", _sampled_cell(pf, f"pass@{k}") if mine else "-"]
            own = {m["label"]: m["value"] for m in pf.get("metrics") or () if m["label"] in family}
            cells += [_f(own.get(label)) for label in family]
            rows.append(cells)
    header = ["method", "protocol", "fingerprint", "decoding", "scored / planned", "Score [95% CI]", "SR % [95% CI]",
              "valid %", "mean steps"]
    if len(merged) == 1 and merged == set(sampled):  # SR equals mean@K on every run of K samples: one column
        header[SR_COLUMN] = f"SR = mean@{sampled[0]} % [95% CI]"
    base = len(header)
    for k in sampled:
        header += ([] if k in merged and len(merged) == 1 else [f"mean@{k} [95% CI]"]) + [f"pass@{k} [95% CI]"]
    if len(merged) == 1 and merged == set(sampled):
        drop = base  # the mean@K column, right after the columns above
        rows = [r[:drop] + r[drop + 1:] for r in rows]
    header += family
    return header, rows


def _decoding(record) -> str:
    """The decoding a run's policy played, in words (``no decoding``: rule, random, oracle; ``-``: not recorded)."""
    if not isinstance(record, dict) or "played_decoding" not in record:
        return "-"
    return decoding_text(record["played_decoding"])


def _family_metrics(report: Report) -> list[str]:
    """Labels of the protocols' own metrics that are not Score or SR, a published-table column each.

    AgentBoard's Progress, ETO's Success (any purchase); ``-`` for runs whose protocol has none.
    """
    out: list[str] = []
    for row in report.rows:
        for m in (row.figures.get("protocol") or {}).get("metrics") or ():
            plain = {"raw_reward": row.figures.get("score"), "success": row.figures.get("sr")}.get(m["of"])
            same = m["value"] is not None and plain is not None and abs(m["value"] - plain) < 1e-9
            if not same and m["label"] not in out and m["label"] not in ("Score", "SR"):
                out.append(m["label"])
    return out


def _sampled_cell(figures: dict, key: str) -> str:
    """mean@K or pass@K of a run's protocol figures with its interval, as ``eval`` prints it (``-``: none)."""
    found = (figures.get("intervals") or {}).get(key)
    reason = (figures.get("intervals_withheld") or {}).get(key)
    if reason:  # a binomial count no interval can stand behind: the figure and why, as eval prints it
        return f"{_f(figures.get(key))} ({reason.split(';')[0]})"
    return _f(figures.get(key)) + (f" [{_f(found['low'])}, {_f(found['high'])}]" if found else "")


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def _tex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text)).replace("±", r"$\pm$").replace("≈", r"$\approx$").replace("−", "-")


def to_latex(report: Report, allow_incomplete: bool = False) -> str:
    r"""The published-table rows (:func:`published_table`) as a LaTeX ``tabular`` (booktabs), one block per protocol.

    Every note of the report is a comment above the table.  A run that did not score its whole
    plan is refused (:class:`~webshop_gym.error.Error`, naming each and why) unless
    ``allow_incomplete``: then its method cell carries a mark (``$^{a}$``) and a footnote after
    the tabular (``\par{\footnotesize $^{a}$\,...}``) says why.
    """
    header, rows = published_table(report)
    groups = protocol_groups(report)
    ordered = [row for group in groups for row in group["rows"]]  # the published rows' order
    marks = latex_footnotes([(row.label, row.completeness) for row in ordered])
    if marks and not allow_incomplete:
        raise Error(incomplete_refusal([(row.label, row.completeness) for row in ordered]))
    lines = [f"% {_tex(report.title)}: {len(report.rows)} run(s); {_tex(method(report))}; written {report.created}",
             "% One block per protocol fingerprint: equal fingerprints played the same episodes under the same rules.",
             *(f"% Note: {_comment(note)}" for note in report.notes),
             *(f"% Incomplete ({ALLOW_FLAG}): {_comment(row.label)}: {_comment(row.completeness.words())}"
               for row in ordered if row.label in marks),
             r"\begin{tabular}{l" + "l" * 3 + "r" * (len(header) - 4) + "}", r"\toprule",
             " & ".join(_tex(h) for h in header) + r" \\", r"\midrule"]
    k = 0
    for g, group in enumerate(groups):
        if g:
            lines.append(r"\midrule")
        for _ in group["rows"]:
            cells = [_tex(c) for c in rows[k]]
            cells[1] = re.sub(r" \[(\d+)\]$", r"$^{\1}$", cells[1])  # the protocol's setting: a footnote mark
            if ordered[k].label in marks:
                cells[0] += f"$^{{{marks[ordered[k].label]}}}$"
            lines.append(" & ".join(cells) + r" \\")
            k += 1
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [re.sub(r"^\[(\d+)\] ", r"\\par{\\footnotesize $^{\1}$\\,", _tex(note)) + "}"
              for note in setting_footnotes(report)]
    lines += [f"\\par{{\\footnotesize $^{{{marks[row.label]}}}$\\,{_tex(row.label)}: {_tex(row.completeness.words())}."
              f" Not the protocol's row.}}" for row in ordered if row.label in marks]
    return "\n".join([*lines, ""])


def _comment(text: str) -> str:
    """``text`` on one line of a LaTeX comment."""
    return " ".join(str(text).split())


def method(report: Report) -> str:
    """How the report's intervals are computed (the one method of :mod:`webshop_gym.analysis.intervals`, by runs' samples)."""
    samples = [samples_of(row.run.protocol) for row in report.rows]
    return interval_method(report.resamples, report.seed, samples)  # it names the paired differences' bootstrap


def failure_tags(report: Report, examples: int = 5) -> list[dict]:
    """Per run, per failure tag (:mod:`webshop_gym.analysis.diagnosis`): episodes and the first ``examples`` positions.

    ``hrefs``: a link per example (``None`` each when there is nowhere to link): the episode's
    page in the bundle written with the report (``report.bundle``, relative), else in the viewer
    at ``report.viewer`` (asked for with ``--viewer-url``; not for shards the report merged
    itself, which the viewer serves apart), else none.
    """
    out = []
    for row in report.rows:
        table = row.index().table()
        tags: dict[str, list[int]] = {}
        for i in range(len(table)):
            tags.setdefault(table.tag_name(i), []).append(i)
        bundled = report.bundle.get(row.label)
        for tag in TAGS:
            if tag in tags:
                shown = table.examples(tags[tag], examples)  # distinct goals first: not K samples of one goal
                if bundled is not None:
                    hrefs = [f"{bundled}episodes/{p}/step-0.html" for p in shown]
                elif report.viewer and not merged_here(row.run):
                    hrefs = [f"{report.viewer.rstrip('/')}/runs/{quote(row.run.name)}/{p}" for p in shown]
                else:
                    hrefs = [None] * len(shown)
                out.append({"run": row.label, "tag": tag, "episodes": len(tags[tag]), "examples": shown,
                            "hrefs": hrefs})
    return out


TABLE_TITLES = {
    "runs": "Runs",
    "published": "Rows as published tables give them (one block per protocol: compare numbers within a block only)",
    "paired": "Paired comparison with the first run",
    "paired-at-k": "mean@K and pass@K against the first run: per goal, paired over goals (Δ = this minus first)",
    "served": "Model calls: errored episodes (not scored), tokens, requests, retries, wall time (every session), "
              "cost; whole run: the kept episodes and the attempts --resume dropped",
    "categories": "SR by product category: % (solved / episodes)",
    "tag-counts": "Failure tags: episodes per tag (docs/runs.md, Failure tags)",
    "causes": "Reward parts short: purchases with each part of the reward below full",
    "settings": "Settings",
    "seeds": "Settings run with several seeds: mean ± sample standard deviation over the seeds",
}


def to_html(report: Report, plots: dict[str, bytes] | None) -> str:
    """The report as one self-contained HTML document (plots as data URIs)."""
    images = [{"title": PLOTS[name][0], "src": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}
              for name, png in (plots or {}).items()]

    template = template_environment().get_template("report.html")
    return template.render(report=report, tables=tables(report), titles=TABLE_TITLES, images=images,
                           footnotes=_footnotes(report),
                           plots_off=plots is None, method=method(report), failure_tags=failure_tags(report),
                           tag_rules=TAG_RULES)


def _footnotes(report: Report) -> dict[str, list[str]]:
    """Per table, the notes under it: the protocol cells' marks (:func:`setting_footnotes`)."""
    notes = setting_footnotes(report)
    return {"runs": notes, "published": notes} if notes else {}


def _md_cell(text: str) -> str:
    escaped = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    for char in "*_`[]<>":
        escaped = escaped.replace(char, "\\" + char)
    return escaped


def to_markdown(report: Report, images: dict[str, str] | None) -> str:
    """The report as Markdown; ``images`` maps plot names to the relative paths of their PNG files."""
    lines = [f"# {_md_cell(report.title)}", "",
             f"{len(report.rows)} run(s); {_md_cell(method(report))}; written {report.created}.", ""]
    if report.bundle_index:
        lines += [f"Every run's pages (episodes, goals, comparisons): [{_md_cell(report.bundle_index)}](<{report.bundle_index}>).",
                  ""]
    lines += [f"> {_md_cell(note)}" for note in report.notes]
    if report.notes:
        lines.append("")
    for key, (header, rows) in tables(report).items():
        lines += [f"## {TABLE_TITLES[key]}", "", "| " + " | ".join(_md_cell(h) for h in header) + " |",
                  "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
        for note in _footnotes(report).get(key, ()):
            lines += [_md_cell(note), ""]
    tags = failure_tags(report)
    if tags:
        lines += ["## Failure tags: episodes per tag, with examples", "", "| run | tag | episodes | examples |",
                  "|---|---|---|---|"]
        for t in tags:
            if any(t["hrefs"]):
                shown = ", ".join(f"[#{p}](<{h}>)" for p, h in zip(t["examples"], t["hrefs"]))
            else:
                shown = ", ".join(f"#{p}" for p in t["examples"])
            lines.append(f"| {_md_cell(t['run'])} | {_md_cell(t['tag'])} | {t['episodes']} | {shown} |")
        lines.append("")
    if images:
        lines += ["## Plots", ""]
        lines += [f"![{PLOTS[name][0]}]({path})" + "\n" for name, path in images.items()]
    lines += ["Score = 100 x mean final reward; SR = % of episodes with reward exactly 1.0. Failure tags follow "
              "the rules of webshop-gym's docs/runs.md.", ""]
    return "\n".join(lines)


# -- exports -----------------------------------------------------------------------------------------


def write_episodes(report: Report, csv_path: str | None = None, jsonl_path: str | None = None,
                   keep_paths: bool = False) -> None:
    """Write the runs' episodes (``run``, then :func:`webshop_gym.runs.index.export_record`'s fields) as CSV / JSON lines.

    ``keep_paths``: keep server addresses and machine paths in the errors' texts (else cut:
    :mod:`webshop_gym.runs.sharing`).
    """
    import contextlib
    import csv
    import json

    with contextlib.ExitStack() as stack:  # each file appears whole, or not at all
        csv_handle = stack.enter_context(written_whole(csv_path, encoding="utf-8", newline="")) if csv_path else None
        json_handle = stack.enter_context(written_whole(jsonl_path, encoding="utf-8")) if jsonl_path else None
        writer = csv.writer(csv_handle, lineterminator="\n") if csv_handle else None
        if writer:
            writer.writerow(["run", *CSV_COLUMNS])
        for row in report.rows:
            for record in row.index().iter_export(keep_paths=keep_paths):
                if writer:
                    writer.writerow([row.label, *csv_row(record)])
                if json_handle:
                    json_handle.write(json.dumps({"run": row.label, **record}, ensure_ascii=False) + "\n")


