"""Text renderings of scored runs (`format_results`) and of comparisons (`format_report`).

Everything renders to a string, so the CLI, the pipeline and tests share one code path. Human formats
(table, markdown, latex) round to `digits` decimals; machine formats (json, csv) keep full precision.
A score that failed (None) is shown as ``n/a`` for humans and as an empty cell in CSV, never as 0 or NaN.
"""

from __future__ import annotations

import json
from typing import Literal, get_args

from ragmetrics.compare.render import Align, Grid, to_csv, to_latex, to_markdown, to_terminal
from ragmetrics.errors import InputError
from ragmetrics.schema import RunResult

Format = Literal["table", "markdown", "latex", "json", "csv"]
FORMATS: tuple[str, ...] = get_args(Format)

# The `query` cell of an aggregate row when per-query rows are shown (trec_eval's convention).
ALL_QUERIES = "all"
MISSING = "n/a"


def check_format(fmt: str) -> Format:
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", field="format")
    return fmt  # type: ignore[return-value]


def fmt_float(value: float | None, digits: int = 4) -> str:
    return MISSING if value is None else f"{value:.{digits}f}"


def _exact(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _resolve_metrics(results: list[RunResult], metrics: list[str] | None) -> list[str]:
    """The requested metrics, or the union of the results' metrics in first-seen order; each must exist."""
    if not metrics:
        seen: dict[str, None] = {}
        for result in results:
            for metric in result.metadata.metrics or list(result.aggregate):
                seen.setdefault(metric, None)
        return list(seen)
    for result in results:
        known = set(result.metadata.metrics) | set(result.aggregate)
        for metric in metrics:
            if metric not in known:
                raise InputError(
                    f"run {result.name!r} has no metric {metric!r}; it has {sorted(known)}", field="metrics"
                )
    return list(metrics)


def _failure_notes(results: list[RunResult], metrics: list[str]) -> list[str]:
    notes = []
    for result in results:
        for metric in metrics:
            failed = result.failure_count(metric)
            if failed:
                notes.append(
                    f"{result.name}: {metric}: {failed} failed score(s), left out of the mean (see failures)"
                )
    return notes


def _results_rows(
    results: list[RunResult], metrics: list[str], per_query: bool, cell: type[str] | None, digits: int
) -> tuple[list[str], list[list[str]], set[int]]:
    """Header and rows shared by every format: run [, query], metrics...; `cell=None` keeps full precision."""

    def show(value: float | None) -> str:
        return _exact(value) if cell is None else fmt_float(value, digits)

    headers = ["run", *(["query"] if per_query else []), *metrics]
    rows: list[list[str]] = []
    sections: set[int] = set()
    for result in results:
        aggregate = [show(result.aggregate.get(m)) for m in metrics]
        rows.append([result.name, ALL_QUERIES, *aggregate] if per_query else [result.name, *aggregate])
        if per_query:
            for qid, scores in result.per_query.items():
                rows.append([result.name, qid, *(show(scores.get(m)) for m in metrics)])
            sections.add(len(rows) - 1)
    return headers, rows, sections


def format_results(
    results: list[RunResult],
    metrics: list[str],
    fmt: Format | str = "table",
    per_query: bool = False,
    *,
    digits: int = 4,
    color: bool = False,
) -> str:
    """One row per run (aggregate means), plus one row per query and run when `per_query`.

    json is the list of `RunResult` dumps (the unified schema, all queries and details included whatever
    `per_query` says); with `per_query` the other formats gain a `query` column whose aggregate rows read
    ``all``. An empty `metrics` list means every metric the results carry.
    """
    fmt = check_format(fmt)
    if fmt == "json":
        return json.dumps([r.model_dump(mode="json") for r in results], indent=2) + "\n"
    metrics = _resolve_metrics(results, metrics)
    if fmt == "csv":
        headers, rows, _ = _results_rows(results, metrics, per_query, None, digits)
        return to_csv(headers, rows)
    headers, rows, sections = _results_rows(results, metrics, per_query, str, digits)
    grid = Grid(headers=headers, rows=rows, sections=sections, notes=_failure_notes(results, metrics))
    if per_query:
        right: list[Align] = ["right"] * len(metrics)
        grid.align = ["left", "left", *right]
    if fmt == "markdown":
        return to_markdown(grid)
    if fmt == "latex":
        return to_latex(grid)
    return to_terminal(grid, color=color)
