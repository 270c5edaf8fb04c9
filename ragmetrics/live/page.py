"""OUTPUT/live.html: the windows of a watch at a glance, refreshed by the browser every minute.

A chart per metric across the windows (oldest first: each window's mean with its 95 % interval, mean ± 1.96
standard errors of its judged traces), then one row per window, newest first: traces seen and judged, judge
calls spent, each metric's mean (and the last night's, with the run it comes from), and the alert if the
window started one; a link to history.html for the trend tests. Self-contained: no
script, nothing loaded from elsewhere, a strict Content-Security-Policy; every value is escaped.
"""

from __future__ import annotations

import html
import math
import os
from pathlib import Path
from typing import Any

from ragmetrics.live.store import LiveStore

__all__ = ["PAGE", "write_live_page"]

PAGE = "live.html"
REFRESH_S = 60


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("mean") is None:
        return "-"
    return f"{entry['mean']:.3f} <small>(n {entry['n']})</small>"


Stat = tuple[str, float, float, float]


def _window_stats(store: LiveStore, windows: list[str], metrics: list[str]) -> dict[str, list[Stat | None]]:
    """Per metric, per window: (window, mean, low, high) of its judged values, or None without any; each
    window's scores read once for every metric."""
    out: dict[str, list[Stat | None]] = {m: [] for m in metrics}
    for window in windows:
        values: dict[str, list[float]] = {m: [] for m in metrics}
        for score, _ in store.scores_in(window):
            if score.metric in values and score.value is not None:
                values[score.metric].append(score.value)
        for metric, found in values.items():
            out[metric].append(_mean_interval(window, found) if found else None)
    return out


def _mean_interval(window: str, values: list[float]) -> Stat:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    half = 1.96 * sd / math.sqrt(n)
    return window, mean, mean - half, mean + half


def _chart(metric: str, stats: list[Stat | None], alerted: set[str]) -> str:
    """An inline SVG of a metric's window means with their intervals, oldest window first; a window that
    started an alert on the metric is drawn red."""
    e = html.escape
    known = [s for s in stats if s is not None]
    if not known:
        return ""
    width, height, left, top, bottom = 560, 150, 48, 14, 28
    low = min(min(s[2] for s in known), 0.0)
    high = max(max(s[3] for s in known), 1.0 if max(s[3] for s in known) <= 1.0 else max(s[3] for s in known))
    span = (high - low) or 1.0
    step = (width - left - 10) / max(1, len(stats))

    def y(v: float) -> float:
        return top + (height - top - bottom) * (1 - (v - low) / span)

    parts = [f"<figure><svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' "
             f"aria-label='{e(metric)} per window'>"]  # fmt: skip
    for tick in (low, (low + high) / 2, high):
        parts.append(f"<line x1='{left}' x2='{width - 10}' y1='{y(tick):.1f}' y2='{y(tick):.1f}' stroke='#e3e7ec'/>"
                     f"<text x='{left - 6}' y='{y(tick) + 4:.1f}' text-anchor='end' font-size='11'>{tick:.2f}</text>")  # fmt: skip
    points = []
    for i, stat in enumerate(stats):
        if stat is None:
            continue
        window, mean, lo, hi = stat
        x = left + step * (i + 0.5)
        points.append(f"{x:.1f},{y(mean):.1f}")
        parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{y(lo):.1f}' y2='{y(hi):.1f}' stroke='#5b6673'/>"
                     f"<circle cx='{x:.1f}' cy='{y(mean):.1f}' r='3.5' fill='{'#a3261b' if window in alerted else '#2f6db5'}'>"
                     f"<title>{e(window)}: {mean:.3f} [{lo:.3f}, {hi:.3f}]{' (alert)' if window in alerted else ''}"
                     "</title></circle>")  # fmt: skip
    if len(points) > 1:
        parts.append(f"<polyline points='{' '.join(points)}' fill='none' stroke='#2f6db5' stroke-width='1.2'/>")
    first, last = known[0][0], known[-1][0]
    parts.append(f"<text x='{left}' y='{height - 8}' font-size='11'>{e(first)}</text>"
                 f"<text x='{width - 10}' y='{height - 8}' font-size='11' text-anchor='end'>{e(last)}</text>")  # fmt: skip
    parts.append(f"</svg><figcaption>{e(metric)}: window means with 95 % intervals</figcaption></figure>")
    return "".join(parts)


def render(name: str, store: LiveStore, metrics: list[str]) -> str:
    e = html.escape
    alerts = {(w, m): text for w, m, text in store.alerts()}
    rows = []
    for window, closed in reversed(store.windows()):
        summary = store.summary(window) or {}
        seen, sampled = store.window_counts(window)
        values = summary.get("metrics", {})
        nights = summary.get("nights", {})
        cells = "".join(
            f"<td>{_cell(values.get(m))}"
            + (
                f"<br><small>night {nights[m]['mean']:.3f} (run {e(str(nights[m].get('run')))}, "
                f"{e(str(nights[m].get('night')))})</small>"
                if m in nights
                else ""
            )
            + "</td>"
            for m in metrics
        )
        fired = [alerts[(window, m)] for m in metrics if (window, m) in alerts]
        state = "closed" if closed else "open"
        alert = "".join(f"<div class='alert'>{e(t)}</div>" for t in fired)
        rows.append(
            f"<tr><td>{e(window)}</td><td>{state}</td><td>{sampled} / {seen}</td><td>{store.calls_used(window)}</td>"
            f"{cells}<td>{alert}</td></tr>"
        )
    head = "".join(f"<th>{e(m)}</th>" for m in metrics)
    ordered = [w for w, _ in store.windows()]
    stats = _window_stats(store, ordered, metrics)
    charts = "".join(
        _chart(m, stats[m], {w for (w, metric) in alerts if metric == m}) for m in metrics
    )
    style = (
        "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}.alert{color:#a00;font-weight:600}"
        ".charts{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}figcaption{font-size:12px;color:#555}"
        "svg{font-family:system-ui,sans-serif}"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{REFRESH_S}">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{e(name)}: live windows</title><style>{style}</style></head><body>"
        f"<h1>{e(name)}: live windows</h1><p>Refreshed every {REFRESH_S} s. A window that started an alert is red. "
        "Trend tests: "
        '<a href="history.html">history.html</a>.</p>'
        f"<div class='charts'>{charts}</div>"
        f"<table><thead><tr><th>window (UTC)</th><th>state</th><th>judged / traces</th><th>judge calls</th>{head}"
        f"<th>alert</th></tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>\n"
    )


def write_live_page(output: Path, name: str, store: LiveStore, metrics: list[str]) -> Path:
    """Write OUTPUT/live.html atomically (a refreshing browser never reads half a page)."""
    path = output / PAGE
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(render(name, store, metrics), encoding="utf-8")
    os.replace(tmp, path)
    return path
