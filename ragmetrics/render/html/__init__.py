"""report.html: a page for a Report (`render_html`) and the plots it shows (`report_plots`)."""

from __future__ import annotations

from ragmetrics.render.html.page import render_html
from ragmetrics.render.html.plots import PagePlot, report_plots

__all__ = ["PagePlot", "render_html", "report_plots"]
