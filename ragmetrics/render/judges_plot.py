"""The cost-against-agreement chart of `ragmetrics judges` (needs the `plots` extra: matplotlib).

One point per candidate: x its cost on the labelled units, y its accuracy against people with the bootstrap
interval; the best and the chosen candidate marked. It takes plain numbers, never computes a statistic, so the
chart shows the numbers of the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics.render.plots import _figure, _wrap
from ragmetrics.render.safe_text import plain_plot_text

__all__ = ["JudgePoint", "cost_agreement_plot", "save_cost_agreement_plot"]


@dataclass(frozen=True)
class JudgePoint:
    name: str
    cost_usd: float
    accuracy: float
    low: float
    high: float
    best: bool
    chosen: bool


def cost_agreement_plot(points: Sequence[JudgePoint], title: str) -> Any:
    figure = _figure(6.4, 4.2)
    ax = figure.add_subplot()
    for p in points:
        colour = "#2a9d55" if p.chosen else "#d1495b" if p.best else "#264653"
        ax.errorbar([p.cost_usd], [p.accuracy], yerr=[[p.accuracy - p.low], [p.high - p.accuracy]],
                    fmt="o", color=colour, capsize=3)  # fmt: skip
        tag = " (chosen)" if p.chosen else " (best)" if p.best else ""
        ax.annotate(plain_plot_text(p.name + tag), (p.cost_usd, p.accuracy), textcoords="offset points",
                    xytext=(5, 4), fontsize=8)  # fmt: skip
    ax.set_xlabel("cost of judging the labelled items (USD)")
    ax.set_ylabel("agreement with people (accuracy, 95% CI)")
    ax.set_title(_wrap(title, 70), fontsize=10)
    ax.grid(alpha=0.3)
    return figure


def save_cost_agreement_plot(points: Sequence[JudgePoint], title: str, path: Path) -> Path:
    cost_agreement_plot(points, title).savefig(path)
    return path
