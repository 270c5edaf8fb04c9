"""Text renderings of scored runs (`format_results`) and of comparisons (`format_report`).

Everything renders to a string, so the CLI, the pipeline and tests share one code path. Human formats
(table, markdown, latex) round to `digits` decimals; machine formats (json, csv) keep full precision.
A score that failed (None) is shown as ``n/a`` for humans and as an empty cell in CSV, never as 0 or NaN.
"""

from __future__ import annotations

import json
from typing import Literal, get_args

from ragmetrics._format import format_effect, format_p
from ragmetrics.comparison.align import aligned_query_ids
from ragmetrics.errors import InputError
from ragmetrics.options import improvement, lower_is_better
from ragmetrics.render._text import (
    Grid,
    aligned,
    latex_preamble_note,
    to_csv,
    to_latex,
    to_markdown,
    to_terminal,
)
from ragmetrics.schema import Report, RunResult

LOWER_MARK = "↓"
"""After a metric's name: lower is better (latency, tokens, cost)."""

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
    results: list[RunResult], metrics: list[str], per_query: bool, digits: int | None
) -> tuple[list[str], list[list[str]], set[int]]:
    """Header and rows shared by every format: run [, query], metrics...; `digits=None` keeps full precision."""

    def show(value: float | None) -> str:
        return _exact(value) if digits is None else fmt_float(value, digits)

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
    failure_notes: bool = True,
) -> str:
    """One row per run (aggregate means), plus one row per query and run when `per_query`; `failure_notes`
    adds a line per metric with failed scores (off where the caller summarises failures by cause).

    json is the list of `RunResult` dumps (the unified schema, all queries and details included whatever
    `per_query` says); with `per_query` the other formats gain a `query` column whose aggregate rows read
    ``all``. An empty `metrics` list means every metric the results carry.
    """
    fmt = check_format(fmt)
    if fmt == "json":
        return json.dumps([r.model_dump(mode="json") for r in results], indent=2) + "\n"
    metrics = _resolve_metrics(results, metrics)
    if fmt == "csv":
        headers, rows, _ = _results_rows(results, metrics, per_query, None)
        return to_csv(headers, rows)
    headers, rows, sections = _results_rows(results, metrics, per_query, digits)
    notes = _failure_notes(results, metrics) if failure_notes else []
    grid = Grid(headers=headers, rows=rows, sections=sections, notes=notes)
    if per_query:
        grid.align = aligned(2, len(metrics))
    if fmt == "markdown":
        return to_markdown(grid)
    if fmt == "latex":
        return latex_preamble_note(to_latex(grid))
    return to_terminal(grid, color=color)


# --- comparisons -------------------------------------------------------------------------------------

_SIGNIFICANT = "*"


def run_labels(names: list[str]) -> dict[str, str]:
    """Short labels a, b, ..., z, aa, ab, ... used as significance markers."""
    labels = {}
    for index, name in enumerate(names):
        label, k = "", index
        while True:
            label = chr(ord("a") + k % 26) + label
            k = k // 26 - 1
            if k < 0:
                break
        labels[name] = label
    return labels


fmt_p = format_p


def significant_wins(report: Report) -> dict[tuple[str, str], list[str]]:
    """(run, metric) -> runs it is significantly better than, in run order."""
    order = {r.name: i for i, r in enumerate(report.runs)}
    out: dict[tuple[str, str], list[str]] = {}
    for c in report.comparisons:
        if not c.significant or c.mean_diff == 0:
            continue
        better = improvement(c.metric, c.mean_diff) > 0
        winner, loser = (c.candidate, c.baseline) if better else (c.baseline, c.candidate)
        out.setdefault((winner, c.metric), []).append(loser)
    return {key: sorted(value, key=order.__getitem__) for key, value in out.items()}


