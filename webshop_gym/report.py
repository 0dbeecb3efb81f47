"""``webshop-gym report``: an evaluation report of one or more runs (``eval --out``), HTML or Markdown.

For each run: Score and SR with bootstrap 95% confidence intervals, mean steps, valid-action and
purchase rates, the mean reward breakdown, SR by product category and the failure causes
(rules in ``docs/runs.md``).  Every later run is compared with the first on their common goals:
goals won / lost / tied, paired-bootstrap intervals of the Score and SR differences, a sign
test and McNemar's test (:mod:`webshop_gym.report_stats`).  Plots (:mod:`webshop_gym.report_plots`,
matplotlib: ``pip install 'webshop-gym[report]'``) show the reward histogram, SR by category,
the steps distribution, the failure causes and the breakdown means.  The HTML file is
self-contained (images embedded as data URIs); Markdown refers to PNG files written beside it.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from webshop_gym.report_stats import Interval, PairedComparison, bootstrap_ci, paired
from webshop_gym.runs import CAUSES, Run, load_run, now_iso

__all__ = ["Report", "RunSummary", "add_arguments", "build_report", "to_html", "to_markdown", "run"]

#: Resamples of every bootstrap (``--bootstrap``).
RESAMPLES = 10_000


@dataclass
class RunSummary:
    """One run's row of the report.

    Attributes:
        label: the run's name (its file name without ``.jsonl``; the path when two names clash).
        run: the run.
        score, sr: with their bootstrap 95% intervals.
        categories: per product category ``{"episodes", "successes", "sr"}``.
        causes: episodes per main failure cause; ``any_causes``: episodes with each cause at all.
    """

    label: str
    run: Run
    score: Interval | None
    sr: Interval | None
    categories: dict[str, dict]
    causes: Counter
    any_causes: Counter

    @property
    def figures(self) -> dict:
        """The run's figures (as ``webshop-gym eval`` reports them)."""
        return self.run.figures


@dataclass
class Comparison:
    """Run ``b`` against the first run ``a`` (``paired`` is ``None`` when they cannot be paired)."""

    a: RunSummary
    b: RunSummary
    paired: PairedComparison | None
    note: str = ""


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
    prices: tuple[float | None, float | None] = (None, None)


def _labels(paths: list[Path]) -> list[str]:
    names = [p.name[:-6] if p.name.endswith(".jsonl") else p.stem for p in paths]
    clash = {n for n, c in Counter(names).items() if c > 1}
    return [str(p) if n in clash else n for n, p in zip(names, paths)]


def summarize_run(label: str, run: Run, resamples: int = RESAMPLES, seed: int = 0) -> RunSummary:
    """A run's report row (errored episodes of a served model are left out: they are counted apart)."""
    scored = [e for e in run.episodes if not e.errored]
    rewards = [e.reward for e in scored]
    categories: dict[str, dict] = {}
    for e in scored:
        c = categories.setdefault(e.category, {"episodes": 0, "successes": 0})
        c["episodes"] += 1
        c["successes"] += int(e.success)
    for c in categories.values():
        c["sr"] = 100.0 * c["successes"] / c["episodes"]
    return RunSummary(
        label, run, bootstrap_ci(rewards, resamples, seed), bootstrap_ci([e.success for e in scored], resamples, seed),
        dict(sorted(categories.items())), Counter(e.cause for e in scored if e.cause),
        Counter(c for e in scored for c in e.causes),
    )  # fmt: skip


def compare(a: RunSummary, b: RunSummary, resamples: int = RESAMPLES, seed: int = 0) -> Comparison:
    """Pair run ``b`` with run ``a`` on their common goals (not across different goal sets)."""
    if a.run.goal_set and b.run.goal_set and a.run.goal_set != b.run.goal_set:
        return Comparison(a, b, None, f"different goal sets ({a.run.goal_set} vs {b.run.goal_set}): not paired")
    goals_a = {g: e for g, e in a.run.by_goal().items() if not e.errored}
    goals_b = {g: e for g, e in b.run.by_goal().items() if not e.errored}
    common = sorted(set(goals_a) & set(goals_b))
    if not common:
        return Comparison(a, b, None, "no goal in common: not paired")
    note = "" if len(common) == len(goals_a) == len(goals_b) else f"paired on the {len(common)} goals both runs played"
    result = paired([goals_a[g].reward for g in common], [goals_b[g].reward for g in common], resamples, seed)
    return Comparison(a, b, result, note)


