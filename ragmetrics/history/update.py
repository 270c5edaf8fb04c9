"""Tonight into the history: append its record, then redraw history.html from every record (the one step the
nightly job calls; `store` only reads and writes records, `page` only draws them)."""

from __future__ import annotations

from pathlib import Path

from ragmetrics.history.page import write_page
from ragmetrics.history.record import record_of
from ragmetrics.history.store import HISTORY_PAGE, append_record, load_history
from ragmetrics.schema import Report

__all__ = ["update_history"]


def update_history(
    root: Path,
    report: Report,
    folder: Path,
    *,
    nights: int,
    alpha: float,
    correction: str,
    baseline_folder: str | None = None,
) -> Path:
    """Record tonight and rewrite root/history.html; returns the page's path."""
    append_record(root, record_of(report, folder.name, baseline_folder=baseline_folder))
    history = load_history(root)
    return write_page(root / HISTORY_PAGE, history, nights=nights, alpha=alpha, correction=correction)
