"""The plots report.html embeds: the comparison plots of `ragmetrics.render.plots`, as PNG bytes.

The same figures `ragmetrics compare --plots DIR` writes, so the page and the CLI show one picture of a result.
matplotlib is the optional `plots` extra; without it the page has no plots and its notes say why.
"""

from __future__ import annotations

import io
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.schema import Report

# Enough for every metric of a typical nightly; beyond it the page gets heavy and report.json has the data.
MAX_PLOTS = 40


def report_plots(report: Report) -> tuple[list[tuple[str, bytes]], str | None]:
    """(caption, PNG) pairs: a plot per compared metric (a share bar for 0/1 metrics), then the per-query
    differences of every compared pair (every pair against the baseline when the report names one)."""
    try:
        from ragmetrics.render import plots
    except ImportError as exc:  # pragma: no cover - only in a partial install
        return [], f"plots skipped: {exc}"
    out: list[tuple[str, bytes]] = []
    try:
        for metric in report.metrics:
            what = "share of queries scoring 1" if plots.is_binary(report, metric) else "per-query scores"
            out.append((f"{metric}: {what} by run", _png(plots.metric_plot(report, metric))))
        for comparison in report.comparisons:
            caption = (
                f"{comparison.metric}: {comparison.candidate} minus {comparison.baseline}, per query, sorted"
            )
            out.append((caption, _png(plots.difference_plot(report, comparison))))
        tradeoff = plots.quality_cost_plot(report)
        if tradeoff is not None:
            out.insert(0, ("quality against cost: mean per run (up and left is better)", _png(tradeoff)))
        curve = plots.precision_recall_plot(report)
        if curve is not None:
            out.insert(0, ("precision-recall: interpolated precision by recall level, per run", _png(curve)))
    except ConfigError as exc:  # matplotlib is missing
        return [], f"plots skipped: {exc}"
    note = None
    if len(out) > MAX_PLOTS:
        note = f"plots: the first {MAX_PLOTS} of {len(out)} are shown; `ragmetrics compare --plots` draws all"
        out = out[:MAX_PLOTS]
    partial = [m for r in report.runs for m in r.metrics if m not in report.metrics]
    if partial:
        note = (note + "; " if note else "") + (
            f"not plotted (not scored for every run): {', '.join(sorted(set(partial)))}"
        )
    return out, note


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
