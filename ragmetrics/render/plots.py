"""PNG plots of a comparison (needs the `plots` extra: matplotlib).

Two views: a box plot per metric across runs (spread, not just means), and for each pair the per-query
differences sorted, so one can see whether a gain is broad or carried by a few queries. Figures are
drawn with matplotlib's object API and the Agg canvas, never pyplot, so no global backend or state is
touched and plotting is safe in servers and tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics._format import format_p
from ragmetrics.comparison.align import aligned_query_ids, aligned_score_matrix
from ragmetrics.errors import ConfigError, InputError
from ragmetrics.options import lower_is_better
from ragmetrics.render.safe_text import plain_plot_text
from ragmetrics.schema import PairComparison, Report

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Above this many queries, the sorted differences are drawn as a filled step curve instead of bars.
_MAX_BARS = 300
_GAIN, _LOSS = "#2a9d55", "#d1495b"


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ConfigError(
            "plots need matplotlib, which is not installed: pip install '.[plots]' in a clone of ragmetrics, or pip install matplotlib"
        ) from exc
    figure = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9@._+-]+", "_", text).strip("_") or "x"


def _scores(report: Report, metric: str) -> dict[str, NDArray[np.float64]]:
    """Aligned per-query scores of every run (NaN where a score failed), as the comparison used them."""
    if metric not in report.metrics:
        raise InputError(f"the report has no metric {metric!r}; it has {report.metrics}", field="metric")
    query_ids = aligned_query_ids(report.runs, report.settings.align)
    return {run.name: aligned_score_matrix(run, [metric], query_ids)[0][:, 0] for run in report.runs}


def is_binary(report: Report, metric: str) -> bool:
    """Whether every score of `metric` is 0 or 1 (hit_rate, a 0/1 verdict): a box plot says nothing there."""
    values = np.concatenate([v[~np.isnan(v)] for v in _scores(report, metric).values()])
    return bool(values.size) and bool(np.all((values == 0.0) | (values == 1.0)))


def share_plot(report: Report, metric: str) -> Any:
    """For a 0/1 metric: each run's share of queries scoring 1, as a bar with its count."""
    scores = _scores(report, metric)
    names = list(scores)
    valid = [v[~np.isnan(v)] for v in scores.values()]
    shares = [float(v.mean()) if v.size else 0.0 for v in valid]
    width = max(4.0, 1.1 * len(names) + 1.5)
    figure = _figure(width, 4.0)
    ax = figure.add_subplot()
    bars = ax.bar(range(len(names)), shares, color="#264653", width=0.6)
    for bar, share, v in zip(bars, shares, valid, strict=True):
        ax.annotate(f"{share:.2f} ({int(v.sum())}/{v.size})", (bar.get_x() + bar.get_width() / 2, share),
                    ha="center", va="bottom", fontsize=8)  # fmt: skip
    _run_ticks(ax, names)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel(f"share with {metric} = 1")
    ax.set_title(_wrap(f"{metric}: share of queries scoring 1 (a 0/1 metric)", int(width * 11)), fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return figure


def metric_plot(report: Report, metric: str) -> Any:
    """The per-metric plot: a box plot, or a share bar for a 0/1 metric."""
    return share_plot(report, metric) if is_binary(report, metric) else box_plot(report, metric)


def _wrap(title: str, width: int = 60) -> str:
    """Titles wrapped onto lines rather than cut at the figure's edge."""
    import textwrap

    title = plain_plot_text(title)  # run names in titles: never read as $math$
    return "\n".join(textwrap.wrap(title, width, break_on_hyphens=False, break_long_words=False)) or title


def _run_ticks(ax: Any, names: list[str]) -> None:
    ax.set_xticks(
        range(len(names)),
        [plain_plot_text(n) for n in names],
        rotation=20 if len(names) > 4 else 0,
        ha="right" if len(names) > 4 else "center",
    )


def box_plot(report: Report, metric: str) -> Any:
    """One box per run (median, quartiles, 1.5 IQR whiskers) with the mean as a marker; failures left out."""
    scores = _scores(report, metric)
    names = list(scores)
    data = [values[~np.isnan(values)] for values in scores.values()]
    width = max(4.0, 1.1 * len(names) + 1.5)
    figure = _figure(width, 4.0)
    ax = figure.add_subplot()
    ax.boxplot(data, showmeans=True, meanprops={"marker": "D", "markerfacecolor": "white", "markersize": 5})
    ax.set_xticks(
        range(1, len(names) + 1),
        [plain_plot_text(n) for n in names],
        rotation=20 if len(names) > 4 else 0,
        ha="right" if len(names) > 4 else "center",
    )
    ax.set_ylabel(metric)
    ax.set_title(  # wrapped to the figure's width (about 11 characters an inch at this size): never cut off
        _wrap(
            f"{metric} per query ({len(next(iter(scores.values())))} queries; diamond = mean)",
            int(width * 11),
        ),
        fontsize=10,
    )
    ax.grid(axis="y", alpha=0.3)
    return figure


def quality_cost_plot(report: Report) -> Any | None:
    """Each run's mean quality against its mean cost (or latency, when no cost was reported): one panel per
    quality metric the runs share (at most four, answer metrics first), so a cheaper run that is as good shows
    at a glance. None when fewer than two runs have an operational metric."""
    from ragmetrics.options import OPERATIONAL_METRICS, lower_is_better

    runs = [r for r in report.runs if any(m in r.metrics for m in OPERATIONAL_METRICS)]
    x_metric = next(
        (m for m in ("cost", "latency_s") if sum(r.aggregate.get(m) is not None for r in runs) >= 2), None
    )
    if x_metric is None:
        return None
    runs = [r for r in runs if r.aggregate.get(x_metric) is not None]
    answer_first = ("answer_correctness", "faithfulness", "answer_relevancy", "answer_similarity")
    listed = [m for m in report.metrics if not lower_is_better(m)]
    quality = sorted(listed, key=lambda m: (m not in answer_first, listed.index(m)))
    quality = [m for m in quality if all(r.aggregate.get(m) is not None for r in runs)][:4]
    if not quality:
        return None
    columns = min(2, len(quality))
    rows = (len(quality) + 1) // 2
    figure = _figure(3.6 * columns + 0.4, 3.2 * rows + 0.3)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for extra in axes[len(quality) :]:
        extra.set_visible(False)
    unit = "USD" if x_metric == "cost" else "s"
    for ax, metric in zip(axes, quality, strict=False):
        for run in runs:
            x, y = run.aggregate[x_metric], run.aggregate[metric]
            ax.scatter([x], [y], color="#264653", s=28)
            ax.annotate(_safe_label(run.name), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xlabel(f"mean {x_metric} per question ({unit}; lower is better)", fontsize=8)
        ax.set_ylabel(f"mean {metric}", fontsize=8)
        ax.set_title(_wrap(f"{metric} against {x_metric}", 40), fontsize=9)
        ax.grid(alpha=0.3)
        ax.margins(0.25)
        ax.locator_params(axis="x", nbins=4)
        # plain numbers (0.0005, 0.0010): a "1e-3" offset would sit on top of the axis label at page width
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)
    return figure


def recall_points(report: Report) -> list[tuple[float, str]]:
    """The interpolated-precision metrics the report holds (recall level, metric name), by recall level."""
    import re as _re

    points = []
    for metric in report.metrics:
        found = _re.fullmatch(r"(?:iprec@|iprec_at_recall_)([0-9.]+)(-l\d+)?", metric)
        if found:
            points.append((float(found.group(1)), metric))
    return sorted(points)


def precision_recall_plot(report: Report) -> Any | None:
    """Each run's interpolated precision against recall (trec_eval's recall-precision curve), from the
    report's iprec@r metrics (11pt: iprec@0, @0.1, ..., @1). None with fewer than two recall levels."""
    points = recall_points(report)
    if len(points) < 2:
        return None
    figure = _figure(5.2, 3.8)
    ax = figure.subplots()
    for run in report.runs:
        ys = [run.aggregate.get(metric) for _, metric in points]
        if any(y is None for y in ys):
            continue
        ax.plot([r for r, _ in points], ys, marker="o", markersize=3, label=_safe_label(run.name))
    ax.set_xlabel("recall", fontsize=8)
    ax.set_ylabel("interpolated precision (mean over queries)", fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_title("Precision-recall (interpolated, as trec_eval)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return figure


def _safe_label(name: str) -> str:
    """A run name as plain text on a plot: matplotlib reads $...$ as math, which a run name must never be."""
    return plain_plot_text(name)


def difference_plot(report: Report, comparison: PairComparison) -> Any:
    """Per-query differences (candidate minus baseline) sorted, with the mean and its bootstrap CI."""
    scores = _scores(report, comparison.metric)
    a, b = scores[comparison.baseline], scores[comparison.candidate]
    valid = ~(np.isnan(a) | np.isnan(b))
    diffs = np.sort((b - a)[valid])[::-1]
    x = np.arange(diffs.size)
    figure = _figure(5.2, 3.8)  # drawn about 440 px wide in the page's grid: text stays legible
    ax = figure.add_subplot()
    gain = diffs <= 0 if lower_is_better(comparison.metric) else diffs >= 0
    colours = np.where(gain, _GAIN, _LOSS)
    if diffs.size <= _MAX_BARS:
        ax.bar(x, diffs, width=0.9, color=colours, linewidth=0)
    else:
        ax.fill_between(x, diffs, 0, where=gain, step="mid", color=_GAIN, linewidth=0)
        ax.fill_between(x, diffs, 0, where=~gain, step="mid", color=_LOSS, linewidth=0)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.axhline(
        comparison.mean_diff,
        color="#264653",
        linestyle="--",
        linewidth=1,
        label=f"mean {comparison.mean_diff:+.4f}",
    )
    ax.axhspan(
        comparison.ci_low, comparison.ci_high, color="#264653", alpha=0.12, label="bootstrap CI of the mean"
    )
    verdict = "significant" if comparison.significant else "not significant"
    ax.set_title(
        _wrap(
            f"{comparison.metric}: {comparison.candidate} - {comparison.baseline} "
            f"(W/T/L {comparison.wins}/{comparison.ties}/{comparison.losses}, "
            f"p corr. {format_p(comparison.p_corrected)}, {verdict})",
            54,
        ),
        fontsize=10,
    )
    ax.set_xlabel("queries, sorted by difference")
    ax.set_ylabel(f"Δ {comparison.metric}")
    ax.set_xlim(-0.5, max(diffs.size, 1) - 0.5)
    # No change at all (float noise of 1e-17 at most) would otherwise get an axis of 1e-17 and an offset label.
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    if float(np.max(np.abs(np.r_[diffs, comparison.ci_low, comparison.ci_high]), initial=0.0)) < 1e-9:
        ax.set_ylim(-0.05, 0.05)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return figure


def save_plots(report: Report, directory: str | Path) -> list[Path]:
    """Write box_<metric>.png (share_<metric>.png for a 0/1 metric) per metric,
    diff_<metric>_<candidate>_vs_<baseline>.png per compared pair, and precision_recall.png when the report
    holds interpolated precision at two or more recall levels."""
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the plot directory: {exc}", source=str(out)) from exc
    written: list[Path] = []
    for metric in report.metrics:
        kind = "share" if is_binary(report, metric) else "box"
        path = _unused(out / f"{kind}_{_safe(metric)}.png", written)
        metric_plot(report, metric).savefig(path)
        written.append(path)
    for c in report.comparisons:
        path = _unused(
            out / f"diff_{_safe(c.metric)}_{_safe(c.candidate)}_vs_{_safe(c.baseline)}.png", written
        )
        difference_plot(report, c).savefig(path)
        written.append(path)
    curve = precision_recall_plot(report)
    if curve is not None:
        path = _unused(out / "precision_recall.png", written)
        curve.savefig(path)
        written.append(path)
    return written


def _unused(path: Path, written: list[Path]) -> Path:
    """`path`, or path-2, path-3, ... when names that differ only in unsafe characters (a/b, a_b) meet,
    so one plot never overwrites another."""
    candidate, number = path, 2
    while candidate in written:
        candidate = path.with_stem(f"{path.stem}-{number}")
        number += 1
    return candidate
