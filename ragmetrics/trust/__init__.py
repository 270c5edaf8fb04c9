"""How far the judge is from people, and from itself.

- `judge_agreement(result, labels)`: per judge metric, agreement with human labels (accuracy, balanced
  accuracy, kappa, Spearman, Kendall, calibration, bias, each with a CI) and the prediction-powered estimate
  of the people's mean (PPI, PPI++, next to the classical and judge-only intervals), as a typed `RunTrust`;
- `ppi_difference(baseline, candidate, labels, metric)`: the same for the paired difference of two runs;
- with two or more labellers, the people's agreement with each other (`trust.people`) beside the judge's;
- `judge_noise_stats(repeats, metric)`: spread, flip rate, ICC and the noise-widened CI over repeated judging.

docs/trust.md says when to label, how many labels buy how much, and how to read each figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from ragmetrics.schema import (
    CalibrationBin,
    Interval,
    JudgeNoiseStats,
    MetricAgreement,
    PairPPI,
    PeopleCeiling,
    PPIEstimate,
    RunResult,
    RunTrust,
)
from ragmetrics.trust.agreement import Agreement, Estimate, agreement, label_kind
from ragmetrics.trust.labels import HumanLabels, load_labels
from ragmetrics.trust.people import Level
from ragmetrics.trust.ppi import MeanEstimates, NormalInterval, estimate_mean
from ragmetrics.trust.variance import judge_noise, verdict_flip_rate

__all__ = [
    "HumanLabels",
    "judge_agreement",
    "judge_noise_stats",
    "load_labels",
    "ppi_difference",
]


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _interval(e: Estimate | NormalInterval | None) -> Interval | None:
    if e is None:
        return None
    value = e.value if isinstance(e, Estimate) else e.estimate
    return Interval(estimate=_finite(value), low=_finite(e.low), high=_finite(e.high))


def _ppi_model(metric: str, est: MeanEstimates, confidence: float) -> PPIEstimate:
    judge_only = _interval(est.judge_only)
    assert judge_only is not None
    return PPIEstimate(
        metric=metric,
        n_labeled=est.n_labeled,
        n_unlabeled=est.n_unlabeled,
        confidence=confidence,
        judge_only=judge_only,
        classical=_interval(est.classical),
        ppi=_interval(est.ppi),
        ppi_plus=_interval(est.ppi_plus),
        ppi_lambda=est.lam,
    )


def _as_labels(labels: HumanLabels | str | Path, scale: float | None) -> HumanLabels:
    return labels if isinstance(labels, HumanLabels) else load_labels(labels, scale=scale)


def judge_agreement(
    result: RunResult,
    labels: HumanLabels | str | Path,
    *,
    metrics: Sequence[str] | None = None,
    scale: float | None = None,
    threshold: float = 0.5,
    confidence: float = 0.95,
    seed: int = 0,
    check_ids: bool = True,
) -> RunTrust:
    """Agreement and PPI estimates for each judge metric of `result` that has human labels.

    A label whose sample id is not in `result` is an InputError naming its file and line (`check_ids=False`
    ignores such labels, for one labels file shared by datasets). Samples whose judge score failed are left
    out of both sides and counted in neither n.
    """
    human = _as_labels(labels, scale)
    if check_ids:
        human.check_ids(result.per_query)
    wanted = (
        list(metrics) if metrics is not None else [m for m in result.metadata.metrics if human.for_metric(m)]
    )
    trust = RunTrust(labels_source=human.source)
    for metric in wanted:
        by_sample = human.for_metric(metric, result.name)
        scores = {q: s.get(metric) for q, s in result.per_query.items()}
        labelled = [(scores[q], lab) for q, lab in by_sample.items() if q in scores and scores[q] is not None]
        unlabelled = [v for q, v in scores.items() if v is not None and q not in by_sample]
        if not labelled:
            continue
        judge = np.array([v for v, _ in labelled], dtype=np.float64)
        people = np.array([lab.value for _, lab in labelled], dtype=np.float64)
        kind = _kind_of(human, metric, result.name)
        stats = agreement(judge, people, kind=kind, threshold=threshold, confidence=confidence, seed=seed)
        model = agreement_model(metric, stats)
        ratings = human.ratings(metric, result.name)
        if len(ratings) >= 2:
            model.people = people_ceiling(ratings, scores, kind=kind, scale=human.scale, threshold=threshold,
                                          confidence=confidence, seed=seed)  # fmt: skip
        trust.agreement.append(model)
        estimates = estimate_mean(
            judge, people, np.array(unlabelled, dtype=np.float64), confidence=confidence
        )
        trust.ppi.append(_ppi_model(metric, estimates, confidence))
    return trust


def _kind_of(human: HumanLabels, metric: str, run: str) -> str:
    """The labels' kind from every labeller's own labels, not the adjudicated ones: a split yes/no adjudicated
    to 0.5, or two grades to their mean, is still a yes/no or a graded label (binary; graded when the file gives
    a scale; else score)."""
    every = [raw for labels in human.ratings(metric, run).values() for raw in labels.values()]
    every += [lab.raw for lab in human.for_metric(metric, run).values()] if not every else []
    kind = label_kind(every)
    return "graded" if human.scale is not None and kind != "score" else kind


def people_ceiling(
    ratings: Mapping[str, Mapping[str, float]],
    scores: Mapping[str, float | None],
    *,
    kind: str,
    scale: float | None,
    threshold: float,
    confidence: float,
    seed: int,
) -> PeopleCeiling:
    """The people's agreement with each other and the judge beside it (`trust.people`), the judge's scores put
    on the labels' own scale: yes/no at `threshold` (binary labels, nominal), the nearest grade (graded,
    ordinal), the score itself (scores, interval)."""
    from ragmetrics.trust.people import judge_vs_people, people_agreement

    level: Level = "nominal" if kind == "binary" else "ordinal" if kind == "graded" else "interval"

    def on_scale(score: float) -> float:
        """The judge's score where the people's raw labels are: yes/no, the nearest grade, or the score times
        the scale (raw labels of a file with a scale are grades 0..scale)."""
        if level == "nominal":
            return 1.0 if score >= threshold else 0.0
        if scale is None:
            return score
        return float(round(score * scale)) if level == "ordinal" else score * scale

    judged = {q: on_scale(v) for q, v in scores.items() if v is not None}
    people = people_agreement(ratings, level=level, confidence=confidence, seed=seed)
    beside = judge_vs_people(ratings, judged, level=level, confidence=confidence, seed=seed)
    return PeopleCeiling(
        labellers=list(people.labellers), items=people.items, level=level, percent=_interval(people.percent),
        cohen_kappa=_interval(people.cohen), fleiss_kappa=_interval(people.fleiss), alpha=_interval(people.alpha),
        people_alpha=_interval(beside.people), judge_alpha=_interval(beside.judge),
        difference=_interval(beside.difference), standing=beside.standing, text=beside.sentence(),
        disagreements=[item for item, _ in people.disagreements], undefined=dict(people.undefined),
    )  # fmt: skip


def agreement_model(metric: str, stats: Agreement) -> MetricAgreement:
    """The schema's `MetricAgreement` of agreement figures (`trust.agreement.agreement`)."""
    bias = _interval(stats.bias)
    assert bias is not None
    return MetricAgreement(
        metric=metric,
        n_labeled=stats.n,
        label_kind=stats.kind,  # type: ignore[arg-type]
        threshold=stats.threshold,
        accuracy=_interval(stats.accuracy),
        balanced_accuracy=_interval(stats.balanced_accuracy),
        kappa=_interval(stats.kappa),
        spearman=_interval(stats.spearman),
        kendall=_interval(stats.kendall),
        bias=bias,
        calibration=[
            CalibrationBin(low=c.low, high=c.high, n=c.n, judge_mean=c.judge_mean, human_mean=c.human_mean)
            for c in stats.calibration
        ],
    )


