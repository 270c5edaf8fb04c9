"""OUTPUT/live.html: the windows of a watch at a glance, refreshed by the browser every minute.

One row per window, newest first: traces seen and judged, judge calls spent, each metric's mean, and the
alert if the window started one; a link to history.html for the charts and trend tests. Self-contained: no
script, nothing loaded from elsewhere, a strict Content-Security-Policy; every value is escaped.
"""

from __future__ import annotations

import html
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
            + (f"<br><small>night {nights[m]['mean']:.3f}</small>" if m in nights else "")
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
    style = (
        "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}.alert{color:#a00;font-weight:600}"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{REFRESH_S}">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{e(name)}: live windows</title><style>{style}</style></head><body>"
        f"<h1>{e(name)}: live windows</h1><p>Refreshed every {REFRESH_S} s. Charts and trend tests: "
        '<a href="history.html">history.html</a>.</p>'
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
