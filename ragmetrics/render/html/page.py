"""report.html: one self-contained page (no external requests) to read a Report.

Summary table with significance markers against the first run, the pairwise tests, plots as inline PNG,
the regression gate's verdict, and a per-query drill-down with the judge's reasons. Everything user-supplied
is HTML-escaped; the page's only script filters the drill-down and makes no request.
"""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Sequence
from typing import Any

from ragmetrics._format import format_effect, format_p
from ragmetrics.options import improvement, lower_is_better
from ragmetrics.render.judge_note import judge_note
from ragmetrics.render.safe_text import strip_controls
from ragmetrics.render.trust import trust_html
from ragmetrics.schema import GateResult, JudgeDetail, PairComparison, Report, SampleText

_CSS = """
:root{--fg:#1d232b;--muted:#5b6673;--line:#d7dde4;--bg:#fff;--alt:#f5f7fa;--good:#17753a;--bad:#b3261e;--accent:#2557a7}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);
margin:0 auto;max-width:1400px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.meta{color:var(--muted);font-size:12.5px}.meta code{font-size:12px}
table{border-collapse:collapse;margin:6px 0;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto;max-width:100%}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:right;vertical-align:top}
th{background:var(--alt);font-weight:600}td.l,th.l{text-align:left}
tr:nth-child(even) td{background:#fbfcfd}
.best{font-weight:700}.up{color:var(--good);font-weight:700}.down{color:var(--bad);font-weight:700}
.sig{background:#eef6ee}.gate{padding:10px 14px;border-radius:6px;margin:14px 0;border:1px solid}
.gate.ok{border-color:#9cc9a8;background:#f0f8f2}.gate.fail{border-color:#e3a29c;background:#fdf1f0}
.gate h3{margin:0 0 6px;font-size:15px}.legend{color:var(--muted);font-size:12.5px;margin:4px 0}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:10px}
.plots figure{margin:0}img.plot{width:100%;border:1px solid var(--line);border-radius:4px}
details{border:1px solid var(--line);border-radius:4px;margin:4px 0;background:#fff}
summary{cursor:pointer;padding:6px 10px;list-style-position:inside}
summary .qid{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;color:var(--accent);margin-right:8px}
summary .scores{color:var(--muted);font-size:12.5px;margin-left:8px}
.drill{padding:4px 12px 10px}.drill p{margin:4px 0}.reason{color:var(--muted);font-size:12.5px}
.verdicts{font-size:12px;color:var(--muted);margin:2px 0 6px 0;padding-left:18px}
.failed{color:var(--bad)}ul.notes{color:var(--muted);font-size:12.5px}
input#filter{padding:5px 8px;width:320px;border:1px solid var(--line);border-radius:4px;font:inherit}
"""

_SCRIPT = """
document.getElementById('filter').addEventListener('input', function (e) {
  var text = e.target.value.toLowerCase(), shown = 0;
  document.querySelectorAll('details.query').forEach(function (d) {
    var hit = !text || d.getAttribute('data-search').indexOf(text) >= 0;
    d.style.display = hit ? '' : 'none'; if (hit) shown++;
  });
  document.getElementById('shown').textContent = shown;
});
document.documentElement.setAttribute('data-ready', '1');
"""


def render_html(
    report: Report,
    *,
    gate: GateResult | None = None,
    plots: Sequence[tuple[str, bytes]] = (),
    title: str | None = None,
) -> str:
    """The whole page. `plots` are (caption, PNG bytes) pairs, embedded as data URIs."""
    nightly = report.metadata.nightly
    name = title or (nightly.name if nightly is not None else "ragmetrics report")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(name)}</h1>",
        _meta_block(report),
    ]
    if gate is not None:
        parts.append(_gate_block(gate))
    parts.append(_summary_block(report))
    parts.append(_comparisons_block(report))
    parts.append(trust_html(report))
    if plots:
        parts.append("<h2>Plots</h2><div class='plots'>")
        for caption, png in plots:
            data = base64.b64encode(png).decode("ascii")
            parts.append(
                f'<figure><img class="plot" alt="{_e(caption)}" src="data:image/png;base64,{data}">'
                f'<figcaption class="legend">{_e(caption)}</figcaption></figure>'
            )
        parts.append("</div>")
    parts.append(_queries_block(report))
    notes = report.metadata.notes
    if notes:
        parts.append(
            "<h2>Notes</h2><ul class='notes'>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>"
        )
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts)


def _e(value: object) -> str:
    """Text for HTML: escaped, and with NUL and other control characters replaced (a browser may act on them)."""
    return html.escape(strip_controls(str(value)), quote=True)


