"""Nights over time: one record per night (history.jsonl in the output root), the trend test that flags slow
drift against the pinned baseline, what changed between nights, and the self-contained history.html."""

from __future__ import annotations

from ragmetrics.history.record import NightRecord, record_of
from ragmetrics.history.store import load_history
from ragmetrics.history.trend import mann_kendall
from ragmetrics.history.update import update_history

__all__ = ["NightRecord", "load_history", "mann_kendall", "record_of", "update_history"]
