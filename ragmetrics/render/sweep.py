"""The sweep's Pareto chart (pareto.png) and page (sweep.html), drawn from the sweep's summary dict.

Three panels, quality against latency, tokens and cost, one point per configuration: the Pareto front joined
by a line, the winner and the baseline marked and named, configurations dropped early hollow (their quality is
a mean over fewer questions). The figure uses plots.py's conventions: matplotlib's object API on the Agg canvas,
never pyplot. Nothing here computes a statistic; every number comes from the summary.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from ragmetrics.render.plots import _figure

__all__ = ["pareto_figure", "write_pareto_page"]

_AXES = (("latency_ms", "latency per question (ms)"), ("tokens", "context tokens per question"),
         ("cost_usd", "context cost per 1,000 questions (USD)"))  # fmt: skip
_SCALE = {
    "latency_ms": 1.0,
    "tokens": 1.0,
    "cost_usd": 1000.0,
}  # cost drawn per 1,000 questions: readable ticks


def pareto_figure(s: dict[str, Any]) -> Any:
    figure = _figure(15.0, 4.8)
    axes = figure.subplots(1, 3)
    points = [p for p in s["points"] if p["quality"] is not None]
    winner, baseline = s["winner"]["name"], s["baseline"]
    for ax, (key, label) in zip(axes, _AXES, strict=True):
        points = [{**p, key: p[key] * _SCALE[key]} for p in s["points"] if p["quality"] is not None]
        live = [p for p in points if not p["dropped"]]
        dropped = [p for p in points if p["dropped"]]
        ax.scatter([p[key] for p in live], [p["quality"] for p in live], s=28, color="#3a6ea5", label="kept")
        ax.scatter([p[key] for p in dropped], [p["quality"] for p in dropped], s=28, facecolors="none",
                   edgecolors="#999999", label="dropped early")  # fmt: skip
        front = {p["name"]: p for p in points}
        line = [front[name] for name in s["pareto"][key]]
        ax.plot(
            [p[key] for p in line],
            [p["quality"] for p in line],
            color="#2a9d55",
            lw=1.2,
            label="Pareto front",
        )
        for name, marker, colour, text in (
            (baseline, "s", "#222222", "baseline"),
            (winner, "*", "#d1495b", "winner"),
        ):
            p = front.get(name)
            if p is not None:
                ax.scatter([p[key]], [p["quality"]], s=160 if marker == "*" else 70, marker=marker, color=colour,
                           zorder=5)  # fmt: skip
                ax.annotate(text, (p[key], p["quality"]), textcoords="offset points", xytext=(6, -10),
                            fontsize=7, color=colour)  # fmt: skip
        if key == "latency_ms" and points and all(p[key] > 0 for p in points):
            ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel(f"{s['metric']} (selection half)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc="lower right")
    w = s["winner"]
    figure.suptitle(
        f"{s['name']}: {s['configurations']} configurations. Winner {w['name']}: {w['selection_mean']} selection, "
        f"{w['confirmation_mean']} confirmation (winner's curse gap {w['gap']}). Baseline {baseline}.",
        fontsize=9,
    )
    return figure


def _table(s: dict[str, Any]) -> str:
    head = "<tr><th>configuration</th><th>quality</th><th>questions</th><th>latency ms</th><th>tokens</th>" \
           "<th>cost USD</th><th>dropped</th></tr>"  # fmt: skip
    rows = []
    for p in sorted(s["points"], key=lambda p: -(p["quality"] if p["quality"] is not None else -1.0)):
        cells = [p["name"], p["quality"], p["questions"], p["latency_ms"], p["tokens"], f"{p['cost_usd']:.2e}",
                 "yes" if p["dropped"] else ""]  # fmt: skip
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def write_pareto_page(s: dict[str, Any], out_dir: Path) -> Path:
    """pareto.png and sweep.html (which shows it) in `out_dir`; returns the page's path."""
    figure = pareto_figure(s)
    figure.savefig(out_dir / "pareto.png")
    w, e = s["winner"], s["early_drop"]
    checks = "".join(
        f"<li>against {html.escape(k['role'])} <code>{html.escape(k['against'])}</code>: difference "
        f"{k['mean_difference']:+.4f} on {k['questions']} questions, adjusted p {k['p_adjusted']:.4g}: "
        f"{'confirmed' if k['confirmed'] else 'not confirmed'}</li>"
        for k in s["checks"]
    )
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>Sweep {html.escape(s["name"])}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}td,th{{padding:2px 8px;text-align:right}}
td:first-child{{text-align:left}}img{{max-width:100%}}</style></head><body>
<h1>Sweep: {html.escape(s["name"])}</h1>
<p>{s["configurations"]} configurations on <b>{html.escape(s["metric"])}</b>. Winner <code>{html.escape(w["name"])}</code>:
{w["selection_mean"]} on the selection half ({s["split"]["selection"]} questions), {w["confirmation_mean"]} on the
confirmation half ({s["split"]["confirmation"]}): <b>winner's curse gap {w["gap"]}</b>.</p>
<ul>{checks}</ul>
<p>Early dropping: {len(e["dropped"])} configurations dropped, {e["units_avoided"]} of {e["units_without_dropping"]}
{"judge units" if e["judged"] else "scores"} avoided.</p>
<img src="pareto.png" alt="quality against latency, tokens and cost">
{_table(s)}
</body></html>
"""
    path = out_dir / "sweep.html"
    path.write_text(page, encoding="utf-8")
    return path