def _num(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "&ndash;"
    return f"{value:.{digits}f}"


_p = format_p


def _meta_block(report: Report) -> str:
    meta = report.metadata
    nightly = meta.nightly
    judge = nightly.judge if nightly is not None else None
    rows = [
        f"created {_e(meta.created_at.strftime('%Y-%m-%d %H:%M:%S UTC'))}",
        f"ragmetrics {_e(meta.ragmetrics_version)}",
        f"{meta.query_count} queries, {len(report.runs)} runs",
    ]
    if meta.dataset_fingerprint:
        rows.append(f"dataset <code>{_e(meta.dataset_fingerprint[:23])}</code>")
    if nightly is not None and nightly.dataset.source:
        skipped = len(nightly.dataset.rows_skipped)
        rows.append(
            f"source {_e(nightly.dataset.source)}" + (f" ({skipped} rows skipped)" if skipped else "")
        )
    note = None
    if judge is not None:
        rows.append(f"judge {_e(judge.backend)}:{_e(judge.model)}")
        note = judge_note(judge, _all_metrics(report))
        cache, usage = judge.cache, judge.usage
        if cache.enabled and (cache.hits or cache.misses):
            rows.append(f"cache {cache.hits} hits / {cache.misses} misses")
        if usage.calls:
            tokens = usage.prompt_tokens + usage.completion_tokens
            rows.append(f"{usage.calls} judge calls, {tokens} tokens")
    s = report.settings
    rows.append(f"test {_e(s.test)}, correction {_e(s.correction)}, &alpha; = {s.alpha:g}")
    block = "<p class='meta'>" + " &middot; ".join(rows) + "</p>"
    if note:  # its own paragraph: a line per metric, what the local judge is good for and not
        block += "<p class='meta judge-note'>" + "<br>".join(_e(line) for line in note.splitlines()) + "</p>"
    return block


def _gate_block(gate: GateResult) -> str:
    """The gate's verdict: what changed since the baseline first, then regressions, near misses and notes."""
    parts: list[str] = []
    if gate.changes:
        items = "".join(f"<li>{_e(c)}</li>" for c in gate.changes)
        parts.append(f"<p><b>Changed since the baseline</b></p><ul>{items}</ul>")
    if gate.not_comparable:
        items = "".join(f"<li>{_e(c)}</li>" for c in gate.not_comparable)
        parts.append(
            "<p><b>Not comparable</b> (not checked: a judge or data change is not a quality change; "
            f"baseline.on_change: compare checks them anyway)</p><ul>{items}</ul>"
        )
    if gate.regressions:
        rows = []
        for c in gate.regressions:
            worst = ", ".join(f"{_e(q.query_id)} ({q.diff:+.3f})" for q in c.worst_queries)
            rows.append(
                f"<li><b>{_e(c.run)} / {_e(c.metric)}</b>: {c.mean_baseline:.4f} &rarr; {c.mean_current:.4f} "
                f"(drop {c.drop:.4f} &gt; {c.threshold:.4f}; p = {_p(c.p_value)}, corrected {_p(c.p_corrected)}, "
                f"n = {c.n})<br><span class='legend'>largest drops: {worst}</span></li>"
            )
        parts.append(f"<ul>{''.join(rows)}</ul>")
    elif gate.checks:
        parts.append(
            f"<p>{len(gate.checks)} run/metric pairs checked; no significant drop beyond its threshold.</p>"
        )
    if gate.near_misses:
        items = "".join(
            f"<li>{_e(c.run)} / {_e(c.metric)}: {c.mean_baseline:.4f} &rarr; {c.mean_current:.4f} (drop "
            f"{c.drop:.4f}, allowed {c.threshold:.4f}, corrected p = {_p(c.p_corrected)}): "
            + ("beyond its threshold but not significant" if c.drop > c.threshold else "significant but within "
               "its threshold") + "</li>"
            for c in gate.near_misses
        )  # fmt: skip
        parts.append(f"<p><b>Near misses</b> (not failures; worth watching)</p><ul>{items}</ul>")
    if gate.notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{_e(n)}</li>" for n in gate.notes) + "</ul>")
    title, css = {
        "regression": ("FAILED", "fail"),
        "not_comparable": ("not comparable", "fail"),
        "incomplete": ("incomplete", "fail"),
        "ok": ("passed", "ok"),
    }[gate.status]
    return (
        f"<div class='gate {css}'><h3>Regression gate: {title}</h3>"
        f"<span class='legend'>baseline {_e(gate.baseline)}, {_e(gate.test)} test, "
        f"{_e(gate.correction)} correction</span>{''.join(parts)}</div>"
    )


def _all_metrics(report: Report) -> list[str]:
    metrics = list(report.metrics)
    for run in report.runs:
        metrics.extend(m for m in run.metrics if m not in metrics)
    return metrics


def _summary_block(report: Report) -> str:
    metrics = _all_metrics(report)
    first = report.runs[0].name
    vs_first: dict[tuple[str, str], PairComparison] = {
        (c.candidate, c.metric): c for c in report.comparisons if c.baseline == first
    }
    best: dict[str, float] = {}
    for metric in metrics:
        values = [r.aggregate.get(metric) for r in report.runs]
        present = [v for v in values if v is not None]
        if len(present) > 1:
            best[metric] = min(present) if lower_is_better(metric) else max(present)
    head = "".join(
        f"<th title='lower is better'>{_e(m)} &darr;</th>" if lower_is_better(m) else f"<th>{_e(m)}</th>"
        for m in metrics
    )
    rows = []
    for run in report.runs:
        cells = []
        for metric in metrics:
            if metric not in run.metrics:
                cells.append("<td>&ndash;</td>")
                continue
            value = run.aggregate.get(metric)
            cls = " class='best'" if metric in best and value == best[metric] else ""
            marker = ""
            comparison = vs_first.get((run.name, metric))
            if comparison is not None and comparison.significant:
                up = improvement(metric, comparison.mean_diff) > 0
                marker = (
                    f" <span class='{'up' if up else 'down'}' title='vs {_e(first)}: "
                    f"diff {comparison.mean_diff:+.4f}, corrected p {_p(comparison.p_corrected)}'>"
                    f"{'&#9650;' if up else '&#9660;'}</span>"
                )
            failures = run.failure_count(metric)
            failed = (
                f" <span class='failed' title='failed scores'>({failures}&times;)</span>" if failures else ""
            )
            cells.append(f"<td{cls}>{_num(value)}{marker}{failed}</td>")
        rows.append(f"<tr><th class='l'>{_e(run.name)}</th>{''.join(cells)}</tr>")
    legend = (
        f"Mean per query. &#9650;/&#9660;: significantly better/worse than <b>{_e(first)}</b> "
        f"({_e(report.settings.test)} test, {_e(report.settings.correction)}-corrected p &le; "
        f"{report.settings.alpha:g}); bold: best run; &darr;: lower is better (latency, tokens, cost); "
        "(n&times;): failed scores, left out of the mean."
    )
    return (
        f"<h2>Summary</h2><div class='scroll'><table><tr><th class='l'>run</th>{head}</tr>{''.join(rows)}</table></div>"
        f"<p class='legend'>{legend}</p>"
    )


def _comparisons_block(report: Report) -> str:
    if not report.comparisons:
        return ""
    head = (
        "<tr><th class='l'>metric</th><th class='l'>baseline</th><th class='l'>candidate</th><th>n</th>"
        "<th>mean diff</th><th>95% CI</th><th>p</th><th>p corrected</th><th>effect</th>"
        "<th>wins/ties/losses</th></tr>"
    )
    rows = []
    for c in report.comparisons:
        cls = " class='sig'" if c.significant else ""
        rows.append(
            f"<tr{cls}><td class='l'>{_e(c.metric)}</td><td class='l'>{_e(c.baseline)}</td>"
            f"<td class='l'>{_e(c.candidate)}</td><td>{c.n}</td><td>{c.mean_diff:+.4f}</td>"
            f"<td>[{c.ci_low:+.4f}, {c.ci_high:+.4f}]</td><td>{_p(c.p_value)}</td>"
            f"<td>{_p(c.p_corrected)}{' *' if c.significant else ''}</td><td>{format_effect(c.effect_size, 3)}</td>"
            f"<td>{c.wins}/{c.ties}/{c.losses}</td></tr>"
        )
    return (
        "<h2>Paired comparisons</h2>"
        f"<div class='scroll'><table>{head}{''.join(rows)}</table></div>"
        "<p class='legend'>Differences are candidate minus baseline over the queries both scored; "
        "* and shading: significant after correction.</p>"
    )


def _queries_block(report: Report) -> str:
    nightly = report.metadata.nightly
    samples: dict[str, SampleText] = nightly.samples if nightly is not None else {}
    query_ids = list(dict.fromkeys(q for run in report.runs for q in run.per_query))
    metrics = _all_metrics(report)
    failures = {(f.query_id, f.metric, run.name): f for run in report.runs for f in run.failures}
    blocks = []
    for qid in query_ids:
        sample = samples.get(qid)
        question = sample.question if sample is not None else ""
        short = []
        for metric in metrics[:3]:
            values = [r.per_query.get(qid, {}).get(metric) for r in report.runs if metric in r.metrics]
            short.append(f"{metric} " + "/".join(_num(v, 2) for v in values))
        search = json.dumps(f"{qid} {question}".lower())[1:-1]
        rows = []
        for run in report.runs:
            cells = "".join(
                f"<td>{_num(run.per_query.get(qid, {}).get(m))}</td>"
                if m in run.metrics
                else "<td>&ndash;</td>"
                for m in metrics
            )
            rows.append(f"<tr><th class='l'>{_e(run.name)}</th>{cells}</tr>")
        table = (
            "<div class='scroll'><table><tr><th class='l'>run</th>"
            + "".join(f"<th>{_e(m)}</th>" for m in metrics)
            + f"</tr>{''.join(rows)}</table></div>"
        )
        text = []
        if question:
            text.append(f"<p><b>Question:</b> {_e(question)}</p>")
        if sample is not None and sample.answer:
            text.append(f"<p><b>Answer:</b> {_e(sample.answer)}</p>")
        if sample is not None and sample.reference:
            text.append(f"<p><b>Reference:</b> {_e(sample.reference)}</p>")
        reasons = []
        for run in report.runs:
            for metric, detail in run.details.get(qid, {}).items():
                reasons.append(_detail_html(run.name, metric, detail))
            for metric in run.metrics:
                failure = failures.get((qid, metric, run.name))
                if failure is not None:
                    reasons.append(
                        f"<p class='failed'>{_e(run.name)} / {_e(metric)}: failed ({_e(failure.cause)}): "
                        f"{_e(failure.message)}</p>"
                    )
        judged = "<h4>Judge</h4>" + "".join(reasons) if reasons else ""
        blocks.append(
            f"<details class='query' data-search=\"{_e(search)}\"><summary><span class='qid'>{_e(qid)}</span>"
            f"{_e(_clip(question, 110))}<span class='scores'>{_e('; '.join(short))}</span></summary>"
            f"<div class='drill'>{''.join(text)}{table}{judged}</div></details>"
        )
    return (
        f"<h2>Per query</h2><p><input id='filter' type='search' placeholder='filter by id or question'> "
        f"<span class='legend'><span id='shown'>{len(query_ids)}</span> of {len(query_ids)} shown; "
        f"scores in run order ({_e(' / '.join(r.name for r in report.runs))}); "
        f"click a query for all its scores and the judge's reasons</span></p>{''.join(blocks)}"
    )


def _detail_html(run: str, metric: str, detail: JudgeDetail) -> str:
    head = f"<p><b>{_e(run)} / {_e(metric)}</b>{' (cached)' if detail.cached else ''}"
    if detail.reason:
        head += f": <span class='reason'>{_e(detail.reason)}</span>"
    head += "</p>"
    shown = detail.verdicts[:30]
    if not shown:
        return head
    rows = []
    for verdict in shown:
        where = _where(verdict)
        text = (
            verdict.get("sentence") or verdict.get("statement") or verdict.get("question")
            or (f"check {verdict['check']}" if "check" in verdict else "")
            or _probabilities(verdict.get("probabilities"))
        )  # fmt: skip
        value = verdict.get("verdict", verdict.get("noncommittal", verdict.get("rating")))
        mark = (
            "&ndash;"
            if value is None
            else ("&#10003;" if value is True else "&#10007;" if value is False else _e(value))
        )
        score = verdict.get("cosine")
        rows.append(
            f"<tr><td class='l'>{_e(where)}</td><td class='l'>{_e(_clip(str(text), 160))}</td><td>{mark}</td>"
            f"<td>{'' if score is None else _e(score)}</td><td class='l'>{_e(_clip(str(verdict.get('reason', '')), 200))}</td></tr>"
        )
    more = len(detail.verdicts) - len(shown)
    tail = f"<p class='legend'>&hellip; {more} more verdicts in report.json</p>" if more > 0 else ""
    return (
        head
        + "<table class='verdicts'><tr><th class='l'>where</th><th class='l'>text</th><th>verdict</th>"
        + f"<th>cosine</th><th class='l'>reason</th></tr>{''.join(rows)}</table>{tail}"
    )


def _probabilities(probabilities: Any) -> str:
    """A rubric rating's level probabilities (G-Eval weighting), as the drill-down shows them."""
    if not isinstance(probabilities, dict) or not probabilities:
        return ""
    return "p: " + ", ".join(f"{label} {p:.2f}" for label, p in probabilities.items() if isinstance(p, float))


def _where(verdict: dict[str, Any]) -> str:
    """Chunk and sentence numbers as a reader counts them (from 1); the schema keeps them 0-based."""
    parts = []
    if isinstance(verdict.get("chunk"), int):
        parts.append(f"chunk {verdict['chunk'] + 1}")
    if isinstance(verdict.get("sentence_index"), int):
        parts.append(f"sentence {verdict['sentence_index'] + 1}")
    return ", ".join(parts)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"