def build_report(paths: list[str | os.PathLike], resamples: int = RESAMPLES, seed: int = 0,
                 title: str | None = None, price_input: float | None = None,
                 price_output: float | None = None) -> Report:
    """Read the runs and compute the report (raises :class:`~webshop_gym.recorder.LogError` for a bad file).

    Shards of one evaluation (``eval --shard i/n``) are read as one run
    (:func:`webshop_gym.run_shards.group_shards`); ``price_input`` / ``price_output`` (per million
    prompt / completion tokens) give a served model's runs their cost.
    """
    from webshop_gym.run_shards import group_shards

    files = [Path(p) for p in paths]
    runs, notes = group_shards([(label, load_run(path)) for label, path in zip(_labels(files), files)])
    rows = [summarize_run(label, run, resamples, seed) for label, run in runs]
    comparisons = [compare(rows[0], row, resamples, seed) for row in rows[1:]]
    for row in rows:
        if not row.run.complete and "shards" not in row.run.header:  # merged shards: noted above
            notes.append(f"{row.label}: the run has no summary line (the evaluation did not finish): "
                         f"{len(row.run.episodes)} episodes.")
        if not row.run.header:
            notes.append(f"{row.label}: a trajectory log without a run line (policy, split and settings unknown).")
    report = Report(rows, comparisons, int(resamples), int(seed), now_iso(), title or "WebShop evaluation report", notes)
    report.prices = (price_input, price_output)
    return report


# -- rendering ------------------------------------------------------------------------------------


