"""The page's conversation part: when the queries are turns (the report's `clusters`), one drill-down per
conversation with its turns in order (question, answer, the tools called), every run's per-turn scores, and
its conversation metrics (scored on the last turn); each turn links to its own drill-down with the judge's
verdicts."""

from __future__ import annotations

import json
from typing import Any

from ragmetrics.render.html.cells import clip, esc, num
from ragmetrics.render.html.summary import all_metrics
from ragmetrics.schema import Report, SampleText

__all__ = ["conversations_block", "tool_calls_html"]


def tool_calls_html(calls: list[dict[str, Any]] | None) -> str:
    if not calls:
        return ""
    said = "; ".join(
        f"{call.get('name', '?')}({json.dumps(call.get('args', {}), ensure_ascii=False, sort_keys=True)})"
        for call in calls
    )
    return f"<br><span class='legend'>tools: {esc(clip(said, 240))}</span>"


def conversations_block(report: Report, anchors: dict[str, str]) -> str:
    """Empty when the report holds no conversations."""
    clusters = report.metadata.clusters
    if not clusters:
        return ""
    nightly = report.metadata.nightly
    samples: dict[str, SampleText] = nightly.samples if nightly is not None else {}
    by_conversation: dict[str, list[str]] = {}
    for qid in dict.fromkeys(q for run in report.runs for q in run.per_query):
        if qid in clusters:
            by_conversation.setdefault(clusters[qid], []).append(qid)
    metrics = all_metrics(report)
    parts = [
        f"<h2 id='conversations'>Conversations</h2><p class='legend'>{len(by_conversation)} conversations, "
        f"{sum(len(t) for t in by_conversation.values())} turns. Comparisons, intervals and power count "
        "conversations, not turns. A conversation metric is scored on the conversation's last turn; "
        "&ndash;: not applicable or not scored. A turn's id opens its drill-down with the judge's verdicts.</p>"
    ]
    for conversation, turns in by_conversation.items():
        ordered = sorted(
            turns, key=lambda q: (samples[q].turn if q in samples and samples[q].turn is not None else 0, q)
        )
        head = "".join(
            f"<th>{esc(run.name)}<br>{esc(m)}</th>"
            for m in metrics
            for run in report.runs
            if m in run.metrics
        )
        rows = []
        for qid in ordered:
            sample = samples.get(qid)
            turn = "" if sample is None or sample.turn is None else str(sample.turn)
            question = esc(clip(sample.question, 200)) if sample else ""
            answer = esc(clip(sample.answer or "", 300)) if sample else ""
            cells = "".join(
                f"<td>{num(run.per_query.get(qid, {}).get(m))}</td>"
                for m in metrics
                for run in report.runs
                if m in run.metrics
            )
            link = f"<a class='qid' href='#{anchors[qid]}'>{esc(qid)}</a>" if qid in anchors else esc(qid)
            rows.append(
                f"<tr><td>{esc(turn)}</td><td class='tid'>{link}</td><td class='turntext'><b>user:</b> {question}"
                f"<br><b>assistant:</b> {answer}{tool_calls_html(sample.tool_calls if sample else None)}</td>{cells}</tr>"
            )
        parts.append(
            f"<details class='conversation'><summary><span class='qid'>{esc(conversation)}</span>"
            f"{len(ordered)} turns</summary><div class='scroll'><table><thead><tr><th>turn</th>"
            f"<th class='l'>id</th><th class='l'>what was said</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table></div></details>"
        )
    return "".join(parts)