def ppi_difference(
    baseline: RunResult,
    candidate: RunResult,
    labels: HumanLabels | str | Path,
    metric: str,
    *,
    scale: float | None = None,
    confidence: float = 0.95,
) -> PairPPI | None:
    """PPI estimate of mean(candidate - baseline) over the samples both runs scored, corrected by the samples
    labelled for both runs; None when fewer than two samples carry both labels."""
    human = _as_labels(labels, scale)
    lab_a, lab_b = human.for_metric(metric, baseline.name), human.for_metric(metric, candidate.name)
    shared = [
        q
        for q in baseline.per_query
        if q in candidate.per_query
        and baseline.per_query[q].get(metric) is not None
        and candidate.per_query[q].get(metric) is not None
    ]

    def diff(q: str) -> float:
        a, b = baseline.per_query[q][metric], candidate.per_query[q][metric]
        assert a is not None and b is not None
        return b - a

    labelled = [q for q in shared if q in lab_a and q in lab_b]
    if len(labelled) < 2:
        return None
    unlabelled = [diff(q) for q in shared if q not in labelled]
    estimates = estimate_mean(
        [diff(q) for q in labelled],
        [lab_b[q].value - lab_a[q].value for q in labelled],
        unlabelled,
        confidence=confidence,
    )
    return PairPPI(
        metric=metric,
        baseline=baseline.name,
        candidate=candidate.name,
        estimate=_ppi_model(metric, estimates, confidence),
    )


def judge_noise_stats(
    repeats: Sequence[RunResult], metric: str, *, confidence: float = 0.95, seed: int = 0
) -> JudgeNoiseStats | None:
    """Noise figures of `metric` over results of the same samples judged with different seeds (repeat 0
    first); samples that failed in any repeat are left out. None with fewer than one complete sample."""
    ids = [
        q
        for q in repeats[0].per_query
        if all(r.per_query.get(q, {}).get(metric) is not None for r in repeats)
    ]
    if not ids:
        return None
    matrix = np.array([[r.per_query[q][metric] for r in repeats] for q in ids], dtype=np.float64)
    flips = _flip_rate(repeats, metric, ids)
    noise = judge_noise(matrix, flip_rate=flips, confidence=confidence, seed=seed)
    return JudgeNoiseStats(
        metric=metric,
        samples=noise.samples,
        repeats=noise.repeats,
        mean=noise.mean,
        mean_spread=noise.mean_spread,
        flip_rate=noise.flip_rate,
        icc=_finite(noise.icc),
        ci_samples=Interval(estimate=noise.mean, low=noise.ci_samples[0], high=noise.ci_samples[1]),
        ci_with_noise=Interval(estimate=noise.mean, low=noise.ci_with_noise[0], high=noise.ci_with_noise[1]),
        spread={q: float(s) for q, s in zip(ids, noise.spread, strict=True)},
    )


def _flip_rate(repeats: Sequence[RunResult], metric: str, ids: Iterable[str]) -> float | None:
    """Flip rate over the verdicts in the results' details, or None when a repeat has no verdicts."""
    per_sample = []
    for q in ids:
        lists = []
        for r in repeats:
            detail = r.details.get(q, {}).get(metric)
            if detail is None or not detail.verdicts:
                return None
            lists.append([bool(v.get("verdict", v.get("noncommittal"))) for v in detail.verdicts])
        per_sample.append(lists)
    return verdict_flip_rate(per_sample)
