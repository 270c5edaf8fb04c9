"""The report page's all-pairs (Tukey's HSD) and several-seeds sections: the same tables the terminal and
Markdown reports print (`render.multi`), as HTML."""

from __future__ import annotations

from ragmetrics.render._text import Grid
from ragmetrics.render.html.cells import esc
from ragmetrics.render.multi import seeds_grid, tukey_grid
from ragmetrics.schema import Report

__all__ = ["multi_block"]


def _table(grid: Grid, anchor: str) -> str:
    head = "".join(
        f"<th{' class=l' if align == 'left' else ''}>{esc(h)}</th>"
        for h, align in zip(grid.headers, grid.alignment(), strict=True)
    )
    rows = []
    for r, row in enumerate(grid.rows):
        styles = grid.styles[r] if grid.styles else [None] * len(row)
        cells = "".join(
            f"<td class='{'l' if align == 'left' else ''}{' up' if style == 'green' else ' down' if style == 'red' else ''}'>"
            f"{esc(cell)}</td>"
            for cell, align, style in zip(row, grid.alignment(), styles, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    notes = "".join(f"<p class='legend'>{esc(n)}</p>" for n in grid.notes)
    return (
        f"<h2 id='{anchor}'>{esc(grid.title or '')}</h2><div class='scroll'><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>{notes}"
    )


def multi_block(report: Report, digits: int = 4) -> str:
    """Tukey's table and the seeds table when the report has them, else nothing."""
    parts = []
    tukey = tukey_grid(report, digits)
    if tukey is not None:
        parts.append(_table(tukey, "tukey"))
    seeds = seeds_grid(report, digits)
    if seeds is not None:
        parts.append(_table(seeds, "seeds"))
    return "".join(parts)
