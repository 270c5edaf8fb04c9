"""The power table: what each compared pair's questions can detect and how many a difference needs.

Beside every pair's observed difference it shows the minimum detectable difference (MDE) at the level the
correction tests the pair at and 80 % power, the questions needed to detect the observed difference (or the
target the user gave), and the smallest p the test can reach; a pair whose CI and test disagree gets a note
saying why. The figures come from `comparison.report_power`; this module only lays them out.
"""

from __future__ import annotations

from ragmetrics._format import format_p
from ragmetrics.render._text import Grid, aligned
from ragmetrics.schema import PairPowerFigures

__all__ = ["POWER_LEGEND", "power_cells", "power_grid"]

POWER_LEGEND = (
    "MDE: the smallest mean difference these questions detect with {power:.0%} power at the pair's level "
    "(alpha / m under Holm or Bonferroni across m comparisons), from the spread of the per-query differences "
    "(paired t approximation). 'questions needed': for the observed |Δ| unless a target was given. "
    "'min p': the smallest p the test can return with this many questions that differ."
)

HEADERS = ["metric", "pair", "n", "Δ", "sd(Δ)", "MDE", "target Δ", "questions needed", "min p"]


def power_cells(figures: PairPowerFigures, digits: int = 4) -> list[str]:
    """One pair's cells, in HEADERS order."""
    if figures.mde is None:
        mde = f"none (only {figures.nonzero} differ)" if figures.min_p > figures.alpha else "n/a"
    else:
        mde = f"{figures.mde:.{digits}f}"
    if figures.target is None:
        needed = ""
    elif figures.needed is None:
        needed = "out of reach"
    else:
        needed = str(figures.needed)
    return [
        figures.metric,
        f"{figures.candidate} vs {figures.baseline}",
        str(figures.n),
        f"{figures.mean_diff:+.{digits}f}",
        f"{figures.sd_diff:.{digits}f}",
        mde,
        "" if figures.target is None else f"{figures.target:.{digits}f}",
        needed,
        "0" if figures.min_p == 0 else format_p(figures.min_p),
    ]


def power_grid(rows: list[PairPowerFigures], *, digits: int = 4) -> Grid:
    """The rows for the terminal and Markdown; CI/test disagreements as numbered notes."""
    grid = Grid(headers=list(HEADERS), align=[*aligned(2, 7)])
    power = rows[0].power if rows else 0.8
    grid.title = f"Power ({power:.0%}): what these questions can detect"
    grid.rows = [power_cells(row, digits) for row in rows]
    grid.notes = [POWER_LEGEND.format(power=power)]
    for row in rows:
        if row.why is not None:
            grid.notes.append(f"{row.candidate} vs {row.baseline} on {row.metric}: {row.why}.")
    return grid
