"""The validity study as text: one table (per query, per system, discriminative power) with the verdict first,
as the terminal and report.md show it. Only lays out `ValidityResult`; every figure is computed in `study`."""

from __future__ import annotations

from ragmetrics.render._text import Grid, to_markdown, to_terminal
from ragmetrics.render.safe_text import markdown_text
from ragmetrics.validity.model import MetricValidity, TauInterval, ValidityResult

__all__ = ["validity_grid", "validity_html", "validity_markdown", "validity_terminal"]

HEADERS = ["metric", "kind", "qrels", "pairs", "tau per query", "tau per system", "separated pairs"]


def _tau(interval: TauInterval) -> str:
    if interval.estimate is None:
        return f"undefined: {interval.undefined}"
    if interval.low is None or interval.high is None:
        return f"{interval.estimate:.3f} (interval {interval.undefined})"
    extra = f" ({interval.undefined_resamples} resamples undefined)" if interval.undefined_resamples else ""
    return f"{interval.estimate:.3f} [{interval.low:.3f}, {interval.high:.3f}]{extra}"


def _power(item: MetricValidity) -> str:
    if item.power is None:
        return "no pair testable"
    return f"{item.separated}/{item.pairs} ({item.power:.0%})"


def validity_grid(result: ValidityResult) -> Grid:
    """Metrics in order of their per-query tau (undefined last); the verdict's leaders in bold."""
    s = result.settings
    order = sorted(
        result.metrics, key=lambda m: (m.per_query.estimate is None, -(m.per_query.estimate or 0.0))
    )
    grid = Grid(headers=list(HEADERS), align=["left", "left", "left", "right", "right", "right", "right"])
    grid.title = f"Which metric tracks {s.answer_metric}"
    for row, item in enumerate(order):
        name = item.metric + (" (negated: lower is better)" if item.oriented else "")
        grid.rows.append([name, item.kind, item.qrels or "", str(item.units), _tau(item.per_query),
                          _tau(item.per_system), _power(item)])  # fmt: skip
        if item.metric in result.verdict.leaders:
            grid.bold.add((row, 0))
    level = f"{s.confidence:.0%}"
    grid.notes = [
        f"tau: Kendall's tau-b with {s.answer_metric}; per query over (question, run) pairs, per system over the "
        f"runs' means; [{level} percentile interval, {s.samples} bootstrap resamples of the {result.questions} "
        f"questions, seed {s.seed}].",
        f"separated pairs (discriminative power): run pairs whose {s.test} test over questions is significant at "
        f"alpha {s.alpha:g} after {s.correction} across the metric's pairs.",
    ]
    if result.per_system_note:
        grid.notes.append(result.per_system_note)
    return grid


def _lines(result: ValidityResult) -> list[str]:
    return [f"verdict: {result.verdict.text}", f"runs: {', '.join(result.runs)}", *result.notes]


def validity_terminal(result: ValidityResult) -> str:
    lines = _lines(result)
    return "\n".join([lines[0], "", to_terminal(validity_grid(result)).rstrip(), "", *lines[1:]]) + "\n"


def validity_markdown(result: ValidityResult, *, heading: str = "##") -> list[str]:
    """The report.md section: heading, the verdict in bold, the table, the notes."""
    verdict, *rest = _lines(result)
    return [
        f"{heading} Which metric tracks the answers",
        "",
        f"**{markdown_text(verdict)}**",
        "",
        to_markdown(validity_grid(result)).rstrip(),
        "",
        *(f"- {markdown_text(line)}" for line in rest),
        "",
    ]


def validity_html(result: ValidityResult) -> str:
    """The report page's section: the verdict, then the same table as report.md, its notes as the legend."""
    from ragmetrics.render.html.cells import esc

    grid = validity_grid(result)
    head = "".join(f"<th{' class=l' if k < 3 else ''}>{esc(h)}</th>" for k, h in enumerate(grid.headers))
    body = "".join(
        "<tr>" + "".join(
            f"<td{' class=l' if k < 3 else ''}>{'<b>' + esc(c) + '</b>' if (r, k) in grid.bold else esc(c)}</td>"
            for k, c in enumerate(row)
        ) + "</tr>"
        for r, row in enumerate(grid.rows)
    )  # fmt: skip
    notes = "".join(f"<li>{esc(n)}</li>" for n in result.notes)
    return (
        "<h2 id='validity'>Which metric tracks the answers</h2>"
        f"<p><b>{esc(result.verdict.text)}</b></p>"
        f"<div class='scroll'><table class='validity'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        f"</div><p class='legend'>{' '.join(esc(n) for n in grid.notes)}</p>"
        + (f"<ul class='notes'>{notes}</ul>" if notes else "")
    )
