"""The report's answer in a few lines, before any table: which run is best on what, and how sure that is.

For each compared metric the best run by mean (the lowest for latency, tokens and cost) is "significantly
best" when its paired comparison with every other run is significant after correction, else "ahead" of the
runs it beats significantly and level with the others (named, with the corrected p of the closest). Metrics
with the same best run and the same certainty share a line, so a night of ten metrics reads in two or three.
A judge metric the night found to move with the answers' formatting (`NightlyRun.formatting`, the rule in
`judge.text.formatting`) gets a line of its own that declares no difference and says how many answers moved.
"""

from __future__ import annotations

from ragmetrics.options import lower_is_better
from ragmetrics.schema import PairComparison, Report

__all__ = ["verdict_lines"]


def _pair(report: Report, metric: str, a: str, b: str) -> PairComparison | None:
    for c in report.comparisons:
        if c.metric == metric and {c.baseline, c.candidate} == {a, b}:
            return c
    return None


def _better(c: PairComparison, run: str, metric: str) -> bool:
    """Whether `run` is significantly better than the other run of the pair."""
    if not c.significant:
        return False
    gain = c.mean_diff if c.candidate == run else -c.mean_diff
    return gain < 0 if lower_is_better(metric) else gain > 0


def verdict_lines(report: Report) -> list[str]:
    """Lines saying which run is best on which metrics and how sure; [] with fewer than two runs."""
    runs = list(report.runs)
    if len(runs) < 2 or not report.metrics:
        return []
    groups: dict[tuple[str, str], list[tuple[str, float | None]]] = {}  # (best, level with) -> (metric, p)
    nightly = report.metadata.nightly
    formatting = {c.metric: c.text for c in (nightly.formatting if nightly is not None else []) if c.depends}
    flagged: list[str] = []
    for metric in report.metrics:
        means: dict[str, float] = {
            r.name: value for r in runs if (value := r.aggregate.get(metric)) is not None
        }
        if len(means) < 2:
            continue
        best = (min if lower_is_better(metric) else max)(means, key=means.__getitem__)
        if metric in formatting:
            flagged.append(
                f"{best} has the best mean on {metric}, but no difference on it is declared: {formatting[metric]}"
            )
            continue
        level: list[tuple[str, float]] = []
        for other in means:
            if other == best:
                continue
            pair = _pair(report, metric, best, other)
            if pair is None or not _better(pair, best, metric):
                level.append((other, pair.p_corrected if pair is not None else 1.0))
        if not level:
            worst_p = max(
                (
                    p.p_corrected
                    for o in means
                    if o != best and (p := _pair(report, metric, best, o)) is not None
                ),
                default=None,
            )
            groups.setdefault((best, "all"), []).append((metric, worst_p))
        else:
            closest = min(level, key=lambda x: x[1])
            said = ", ".join(n for n, _ in level[:3]) + (
                f" and {len(level) - 3} more" if len(level) > 3 else ""
            )
            groups.setdefault((best, said), []).append((metric, closest[1]))
    lines = []
    for (best, level_with), metrics in groups.items():
        names = ", ".join(m for m, _ in metrics)
        if level_with == "all":
            ps = [p for _, p in metrics if p is not None]
            sure = f" (every corrected p ≤ {max(ps):.2g})" if ps else ""
            lines.append(f"{best} is best on {names}: significantly better than every other run{sure}")
        else:
            ps = [p for _, p in metrics if p is not None] or [1.0]
            lines.append(
                f"{best} has the best mean on {names}, but is not significantly better than {level_with} "
                f"(corrected p {min(ps):.2g}{'' if len(ps) == 1 else f'-{max(ps):.2g}'}): treat them as level"
            )
    return lines + flagged
