"""Escaping and number cells shared by the report page's blocks."""

from __future__ import annotations

import html
import math

from ragmetrics.render.safe_text import strip_controls


def esc(value: object) -> str:
    """Text for HTML: escaped, and with NUL and other control characters replaced (a browser may act on them)."""
    return html.escape(strip_controls(str(value)), quote=True)


def num(value: float | None, digits: int = 4) -> str:
    """A score for a cell; a failed or missing one is a dash, never 0 or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "&ndash;"
    return f"{value:.{digits}f}"


def sort_value(value: float | None) -> str:
    """The data-v attribute the sortable table sorts by: the full value, or empty (sorted last)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value))


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "\u2026"
