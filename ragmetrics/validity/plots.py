"""The validity study's pictures, drawn as the report's other plots are (`render.plots`: matplotlib's object API
on the Agg canvas, never pyplot): each metric against the answer quality, one panel per metric with every
(question, run) pair as a point, jittered a little where values repeat, and the runs' means on top; and the tau
table as a chart, each metric's per-query tau as a point with its interval, leaders in colour."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ragmetrics.render.plots import _figure, _wrap
from ragmetrics.render.safe_text import plain_plot_text
from ragmetrics.validity.data import ValidityData
from ragmetrics.validity.model import ValidityResult

__all__ = ["scatter_plot", "tau_chart"]

_POINT, _LEAD, _MEAN = "#264653", "#2a9d55", "#d1495b"
_COLUMNS = 3


def _jitter(values: np.ndarray, seed: int) -> np.ndarray:
    """A small deterministic spread for values that repeat (0/1 metrics), so the points' mass shows."""
    span = float(np.ptp(values)) if values.size else 0.0
    if np.unique(values).size > values.size / 3 or span == 0:
        return values
    rng = np.random.default_rng(seed)
    return values + rng.uniform(-0.015, 0.015, values.size) * span


def scatter_plot(data: ValidityData, result: ValidityResult) -> Any:
    """Each metric (x) against the answer quality (y), in the order of the tau table."""
    order = sorted(
        result.metrics, key=lambda m: (m.per_query.estimate is None, -(m.per_query.estimate or 0.0))
    )
    rows = math.ceil(len(order) / _COLUMNS)
    columns = min(_COLUMNS, len(order))
    figure = _figure(3.4 * columns, 2.9 * rows)
    for k, item in enumerate(order):
        ax = figure.add_subplot(rows, columns, k + 1)
        values = data.metrics[item.metric]
        both = ~np.isnan(values) & ~np.isnan(data.answer)
        x, y = values[both], data.answer[both]
        ax.scatter(_jitter(x, k), _jitter(y, k + 1000), s=7, alpha=0.35, color=_POINT, linewidths=0)
        for j in range(len(data.runs)):
            column = both[:, j]
            if column.any():
                ax.scatter([values[column, j].mean()], [data.answer[column, j].mean()], s=30, color=_MEAN,
                           marker="D", edgecolors="white", linewidths=0.6, zorder=3)  # fmt: skip
        tau = item.per_query
        said = "tau undefined" if tau.estimate is None else f"tau {tau.estimate:.2f}"
        label = plain_plot_text(item.metric + (" (negated)" if item.oriented else ""))
        ax.set_title(_wrap(f"{label}: {said}", 40), fontsize=9,
                     color=_LEAD if item.metric in result.verdict.leaders else "black")  # fmt: skip
        ax.set_xlabel(label, fontsize=8)
        ax.set_ylabel(plain_plot_text(data.answer_metric), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    figure.suptitle(f"each metric against {plain_plot_text(data.answer_metric)}: points are (question, run) "
                    "pairs, diamonds the runs' means", fontsize=10)  # fmt: skip
    return figure


def tau_chart(result: ValidityResult) -> Any:
    """Per-query tau with its interval, one row per metric, best at the top; an undefined tau is named."""
    order = sorted(
        result.metrics, key=lambda m: (m.per_query.estimate is None, -(m.per_query.estimate or 0.0))
    )
    figure = _figure(7.0, max(2.4, 0.42 * len(order) + 1.3))
    ax = figure.add_subplot()
    for row, item in enumerate(order):
        y = len(order) - 1 - row
        tau = item.per_query
        colour = _LEAD if item.metric in result.verdict.leaders else _POINT
        if tau.estimate is None:
            ax.annotate("undefined", (0.0, y), ha="center", va="center", fontsize=8, color="#888888")
            continue
        if tau.low is not None and tau.high is not None:
            ax.plot([tau.low, tau.high], [y, y], color=colour, linewidth=2.2, solid_capstyle="butt")
        ax.plot([tau.estimate], [y], "o", color=colour, markersize=6)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([plain_plot_text(m.metric) for m in reversed(order)], fontsize=8)
    ax.axvline(0.0, color="#888888", linewidth=0.8)
    ax.set_xlim(-1.0, 1.0)
    level = f"{result.settings.confidence:.0%}"
    ax.set_xlabel(f"Kendall tau-b with {plain_plot_text(result.settings.answer_metric)} per (question, run); "
                  f"{level} bootstrap interval over questions", fontsize=8)  # fmt: skip
    verdict = result.verdict
    title = (f"tracks the answers best: {verdict.best}" if verdict.best is not None
             else "the data cannot tell apart: " + ", ".join(verdict.leaders) if verdict.leaders
             else "no metric has a defined tau")  # fmt: skip
    ax.set_title(_wrap(plain_plot_text(title), 95), fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return figure
