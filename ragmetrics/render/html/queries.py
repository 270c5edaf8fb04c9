"""The page's per-query part: a sortable table of every metric per run and each run's difference from the
first, then one drill-down per query with its texts, scores and the judge's reasons.

The table shows one metric at a time by default (a picker switches, or shows all), because all metrics times
all runs and differences is too wide to read; sorting a difference column brings the queries a change hurt
most to the top. A query id links to its drill-down.
"""

from __future__ import annotations

import json
from typing import Any

from ragmetrics.options import improvement, lower_is_better
from ragmetrics.render.html.cells import clip, esc, num, sort_value
from ragmetrics.render.html.claims import claim_block
from ragmetrics.render.html.conversations import conversations_block, tool_calls_html
from ragmetrics.render.html.summary import all_metrics
from ragmetrics.render.tables import run_labels
from ragmetrics.schema import JudgeDetail, Report, SampleText


def queries_block(report: Report) -> str:
    nightly = report.metadata.nightly
    samples: dict[str, SampleText] = nightly.samples if nightly is not None else {}
    query_ids = list(dict.fromkeys(q for run in report.runs for q in run.per_query))
    anchors = {qid: f"q-{i}" for i, qid in enumerate(query_ids)}
    return (
        conversations_block(report, anchors)
        + "<h2>Per query</h2>"
        + _table(report, query_ids, samples, anchors)
        + "<h3>Drill-down</h3>"
        + "".join(_drill(report, qid, samples.get(qid), anchors[qid]) for qid in query_ids)
    )


