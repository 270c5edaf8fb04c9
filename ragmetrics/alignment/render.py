"""The alignment report as JSON, Markdown and a self-contained HTML page (no script, no outside resource),
plus the aligned prompt's added text for people to read."""

from __future__ import annotations

import html
from pathlib import Path

from ragmetrics.alignment.report import AlignmentReport
from ragmetrics.judge.aligned.prompt_edit import PromptEdit, edit_block
from ragmetrics.schema import Interval

__all__ = ["markdown", "page", "write_reports"]


def _fmt(e: Interval | None, signed: bool = False) -> str:
    if e is None or e.estimate is None:
        return "n/a"
    f = "{:+.3f}" if signed else "{:.3f}"
    text = f.format(e.estimate)
    if e.low is not None and e.high is not None:
        text += f" [{f.format(e.low)}, {f.format(e.high)}]"
    return text


def _confusion_rows(c: dict[str, int]) -> list[tuple[str, int, int]]:
    return [
        ("people yes", c["people_yes_judge_yes"], c["people_yes_judge_no"]),
        ("people no", c["people_no_judge_yes"], c["people_no_judge_no"]),
    ]


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(r: AlignmentReport) -> str:
    out = [f"# Alignment of {r.metric}", "", f"**{r.verdict}**", ""]
    out += [
        f"Judge: {r.judge.get('backend')} / {r.judge.get('model')}; labels: {r.labels['count']} ({r.labels['kind']}) from "
        f"`{r.labels['source']}` (sha256 {str(r.labels['sha256'])[:12]}); {r.folds} folds stratified by label, seed "
        f"{r.seed}; steps decided on held-out {r.statistic}. Every figure below is on labels the alignment that "
        "scored them never saw (cross-fitted).",
        "",
    ]
    if r.excluded:
        out += [f"{len(r.excluded)} labelled samples the judge could not score are left out: "
                + ", ".join(f"{k} ({v})" for k, v in list(r.excluded.items())[:5]), ""]  # fmt: skip
    out += ["## Held-out agreement", "", "| statistic | judge as it is | aligned |", "|---|---|---|"]
    out += [f"| {row.statistic} | {_fmt(row.before)} | {_fmt(row.after)} |" for row in r.figures]
    out += [
        "",
        "## Steps",
        "",
        "| step | kept | held-out gain | why | judge calls |",
        "|---|---|---|---|---:|",
    ]
    out += [
        f"| {s.name} | {'yes' if s.kept else 'no'} | {_fmt(s.gain, True)} | {s.why} | {s.calls} |"
        for s in r.steps
    ]
    for s in r.steps:
        if s.choices:
            out += ["", f"{s.name}, chosen on each fold's training labels:", *[f"- {c}" for c in s.choices]]
    for title, c in (("judge as it is", r.confusion_before), ("aligned", r.confusion_after)):
        out += ["", f"## Confusion ({title}, held-out, cut at {r.threshold:g})", "", "| | judge yes | judge no |",
                "|---|---:|---:|", *[f"| {a} | {b} | {c_} |" for a, b, c_ in _confusion_rows(c)]]  # fmt: skip
    if r.examples:
        out += [
            "",
            "## Examples written into the prompt",
            "",
            *[f"- `{e['sample_id']}`: people's label {e['label']:g}" for e in r.examples],
        ]
    if r.instruction_diff:
        out += ["", "## Instruction diff", "", "```diff", r.instruction_diff, "```"]
    if r.head_weights:
        out += ["", f"## Evidence head (penalty {r.head_penalty:g}; weight per standard deviation)", "",
                "| feature | weight |", "|---|---:|", *[f"| {k} | {v:+.3f} |" for k, v in r.head_weights.items()]]  # fmt: skip
    if r.calibration:
        out += ["", f"Calibration: {r.calibration}."]
    out += ["", f"## Where the judge disagrees with people (held-out, {len(r.disagreements)}, worst first)", ""]
    if r.disagreements:
        out += ["| sample | question | answer | people | judge | aligned | the judge's reasons |", "|---|---|---|---:|---:|---:|---|"]
        out += [f"| {_md(d.sample_id)} | {_md(d.question[:120])} | {_md((d.answer or '')[:160])} | {d.label:g} | "
                f"{d.judge:.3f} | {'-' if d.aligned is None else f'{d.aligned:.3f}'} | {_md(d.reason[:300])} |"
                for d in r.disagreements[:50]]  # fmt: skip
        if len(r.disagreements) > 50:
            out.append(f"\n{len(r.disagreements) - 50} more in the report's JSON.")
    else:
        out.append("None: on every held-out sample the judge falls on people's side of the threshold.")
    out += ["", "## Learning curve", "", r.curve_note]
    if r.curve:
        out += [
            "",
            f"| share of training labels | labels per fold | held-out {r.statistic} |",
            "|---:|---:|---|",
        ]
        out += [f"| {p.share:.0%} | {p.labels} | {_fmt(p.value)} |" for p in r.curve]
    out += ["", f"Judge calls: {r.calls}" + (f" of a budget of {r.budget}" if r.budget else "") + f"; {r.seconds:.1f} s.",
            f"Aligned metric written: `{r.written}`." if r.written else "No aligned metric written: no step was kept.", ""]  # fmt: skip
    return "\n".join(out)