def _summary_grid(report: Report, digits: int) -> Grid:
    names = [r.name for r in report.runs]
    labels = run_labels(names)
    beats = significant_wins(report)
    means = {
        (name, metric): (stats.mean if (stats := report.descriptive.get(name, {}).get(metric)) else None)
        for name in names
        for metric in report.metrics
    }
    headers = [f"{m} {LOWER_MARK}" if lower_is_better(m) else m for m in report.metrics]
    grid = Grid(headers=["", "run", *headers], align=aligned(2, len(report.metrics)))
    grid.title = "Mean per run"
    for r, name in enumerate(names):
        row = [labels[name], name]
        for k, metric in enumerate(report.metrics):
            mean = means[(name, metric)]
            marks = [labels[loser] for loser in beats.get((name, metric), [])]
            text = fmt_float(mean, digits)
            row.append(f"{text} [{','.join(marks)}]" if marks else text)
            if marks:
                grid.latex_cells[(r, k + 2)] = f"{text}$^{{{','.join(marks)}}}$"
        grid.rows.append(row)
    for k, metric in enumerate(report.metrics):
        values = [(v, r) for r, n in enumerate(names) if (v := means[(n, metric)]) is not None]
        if values:
            best = (min if lower_is_better(metric) else max)(v for v, _ in values)
            grid.bold |= {(r, k + 2) for v, r in values if v == best}
    return grid


def _pairs_grid(report: Report, digits: int) -> Grid:
    correction = report.settings.correction
    headers = ["metric", "baseline", "candidate", "n", "Δ mean", f"{report.settings.confidence:.0%} CI"]
    headers += ["p", "p (none)" if correction == "none" else f"p ({correction})", "sig", "d", "W/T/L"]
    grid = Grid(headers=headers, align=aligned(3, len(headers) - 3))
    grid.title = "Paired comparisons (candidate minus baseline)"
    grid.styles = []
    previous = None
    for c in report.comparisons:
        if previous is not None and c.metric != previous:
            grid.sections.add(len(grid.rows) - 1)
        previous = c.metric
        grid.rows.append(
            [
                c.metric,
                c.baseline,
                c.candidate,
                str(c.n),
                f"{c.mean_diff:+.{digits}f}",
                f"[{c.ci_low:+.{digits}f}, {c.ci_high:+.{digits}f}]",
                fmt_p(c.p_value),
                fmt_p(c.p_corrected),
                _SIGNIFICANT if c.significant else "",
                format_effect(c.effect_size),
                f"{c.wins}/{c.ties}/{c.losses}",
            ]
        )
        style = ("green" if improvement(c.metric, c.mean_diff) > 0 else "red") if c.significant else None
        grid.styles.append([style] * len(headers))
    return grid


def _descriptive_grid(report: Report, digits: int) -> Grid:
    headers = ["run", "metric", "count", "failures", "mean", "std", "min", "q1", "median", "q3", "max"]
    grid = Grid(headers=headers, align=aligned(2, len(headers) - 2))
    grid.title = "Descriptive statistics per run (std: sample, ddof=1)"
    for run in report.runs:
        # Compared metrics first, then those described only (scored for some runs, e.g. answer metrics).
        described = [m for m in report.descriptive.get(run.name, {}) if m not in report.metrics]
        for metric in [*report.metrics, *described]:
            stats = report.descriptive.get(run.name, {}).get(metric)
            if stats is None:
                grid.rows.append([run.name, metric, "0", "all", *([MISSING] * 7)])
                continue
            numbers = [stats.mean, stats.std, stats.min, stats.q1, stats.median, stats.q3, stats.max]
            grid.rows.append(
                [
                    run.name,
                    metric,
                    str(stats.count),
                    str(stats.failures) + (f" (+{stats.not_applicable} n/a)" if stats.not_applicable else ""),
                    *(fmt_float(v, digits) for v in numbers),
                ]
            )
        grid.sections.add(len(grid.rows) - 1)
    return grid


