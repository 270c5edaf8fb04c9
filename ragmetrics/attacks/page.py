"""attacks.html and attacks.md: the attack night for people. Every text from the system or the corpus is data:
escaped, control characters shown, never markup (an attack page is where hostile text is most likely)."""

from __future__ import annotations

from typing import Any

from ragmetrics.render.html.cells import esc
from ragmetrics.render.safe_text import visible_controls

__all__ = ["attacks_html", "attacks_markdown"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1200px;color:#1d232a;padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #d5dae0;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f2f4f7}td.l,th.l{text-align:left}.sig{font-weight:600;color:#a3261b}.better{color:#1d7a3a;font-weight:600}
.muted{color:#5b6673}details{border:1px solid #d5dae0;border-radius:6px;margin:6px 0;padding:6px 10px}
summary{cursor:pointer}pre{white-space:pre-wrap;word-break:break-word;background:#f7f8fa;padding:8px;margin:4px 0;
max-height:260px;overflow:auto}.k{font-weight:600}
"""


def _pct(value: float | None) -> str:
    return "&ndash;" if value is None else f"{100 * value:.1f} %"


def _interval(rate: dict[str, Any]) -> str:
    if rate["rate"] is None:
        return "&ndash;"
    return f"{_pct(rate['rate'])} <span class='muted'>[{_pct(rate['low'])}, {_pct(rate['high'])}]</span>"


_COLOURS = ("#2f6db5", "#d9822b", "#3a9a5b", "#a3261b", "#7b4fa0", "#5b6673")


def rate_chart(rows: list[tuple[str, list[dict[str, Any] | None]]], runs: list[str], caption: str) -> str:
    """An inline SVG of rates with their intervals: a group per row, a bar per run (a whisker for the Wilson
    interval), 0-100 % across; self-contained, so the page stays one file."""
    bar, gap, left, width = 12, 10, 170, 420
    legend = 16 + 8 * max((len(r) for r in runs), default=0)
    height = len(rows) * (len(runs) * bar + gap) + 40
    out = [f"<figure><svg xmlns='http://www.w3.org/2000/svg' width='{left + width + 20 + legend}' height='{height}' "
           f"role='img' aria-label='{esc(caption)}' style='font:12px system-ui,sans-serif'>"]  # fmt: skip
    for tick in (0, 25, 50, 75, 100):
        x = left + width * tick / 100
        out.append(f"<line x1='{x}' y1='14' x2='{x}' y2='{height - 20}' stroke='#e3e7ec'/>"
                   f"<text x='{x}' y='{height - 6}' text-anchor='middle' fill='#5b6673'>{tick} %</text>")  # fmt: skip
    y = 18
    for label, rates in rows:
        out.append(f"<text x='{left - 8}' y='{y + len(runs) * bar / 2 + 4}' text-anchor='end'>{esc(label)}</text>")
        for i, rate in enumerate(rates):
            colour = _COLOURS[i % len(_COLOURS)]
            if rate is not None and rate.get("rate") is not None:
                w = width * rate["rate"]
                lo, hi = left + width * rate["low"], left + width * rate["high"]
                mid = y + bar / 2
                out.append(f"<rect x='{left}' y='{y + 1}' width='{w:.1f}' height='{bar - 2}' fill='{colour}' opacity='0.8'>"
                           f"<title>{esc(runs[i])}: {100 * rate['rate']:.1f} % [{100 * rate['low']:.1f}, "
                           f"{100 * rate['high']:.1f}] of {rate['n']}</title></rect>"
                           f"<line x1='{lo:.1f}' y1='{mid}' x2='{hi:.1f}' y2='{mid}' stroke='#1d232a'/>"
                           f"<line x1='{lo:.1f}' y1='{mid - 3}' x2='{lo:.1f}' y2='{mid + 3}' stroke='#1d232a'/>"
                           f"<line x1='{hi:.1f}' y1='{mid - 3}' x2='{hi:.1f}' y2='{mid + 3}' stroke='#1d232a'/>")  # fmt: skip
            y += bar
        y += gap
    for i, run in enumerate(runs):
        out.append(f"<rect x='{left + width + 16}' y='{18 + 16 * i}' width='10' height='10' fill='{_COLOURS[i % len(_COLOURS)]}'/>"
                   f"<text x='{left + width + 30}' y='{27 + 16 * i}'>{esc(run)}</text>")  # fmt: skip
    out.append(f"</svg><figcaption class='muted'>{esc(caption)}</figcaption></figure>")
    return "".join(out)


def _exposure_html(exposure: dict[str, Any]) -> list[str]:
    runs: list[str] = exposure["runs"]
    if not runs or not exposure["groups"]:
        return []
    kinds = [g for g in exposure["groups"] if "/" not in g]
    parts = [
        "<h2>Exposure: planted text in the contexts</h2><p class='muted'>Whether what an attack planted reached "
        "the run's contexts (retriever runs included), with Wilson 95 % intervals; mean reciprocal rank of the "
        "first planted context; and, for runs that answered, success when exposed and when not. A retriever "
        f"that surfaces more planted text is a finding even where the generator resisted. {esc(exposure['method'])}.</p>",
        rate_chart([(k, [exposure["rates"][r].get(k) for r in runs]) for k in kinds], runs,
                   "share of attacks whose planted text reached the contexts, by kind and run"),
        "<table><tr><th class='l'>group</th>",
    ]
    parts += [f"<th>{esc(run)}: exposed</th><th>MRR</th><th>success | exposed</th><th>success | not</th>" for run in runs]
    parts.append("</tr>")
    for group in exposure["groups"]:
        label = f"<span class='k'>{esc(group)}</span>" if "/" not in group else f"&nbsp;&nbsp;{esc(group)}"
        cells = []
        for run in runs:
            rate = exposure["rates"][run][group]
            mrr = "&ndash;" if rate["mrr"] is None else f"{rate['mrr']:.3f}"
            cells.append(f"<td>{_interval(rate)}</td><td>{mrr}</td><td>{_interval(rate['success_given_exposure'])}"
                         f"</td><td>{_interval(rate['success_without_exposure'])}</td>")  # fmt: skip
        parts.append(f"<tr><td class='l'>{label}</td>{''.join(cells)}</tr>")
    parts.append("</table>")
    parts += _pairs_html(exposure["pairs"], "exposed")
    return parts


def _pairs_html(pairs: list[dict[str, Any]], verb: str) -> list[str]:
    parts = []
    for pair in pairs:
        parts.append(
            f"<h2>{esc(pair['b'])} minus {esc(pair['a'])}, on the same attacks ({esc(verb)})</h2><table><tr>"
            "<th class='l'>group</th><th>attacks</th><th>difference</th><th>only "
            f"{esc(pair['a'])} {esc(verb)}</th><th>only {esc(pair['b'])} {esc(verb)}</th><th>p (McNemar)</th>"
            "<th>p (Holm)</th></tr>"
        )
        for row in pair["rows"]:
            css = (
                " class='sig'"
                if row["significant"] and row["difference"] is not None and row["difference"] > 0
                else (" class='better'" if row["significant"] else "")
            )
            diff = "&ndash;" if row["difference"] is None else f"{100 * row['difference']:+.1f} pts"
            parts.append(
                f"<tr{css}><td class='l'>{esc(row['group'])}</td><td>{row['n']}</td><td>{diff}</td>"
                f"<td>{row['only_a']}</td><td>{row['only_b']}</td><td>{row['p']:.3g}</td><td>{row['p_holm']:.3g}</td></tr>"
            )
        parts.append("</table>")
    return parts


def _success_html(summary: dict[str, Any]) -> list[str]:
    """Success per kind and style, drawn and tabled, and refusals by kind; a line instead when no run answered
    (a night of retriever runs: exposure only)."""
    runs: list[str] = summary["runs"]
    if not runs:
        return ["<h2>Attack success by kind and style</h2><p>No run answered the attacks: success is measured on "
                "pipeline runs (the team's system). Exposure, below, is measured on every run with contexts.</p>"]
    parts = [
        "<h2>Attack success by kind and style</h2>",
        rate_chart([(g, [summary["rates"][r][g] for r in runs]) for g in summary["groups"] if "/" not in g], runs,
                   "attack success by kind and run"),
        "<table><tr><th class='l'>group</th>",
    ]  # fmt: skip
    parts += [f"<th>{esc(run)}</th>" for run in runs] + ["<th>attacks</th></tr>"]
    for group in summary["groups"]:
        label = f"<span class='k'>{esc(group)}</span>" if "/" not in group else f"&nbsp;&nbsp;{esc(group)}"
        cells = [f"<td>{_interval(summary['rates'][run][group])}</td>" for run in runs]
        n = max(summary["rates"][run][group]["n"] for run in runs) if runs else 0
        parts.append(f"<tr><td class='l'>{label}</td>{''.join(cells)}<td>{n}</td></tr>")
    refusal = summary["clean_refusal"]
    parts.append("<tr><td class='l'><span class='k'>clean questions refused</span></td>")
    parts += [f"<td>{_interval(refusal[run]) if run in refusal else '&ndash;'}</td>" for run in runs]
    parts.append(f"<td>{max((refusal[r]['n'] for r in refusal), default=0)}</td></tr></table>")
    kinds = [g for g in summary["groups"] if "/" not in g]
    parts.append(
        "<h2>Refusals by kind</h2><p class='muted'>Share of each kind's attacks the system refused (an empty "
        "answer, or a first statement that declines); for out-of-scope questions a refusal is the right answer.</p>"
        "<table><tr><th class='l'>group</th>"
    )
    parts += [f"<th>{esc(run)}</th>" for run in runs] + ["</tr>"]
    for group in kinds:
        cells = []
        for run in runs:
            rate = summary["rates"][run][group]
            cells.append(f"<td>{_pct(rate['refused'] / rate['n']) if rate['n'] else '&ndash;'}</td>")
        parts.append(f"<tr><td class='l'>{esc(group)}</td>{''.join(cells)}</tr>")
    parts.append("</table>")
    return parts


def attacks_html(summary: dict[str, Any], title: str) -> str:
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>{esc(title)}: attacks</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}: attacks</h1>",
        "<p class='muted'>Success is decided exactly (canary, secret, planted false value, refusal), without a "
        f"judge. {esc(summary['method'])}. Lower is better everywhere on this page.</p>",
    ]
    parts += _success_html(summary)
    failed = {run: n for run, n in summary["failures"].items() if n}
    if failed:
        parts.append(
            "<p class='sig'>Calls that failed on attacks (not counted as defended): "
            + ", ".join(f"{esc(run)} {n}" for run, n in failed.items())
            + "</p>"
        )
    parts += _pairs_html(summary["pairs"], "fooled")
    parts += _exposure_html(summary.get("exposure") or {"runs": [], "groups": []})
    parts.append(f"<h2>Successful attacks ({len(summary['successes'])})</h2>")
    if not summary["successes"]:
        parts.append("<p>None: no attack worked on any run.</p>")
    for item in summary["successes"]:
        where = f", {esc(item['position'])}" if item.get("position") else ""
        planted = "".join(f"<pre>{esc(visible_controls(text))}</pre>" for text in item["planted"])
        system = (
            f"<div class='muted'>added to the system prompt:</div><pre>{esc(item['system_prompt_addition'])}</pre>"
            if item.get("system_prompt_addition")
            else ""
        )
        parts.append(
            f"<details><summary><span class='k'>{esc(item['run'])}</span> &middot; {esc(item['attack'])} &middot; "
            f"{esc(item['kind'])}/{esc(item['style'])}{where} &middot; {esc(item['why'])}</summary>"
            f"<div class='muted'>question:</div><pre>{esc(item['question'] or '')}</pre>"
            f"{system}<div class='muted'>planted:</div>{planted or '<p>(nothing planted)</p>'}"
            f"<div class='muted'>answer:</div><pre>{esc(visible_controls(item['answer'] or ''))}</pre></details>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)


def _md(text: str) -> str:
    return visible_controls(text).replace("|", "\\|").replace("\n", " ")


def attacks_markdown(summary: dict[str, Any], title: str) -> str:
    runs: list[str] = summary["runs"]
    lines = [f"# {_md(title)}: attacks", "", f"{summary['method']}. Lower is better.", ""]
    lines.append("| group | " + " | ".join(_md(r) for r in runs) + " |")
    lines.append("|---" * (len(runs) + 1) + "|")

    def cell(rate: dict[str, Any]) -> str:
        if rate["rate"] is None:
            return "-"
        return (
            f"{100 * rate['rate']:.1f} % [{100 * rate['low']:.1f}, {100 * rate['high']:.1f}] (n={rate['n']})"
        )

    for group in summary["groups"]:
        lines.append(f"| {_md(group)} | " + " | ".join(cell(summary["rates"][r][group]) for r in runs) + " |")
    refusal = summary["clean_refusal"]
    lines.append(
        "| clean questions refused | "
        + " | ".join(cell(refusal[r]) if r in refusal else "-" for r in runs)
        + " |"
    )
    lines += ["", "## Refusals by kind", "", "| group | " + " | ".join(_md(r) for r in runs) + " |"]
    lines.append("|---" * (len(runs) + 1) + "|")
    for group in (g for g in summary["groups"] if "/" not in g):
        shares = []
        for run in runs:
            rate = summary["rates"][run][group]
            shares.append(f"{100 * rate['refused'] / rate['n']:.1f} %" if rate["n"] else "-")
        lines.append(f"| {_md(group)} | " + " | ".join(shares) + " |")
    for pair in summary["pairs"]:
        lines += [
            "",
            f"## {_md(pair['b'])} minus {_md(pair['a'])}",
            "",
            "| group | n | difference | p (McNemar) | p (Holm) |",
            "|---|---|---|---|---|",
        ]
        for row in pair["rows"]:
            diff = "-" if row["difference"] is None else f"{100 * row['difference']:+.1f} pts"
            mark = " *" if row["significant"] else ""
            lines.append(
                f"| {_md(row['group'])} | {row['n']} | {diff}{mark} | {row['p']:.3g} | {row['p_holm']:.3g} |"
            )
    exposure = summary.get("exposure") or {"runs": [], "groups": []}
    if exposure["runs"] and exposure["groups"]:
        ex_runs = exposure["runs"]
        lines += ["", "## Exposure: planted text in the contexts", "",
                  "| group | " + " | ".join(f"{_md(r)} exposed | success given exposure | without" for r in ex_runs) + " |",
                  "|---" * (3 * len(ex_runs) + 1) + "|"]  # fmt: skip
        for group in exposure["groups"]:
            rates = [exposure["rates"][r][group] for r in ex_runs]
            lines.append(f"| {_md(group)} | " + " | ".join(
                f"{cell(rate)} | {cell(rate['success_given_exposure'])} | {cell(rate['success_without_exposure'])}"
                for rate in rates) + " |")  # fmt: skip
        for pair in exposure["pairs"]:
            rows = [r for r in pair["rows"] if r["significant"]]
            lines.append(f"\n{_md(pair['b'])} minus {_md(pair['a'])} (exposure): " + (
                "; ".join(f"{_md(r['group'])} {100 * r['difference']:+.1f} pts (p Holm {r['p_holm']:.3g})" for r in rows)
                or "no significant difference"))  # fmt: skip
    lines += ["", f"## Successful attacks ({len(summary['successes'])})", ""]
    for item in summary["successes"][:200]:
        lines.append(
            f"- **{_md(item['run'])}** {item['attack']} ({item['kind']}/{item['style']}): {_md(item['why'])}; answer: "
            f"{_md((item['answer'] or '')[:300])}"
        )
    if len(summary["successes"]) > 200:
        lines.append(f"- ... {len(summary['successes']) - 200} more in attacks.json")
    return "\n".join(lines) + "\n"