def _table(
    report: Report, query_ids: list[str], samples: dict[str, SampleText], anchors: dict[str, str]
) -> str:
    metrics = all_metrics(report)
    labels = run_labels([r.name for r in report.runs])
    first = report.runs[0]
    options = "".join(f"<option value='{i}'>{esc(m)}</option>" for i, m in enumerate(metrics))
    head = ["<th class='l key' data-type='text'>query</th><th class='l key' data-type='text'>question</th>"]
    for i, metric in enumerate(metrics):
        arrow = " &darr;" if lower_is_better(metric) else ""
        for run in report.runs:
            if metric in run.metrics:
                head.append(
                    f"<th class='key' data-type='num' data-m='{i}' title='{esc(run.name)}'>{esc(metric)}{arrow}"
                    f"<br><span class='runlabel'>{esc(labels[run.name])} {esc(run.name)}</span></th>"
                )
        if metric in first.metrics:
            for run in report.runs[1:]:
                if metric in run.metrics:
                    head.append(
                        f"<th class='key' data-type='num' data-m='{i}' title='{esc(run.name)} minus "
                        f"{esc(first.name)}'>{esc(metric)}{arrow}<br><span class='runlabel'>&Delta; "
                        f"{esc(labels[run.name])}&minus;{esc(labels[first.name])}</span></th>"
                    )
    rows = []
    for qid in query_ids:
        sample = samples.get(qid)
        question = sample.question if sample is not None else ""
        search = json.dumps(f"{qid} {question}".lower())[1:-1]
        cells = [
            f"<td class='l' data-v='{esc(qid)}'><a class='qid' href='#{anchors[qid]}'>{esc(qid)}</a></td>"
            f"<td class='q' data-v='{esc(question)}'>{esc(clip(question, 90))}</td>"
        ]
        for i, metric in enumerate(metrics):
            for run in report.runs:
                if metric in run.metrics:
                    value = run.per_query.get(qid, {}).get(metric)
                    cells.append(f"<td data-m='{i}' data-v='{sort_value(value)}'>{num(value)}</td>")
            if metric in first.metrics:
                base = first.per_query.get(qid, {}).get(metric)
                for run in report.runs[1:]:
                    if metric not in run.metrics:
                        continue
                    value = run.per_query.get(qid, {}).get(metric)
                    diff = None if value is None or base is None else value - base
                    css = ""
                    if diff:
                        css = " class='up'" if improvement(metric, diff) > 0 else " class='down'"
                    text = "&ndash;" if diff is None else f"{diff:+.4f}"
                    cells.append(f"<td data-m='{i}' data-v='{sort_value(diff)}'{css}>{text}</td>")
        rows.append(f'<tr data-search="{esc(search)}">{"".join(cells)}</tr>')
    picker = f"<label>metric <select id='metric'>{options}<option value='all'>all metrics</option></select></label> "
    return (
        f"<p>{picker}<input id='filter' type='search' placeholder='filter by id or question'> "
        f"<span class='legend'><span id='shown'>{len(query_ids)}</span> of {len(query_ids)} shown; click a "
        "column to sort; &Delta;: the run minus the first run (green: better, red: worse for that metric); "
        "click a query id for its texts and the judge's reasons</span></p>"
        f"<div class='scroll'><table id='perquery' class='sortable'><thead><tr>{''.join(head)}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _drill(report: Report, qid: str, sample: SampleText | None, anchor: str) -> str:
    metrics = all_metrics(report)
    question = sample.question if sample is not None else ""
    search = json.dumps(f"{qid} {question}".lower())[1:-1]
    failures = {(f.query_id, f.metric, run.name): f for run in report.runs for f in run.failures}
    rows = []
    for run in report.runs:
        cells = "".join(
            f"<td>{num(run.per_query.get(qid, {}).get(m))}</td>" if m in run.metrics else "<td>&ndash;</td>"
            for m in metrics
        )
        rows.append(f"<tr><th class='l'>{esc(run.name)}</th>{cells}</tr>")
    table = (
        "<div class='scroll'><table><thead><tr><th class='l'>run</th>"
        + "".join(f"<th>{esc(m)}</th>" for m in metrics)
        + f"</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    text = []
    if question:
        text.append(f"<p><b>Question:</b> {esc(question)}</p>")
    if sample is not None and sample.answer:
        text.append(f"<p><b>Answer:</b> {esc(sample.answer)}</p>")
    if sample is not None and sample.reference:
        text.append(f"<p><b>Reference:</b> {esc(sample.reference)}</p>")
    if sample is not None and sample.tool_calls:
        text.append(f"<p>{tool_calls_html(sample.tool_calls).removeprefix('<br>')}</p>")
    reasons = []
    for run in report.runs:
        details = run.details.get(qid, {})
        claimed = {m: d for m, d in details.items() if d.claims is not None}
        if claimed:
            reasons.append(claim_block(run.name, claimed, run.per_query.get(qid, {})))
        for metric, detail in details.items():
            if metric not in claimed:
                reasons.append(detail_html(run.name, metric, detail))
        for metric in run.metrics:
            failure = failures.get((qid, metric, run.name))
            if failure is not None:
                reasons.append(
                    f"<p class='failed'>{esc(run.name)} / {esc(metric)}: failed ({esc(failure.cause)}): "
                    f"{esc(failure.message)}</p>"
                )
    judged = "<h4>Judge</h4>" + "".join(reasons) if reasons else ""
    return (
        f"<details class='query' id='{anchor}' data-search=\"{esc(search)}\"><summary>"
        f"<span class='qid'>{esc(qid)}</span>{esc(clip(question, 110))}</summary>"
        f"<div class='drill'>{''.join(text)}{table}{judged}</div></details>"
    )


def detail_html(run: str, metric: str, detail: JudgeDetail) -> str:
    """One judged score's reason and its verdicts (the first 30; report.json keeps all)."""
    head = f"<p><b>{esc(run)} / {esc(metric)}</b>{' (cached)' if detail.cached else ''}"
    if detail.reason:
        head += f": <span class='reason'>{esc(detail.reason)}</span>"
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
            else ("&#10003;" if value is True else "&#10007;" if value is False else esc(value))
        )
        score = verdict.get("cosine")
        rows.append(
            f"<tr><td class='l'>{esc(where)}</td><td class='l'>{esc(clip(str(text), 160))}</td><td>{mark}</td>"
            f"<td>{'' if score is None else esc(score)}</td>"
            f"<td class='l'>{esc(clip(str(verdict.get('reason', '')), 200))}</td></tr>"
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