def _legend(report: Report) -> list[str]:
    s = report.settings
    labels = run_labels([r.name for r in report.runs])
    test = s.test + (f" ({s.permutations} permutations)" if s.permutations else "")
    scope = report.settings.correction_scope
    family = "within each metric" if scope == "metric" else "over all pairs and metrics"
    lines = []
    if report.comparisons:  # a single run is described, not compared: no markers to explain
        lines = [
            f"[x] after a mean: significantly better than run x ({', '.join(f'{v} = {k}' for k, v in labels.items())})"
            + (f"; {LOWER_MARK}: lower is better" if any(lower_is_better(m) for m in report.metrics) else ""),
            f"{_SIGNIFICANT} significant: corrected p ≤ {s.alpha:g}; test: {test}; correction: {s.correction} "
            f"{family}; seed {s.seed}",
            f"CI: {s.confidence:.0%} percentile bootstrap of the mean difference ({s.bootstrap_samples} samples); "
            "d: paired Cohen's d; W/T/L: queries where the candidate wins / ties / loses",
        ]
    for name, queries in report.metadata.missing_queries.items():
        shown = ", ".join(queries[:5]) + (", ..." if len(queries) > 5 else "")
        lines.append(
            f"{name} lacks {len(queries)} of {report.metadata.query_count} queries, scored 0: {shown}"
        )
    for run in report.runs:
        # Metrics not applicable to the same questions for the same reason share a line (an attack set's clean
        # and attack questions would otherwise give one line per metric).
        grouped: dict[tuple[int, str], list[str]] = {}
        for metric in dict.fromkeys(n.metric for n in run.not_applicable):
            count = run.not_applicable_count(metric)
            example = next(n.reason for n in run.not_applicable if n.metric == metric)
            grouped.setdefault((count, example), []).append(metric)
        for (count, example), metrics in grouped.items():
            lines.append(
                f"{run.name} / {', '.join(metrics)}: {count} of {len(run.per_query)} queries not applicable, left "
                f"out of the mean (e.g. {example})"
            )
    lines += [f"note: {n}" for n in report.metadata.notes]
    return lines


_COMPARISON_COLUMNS = (
    "metric", "baseline", "candidate", "n", "mean_baseline", "mean_candidate", "mean_diff", "ci_low",
    "ci_high", "p_value", "p_corrected", "significant", "effect_size", "wins", "ties", "losses",
)  # fmt: skip


def comparison_csv(report: Report) -> str:
    """The paired comparisons, one row per (metric, pair), at full precision (effect_size empty: a shift)."""
    rows = []
    for c in report.comparisons:
        data = c.model_dump()
        rows.append(["" if data[k] is None else (_exact(data[k]) if isinstance(data[k], float) else str(data[k]))
                     for k in _COMPARISON_COLUMNS])  # fmt: skip
    return to_csv(list(_COMPARISON_COLUMNS), rows)


def per_query_csv(report: Report) -> str:
    """Per-query scores in long form: run, query, metric, score, status (ok / failed / missing)."""
    query_ids = aligned_query_ids(report.runs, report.settings.align)
    rows = []
    for run in report.runs:
        declared = set(report.metadata.missing_queries.get(run.name, []))
        for qid in query_ids:
            scores = run.per_query.get(qid)
            for metric in report.metrics:
                if scores is None:
                    rows.append([run.name, qid, metric, "0.0", "missing"])
                    continue
                value = scores.get(metric)
                status = "failed" if value is None else ("missing" if qid in declared else "ok")
                rows.append([run.name, qid, metric, _exact(value), status])
    return to_csv(["run", "query", "metric", "score", "status"], rows)


def format_report(
    report: Report, fmt: Format | str = "table", *, digits: int = 4, color: bool = False
) -> str:
    """A comparison for people (table, markdown, latex) or machines (json: the schema; csv: the comparisons;
    per-query scores are `per_query_csv`).

    The human formats hold three tables, means with significance markers, the paired comparisons and the
    descriptive statistics, followed by a legend that states test, correction, alpha and seed.
    """
    fmt = check_format(fmt)
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "csv":
        return comparison_csv(report)
    from ragmetrics.render.multi import seeds_grid, tukey_grid

    extra = [g for g in (tukey_grid(report, digits), seeds_grid(report, digits)) if g is not None]
    grids = [
        _summary_grid(report, digits),
        *([_pairs_grid(report, digits)] if report.comparisons else []),  # one run: nothing to pair
        *extra,
        _descriptive_grid(report, digits),
    ]
    grids[-1].notes = _legend(report)
    if fmt == "markdown":
        return "\n".join(to_markdown(g) for g in grids)
    if fmt == "latex":
        return latex_preamble_note("\n".join(to_latex(g) for g in grids))
    return "\n".join(to_terminal(g, color=color) for g in grids)
