"""Drift and "worse since": what the history says beyond the plotted series.

Each run's metric is followed over its comparable segment (the nights since the last change of data, or of its
judge for a judged metric). Over the last N nights of that segment the Mann-Kendall test asks whether the
nightly means trend; the p-values are corrected across every series tested (the config's correction), and a
series is flagged as drifting when its corrected p is at most alpha, the trend goes the worse way for the
metric, and the latest night is worse than the reference: the pinned baseline when it lies in the segment,
else the first night of the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragmetrics.history.changes import Annotation, breaks_series
from ragmetrics.history.record import NightRecord
from ragmetrics.history.trend import MIN_NIGHTS, TrendTest, mann_kendall
from ragmetrics.options import improvement


@dataclass(frozen=True)
class SeriesDrift:
    run: str
    metric: str
    segment_start: int
    window: tuple[int, ...]
    """Night indices the trend test saw (the last N with a mean)."""
    test: TrendTest | None
    p_corrected: float | None
    reference: int | None
    """The night the latest is compared with: the pinned baseline when comparable, else the window's first."""
    reference_is_baseline: bool
    reference_mean: float | None
    latest_mean: float | None
    flagged: bool
    note: str = ""

    @property
    def delta(self) -> float | None:
        if self.reference_mean is None or self.latest_mean is None:
            return None
        return self.latest_mean - self.reference_mean


@dataclass(frozen=True)
class QueryWorse:
    query_id: str
    reference: float
    latest: float
    since: int
    """The first night of the unbroken run of nights, up to the latest, on which the query scored worse."""

    @property
    def delta(self) -> float:
        return self.latest - self.reference


def pinned_baseline(records: Sequence[NightRecord], given: str | None = None) -> int | None:
    """The index of the night the gate compares with: `given` (a folder name or a path into one), else the
    latest night's baseline; None when that report is not one of the recorded nights."""
    if given is None and records and records[-1].baseline_folder:
        named = [i for i, r in enumerate(records) if r.folder == records[-1].baseline_folder]
        if named:
            return named[-1]
    source = given or (records[-1].baseline if records else None)
    if not source:
        return None
    path = Path(source)
    names = {path.name, path.parent.name}
    try:
        resolved = path.resolve()
        names |= {resolved.name, resolved.parent.name}
    except OSError:
        pass
    matches = [i for i, r in enumerate(records) if r.folder in names]
    return matches[-1] if matches else None


def segment_start(annotations: Sequence[Annotation], run: str, judged: bool, last: int) -> int:
    """The first night of the comparable segment that ends at night `last`."""
    start = 0
    for a in annotations:
        if a.night <= last and breaks_series(a, run, judged):
            start = max(start, a.night)
    return start


def analyse(
    records: Sequence[NightRecord],
    annotations: Sequence[Annotation],
    *,
    nights: int,
    alpha: float,
    correction: str,
    baseline: int | None,
) -> list[SeriesDrift]:
    """A SeriesDrift for every run/metric of the latest night."""
    from ragmetrics.comparison.corrections import adjust

    if not records:
        return []
    last = len(records) - 1
    pending: list[tuple[str, str, int, tuple[int, ...], TrendTest | None, str, bool]] = []
    for point in records[last].points:
        start = segment_start(annotations, point.run, point.judged, last)
        with_mean = [
            i
            for i in range(start, last + 1)
            if (p := records[i].point(point.run, point.metric)) is not None and p.mean is not None
        ]
        window = tuple(with_mean[-nights:])
        test, note = None, ""
        if len(window) < MIN_NIGHTS:
            note = (
                f"{len(window)} comparable night{'s' if len(window) != 1 else ''} with a mean; the trend test "
                f"needs {MIN_NIGHTS}"
            )
        else:
            means = [records[i].point(point.run, point.metric).mean for i in window]  # type: ignore[union-attr]
            test = mann_kendall([m for m in means if m is not None])
        pending.append((point.run, point.metric, start, window, test, note, point.judged))
    tested = [k for k, item in enumerate(pending) if item[4] is not None]
    corrected = adjust([pending[k][4].p_value for k in tested], correction) if tested else []  # type: ignore[union-attr]
    p_adj = dict(zip(tested, corrected, strict=True))
    out = []
    for k, (run, metric, start, window, test, note, _judged) in enumerate(pending):
        use_baseline = baseline is not None and start <= baseline <= last
        reference = baseline if use_baseline else (window[0] if window else None)
        ref_point = records[reference].point(run, metric) if reference is not None else None
        latest = records[last].point(run, metric)
        ref_mean = ref_point.mean if ref_point is not None else None
        latest_mean = latest.mean if latest is not None else None
        flagged = False
        p_value = p_adj.get(k)
        if test is not None and p_value is not None and ref_mean is not None and latest_mean is not None:
            worse_trend = improvement(metric, test.slope) < 0
            flagged = p_value <= alpha and worse_trend and improvement(metric, latest_mean - ref_mean) < 0
        if baseline is not None and not use_baseline and not note:
            note = "the pinned baseline is before a change of data or judge: compared with the window's first night"
        out.append(
            SeriesDrift(
                run=run,
                metric=metric,
                segment_start=start,
                window=window,
                test=test,
                p_corrected=p_value,
                reference=reference,
                reference_is_baseline=use_baseline,
                reference_mean=ref_mean,
                latest_mean=latest_mean,
                flagged=flagged,
                note=note,
            )
        )
    return out


def worse_since(
    records: Sequence[NightRecord], run: str, metric: str, reference: int, *, limit: int | None = 10
) -> list[QueryWorse]:
    """Queries scoring worse on the latest night than on `reference`, the most hurt first, each with the
    night since which it has stayed worse; the first `limit` of them (None: all)."""
    last = len(records) - 1
    base = records[reference].per_query.get(run, {})
    latest = records[last].per_query.get(run, {})
    out = []
    for qid, scores in latest.items():
        now, before = scores.get(metric), base.get(qid, {}).get(metric)
        if now is None or before is None or improvement(metric, now - before) >= 0:
            continue
        since = last
        for i in range(last - 1, reference, -1):
            value = records[i].per_query.get(run, {}).get(qid, {}).get(metric)
            if value is None or improvement(metric, value - before) >= 0:
                break
            since = i
        out.append(QueryWorse(qid, before, now, since))
    out.sort(key=lambda q: (improvement(metric, q.delta), q.query_id))
    return out if limit is None else out[:limit]
