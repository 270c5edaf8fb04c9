"""PNG plots for report.html, drawn with matplotlib's object API (no pyplot, so no global backend change).

matplotlib is the optional `plots` extra; without it `report_plots` returns no plots and says why.
"""

from __future__ import annotations

import io
import math
from typing import Any

from ragmetrics.schema import Report

_COLS = 4
_MAX_METRICS = 16


def report_plots(report: Report) -> tuple[list[tuple[str, bytes]], str | None]:
    """(caption, PNG) pairs, and a note when plots could not be drawn."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return [], "plots skipped: matplotlib is not installed (pip install 'ragmetrics[plots]')"
    metrics = _metrics(report)[:_MAX_METRICS]
    if not metrics:
        return [], None
    plots = [
        (
            "Per-query scores by run (box: quartiles, whiskers: 1.5 IQR, line: median)",
            _boxes(report, metrics, Figure, FigureCanvasAgg),
        )
    ]
    if len(report.runs) > 1 and report.metrics:
        first = report.runs[0].name
        plots.append(
            (
                f"Per-query differences against {first}, sorted (above 0: the run did better on that query)",
                _diffs(report, [m for m in metrics if m in report.metrics], Figure, FigureCanvasAgg),
            )
        )
    return plots, None


def _metrics(report: Report) -> list[str]:
    metrics = list(report.metrics)
    for run in report.runs:
        metrics.extend(m for m in run.metrics if m not in metrics)
    return metrics


def _grid(n: int, figure_cls: Any) -> tuple[Any, list[Any]]:
    cols = min(_COLS, n)
    rows = math.ceil(n / cols)
    fig = figure_cls(figsize=(3.4 * cols, 2.7 * rows), dpi=100, layout="constrained")
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n)]
    return fig, axes


def _png(fig: Any, canvas_cls: Any) -> bytes:
    canvas_cls(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _boxes(report: Report, metrics: list[str], figure_cls: Any, canvas_cls: Any) -> bytes:
    fig, axes = _grid(len(metrics), figure_cls)
    for ax, metric in zip(axes, metrics, strict=True):
        runs = [r for r in report.runs if metric in r.metrics]
        data = [[v for v in r.scores(metric) if v is not None] for r in runs]
        ax.boxplot(data, tick_labels=[r.name for r in runs], showmeans=True, widths=0.55)
        ax.set_title(metric, fontsize=10)
        ax.tick_params(axis="x", labelrotation=20, labelsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    return _png(fig, canvas_cls)


def _diffs(report: Report, metrics: list[str], figure_cls: Any, canvas_cls: Any) -> bytes:
    base = report.runs[0]
    fig, axes = _grid(len(metrics), figure_cls)
    for ax, metric in zip(axes, metrics, strict=True):
        for run in report.runs[1:]:
            diffs = sorted(
                (run.per_query.get(q, {}).get(metric) or 0.0) - (base.per_query[q].get(metric) or 0.0)
                for q in base.per_query
                if base.per_query[q].get(metric) is not None
                and run.per_query.get(q, {}).get(metric) is not None
            )
            ax.plot(range(len(diffs)), diffs, drawstyle="steps-mid", label=run.name, linewidth=1.4)
        ax.axhline(0.0, color="#555", linewidth=0.8)
        ax.set_title(metric, fontsize=10)
        ax.set_xlabel("queries (sorted)", fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    return _png(fig, canvas_cls)
