"""trust.min_agreement: which (run, judge metric) pairs the gate must not read tonight, and why.

A judge metric's drop or rise means something only when the judge tracks people. With human labels, every
night measures that agreement on the labelled subset (`runs[].trust.agreement`); a pair whose statistic is
below the configured floor (its estimate, or the low end of its 95 % interval) is neither passed nor failed
by the gate: it is listed as untrusted and the night exits 5 unless something worse happened.
"""

from __future__ import annotations

from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.schema import Report

__all__ = ["agreement_floor"]


def agreement_floor(config: NightlyConfig, report: Report) -> dict[tuple[str, str], str]:
    floor = config.trust.min_agreement if config.trust is not None else None
    if floor is None:
        return {}
    judged = set(config.judge.metrics) if config.judge is not None else set()
    below: dict[tuple[str, str], str] = {}
    for run in report.runs:
        agreements = {a.metric: a for a in (run.trust.agreement if run.trust is not None else [])}
        wanted = floor.metrics if floor.metrics is not None else [m for m in run.metrics if m in agreements]
        for metric in wanted:
            if metric not in run.metrics or metric not in judged:
                continue
            found = agreements.get(metric)
            if found is None:
                below[(run.name, metric)] = (
                    f"no labelled sample of {metric} was judged in this run: its agreement with people is unknown"
                )
                continue
            interval = getattr(found, floor.statistic)
            value = (
                None
                if interval is None
                else (interval.estimate if floor.bound == "estimate" else interval.low)
            )
            shown = floor.statistic.replace("_", " ")
            if value is None:
                below[(run.name, metric)] = (
                    f"{shown} is undefined on its {found.n_labeled} labels (one class, or too few), so the floor "
                    f"{floor.value:g} cannot be met"
                )
            elif value < floor.value:
                assert interval is not None
                ci = (
                    f" [{interval.low:.3f}, {interval.high:.3f}]"
                    if interval.low is not None and interval.high is not None
                    else ""
                )
                which = "" if floor.bound == "estimate" else " (low end of the interval)"
                below[(run.name, metric)] = (
                    f"judge {shown} with people {interval.estimate:.3f}{ci} on {found.n_labeled} labels{which} is "
                    f"below the floor {floor.value:g}"
                )
    return below
