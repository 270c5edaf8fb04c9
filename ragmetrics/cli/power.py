"""`ragmetrics power REPORT`: what the report's questions can detect, and how many a difference needs."""

from __future__ import annotations

import argparse
from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode
from ragmetrics.schema import Report


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "power",
        help="minimum detectable difference and questions needed, per compared pair of a report",
        description="Reads a report.json and, from each compared pair's per-query differences, prints the "
        "smallest difference its questions detect at the pair's level (alpha, divided by the comparisons "
        "under Holm or Bonferroni) with the given power, the questions a target difference needs (default: "
        "the observed one), the smallest p the test can reach, and why a CI and a test disagree where they do.",
    )
    parser.add_argument("report", type=Path, help="a report.json (a dated folder's, or latest/report.json)")
    parser.add_argument("--metric", action="append", help="only this metric (repeatable)")
    parser.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="[METRIC=]DIFF",
        help="the difference to plan for: one value for every metric or METRIC=DIFF (repeatable)",
    )
    parser.add_argument("--power", type=float, default=0.8, help="the wanted power (default 0.8)")
    parser.set_defaults(handler=run_command)


def _targets(values: list[str], metrics: list[str]) -> dict[str, float]:
    targets: dict[str, float] = {}
    for value in values:
        name, _, number = value.rpartition("=")
        try:
            diff = float(number)
        except ValueError:
            raise InputError(f"--target {value!r}: not a number", field="--target") from None
        if not diff > 0 or diff == float("inf"):
            raise InputError(
                f"--target {value!r}: the difference must be a positive number", field="--target"
            )
        if name and name not in metrics:
            raise InputError(f"--target {value!r}: the report has no metric {name!r}; it has {metrics}")
        targets.update({name: diff} if name else dict.fromkeys(metrics, diff))
    return targets


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.comparison.report_power import report_power
    from ragmetrics.nightly.gate import load_baseline
    from ragmetrics.render._text import to_terminal
    from ragmetrics.render.power import power_grid

    if not 0 < args.power < 1:
        raise InputError(f"--power must be in (0, 1), got {args.power}", field="--power")
    report = load_baseline(args.report, what="report")
    unknown = sorted(set(args.metric or ()) - set(report.metrics))
    if unknown:
        raise InputError(f"--metric {unknown[0]!r}: the report has no such metric; it has {report.metrics}")
    if not report.comparisons:
        paired = _against_gate_baseline(report, args.report)
        if paired is None:
            print(
                "no compared pairs in this report (one run) and no baseline its gate compared with: nothing to "
                "plan; a night with a baseline (ragmetrics bless) plans the gate's own pairs"
            )
            return ExitCode.OK
        found, reports = paired
        print(f"the gate's pairs: each run tonight against itself in the baseline {found}")
        rows = []
        for compared, gate_targets in reports:
            targets = {**gate_targets, **_targets(args.target, compared.metrics)}
            rows += report_power(compared, power=args.power, targets=targets, metrics=args.metric)
        print(to_terminal(power_grid(rows)).rstrip())
        return ExitCode.OK
    rows = report_power(
        report, power=args.power, targets=_targets(args.target, report.metrics), metrics=args.metric
    )
    print(to_terminal(power_grid(rows)).rstrip())
    return ExitCode.OK


def _against_gate_baseline(
    report: Report, where: Path
) -> tuple[Path, list[tuple[Report, dict[str, float]]]] | None:
    """Tonight's runs paired with the same runs of the baseline the gate compared with (the report's own
    record of it), as the gate pairs them, and the gate's thresholds as targets; None without a baseline."""
    from ragmetrics.comparison.pairs import compare_results
    from ragmetrics.nightly.gate import load_baseline

    nightly = report.metadata.nightly
    gate = nightly.regression if nightly is not None else None
    if gate is None:
        return None
    candidates = [Path(gate.baseline), where.parent / gate.baseline, where.parent.parent / gate.baseline]
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        raise InputError(
            f"the baseline this night was gated against is gone: {gate.baseline}", field="report"
        )
    baseline = load_baseline(found, what="baseline report")
    old = {r.name: r for r in baseline.runs}
    out = []
    for tonight in report.runs:
        if tonight.name not in old:
            continue
        base = old[tonight.name].model_copy(update={"name": f"{tonight.name} (baseline)"})
        shared = [m for m in tonight.metrics if m in base.metrics]
        compared = compare_results(
            [base, tonight], shared, test=gate.test, correction=gate.correction, alpha=gate.alpha,
            baseline=base.name,
        )  # fmt: skip
        targets = {c.metric: c.threshold for c in gate.checks if c.run == tonight.name and c.threshold > 0}
        out.append((compared, targets))
    return (found, out) if out else None
