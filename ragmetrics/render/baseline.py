"""Tonight against the baseline, one row per (run, metric): the baseline and delta columns of every format.

The gate's verdict lists what failed; this table shows every pair beside its baseline, so a reader sees the
size and direction of each move, not only the ones that crossed a line. A checked pair's means are over the
queries both reports scored (what the test saw); a pair left unchecked shows the two reports' own means.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragmetrics._format import format_p
from ragmetrics.options import lower_is_better
from ragmetrics.render._text import Grid, aligned, to_csv
from ragmetrics.schema import GateResult, Report

BETTER, WORSE, SAME = 1, -1, 0


@dataclass(frozen=True)
class BaselineRow:
    run: str
    metric: str
    baseline: float | None
    current: float | None
    n: int | None
    p_corrected: float | None
    verdict: str
    direction: int
    """BETTER or WORSE when the move is significant (after the gate's correction), else SAME."""

    @property
    def delta(self) -> float | None:
        """Tonight minus the baseline (for latency and cost a positive delta is worse)."""
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


def baseline_rows(report: Report, gate: GateResult) -> list[BaselineRow]:
    """Every (run, metric) of tonight's report that the baseline also has, checked or not."""
    checks = {(c.run, c.metric): c for c in gate.checks}
    rows: list[BaselineRow] = []
    for run in report.runs:
        before = gate.baseline_means.get(run.name)
        if before is None:
            continue
        for metric in run.metrics:
            if metric not in before:
                continue
            check = checks.get((run.name, metric))
            if check is not None:
                direction = SAME
                if check.significant and check.drop != 0:
                    direction = WORSE if check.drop > 0 else BETTER
                rows.append(
                    BaselineRow(
                        run.name,
                        metric,
                        check.mean_baseline,
                        check.mean_current,
                        check.n,
                        check.p_corrected,
                        _verdict(check.regressed, check.significant, check.drop, check.threshold),
                        direction,
                    )
                )
                continue
            skipped = gate.skipped_pairs.get(GateResult.pair_key(run.name, metric))
            verdict = {
                "not_comparable": "not comparable",
                "incomplete": "incomplete",
                "untrusted": "judge below floor",
            }.get(skipped or "", "not checked" + (" (lower is better)" if lower_is_better(metric) else ""))
            rows.append(
                BaselineRow(
                    run.name, metric, before[metric], run.aggregate.get(metric), None, None, verdict, SAME
                )
            )
    return rows


def _verdict(regressed: bool, significant: bool, drop: float, threshold: float) -> str:
    if regressed:
        return "REGRESSION"
    if drop > threshold and not significant:
        return "near miss: beyond threshold, not significant"
    if significant and drop > 0:
        return "near miss: significant, within threshold"
    if significant and drop < 0:
        return "significantly better"
    return "no significant change"


def _num(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def baseline_grid(rows: list[BaselineRow], gate: GateResult, *, digits: int = 4) -> Grid:
    """The rows for the terminal and Markdown (colour: green better, red worse, per the metric's direction)."""
    headers = ["run", "metric", "baseline", "tonight", "Δ", "n", "p (corrected)", "verdict"]
    grid = Grid(headers=headers, align=[*aligned(2, 5), "left"])
    grid.title = f"Against the baseline ({gate.baseline})"
    grid.styles = []
    for row in rows:
        delta = row.delta
        grid.rows.append(
            [
                row.run,
                row.metric + (" ↓" if lower_is_better(row.metric) else ""),
                _num(row.baseline, digits),
                _num(row.current, digits),
                "n/a" if delta is None else f"{delta:+.{digits}f}",
                "" if row.n is None else str(row.n),
                "" if row.p_corrected is None else format_p(row.p_corrected),
                row.verdict,
            ]
        )
        style = {BETTER: "green", WORSE: "red"}.get(row.direction)
        grid.styles.append([style] * len(headers))
    grid.notes = [
        "Δ: tonight minus the baseline; ↓: lower is better. A checked pair's means are over the queries both "
        "reports scored; green/red: a significant move for the better/worse after "
        f"{gate.correction} correction ({gate.test} test, alpha {gate.alpha:g})."
    ]
    return grid


def baseline_csv(rows: list[BaselineRow]) -> str:
    """The same rows at full precision (baseline.csv beside per_query.csv)."""
    headers = ["run", "metric", "baseline", "current", "delta", "n", "p_corrected", "verdict", "direction"]

    def exact(value: float | int | None) -> str:
        return "" if value is None else repr(value)

    return to_csv(
        headers,
        [
            [
                r.run,
                r.metric,
                exact(r.baseline),
                exact(r.current),
                exact(r.delta),
                exact(r.n),
                exact(r.p_corrected),
                r.verdict,
                {BETTER: "better", WORSE: "worse"}.get(r.direction, ""),
            ]
            for r in rows
        ],
    )
