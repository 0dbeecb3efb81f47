"""The report's plots (matplotlib, drawn off-screen into PNG bytes; no pyplot state).

Each function takes the report's per-run rows (:class:`webshop_gym.reporting.report.RunSummary`) and
returns PNG bytes: Score and SR with their intervals, the reward histogram, SR by product
category (with its 95% intervals), the distribution of steps, failure tags and the mean reward
breakdown, one bar (group) per run.  Legends sit outside the axes; a chart shows the unit of
its table.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from webshop_gym.analysis.taxonomy import TAGS
from webshop_gym.error import DependencyNotInstalled

__all__ = ["PLOTS", "draw_all", "require_matplotlib"]

INSTALL = "pip install 'webshop-gym[report]'"


def require_matplotlib():
    """Import matplotlib's ``Figure`` (raises :class:`DependencyNotInstalled` naming the extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"the report's plots need matplotlib ({exc}); install it with: {INSTALL} (or pass --no-plots)"
        ) from exc
    return Figure


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    return buffer.getvalue()


def _figure(title: str, width: float = 7.0, height: float = 3.6):
    Figure = require_matplotlib()
    fig = Figure(figsize=(width, height))
    ax = fig.subplots()
    ax.set_title(title, fontsize=11)
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return fig, ax


def _grouped(ax, groups: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], fmt: str | None = None,
             errors: Sequence[tuple[Sequence[float], Sequence[float]]] | None = None) -> None:
    """Bars per group, one colour per series (run); ``errors``: per series (lows, highs) drawn as error bars.

    The legend sits outside the axes (right of them), so it never covers a bar.
    """
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        yerr = None
        if errors is not None:
            lows, highs = (np.asarray(a, float) for a in errors[i])
            v = np.asarray(values, float)
            yerr = np.vstack([np.clip(v - lows, 0, None), np.clip(highs - v, 0, None)])
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, label=label, yerr=yerr,
                      capsize=2 if yerr is not None else 0, error_kw={"elinewidth": 0.8, "alpha": 0.7})
        if fmt:
            ax.bar_label(bars, labels=[fmt.format(v) for v in values], fontsize=7, padding=1)
    ax.set_xticks(x, groups, fontsize=8, rotation=20 if max((len(g) for g in groups), default=0) > 8 else 0,
                  ha="right" if max((len(g) for g in groups), default=0) > 8 else "center")
    if len(series) > 1:
        ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))


def reward_histogram(rows) -> bytes:
    """Share of episodes per reward bin: exactly 0, (0, 0.1), [0.1, 0.2), ..., [0.9, 1), exactly 1."""
    fig, ax = _figure("Final reward")
    edges = np.linspace(0.0, 1.0, 11)
    labels = ["0", *[f"<{edges[i + 1]:.1f}" for i in range(10)], "1"]
    series = []
    for row in rows:
        r = np.array([e.reward for e in row.run.episodes if e.scored], float)
        counts = [int((r == 0).sum())]
        counts += [int(((r > 0) & (r >= edges[i]) & (r < edges[i + 1])).sum()) for i in range(10)]
        counts.append(int((r == 1.0).sum()))
        series.append((row.label, [100 * c / max(1, len(r)) for c in counts]))
    _grouped(ax, labels, series)
    ax.set_ylabel("episodes (%)")
    ax.set_xlabel("reward (bins of 0.1 between exactly 0 and exactly 1 = success)")
    return _png(fig)


def sr_by_category(rows) -> bytes:
    """SR per product category of the goal's target, with its 95% intervals as error bars (the report's: Wilson)."""
    categories = sorted({c for row in rows for c in row.categories})
    fig, ax = _figure("Success rate by product category (95% intervals)", width=max(7.0, 1.1 * len(categories)))
    series, errors = [], []
    for row in rows:
        values, lows, highs = [], [], []
        for c in categories:
            got = row.categories.get(c)
            if got is None:
                values.append(0.0)
                lows.append(0.0)
                highs.append(0.0)
                continue
            values.append(got["sr"])
            lows.append(got["low"])
            highs.append(got["high"])
        series.append((row.label, values))
        errors.append((lows, highs))
    _grouped(ax, categories, series, fmt="{:.0f}", errors=errors)
    ax.set_ylabel("SR (%)")
    ax.set_ylim(0, 110)
    return _png(fig)


def score_and_sr(rows) -> bytes:
    """Each run's Score and SR with their 95% intervals (the report's, docs/runs.md Intervals) as error bars."""
    fig, ax = _figure("Score and SR with 95% intervals")
    series, errors = [], []
    for row in rows:
        parts = [row.score, row.sr]
        values = [0.0 if p is None else p.value for p in parts]  # a withheld interval: its value, no error bar
        series.append((row.label, values))
        errors.append(([p.low if p else v for p, v in zip(parts, values, strict=True)],
                       [p.high if p else v for p, v in zip(parts, values, strict=True)]))
    _grouped(ax, ["Score", "SR (%)"], series, fmt="{:.1f}", errors=errors)
    ax.set_ylim(0, 110)
    return _png(fig)


def steps_distribution(rows) -> bytes:
    """Share of episodes per number of actions."""
    most = max((e.steps for row in rows for e in row.run.episodes if e.scored), default=1)
    steps = list(range(1, most + 1))
    fig, ax = _figure("Actions per episode")
    series = []
    for row in rows:
        counts = np.bincount([e.steps for e in row.run.episodes if e.scored], minlength=most + 1)[1:]
        series.append((row.label, 100 * counts / max(1, row.figures["episodes"])))
    _grouped(ax, [str(s) for s in steps], series)
    ax.set_ylabel("episodes (%)")
    ax.set_xlabel("actions (invalid ones included)")
    return _png(fig)


def failure_tags(rows) -> bytes:
    """Episodes per failure tag, a bar per run (the tags any run has; as the failure-tag table counts them)."""
    counts = [row.tags for row in rows]
    shown = [t for t in TAGS if any(c.get(t) for c in counts)] or list(TAGS[:1])
    fig, ax = _figure("Failure tags")
    series = [(row.label, [c.get(t, 0) for t in shown]) for row, c in zip(rows, counts)]
    _grouped(ax, shown, series, fmt="{:.0f}")
    ax.set_ylabel("episodes")
    ax.tick_params(axis="x", labelrotation=30)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    return _png(fig)


def breakdown_means(rows) -> bytes:
    """Mean of each reward part over the episodes that bought something."""
    parts = ["r_type", "r_att", "r_option", "r_price"]
    fig, ax = _figure("Reward breakdown (mean over purchases)")
    series = [(row.label, [row.run.figures["breakdown"].get(p) or 0.0 for p in parts]) for row in rows]
    _grouped(ax, ["type", "attributes", "options", "price"], series, fmt="{:.2f}")
    ax.set_ylim(0, 1.1)
    return _png(fig)


#: name -> (title, function)
PLOTS = {
    "figures": ("Score and SR with 95% intervals", score_and_sr),
    "rewards": ("Reward histogram", reward_histogram),
    "categories": ("SR by product category", sr_by_category),
    "steps": ("Steps per episode", steps_distribution),
    "tags": ("Failure tags", failure_tags),
    "breakdown": ("Reward breakdown means", breakdown_means),
}


def draw_all(rows) -> dict[str, bytes]:
    """Every plot, as PNG bytes by name."""
    require_matplotlib()
    return {name: draw(rows) for name, (_, draw) in PLOTS.items()}
