"""The report page's sufficient-context section: each compared pair's sentences in the open (where a drop came
from), each run's cells and each pair's moved cells folded beneath (`render.sufficiency` builds the grids)."""

from __future__ import annotations

from ragmetrics.render._text import Grid
from ragmetrics.render.html.cells import esc
from ragmetrics.render.sufficiency import breakdown_grid, pair_grid, report_sufficiency, sufficiency_intro
from ragmetrics.schema import Report

__all__ = ["sufficiency_block"]


def _table(grid: Grid, labels: int) -> str:
    head = "".join(f"<th{' class=l' if k < labels else ''}>{esc(h)}</th>" for k, h in enumerate(grid.headers))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=l' if k < labels else ''}>{esc(c)}</td>" for k, c in enumerate(row)) + "</tr>"
        for row in grid.rows
    )  # fmt: skip
    notes = "".join(f"<p class='legend'>{esc(n)}</p>" for n in grid.notes)
    caption = f"<caption>{esc(grid.title)}</caption>" if grid.title else ""
    return (f"<div class='scroll'><table class='sufficiency'>{caption}<thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>{notes}")  # fmt: skip


def sufficiency_block(report: Report) -> str:
    section = report_sufficiency(report)
    if section is None:
        return ""
    parts = ["<h2 id='sufficiency'>Sufficient context: retrieval or generation</h2>"]
    for pair in section.pairs:
        items = "".join(f"<li>{esc(line)}</li>" for line in pair.lines)
        parts.append(f"<p><b>{esc(pair.run_b)}</b> against <b>{esc(pair.run_a)}</b></p><ul class='verdict'>{items}</ul>")
    if section.notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{esc(n)}</li>" for n in section.notes) + "</ul>")
    tables = [_table(breakdown_grid(run), 1) for run in section.runs]
    tables += [_table(pair_grid(pair), 2) for pair in section.pairs]
    if tables:
        parts.append(
            f"<details><summary>Cells per run ({len(section.runs)}) and per pair ({len(section.pairs)})</summary>"
            + "".join(tables) + f"<p class='legend'>{esc(sufficiency_intro(section))}</p></details>"
        )  # fmt: skip
    return "".join(parts)
