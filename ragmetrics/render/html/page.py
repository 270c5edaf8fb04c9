"""report.html: one page (no request beyond its own folder) to read a Report.

The gate's verdict with tonight beside the baseline, the summary with every significant pair marked, the
paired tests, the trust figures, every plot (a night's from files in `plots/` beside the page, loaded as they
are scrolled to or unfolded; inline PNG when no folder is given), and a sortable per-query table with a
drill-down to the judge's reasons. Everything user-supplied is HTML-escaped; the page's only script sorts and
filters and makes no request.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from ragmetrics._format import format_p
from ragmetrics.render.html.cells import esc as _e
from ragmetrics.render.html.multi import multi_block
from ragmetrics.render.html.plots import PagePlot
from ragmetrics.render.html.power import power_block, work_block
from ragmetrics.render.html.queries import queries_block
from ragmetrics.render.html.style import CSS, SCRIPT
from ragmetrics.render.html.sufficiency import sufficiency_block
from ragmetrics.render.html.summary import all_metrics, baseline_block, comparisons_block, summary_block
from ragmetrics.render.judge_note import judge_note
from ragmetrics.render.qrels_note import qrels_lines, report_qrels, verdict_warnings
from ragmetrics.render.trust import trust_html
from ragmetrics.render.verdict import DIFFERS, verdict_lines
from ragmetrics.schema import GateResult, Report


def render_html(
    report: Report,
    *,
    gate: GateResult | None = None,
    plots: Sequence[PagePlot] = (),
    plot_files: Sequence[str] | None = None,
    title: str | None = None,
    sections: Sequence[str] = (),
) -> str:
    """The whole page. `plots` (`report_plots`) are shown from `plot_files`, their paths relative to the page
    (same order), loaded lazily; without them they are embedded as data URIs (a page on its own). `sections`
    are HTML blocks other parts render from the report (the validity study), placed before the plots."""
    nightly = report.metadata.nightly
    name = title or (nightly.name if nightly is not None else "ragmetrics report")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(name)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(name)}</h1>",
        _meta_block(report),
    ]
    verdict = verdict_lines(report)
    if verdict:  # the answer before the evidence, with the runs the pooled qrels may favour
        items = [
            f"<li class='warn'><b>{_e(v)}</b></li>" if DIFFERS in v else f"<li>{_e(v)}</li>" for v in verdict
        ]
        items += [
            f"<li class='warn'><b>Warning:</b> {_e(w[2:])}</li>"
            if w.startswith("! ")
            else f"<li>{_e(w)}</li>"
            for w in verdict_warnings(report_qrels(report))
        ]
        parts.append("<h2>Verdict</h2><ul class='verdict'>" + "".join(items) + "</ul>")
    if gate is not None:
        parts.append(_gate_block(report, gate))
    parts.append(summary_block(report))
    parts.append(comparisons_block(report))
    parts.append(multi_block(report))
    parts.append(sufficiency_block(report))
    parts.append(power_block(report))
    parts.append(trust_html(report))
    parts.extend(sections)  # sections other parts render (the validity study), before the plots
    if plots:
        parts.append(plots_block(plots, plot_files))
    parts.append(queries_block(report))
    parts.append(work_block(report))
    notes = report.metadata.notes
    if notes:
        parts.append(
            "<h2>Notes</h2><ul class='notes'>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>"
        )
    parts.append(f"<script>{SCRIPT}</script></body></html>")
    return "\n".join(parts)


_p = format_p


def plots_block(plots: Sequence[PagePlot], files: Sequence[str] | None) -> str:
    """Every plot, none left out: the overview open (the quality-against-cost panels across the page's width),
    each metric's pair differences folded under its name, so a night of 10 runs reads as fast as one of 2."""
    sources = (
        [f'src="{_e(f)}" loading="lazy"' for f in files]
        if files is not None
        else [f'src="data:image/png;base64,{base64.b64encode(p.png).decode("ascii")}"' for p in plots]
    )

    def figure(plot: PagePlot, src: str) -> str:
        wide = " class='wide'" if plot.wide else ""
        caption = _e(plot.caption)
        return f'<figure{wide}><img class="plot" alt="{caption}" {src}><figcaption class="legend">{caption}</figcaption></figure>'

    groups: dict[str, list[str]] = {}
    for plot, src in zip(plots, sources, strict=True):
        groups.setdefault(plot.group, []).append(figure(plot, src))
    folded = [g for g in groups if g]
    how = f"; the per-query differences of each compared pair are folded by metric ({len(folded)})" if folded else ""
    parts = [
        "<h2 id='plots'>Plots</h2>",
        f"<p class='legend'>{len(plots)} plots{how}.</p>",
        "<div class='plots'>" + "".join(groups.get("", [])) + "</div>",
    ]
    for metric in folded:
        shown = groups[metric]
        parts.append(
            f"<details class='plotgroup'><summary>{_e(metric)}: per-query differences of {len(shown)} "
            f"{'pair' if len(shown) == 1 else 'pairs'}</summary><div class='plots'>{''.join(shown)}</div></details>"
        )
    return "".join(parts)


def _meta_block(report: Report) -> str:
    meta = report.metadata
    nightly = meta.nightly
    judge = nightly.judge if nightly is not None else None
    rows = [
        f"created {_e(meta.created_at.strftime('%Y-%m-%d %H:%M:%S UTC'))}",
        f"ragmetrics {_e(meta.ragmetrics_version)}",
        f"{meta.query_count} {'query' if meta.query_count == 1 else 'queries'}, {len(report.runs)} "
        f"{'run' if len(report.runs) == 1 else 'runs'}",
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
        note = judge_note(judge, all_metrics(report))
        cache, usage = judge.cache, judge.usage
        if cache.enabled and (cache.hits or cache.misses):
            rows.append(f"cache {cache.hits} hits / {cache.misses} misses")
        if usage.calls:
            tokens = usage.prompt_tokens + usage.completion_tokens
            rows.append(f"{usage.calls} judge calls, {tokens} tokens")
    s = report.settings
    rows.append(f"test {_e(s.test)}, correction {_e(s.correction)}, &alpha; = {s.alpha:g}")
    block = "<p class='meta'>" + " &middot; ".join(rows) + "</p>"
    provenance = qrels_lines(report_qrels(report), warnings=not verdict_lines(report))
    if provenance:  # retrieval verdicts on pooled qrels: who graded them, and which runs they may favour
        items = "".join(
            f"<li class='warn'><b>Warning:</b> {_e(p[2:])}</li>"
            if p.startswith("! ")
            else f"<li>{_e(p)}</li>"
            for p in provenance
        )
        block += f"<ul class='meta qrels-provenance'>{items}</ul>"
    if note:  # its own paragraph: a line per metric, what the local judge is good for and not
        block += "<p class='meta judge-note'>" + "<br>".join(_e(line) for line in note.splitlines()) + "</p>"
    return block


def _gate_block(report: Report, gate: GateResult) -> str:
    """The gate's verdict: what changed since the baseline first, then regressions, near misses, every pair
    beside its baseline, and notes."""
    parts: list[str] = []
    if gate.from_cache:
        items = "".join(f"<li>{_e(c)}</li>" for c in gate.from_cache)
        why = ("baseline.require_fresh: not passed" if gate.refused_stale
               else "--refresh-pipeline calls it; baseline.require_fresh fails such a night")  # fmt: skip
        parts.append(f"<p><b>From the pipeline cache</b>: tonight's build was not called ({_e(why)})</p><ul>{items}</ul>")
    if gate.changes:
        items = "".join(f"<li>{_e(c)}</li>" for c in gate.changes)
        parts.append(f"<p><b>Changed since the baseline</b></p><ul>{items}</ul>")
    if gate.not_comparable:
        items = "".join(f"<li>{_e(c)}</li>" for c in gate.not_comparable)
        parts.append(
            "<p><b>Not comparable</b> (not checked: a judge or data change is not a quality change; "
            f"baseline.on_change: compare checks them anyway)</p><ul>{items}</ul>"
        )
    if gate.untrusted:
        items = "".join(f"<li>{_e(c)}</li>" for c in gate.untrusted)
        parts.append(
            "<p><b>Judge below the agreement floor</b> (neither passed nor failed: tonight's judge agrees with "
            f"your labels less than trust.min_agreement asks; align it with <code>ragmetrics align</code>)</p><ul>{items}</ul>"
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
    parts.append(baseline_block(report, gate))
    if gate.notes:
        parts.append("<ul class='notes'>" + "".join(f"<li>{_e(n)}</li>" for n in gate.notes) + "</ul>")
    title, css = {
        "regression": ("FAILED", "fail"),
        "not_comparable": ("not comparable", "fail"),
        "untrusted": ("judge below agreement floor", "fail"),
        "incomplete": ("incomplete", "fail"),
        "ok": ("passed", "ok"),
    }[gate.status]
    return (
        f"<div class='gate {css}'><h3>Regression gate: {title}</h3>"
        f"<span class='legend'>baseline {_e(gate.baseline)}, {_e(gate.test)} test, "
        f"{_e(gate.correction)} correction</span>{''.join(parts)}</div>"
    )