def _svg_curve(r: AlignmentReport) -> str:
    points = [(p.share, p.value, p.value.estimate) for p in r.curve if p.value.estimate is not None]
    if len(points) < 2:
        return ""
    lows = [v.low if v.low is not None else est for _, v, est in points]
    highs = [v.high if v.high is not None else est for _, v, est in points]
    lo, hi = min(x for x in lows if x is not None), max(x for x in highs if x is not None)
    lo, hi = (lo - 0.05, hi + 0.05) if hi > lo else (lo - 0.1, hi + 0.1)
    hi = min(hi, 1.0)  # every statistic here is at most 1
    w, h, pad = 420, 200, 36

    def xy(share: float, v: float) -> tuple[float, float]:
        return pad + (w - 2 * pad) * share, h - pad - (h - 2 * pad) * (v - lo) / (hi - lo)

    parts = [f'<svg width="{w}" height="{h}" role="img" aria-label="learning curve">',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>',
             f'<line x1="{pad}" y1="{pad / 2}" x2="{pad}" y2="{h - pad}" stroke="#888"/>']  # fmt: skip
    line = []
    for share, v, estimate in points:
        x, y = xy(share, estimate)
        line.append(f"{x:.1f},{y:.1f}")
        if v.low is not None and v.high is not None:
            _, y1 = xy(share, v.low)
            _, y2 = xy(share, v.high)
            parts.append(f'<line x1="{x:.1f}" y1="{y1:.1f}" x2="{x:.1f}" y2="{y2:.1f}" stroke="#49c"/>')
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#136"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{h - pad + 14}" font-size="10" text-anchor="middle">{share:.0%}</text>'
        )
    parts.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="#136"/>')
    parts.append(f'<text x="4" y="{pad / 2 + 4}" font-size="10">{html.escape(r.statistic)} {hi:.2f}</text>')
    parts.append(f'<text x="4" y="{h - pad}" font-size="10">{lo:.2f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _excluded(r: AlignmentReport) -> str:
    shown = ", ".join(f"{k} ({v})" for k, v in list(r.excluded.items())[:5])
    return f"<p>{len(r.excluded)} labelled samples the judge could not score are left out: {html.escape(shown)}</p>"


def page(r: AlignmentReport) -> str:
    e = html.escape

    def table(head: list[str], rows: list[list[str]]) -> str:
        th = "".join(f"<th>{e(h)}</th>" for h in head)
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
        return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"

    sections = [
        f"<h1>Alignment of {e(r.metric)}</h1>",
        f'<p class="verdict">{e(r.verdict)}</p>',
        f"<p>Judge {e(str(r.judge.get('backend')))} / {e(str(r.judge.get('model')))}; {r.labels['count']} "
        f"{e(str(r.labels['kind']))} labels from <code>{e(str(r.labels['source']))}</code>; {r.folds} folds, seed {r.seed}. "
        "Every figure is on labels the alignment that scored them never saw.</p>",
        *([_excluded(r)] if r.excluded else []),
        "<h2>Held-out agreement</h2>",
        table(["statistic", "judge as it is", "aligned"], [[f.statistic, _fmt(f.before), _fmt(f.after)] for f in r.figures]),
        "<h2>Steps</h2>",
        table(["step", "kept", "held-out gain", "why", "judge calls"],
              [[s.name, "yes" if s.kept else "no", _fmt(s.gain, True), s.why, str(s.calls)] for s in r.steps]),
    ]  # fmt: skip
    for title, c in (("judge as it is", r.confusion_before), ("aligned", r.confusion_after)):
        sections.append(f"<h3>Confusion, {e(title)}</h3>")
        sections.append(
            table(["", "judge yes", "judge no"], [[a, str(b), str(c_)] for a, b, c_ in _confusion_rows(c)])
        )
    if r.examples:
        sections.append("<h2>Examples written into the prompt</h2>")
        sections.append(
            table(["sample", "people's label"], [[x["sample_id"], f"{x['label']:g}"] for x in r.examples])
        )
    if r.instruction_diff:
        sections.append(f"<h2>Instruction diff</h2><pre>{e(r.instruction_diff)}</pre>")
    if r.head_weights:
        sections.append(
            f"<h2>Evidence head</h2><p>penalty {r.head_penalty:g}; weight per standard deviation</p>"
        )
        sections.append(table(["feature", "weight"], [[k, f"{v:+.3f}"] for k, v in r.head_weights.items()]))
    if r.calibration:
        sections.append(f"<p>Calibration: {e(r.calibration)}.</p>")
    sections.append(f"<h2>Where the judge disagrees with people (held-out, {len(r.disagreements)}, worst first)</h2>")
    sections.append(
        table(["sample", "question", "answer", "people", "judge", "aligned", "the judge's reasons"],
              [[d.sample_id, d.question[:200], (d.answer or "")[:300], f"{d.label:g}", f"{d.judge:.3f}",
                "-" if d.aligned is None else f"{d.aligned:.3f}", d.reason] for d in r.disagreements[:200]])
        if r.disagreements else "<p>None: on every held-out sample the judge falls on people's side of the threshold.</p>"
    )  # fmt: skip
    sections.append(f"<h2>Learning curve</h2><p>{e(r.curve_note)}</p>{_svg_curve(r)}")
    if r.curve:
        sections.append(table(["share", "labels per fold", f"held-out {r.statistic}"],
                              [[f"{p.share:.0%}", str(p.labels), _fmt(p.value)] for p in r.curve]))  # fmt: skip
    sections.append(f"<p>Judge calls {r.calls}; {r.seconds:.1f} s. "
                    + (f"Aligned metric: <code>{e(r.written)}</code>." if r.written else "No aligned metric written.") + "</p>")  # fmt: skip
    style = (
        "body{font:14px/1.45 system-ui,sans-serif;max-width:960px;margin:24px auto;padding:0 16px;color:#222}"
        "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
        ".verdict{font-weight:600;font-size:16px}pre{background:#f6f6f6;padding:8px;overflow:auto}"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>Alignment of {e(r.metric)}</title><style>{style}</style></head><body>"
        + "".join(sections)
        + "</body></html>\n"
    )


def write_reports(out_dir: Path, r: AlignmentReport, edit: PromptEdit | None, metric: str) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{metric}.alignment"
    (out_dir / f"{stem}.json").write_text(r.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out_dir / f"{stem}.md").write_text(markdown(r), encoding="utf-8")
    (out_dir / f"{stem}.html").write_text(page(r), encoding="utf-8")
    if edit is not None and not edit.empty() and r.written:
        (out_dir / f"{metric}.prompt-addition.txt").write_text(edit_block(edit) + "\n", encoding="utf-8")
