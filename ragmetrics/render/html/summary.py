"""The page's tables of means: the summary (metrics down, runs across, every significant pair marked as in
the terminal), the paired comparisons, and tonight against the baseline.

Metrics go down the rows because a report has a few runs and many metrics: the table then fits a 1400 px
window with nothing hidden, and a phone scrolls one narrow table instead of losing its last columns.
"""

from __future__ import annotations

from ragmetrics._format import format_effect, format_p
from ragmetrics.options import improvement, lower_is_better
from ragmetrics.render.baseline import BETTER, WORSE, baseline_rows
from ragmetrics.render.html.cells import esc, num
from ragmetrics.render.tables import run_labels, significant_wins
from ragmetrics.schema import GateResult, Report


def all_metrics(report: Report) -> list[str]:
    """Compared metrics first, then those only some runs have (answer metrics of one run)."""
    metrics = list(report.metrics)
    for run in report.runs:
        metrics.extend(m for m in run.metrics if m not in metrics)
    return metrics


def _metric_head(metric: str) -> str:
    if lower_is_better(metric):
        return f"<th class='l' title='lower is better'>{esc(metric)} &darr;</th>"
    return f"<th class='l'>{esc(metric)}</th>"


def summary_block(report: Report) -> str:
    metrics = all_metrics(report)
    names = [r.name for r in report.runs]
    labels = run_labels(names)
    wins = significant_wins(report)
    losses: dict[tuple[str, str], list[str]] = {}
    for (winner, metric), losers in wins.items():
        for loser in losers:
            losses.setdefault((loser, metric), []).append(winner)
    order = {name: i for i, name in enumerate(names)}
    head = "".join(f"<th><span class='runlabel'>{esc(labels[n])}</span> {esc(n)}</th>" for n in names)
    rows = []
    for metric in metrics:
        present = [
            v for r in report.runs if metric in r.metrics and (v := r.aggregate.get(metric)) is not None
        ]
        best = (min if lower_is_better(metric) else max)(present) if len(present) > 1 else None
        cells = []
        for run in report.runs:
            if metric not in run.metrics:
                cells.append("<td>&ndash;</td>")
                continue
            value = run.aggregate.get(metric)
            beat = wins.get((run.name, metric), [])
            lost = sorted(losses.get((run.name, metric), []), key=order.__getitem__)
            classes = []
            if best is not None and value == best:
                classes.append("best")
            if beat and not lost:
                classes.append("better")
            elif lost and not beat:
                classes.append("worse")
            marks = ""
            if beat:
                marks += (
                    f" <span class='up' title='significantly better than "
                    f"{esc(', '.join(beat))}'>[{','.join(labels[b] for b in beat)}]</span>"
                )
            if lost:
                marks += (
                    f" <span class='down' title='significantly worse than "
                    f"{esc(', '.join(lost))}'>&#9660;[{','.join(labels[w] for w in lost)}]</span>"
                )
            failures = run.failure_count(metric)
            failed = (
                f" <span class='failed' title='failed scores'>({failures}&times;)</span>" if failures else ""
            )
            css = f" class='{' '.join(classes)}'" if classes else ""
            cells.append(f"<td{css}>{num(value)}{marks}{failed}</td>")
        rows.append(f"<tr>{_metric_head(metric)}{''.join(cells)}</tr>")
    s = report.settings
    compared = (
        f" <b>[x]</b>: significantly better than run x, <b>&#9660;[x]</b>: significantly worse "
        f"({esc(s.test)} test, {esc(s.correction)}-corrected p &le; {s.alpha:g}); green/red: better/worse "
        "than every run it differs from significantly;"
        if report.comparisons
        else ""
    )
    legend = (
        f"Mean per query.{compared} bold: best run; &darr;: lower is better (latency, tokens, cost); "
        "(n&times;): failed scores, left out of the mean; &ndash;: not scored for that run."
    )
    return (
        "<h2>Summary</h2><div class='scroll'><table class='summary'>"
        f"<thead><tr><th class='l'>metric</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        f"<p class='legend'>{legend}</p>"
    )


def comparisons_block(report: Report) -> str:
    """Every paired test; a significant row is green when the candidate is better, red when worse."""
    if not report.comparisons:
        return ""
    head = (
        "<thead><tr><th class='l'>metric</th><th class='l'>baseline</th><th class='l'>candidate</th><th>n</th>"
        "<th>mean diff</th><th>95% CI</th><th>p</th><th>p corrected</th><th>effect</th>"
        "<th>wins/ties/losses</th></tr></thead>"
    )
    rows = []
    for c in report.comparisons:
        css = ""
        if c.significant and c.mean_diff != 0:
            css = " class='better'" if improvement(c.metric, c.mean_diff) > 0 else " class='worse'"
        arrow = " &darr;" if lower_is_better(c.metric) else ""
        rows.append(
            f"<tr{css}><td class='l'>{esc(c.metric)}{arrow}</td><td class='l'>{esc(c.baseline)}</td>"
            f"<td class='l'>{esc(c.candidate)}</td><td>{c.n}</td><td>{c.mean_diff:+.4f}</td>"
            f"<td>[{c.ci_low:+.4f}, {c.ci_high:+.4f}]</td><td>{format_p(c.p_value)}</td>"
            f"<td>{format_p(c.p_corrected)}{' *' if c.significant else ''}</td>"
            f"<td>{format_effect(c.effect_size, 3)}</td><td>{c.wins}/{c.ties}/{c.losses}</td></tr>"
        )
    return (
        "<h2>Paired comparisons</h2>"
        f"<div class='scroll'><table class='pairs'>{head}<tbody>{''.join(rows)}</tbody></table></div>"
        "<p class='legend'>Differences are candidate minus baseline over the queries both scored; * significant "
        "after correction; green: the candidate is significantly better, red: significantly worse "
        "(&darr;: lower is better).</p>"
    )


def baseline_block(report: Report, gate: GateResult) -> str:
    """Tonight beside the baseline, every pair, checked or not (the baseline and delta columns)."""
    rows = baseline_rows(report, gate)
    if not rows:
        return ""
    body = []
    for row in rows:
        css = {BETTER: " class='better'", WORSE: " class='worse'"}.get(row.direction, "")
        delta = row.delta
        arrow = " &darr;" if lower_is_better(row.metric) else ""
        body.append(
            f"<tr{css}><td class='l'>{esc(row.run)}</td><td class='l'>{esc(row.metric)}{arrow}</td>"
            f"<td>{num(row.baseline)}</td><td>{num(row.current)}</td>"
            f"<td>{'&ndash;' if delta is None else f'{delta:+.4f}'}</td><td>{'' if row.n is None else row.n}</td>"
            f"<td>{'' if row.p_corrected is None else format_p(row.p_corrected)}</td>"
            f"<td class='l'>{esc(row.verdict)}</td></tr>"
        )
    return (
        "<div class='scroll'><table class='baseline'><thead><tr><th class='l'>run</th><th class='l'>metric</th>"
        "<th>baseline</th><th>tonight</th><th>&Delta;</th><th>n</th><th>p corrected</th>"
        f"<th class='l'>verdict</th></tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        "<p class='legend'>&Delta;: tonight minus the baseline. A checked pair's means are over the queries both "
        "reports scored; green/red: significantly better/worse after correction.</p>"
    )
