"""history.html: the nights over time on one self-contained page (inline SVG, no script, no request).

Per run and metric: the nightly means with their 95 % CIs, each night's point coloured by the gate's outcome,
a dashed line at the pinned baseline, and a numbered mark wherever data, judge, outputs, config or version
changed (a change of data or judge also breaks the line: the nights before measure something else). Above the
charts, the drift table (trend test over the last N comparable nights, corrected across series) and the list
of changes; under each chart, the queries that score worse than at the reference and since which night.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ragmetrics._format import format_p
from ragmetrics.history.analysis import SeriesDrift, analyse, pinned_baseline, worse_since
from ragmetrics.history.changes import Annotation, breaks_series, changes_between
from ragmetrics.history.record import NightRecord
from ragmetrics.history.store import History
from ragmetrics.options import lower_is_better
from ragmetrics.render.html.cells import esc, num

STATUS_COLOURS = {
    "ok": "#17753a",
    "regression": "#b3261e",
    "not_comparable": "#c77700",
    "untrusted": "#8a5a00",
    "incomplete": "#6b7280",
    "no_baseline": "#2557a7",
}
KIND_COLOURS = {
    "data": "#b3261e",
    "judge": "#c77700",
    "outputs": "#2557a7",
    "config": "#6d28d9",
    "version": "#6b7280",
}
WIDTH, HEIGHT = 440, 210
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 16, 36

_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d232b;margin:0 auto;max-width:1400px;
padding:24px}
@media (max-width:700px){body{padding:10px;font-size:13px}}
h1{font-size:22px;margin:0 0 4px;overflow-wrap:anywhere}
h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d7dde4;padding-bottom:4px}
.meta,.legend{color:#5b6673;font-size:12.5px}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto;max-width:100%}
@media (max-width:700px){.scroll::before{content:"\\2194  scrolls sideways";display:block;position:sticky;left:0;font-size:11px;color:#5b6673;padding:2px 4px}}
.drifts td,.drifts th,.nights td,.nights th,.worse td{white-space:nowrap}
th,td{border:1px solid #d7dde4;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f5f7fa}td.l,th.l{text-align:left}
tbody tr:nth-child(even){background:#fafbfc}
tr.drift td{background:#fbe3e1}.flag{color:#b3261e;font-weight:700}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(460px,100%),1fr));gap:12px}
figure.series{margin:0;border:1px solid #d7dde4;border-radius:6px;padding:8px}
figure.series.drift{border-color:#b3261e;box-shadow:0 0 0 1px #b3261e}
figure.series h3{font-size:14px;margin:0 0 4px;overflow-wrap:anywhere}
svg{width:100%;height:auto;display:block}
.problems{color:#b3261e}
.key span{display:inline-block;margin-right:12px}.dot{display:inline-block;width:10px;height:10px;border-radius:50%;
margin-right:4px;vertical-align:middle}
details{margin-top:4px}summary{cursor:pointer;color:#2557a7;font-size:12.5px}
"""


def _x(i: int, count: int) -> float:
    if count <= 1:
        return LEFT + (WIDTH - LEFT - RIGHT) / 2
    return LEFT + i * (WIDTH - LEFT - RIGHT) / (count - 1)


def nice_ticks(low: float, high: float, most: int = 6) -> tuple[list[float], int]:
    """Round tick values inside [low, high] (steps of 1, 2, 2.5 or 5 times a power of ten, at most `most`
    ticks) and the decimals that print them exactly: 0.30, 0.35, 0.40 rather than 0.307, 0.360, 0.413."""
    import math

    span = max(high - low, 1e-12)
    raw = span / max(most - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 12) + 0.0)  # + 0.0: never a "-0.0" label
        value += step
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if round(step / power, 6) == 2.5 else 0)
    return ticks, decimals


