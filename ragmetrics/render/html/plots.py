"""The plots of report.html: the comparison plots of `ragmetrics.render.plots`, as small PNGs.

The same figures `ragmetrics compare --plots DIR` writes, so the page and the CLI show one picture of a result.
Every plot is drawn (no cap): a night writes them beside the page in `plots/` and the page loads each only when
it is scrolled to, or opened (a pair's difference plots are folded by metric), so a night of many runs and
metrics keeps a page of kilobytes. matplotlib is the optional `plots` extra; without it the page has no plots
and its notes say why.
"""

from __future__ import annotations

import io
from typing import Any, NamedTuple

from ragmetrics.errors import ConfigError
from ragmetrics.schema import Report


class PagePlot(NamedTuple):
    """One plot of the page: its caption, PNG bytes, the section it goes in, and whether it spans the page."""

    caption: str
    png: bytes
    group: str = ""
    """'' for the overview (curves, cost, one plot per metric); else the metric whose pair differences it shows."""
    wide: bool = False
    """Drawn across the whole width (the quality-against-cost panels): legible at a laptop's 1366 px."""


def report_plots(report: Report) -> tuple[list[PagePlot], str | None]:
    """Every plot of the report, none left out: the precision-recall curve and the quality-against-cost panels
    first, then a plot per compared metric (a share bar for 0/1 metrics), then the per-query differences of
    every compared pair (every pair against the baseline when the report names one), grouped by metric."""
    try:
        from ragmetrics.render import plots
    except ImportError as exc:  # pragma: no cover - only in a partial install
        return [], f"plots skipped: {exc}"
    out: list[PagePlot] = []
    try:
        curve = plots.precision_recall_plot(report)
        if curve is not None:
            out.append(PagePlot("precision-recall: interpolated precision by recall level, per run", _png(curve)))
        tradeoff = plots.quality_cost_plot(report)
        if tradeoff is not None:
            out.append(PagePlot("quality against cost: mean per run (up and left is better)", _png(tradeoff),
                                wide=True))  # fmt: skip
        for metric in report.metrics:
            what = "share of queries scoring 1" if plots.is_binary(report, metric) else "per-query scores"
            out.append(PagePlot(f"{metric}: {what} by run", _png(plots.metric_plot(report, metric))))
        for comparison in report.comparisons:
            caption = (
                f"{comparison.metric}: {comparison.candidate} minus {comparison.baseline}, per query, sorted"
            )
            out.append(PagePlot(caption, _png(plots.difference_plot(report, comparison)), comparison.metric))
    except ConfigError as exc:  # matplotlib is missing
        return [], f"plots skipped: {exc}"
    note = None
    partial = [m for r in report.runs for m in r.metrics if m not in report.metrics]
    if partial:
        note = f"not plotted (not scored for every run): {', '.join(sorted(set(partial)))}"
    return out, note


def _png(figure: Any) -> bytes:
    """The figure as a small PNG: drawn, then reduced to a 256-colour palette (flat colours and anti-aliased
    text lose nothing visible) and compressed, a third of matplotlib's own PNG or less."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - matplotlib requires Pillow
        return buffer.getvalue()
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    small = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(small, format="PNG", optimize=True)
    return small.getvalue() if small.tell() < len(buffer.getvalue()) else buffer.getvalue()
