"""The report's answer in a few lines, before any table: which run is best on what, and how sure that is.

For each compared metric the best run by mean (the lowest for latency, tokens and cost) is "significantly
best" when its paired comparison with every other run is significant after correction, else "ahead" of the
runs it beats significantly and level with the others (named, with the corrected p of the closest). Metrics
with the same best run and the same certainty share a line, so a night of ten metrics reads in two or three.

On pooled qrels (a test set whose pool a judge graded) the night also compares its retrieval runs on
source-only qrels, with no grader involved (`nightly.source_only`). Each retrieval metric's line then says
whether that verdict (the best run and which runs are significantly better than which) agrees, briefly, or,
where it differs, what the source-only verdict is: in the line itself, and such lines come first. A line whose
best run the pooled qrels may favour (pooled itself, or ranking with the grader's model) says so too.
A judge metric the night found to move with the answers' formatting (`NightlyRun.formatting`, the rule in
`judge.text.formatting`) gets a line of its own that declares no difference and says how many answers moved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragmetrics.options import lower_is_better
from ragmetrics.schema import PairComparison, QrelsProvenance, Report

__all__ = ["DIFFERS", "verdict_lines"]

DIFFERS = "NOT CONFIRMED on source-only qrels"
"""How a verdict line that the source-only qrels contradict begins its clause (the renderers mark such lines)."""


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


def _verdict_of(
    means: Mapping[str, float], comparisons: Sequence[PairComparison], metric: str
) -> tuple[str, list[tuple[str, str, float]]] | None:
    """The best run by mean and every significant pair as (better, worse, corrected p), from figures already
    computed; None with fewer than two runs."""
    if len(means) < 2:
        return None
    best = (min if lower_is_better(metric) else max)(means, key=means.__getitem__)
    better = []
    for c in comparisons:
        if c.metric != metric or not c.significant or c.baseline not in means or c.candidate not in means:
            continue
        winner = c.candidate if _better(c, c.candidate, metric) else c.baseline
        better.append((winner, c.baseline if winner == c.candidate else c.candidate, c.p_corrected))
    return best, sorted(better)


def _source_only_clause(report: Report, provenance: QrelsProvenance | None, metric: str) -> str | None:
    """What the source-only qrels say of `metric`'s verdict: that they agree, or what they find instead; None
    when the metric was not compared on them."""
    check = provenance.source_only if provenance is not None else None
    if check is None or metric not in check.metrics:
        return None
    pooled = _verdict_of(
        {r.name: v for r in report.runs if (v := r.aggregate.get(metric)) is not None},
        report.comparisons,
        metric,
    )
    source = _verdict_of(
        {run: v for run, means in check.means.items() if (v := means.get(metric)) is not None},
        check.comparisons,
        metric,
    )
    if pooled is None or source is None:
        return None
    (best_p, better_p), (best_s, better_s) = pooled, source
    same_pairs = {(a, b) for a, b, _ in better_p} == {(a, b) for a, b, _ in better_s}
    if best_p == best_s and same_pairs:
        return f"source-only qrels ({check.questions} questions, no grader) agree"
    said = [f"{best_s} has the best mean" if best_s != best_p else f"{best_s} still has the best mean"]
    pooled_pairs = {(a, b) for a, b, _ in better_p}
    if better_s:
        pairs = ", ".join(
            f"{a} > {b} (p {p:.2g}{', the reverse of the pooled verdict' if (b, a) in pooled_pairs else ''})"
            for a, b, p in better_s[:4]
        )
        more = f" and {len(better_s) - 4} more" if len(better_s) > 4 else ""
        said.append(f"significantly better: {pairs}{more}")
    else:
        said.append("no run is significantly better than another")
    source_pairs = {(a, b) for a, b, _ in better_s}
    lost = [f"{a} > {b}" for a, b, _ in better_p if (a, b) not in source_pairs and (b, a) not in source_pairs]
    if lost:
        said.append(f"not significant there: {', '.join(lost[:4])}{' ...' if len(lost) > 4 else ''}")
    return (
        f"{DIFFERS} ({check.questions} questions, each with its own source chunk, no grader): "
        f"{'; '.join(said)}; the verdict rests on the pool's grades"
    )


def verdict_lines(report: Report) -> list[str]:
    """Lines saying which run is best on which metrics and how sure; [] with fewer than two runs. Lines the
    source-only qrels contradict come first (module docstring)."""
    runs = list(report.runs)
    if len(runs) < 2 or not report.metrics:
        return []
    nightly = report.metadata.nightly
    provenance = nightly.dataset.qrels if nightly is not None else None
    favoured = set(provenance.favoured) if provenance is not None else set()
    # (best, level with, source-only clause) -> (metric, p)
    groups: dict[tuple[str, str, str | None], list[tuple[str, float | None]]] = {}
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
        clause = _source_only_clause(report, provenance, metric)
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
            groups.setdefault((best, "all", clause), []).append((metric, worst_p))
        else:
            closest = min(level, key=lambda x: x[1])
            said = ", ".join(n for n, _ in level[:3]) + (
                f" and {len(level) - 3} more" if len(level) > 3 else ""
            )
            groups.setdefault((best, said, clause), []).append((metric, closest[1]))
    lines = []
    for (best, level_with, clause), metrics in groups.items():
        names = ", ".join(m for m, _ in metrics)
        if level_with == "all":
            ps = [p for _, p in metrics if p is not None]
            sure = f" (every corrected p ≤ {max(ps):.2g})" if ps else ""
            line = f"{best} is best on {names}: significantly better than every other run{sure}"
        else:
            ps = [p for _, p in metrics if p is not None] or [1.0]
            line = (
                f"{best} has the best mean on {names}, but is not significantly better than {level_with} "
                f"(corrected p {min(ps):.2g}{'' if len(ps) == 1 else f'-{max(ps):.2g}'}): treat them as level"
            )
        if clause is not None and best in favoured:
            line += f", on pooled qrels that may favour {best} (warning below)"
        if clause is not None:
            line += f" — {clause}"
        lines.append(line)
    return sorted(lines, key=lambda line: DIFFERS not in line) + flagged