def _chart(
    records: Sequence[NightRecord],
    notes: Sequence[Annotation],
    number: dict[int, int],
    run: str,
    metric: str,
    judged: bool,
    baseline: int | None,
) -> str:
    count = len(records)
    points = [r.point(run, metric) for r in records]
    values = [v for p in points if p is not None for v in (p.mean, p.ci_low, p.ci_high) if v is not None]
    if not values:
        return "<p class='legend'>no night has a mean for this metric</p>"
    low, high = min(values), max(values)
    if high - low < 1e-9:
        low, high = low - 0.05, high + 0.05
    pad = (high - low) * 0.08
    low, high = low - pad, high + pad

    def y(v: float) -> float:
        return TOP + (high - v) / (high - low) * (HEIGHT - TOP - BOTTOM)

    parts = [
        f"<svg viewBox='0 0 {WIDTH} {HEIGHT}' role='img' aria-label='{esc(run)} {esc(metric)} by night'>",
        f"<rect x='{LEFT}' y='{TOP}' width='{WIDTH - LEFT - RIGHT}' height='{HEIGHT - TOP - BOTTOM}' "
        "fill='#fff' stroke='#d7dde4'/>",
    ]
    ticks, decimals = nice_ticks(low, high)
    for v in ticks:
        parts.append(
            f"<line x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y(v):.1f}' y2='{y(v):.1f}' stroke='#eef1f4'/>"
            f"<text x='{LEFT - 4}' y='{y(v) + 4:.1f}' font-size='10' text-anchor='end' fill='#5b6673'>"
            f"{v:.{decimals}f}</text>"
        )
    by_night: dict[int, list[Annotation]] = {}
    for a in notes:
        by_night.setdefault(a.night, []).append(a)
    for night, changes in by_night.items():
        x = (_x(night - 1, count) + _x(night, count)) / 2
        breaking = [a for a in changes if breaks_series(a, run, judged)]
        colour = KIND_COLOURS[(breaking or changes)[0].kind]
        dash = "" if breaking else " stroke-dasharray='4 3'"
        numbers = [number[id(a)] for a in changes]
        label = str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}"
        kinds = " ".join(sorted({a.kind for a in changes}))
        parts.append(
            f"<g class='change' data-kind='{kinds}'><title>{esc('; '.join(a.text for a in changes))}</title>"
            f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{TOP}' y2='{HEIGHT - BOTTOM}' stroke='{colour}'{dash}/>"
            f"<text x='{x + 2:.1f}' y='{TOP + 10}' font-size='10' fill='{colour}'>{label}</text></g>"
        )
    if baseline is not None and (bp := points[baseline]) is not None and bp.mean is not None:
        parts.append(
            f"<line class='baseline' x1='{LEFT}' x2='{WIDTH - RIGHT}' y1='{y(bp.mean):.1f}' y2='{y(bp.mean):.1f}' "
            "stroke='#1d232b' stroke-dasharray='2 3'><title>pinned baseline</title></line>"
        )
    breaks = {a.night for a in notes if breaks_series(a, run, judged)}
    segment: list[str] = []
    lines: list[list[str]] = []
    for i, p in enumerate(points):
        if i in breaks and segment:
            lines.append(segment)
            segment = []
        if p is not None and p.mean is not None:
            segment.append(f"{_x(i, count):.1f},{y(p.mean):.1f}")
    if segment:
        lines.append(segment)
    for pts in lines:
        if len(pts) > 1:
            parts.append(
                f"<polyline fill='none' stroke='#5b6673' stroke-width='1.4' points='{' '.join(pts)}'/>"
            )
    for i, (record, p) in enumerate(zip(records, points, strict=True)):
        if p is None or p.mean is None:
            continue
        x = _x(i, count)
        if p.ci_low is not None and p.ci_high is not None:
            parts.append(
                f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{y(p.ci_low):.1f}' y2='{y(p.ci_high):.1f}' "
                "stroke='#9aa5b1' stroke-width='3' stroke-linecap='round' opacity='0.7'/>"
            )
        outcome = record.outcome(run, metric)
        colour = STATUS_COLOURS[outcome]
        ci = f" [{p.ci_low:.4f}, {p.ci_high:.4f}]" if p.ci_low is not None and p.ci_high is not None else ""
        tip = f"{record.created_at:%Y-%m-%d %H:%M} UTC: {p.mean:.4f}{ci}, n = {p.n}; gate: " + (
            outcome.replace("_", " ")
        )
        parts.append(
            f"<circle class='night' data-status='{outcome}' cx='{x:.1f}' "
            f"cy='{y(p.mean):.1f}' r='{5 if outcome == 'regression' else 4}' fill='{colour}' stroke='#fff'>"
            f"<title>{esc(tip)}</title></circle>"
        )
    step = max(1, (count + 5) // 6)
    days = {r.created_at.date() for r in records}
    stamp = "%m-%d" if len(days) == count else ("%H:%M" if len(days) == 1 else "%d %H:%M")
    for i in range(0, count, step):
        # The last label ends at its night instead of centring on it, so it is not cut at the chart's edge.
        anchor = "end" if i == count - 1 and count > 1 else "middle"
        parts.append(
            f"<text x='{_x(i, count):.1f}' y='{HEIGHT - BOTTOM + 14}' font-size='10' text-anchor='{anchor}' "
            f"fill='#5b6673'>{records[i].created_at.strftime(stamp)}</text>"
        )
    parts.append(
        f"<text x='{(LEFT + WIDTH - RIGHT) / 2:.1f}' y='{HEIGHT - 6}' font-size='10' text-anchor='middle' "
        f"fill='#5b6673'>night (UTC){' · lower is better' if lower_is_better(metric) else ''}</text></svg>"
    )
    return "".join(parts)


def _drift_table(records: Sequence[NightRecord], drifts: Sequence[SeriesDrift], alpha: float) -> str:
    rows = []
    for d in drifts:
        test = d.test
        reference = "" if d.reference is None else f"{records[d.reference].created_at:%Y-%m-%d %H:%M}"
        reference += " (baseline)" if d.reference_is_baseline else ""
        delta = d.delta
        rows.append(
            f"<tr class='{'drift' if d.flagged else ''}'><td class='l'>{esc(d.run)}</td>"
            f"<td class='l'>{esc(d.metric)}{' &darr;' if lower_is_better(d.metric) else ''}</td>"
            f"<td>{num(d.latest_mean)}</td><td class='l'>{esc(reference)}</td><td>{num(d.reference_mean)}</td>"
            f"<td>{'&ndash;' if delta is None else f'{delta:+.4f}'}</td><td>{len(d.window)}</td>"
            f"<td>{'&ndash;' if test is None else f'{test.slope:+.4f}'}</td>"
            f"<td>{'&ndash;' if test is None else format_p(test.p_value)}</td>"
            f"<td>{'&ndash;' if d.p_corrected is None else format_p(d.p_corrected)}</td>"
            f"<td class='l'>{'<span class=flag>DRIFT</span>' if d.flagged else ''}{esc(d.note)}</td></tr>"
        )
    return (
        "<div class='scroll'><table class='drifts'><thead><tr><th class='l'>run</th><th class='l'>metric</th>"
        "<th>latest</th><th class='l'>reference</th><th>reference mean</th><th>&Delta;</th><th>nights tested</th>"
        "<th>Sen slope / night</th><th>p</th><th>p corrected</th><th class='l'>drift</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
        f"<p class='legend'>Mann-Kendall trend test over the last nights of each series' comparable segment "
        f"(since the last change of data, or of its judge for a judged metric); p corrected across the series "
        f"tested. DRIFT: corrected p &le; {alpha:g}, the trend goes the worse way, and the latest night is worse "
        "than the reference (the pinned baseline when it is in the segment, else the window's first night).</p>"
    )


SHOWN_WORSE = 10
"""Queries listed per series: the most hurt; the count above them is every query worse."""


def worse_table(records: Sequence[NightRecord], run: str, metric: str, reference: int | None) -> str:
    """The queries of one series worse on the latest night than at `reference`: all counted, the most hurt
    listed."""
    if reference is None or reference == len(records) - 1:
        return ""
    every = worse_since(records, run, metric, reference, limit=None)
    if not every:
        return "<p class='legend'>no query scores worse than at the reference</p>"
    worse = every[:SHOWN_WORSE]
    rows = "".join(
        f"<tr><td class='l'>{esc(q.query_id)}</td><td>{q.reference:.4f}</td><td>{q.latest:.4f}</td>"
        f"<td>{q.delta:+.4f}</td><td class='l'>{records[q.since].created_at:%Y-%m-%d %H:%M}</td>"
        f"<td>{len(records) - q.since}</td></tr>"
        for q in worse
    )
    return (
        f"<details><summary>{len(every)} quer{'y' if len(every) == 1 else 'ies'} worse than at the reference"
        + (f" (the {len(worse)} most hurt below)" if len(every) > len(worse) else "")
        + "</summary><div class='scroll'><table class='worse'><thead><tr><th class='l'>query</th><th>reference</th>"
        "<th>latest</th><th>&Delta;</th><th class='l'>worse since</th><th>nights</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div></details>"
    )


def render_page(history: History, *, nights: int, alpha: float, correction: str) -> str:
    records = history.records
    notes = changes_between(records)
    number = {id(a): k + 1 for k, a in enumerate(notes)}
    baseline = pinned_baseline(records)
    drifts = analyse(records, notes, nights=nights, alpha=alpha, correction=correction, baseline=baseline)
    # What needs a look first: drifting series, then those that regressed on a recent night, then the rest.
    recent = records[-nights:]
    drifts.sort(
        key=lambda d: (not d.flagged, not any(r.outcome(d.run, d.metric) == "regression" for r in recent))
    )
    name = records[-1].name if records else "ragmetrics history"
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{esc(name)}: history</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(name)}: history</h1>",
    ]
    if not records:
        parts.append("<p>No night recorded yet.</p></body></html>")
        return "".join(parts)
    first, last = records[0].created_at, records[-1].created_at
    pinned = (
        f"pinned baseline {esc(records[baseline].folder)}"
        if baseline is not None
        else ("baseline " + esc(records[-1].baseline) + " (not among these nights)" if records[-1].baseline
              else "no baseline")
    )  # fmt: skip
    parts.append(
        f"<p class='meta'>{len(records)} nights, {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC &middot; "
        f"{pinned} &middot; trend over the last {nights} comparable nights, {esc(correction)} correction, "
        f"&alpha; = {alpha:g}</p>"
    )
    if history.problems:
        parts.append(
            "<ul class='problems'>" + "".join(f"<li>{esc(p)}</li>" for p in history.problems) + "</ul>"
        )
    flagged = [d for d in drifts if d.flagged]
    parts.append(
        f"<h2>Drift</h2><p>{len(flagged)} of {len(drifts)} series drifting"
        + (": " + ", ".join(f"<b>{esc(d.run)} / {esc(d.metric)}</b>" for d in flagged) if flagged else "")
        + "</p>"
        + _drift_table(records, drifts, alpha)
    )
    if notes:
        items = "".join(
            f"<li><b style='color:{KIND_COLOURS[a.kind]}'>{number[id(a)]}</b> "
            f"{records[a.night].created_at:%Y-%m-%d %H:%M} ({esc(a.kind)}): {esc(a.text)}</li>"
            for a in notes
        )
        parts.append(f"<h2>What changed</h2><ul class='changes'>{items}</ul>")
    key = "".join(
        f"<span><i class='dot' style='background:{c}'></i>{s.replace('_', ' ')}</span>"
        for s, c in STATUS_COLOURS.items()
    )
    parts.append(
        "<h2>Series</h2><p class='legend key'>the gate's outcome for the series that night: " + key + "</p>"
        "<p class='legend'>Point: the night's mean; grey bar: its 95 % bootstrap CI; dotted line: the pinned "
        "baseline; numbered lines: changes (solid where the series breaks, dashed where it goes on).</p>"
        "<div class='charts'>"
    )
    for d in drifts:
        judged = records[-1].point(d.run, d.metric)
        parts.append(
            f"<figure class='series{' drift' if d.flagged else ''}' data-run='{esc(d.run)}' "
            f"data-metric='{esc(d.metric)}'><h3>{esc(d.run)} / {esc(d.metric)}"
            f"{' <span class=flag>DRIFT</span>' if d.flagged else ''}</h3>"
            + _chart(records, notes, number, d.run, d.metric, bool(judged and judged.judged), baseline)
            + worse_table(records, d.run, d.metric, d.reference)
            + "</figure>"
        )
    parts.append("</div>")
    rows = "".join(
        f"<tr><td class='l'>{r.created_at:%Y-%m-%d %H:%M}</td><td class='l'>"
        f"<a href='{esc(r.folder)}/report.html'>{esc(r.folder)}</a></td>"
        f"<td class='l'><i class='dot' style='background:{STATUS_COLOURS[r.status]}'></i>"
        f"{esc(r.status.replace('_', ' '))}</td><td class='l'>{esc(', '.join(r.regressions))}</td></tr>"
        for r in reversed(records)
    )
    parts.append(
        "<h2>Nights</h2><div class='scroll'><table class='nights'><thead><tr><th class='l'>when</th>"
        "<th class='l'>folder</th><th class='l'>gate</th><th class='l'>regressions</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div><p class='legend'>A folder deleted by output.keep keeps its "
        "line in history.jsonl; its link no longer opens.</p></body></html>"
    )
    return "".join(parts)


def write_page(path: Path, history: History, *, nights: int, alpha: float, correction: str) -> Path:
    """Write atomically (a reader never sees half a page)."""
    text = render_page(history, nights=nights, alpha=alpha, correction=correction)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".history-", suffix=".html")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temp, 0o644)  # mkstemp makes it 0600; the page is meant to be published with the reports
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path
