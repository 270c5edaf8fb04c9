"""Presentation of results: terminal, Markdown, LaTeX and CSV tables, plots, and the HTML report.

Renderers read the result schema and never compute a statistic of their own, so every format shows the
same numbers.
"""
