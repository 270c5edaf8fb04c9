"""The report page's power and cost sections.

Power: what each pair's questions can detect, folded away except for the pairs whose CI and test disagree,
which are said in the open (a reader of the summary would otherwise wonder). Cost: the night's estimate beside
what it spent, folded away.
"""

from __future__ import annotations

from ragmetrics.render.html.cells import esc
from ragmetrics.render.power import HEADERS, POWER_LEGEND, power_cells
from ragmetrics.schema import Report

__all__ = ["power_block", "work_block"]


def power_block(report: Report) -> str:
    rows = report.metadata.power
    if not rows:
        return ""
    power = rows[0].power
    head = "".join(f"<th{' class=l' if k < 2 else ''}>{esc(h)}</th>" for k, h in enumerate(HEADERS))
    body = "".join(
        "<tr>" + "".join(f"<td{' class=l' if k < 2 else ''}>{esc(c)}</td>" for k, c in enumerate(power_cells(row)))
        + "</tr>"
        for row in rows
    )  # fmt: skip
    disagreements = [row for row in rows if row.why is not None]
    said = ""
    if disagreements:
        items = "".join(
            f"<li><b>{esc(r.candidate)} vs {esc(r.baseline)}</b> on {esc(r.metric)}: {esc(r.why or '')}</li>"
            for r in disagreements
        )
        said = f"<p><b>Where a CI and its test disagree</b></p><ul class='notes'>{items}</ul>"
    return (
        "<h2 id='power'>Power</h2>" + said + "<details><summary>What these questions can detect "
        f"({len(rows)} pairs, {power:.0%} power)</summary>"
        f"<div class='scroll'><table class='power'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"</div><p class='legend'>{esc(POWER_LEGEND.format(power=power))}</p></details>"
    )


def work_block(report: Report) -> str:
    """The night's calls, tokens, cost and time: estimated before judging, and spent."""
    from ragmetrics.render.work import work_grid

    nightly = report.metadata.nightly
    if nightly is None or nightly.work is None:
        return ""
    grid = work_grid(nightly.work)
    head = "".join(f"<th{' class=l' if k == 0 else ''}>{esc(h)}</th>" for k, h in enumerate(grid.headers))
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=l' if k == 0 else ''}>{esc(c)}</td>" for k, c in enumerate(row))
        + "</tr>"
        for row in grid.rows
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in grid.notes)
    return (
        "<details><summary>Cost and time: estimated before judging, and spent</summary>"
        f"<div class='scroll'><table class='work'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        f"<ul class='notes legend'>{notes}</ul></details>"
    )