def _f(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ci(interval: Interval | None, digits: int = 1) -> str:
    return "-" if interval is None else interval.format(digits)


def _p(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def tables(report: Report) -> dict[str, tuple[list[str], list[list[str]]]]:
    """The report's tables as (header, rows) of strings, shared by HTML and Markdown."""
    out: dict[str, tuple[list[str], list[list[str]]]] = {}
    header = ["run", "policy", "split", "episodes", "Score [95% CI]", "SR % [95% CI]", "mean steps", "valid %",
              "purchased %", "r_type", "r_att", "r_option", "r_price"]
    rows = []
    for row in report.rows:
        f, b, run = row.figures, row.figures["breakdown"], row.run
        errored = f["counts"].get("errored", 0)
        episodes = str(f["episodes"]) + (f" (+{errored} errored)" if errored else "")
        rows.append([row.label, run.policy, run.split, episodes, _ci(row.score), _ci(row.sr),
                     _f(f["mean_steps"], 2), _f(f["valid_rate"]), _f(b["purchase_rate"]),
                     *(_f(b[k], 3) for k in ("r_type", "r_att", "r_option", "r_price"))])
    out["runs"] = (header, rows)
    if report.comparisons:
        header = ["run vs first", "goals", "won / lost / tied", "Δ Score [95% CI]", "sign test p",
                  "solved: only first / only this / both", "Δ SR [95% CI]", "McNemar p"]
        rows = []
        for c in report.comparisons:
            p = c.paired
            name = f"{c.b.label} vs {c.a.label}"
            if p is None:
                rows.append([name, "-", c.note, "-", "-", "-", "-", "-"])
                continue
            rows.append([name + (f" ({c.note})" if c.note else ""), str(p.goals), f"{p.won} / {p.lost} / {p.tied}",
                         _ci(p.score_diff), _p(p.sign_p),
                         f"{p.solved_a_only} / {p.solved_b_only} / {p.solved_both}", _ci(p.sr_diff), _p(p.mcnemar_p)])
        out["paired"] = (header, rows)
    if any("tokens" in row.figures for row in report.rows):
        from webshop_gym.concurrent_eval import cost

        header = ["run", "errored episodes", "tokens / episode", "prompt tokens", "completion tokens", "requests",
                  "retries", "wall time (s)", "cost"]
        rows = []
        for row in report.rows:
            f = row.figures
            if "tokens" not in f:
                rows.append([row.label] + ["-"] * (len(header) - 1))
                continue
            t = f["tokens"]
            wall = (row.run.summary or {}).get("result", {}).get("wall_s") if row.run.summary else None
            price = cost(t, *report.prices)
            rows.append([row.label, f"{f['errored']} of {f['episodes'] + f['errored']}", _f(t["per_episode"], 0),
                         f"{t['prompt']:,}", f"{t['completion']:,}", f"{f['requests']:,}", f"{f['retries']:,}",
                         _f(wall, 1), "-" if price is None else f"{price:.4f}"])
        out["served"] = (header, rows)
    categories = sorted({c for row in report.rows for c in row.categories})
    out["categories"] = (["category", *[row.label for row in report.rows]], [
        [c, *(f"{row.categories[c]['sr']:.1f} ({row.categories[c]['successes']}/{row.categories[c]['episodes']})"
              if c in row.categories else "-" for row in report.rows)] for c in categories])
    out["causes"] = (["failure cause", *[row.label for row in report.rows]], [
        [c, *(f"{row.causes.get(c, 0)} ({row.any_causes.get(c, 0)})" for row in report.rows)] for c in CAUSES]
        + [["(solved)", *(str(row.figures['counts']['successes']) for row in report.rows)]])
    settings = []
    for row in report.rows:
        h = row.run.header
        fp = h.get("fingerprint") or {}
        settings.append([row.label, str(h.get("seed", "?")), str(h.get("max_steps", "?")), str(h.get("prompt") or "-"),
                         f"{fp.get('products', '?')} products, {fp.get('goals', '?')} {fp.get('goal_kind', '')} goals",
                         str(fp.get("goal_set", "?")), str(h.get("package", "?")), str(h.get("created", "?"))])
    out["settings"] = (["run", "seed", "max steps", "prompt", "shop", "goal set", "package", "written"], settings)
    return out


TABLE_TITLES = {
    "runs": "Runs",
    "paired": "Paired comparison with the first run",
    "served": "Model calls: errored episodes (not scored), tokens, requests, retries, wall time, cost",
    "categories": "SR by product category: % (solved / episodes)",
    "causes": "Failure causes: episodes whose main cause it is (episodes with it at all)",
    "settings": "Settings",
}


def to_html(report: Report, plots: dict[str, bytes] | None) -> str:
    """The report as one self-contained HTML document (plots as data URIs)."""
    from webshop_gym.render.html import template_environment
    from webshop_gym.report_plots import PLOTS

    images = [{"title": PLOTS[name][0], "src": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}
              for name, png in (plots or {}).items()]
    template = template_environment().get_template("report.html")
    return template.render(report=report, tables=tables(report), titles=TABLE_TITLES, images=images,
                           plots_off=plots is None)


def _md_cell(text: str) -> str:
    escaped = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    for char in "*_`[]<>":
        escaped = escaped.replace(char, "\\" + char)
    return escaped


def to_markdown(report: Report, images: dict[str, str] | None) -> str:
    """The report as Markdown; ``images`` maps plot names to the relative paths of their PNG files."""
    from webshop_gym.report_plots import PLOTS

    lines = [f"# {_md_cell(report.title)}", "",
             f"{len(report.rows)} run(s); bootstrap 95% intervals from {report.resamples:,} resamples (seed "
             f"{report.seed}); written {report.created}.", ""]
    lines += [f"> {_md_cell(note)}" for note in report.notes]
    if report.notes:
        lines.append("")
    for key, (header, rows) in tables(report).items():
        lines += [f"## {TABLE_TITLES[key]}", "", "| " + " | ".join(_md_cell(h) for h in header) + " |",
                  "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines.append("")
    if images:
        lines += ["## Plots", ""]
        lines += [f"![{PLOTS[name][0]}]({path})" + "\n" for name, path in images.items()]
    lines += ["Score = 100 x mean final reward; SR = % of episodes with reward exactly 1.0. Failure causes follow "
              "the rules of webshop-gym's docs/runs.md.", ""]
    return "\n".join(lines)


# -- command line ------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``webshop-gym report``."""
    from webshop_gym import _argtypes as types

    parser.add_argument("runs", nargs="+", metavar="RUN", type=types.existing_file,
                        help="run files written by `webshop-gym eval --out` (the first is the baseline of comparisons)")
    parser.add_argument("--out", metavar="FILE", type=types.output_file,
                        help="write the report here (default: stdout); Markdown plots go to FILE's stem + '_files/'")
    parser.add_argument("--format", choices=["html", "md"],
                        help="html (self-contained) or md (default: from --out's suffix, .md -> md, else html)")
    parser.add_argument("--bootstrap", type=_resamples, default=RESAMPLES, metavar="N",
                        help=f"bootstrap resamples of each interval (default {RESAMPLES:,})")
    parser.add_argument("--seed", type=types.seed, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument("--title", default=None, help="the report's title")
    parser.add_argument("--no-plots", action="store_true", help="tables only (no matplotlib needed)")
    parser.add_argument("--merged", metavar="RUN.jsonl", type=types.output_file,
                        help="also write the shard files given (eval --shard i/n, all n of one evaluation) as one "
                             "run file, for replay and serve --runs")
    parser.add_argument("--price-input", metavar="USD", type=types.non_negative_float,
                        help="price per million prompt tokens: served models' runs show their cost")
    parser.add_argument("--price-output", metavar="USD", type=types.non_negative_float,
                        help="price per million completion tokens")


def _resamples(text: str) -> int:
    from webshop_gym import _argtypes as types

    value = types.positive_int(text)
    if value > 1_000_000:
        raise argparse.ArgumentTypeError(f"must be at most 1,000,000, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run ``webshop-gym report``."""
    fmt = args.format or ("md" if args.out and Path(args.out).suffix.lower() in (".md", ".markdown") else "html")
    report = build_report(args.runs, resamples=args.bootstrap, seed=args.seed, title=args.title,
                          price_input=args.price_input, price_output=args.price_output)
    if args.merged:
        from webshop_gym.run_shards import merge_shards

        merge_shards(args.runs, args.merged)
        print(f"webshop-gym report: wrote the merged run {args.merged}", file=sys.stderr)
    plots: dict[str, bytes] | None = None
    if not args.no_plots and (fmt == "html" or args.out):
        from webshop_gym.report_plots import draw_all

        plots = draw_all(report.rows)
    written: list[str] = []
    if fmt == "html":
        text = to_html(report, plots)
    else:
        images: dict[str, str] = {}
        if plots:
            out = Path(args.out)
            folder = out.with_name(out.stem + "_files")
            if folder.exists() and not folder.is_dir():
                from webshop_gym.error import Error

                raise Error(f"{folder} is a file; the Markdown report's plots go to that folder")
            folder.mkdir(exist_ok=True)
            for name, png in plots.items():
                (folder / f"{name}.png").write_bytes(png)
                images[name] = f"{folder.name}/{name}.png"
            written.append(f"{len(plots)} plots in {folder}{os.sep}")
        text = to_markdown(report, images)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        extra = f" and {written[0]}" if written else ""
        print(f"webshop-gym report: wrote {args.out}{extra} ({len(report.rows)} run(s), {fmt})", file=sys.stderr)
    else:
        sys.stdout.write(text)
        if fmt == "md" and not args.no_plots:
            print("webshop-gym report: Markdown on stdout has no plots (pass --out FILE.md to write them)",
                  file=sys.stderr)
    return 0

