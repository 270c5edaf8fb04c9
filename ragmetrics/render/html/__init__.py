"""report.html: a self-contained page for a Report (`render_html`) and the plots it embeds (`report_plots`)."""

from __future__ import annotations

from ragmetrics.render.html.page import render_html
from ragmetrics.render.html.plots import report_plots

__all__ = ["render_html", "report_plots"]
