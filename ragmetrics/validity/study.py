"""The validity study's statistics over a night's matrices (`data.ValidityData`).

- Per query: Kendall's tau-b between a metric and the answer quality over the (question, run) pairs that have
  both, with a percentile interval from a bootstrap over questions (all runs of a drawn question kept together).
- Per system: tau-b between the runs' means of the metric and of the answer quality (over the same pairs), with
  the interval from the same resamples; only with at least 4 runs (with 3, tau can only be -1, -1/3, 1/3 or 1).
- Discriminative power: the share of run pairs the metric separates (`comparison.discriminative`).

Every metric uses the same resamples, so the naming rule (`naming`) compares taus pair by pair.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragmetrics.comparison.discriminative import discriminative_power
from ragmetrics.comparison.kendall import bootstrap_counts, grouped_pairs, kendall_tau_b, tau_b_of_counts
from ragmetrics.errors import InputError
from ragmetrics.options import lower_is_better
from ragmetrics.validity.data import ValidityData
from ragmetrics.validity.model import MetricValidity, TauInterval, ValidityResult, ValiditySettings
from ragmetrics.validity.naming import TauSamples, name_best

__all__ = ["MIN_SYSTEM_RUNS", "validity_study"]

MIN_SYSTEM_RUNS = 4


def _interval(estimate: float | None, resampled: NDArray[np.float64], confidence: float, why: str | None
              ) -> TauInterval:  # fmt: skip
    if estimate is None:
        return TauInterval(estimate=None, undefined=why)
    defined = resampled[~np.isnan(resampled)]
    undefined = int(resampled.size - defined.size)
    if not defined.size:
        return TauInterval(
            estimate=estimate, undefined="undefined on every resample", undefined_resamples=undefined
        )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(defined, [tail, 1.0 - tail])
    return TauInterval(estimate=estimate, low=float(low), high=float(high), undefined_resamples=undefined)


def _constant_reason(metric: str, x: NDArray[np.float64], y: NDArray[np.float64], answer: str) -> str | None:
    if x.size < 2:
        return f"fewer than 2 (question, run) pairs have both {metric} and {answer}"
    if np.all(x == x[0]):
        return f"{metric} is constant ({x[0]:g} on all {x.size} pairs): it orders nothing"
    if np.all(y == y[0]):
        return f"{answer} is constant ({y[0]:g} on all {y.size} pairs): there is nothing to track"
    return None


def _per_query(data: ValidityData, metric: str, counts: NDArray[np.float64], confidence: float
               ) -> tuple[TauInterval, TauSamples, int, int]:  # fmt: skip
    values = data.metrics[metric]
    both = ~np.isnan(values) & ~np.isnan(data.answer)
    rows, _cols = np.nonzero(both)
    x, y = values[both], data.answer[both]
    why = _constant_reason(metric, x, y, data.answer_metric)
    tau = None if why else kendall_tau_b(x, y)
    if tau is None:
        resampled = np.full(counts.shape[0], np.nan)
    else:
        pairs = grouped_pairs(x, y, rows, len(data.questions))
        resampled = np.array([np.nan if t is None else t for t in tau_b_of_counts(pairs, counts)])
    questions = int(np.unique(rows).size)
    return (
        _interval(tau, resampled, confidence, why),
        TauSamples(metric, tau, resampled),
        int(both.sum()),
        questions,
    )


def _run_means(values: NDArray[np.float64], both: NDArray[np.bool_], counts: NDArray[np.float64]
               ) -> NDArray[np.float64]:  # fmt: skip
    """resamples x runs: each run's weighted mean over its questions with both values (NaN: none drawn)."""
    mask = both.astype(np.float64)
    totals = counts @ (np.where(both, values, 0.0))
    weights = counts @ mask
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weights > 0, totals / np.where(weights > 0, weights, 1.0), np.nan)


def _per_system(
    data: ValidityData, metric: str, counts: NDArray[np.float64], confidence: float
) -> TauInterval:
    runs = len(data.runs)
    if runs < MIN_SYSTEM_RUNS:
        return TauInterval(estimate=None, undefined=f"{runs} runs, fewer than {MIN_SYSTEM_RUNS}")
    values = data.metrics[metric]
    both = ~np.isnan(values) & ~np.isnan(data.answer)
    ones = np.ones((1, len(data.questions)))
    x0, y0 = _run_means(values, both, ones)[0], _run_means(data.answer, both, ones)[0]
    kept = ~np.isnan(x0)
    if int(kept.sum()) < MIN_SYSTEM_RUNS:
        return TauInterval(estimate=None, undefined=f"{int(kept.sum())} runs have {metric} with answers; an "
                           f"ordering of systems needs at least {MIN_SYSTEM_RUNS}")  # fmt: skip
    why = _constant_reason(f"{metric} (run means)", x0[kept], y0[kept], f"{data.answer_metric} (run means)")
    if why:
        return TauInterval(estimate=None, undefined=why)
    tau = kendall_tau_b(x0[kept], y0[kept])
    xs, ys = _run_means(values, both, counts), _run_means(data.answer, both, counts)
    resampled = np.full(counts.shape[0], np.nan)
    for b in range(counts.shape[0]):
        ok = ~np.isnan(xs[b]) & ~np.isnan(ys[b])
        if int(ok.sum()) >= 2:
            t = kendall_tau_b(xs[b][ok], ys[b][ok])
            resampled[b] = np.nan if t is None else t
    return _interval(tau, resampled, confidence, None)


def validity_study(data: ValidityData, settings: ValiditySettings) -> ValidityResult:
    """Every metric of `data` assessed with `settings`; the verdict from the paired resamples."""
    if settings.answer_metric != data.answer_metric:
        raise InputError(
            f"settings name {settings.answer_metric!r} but the data holds {data.answer_metric!r}"
        )
    if not 0.0 < settings.confidence < 1.0:
        raise InputError(f"confidence must be in (0, 1), got {settings.confidence}", field="confidence")
    counts = bootstrap_counts(len(data.questions), settings.samples, settings.seed)
    assessed: list[MetricValidity] = []
    samples: list[TauSamples] = []
    for metric, (kind, qrels) in data.kinds.items():
        per_query, resampled, units, questions = _per_query(data, metric, counts, settings.confidence)
        samples.append(resampled)
        power = discriminative_power(
            data.metrics[metric], test=settings.test, correction=settings.correction, alpha=settings.alpha,
            seed=settings.seed, permutations=settings.permutations,
        )  # fmt: skip
        answered = ~np.isnan(data.answer)
        assessed.append(
            MetricValidity(
                metric=metric, kind=kind, qrels=qrels, oriented=lower_is_better(metric), units=units,  # type: ignore[arg-type]
                questions=questions, left_out=int((answered & np.isnan(data.metrics[metric])).sum()),
                per_query=per_query, per_system=_per_system(data, metric, counts, settings.confidence),
                separated=power.separated, pairs=power.pairs, power=power.share,
            )
        )  # fmt: skip
    notes = list(data.notes)
    for item in assessed:
        if item.left_out:
            notes.append(f"{item.metric}: {item.left_out} (question, run) pairs with answer quality have no value "
                         "(a failed or not applicable score), left out of its figures")  # fmt: skip
    system_note = None
    if len(data.runs) < MIN_SYSTEM_RUNS:
        system_note = (f"per system: not given, {len(data.runs)} runs; an ordering of systems needs at least "
                       f"{MIN_SYSTEM_RUNS} runs to mean anything")  # fmt: skip
    return ValidityResult(
        settings=settings, runs=list(data.runs), questions=len(data.questions), metrics=assessed,
        verdict=name_best(samples, settings.confidence), per_system_note=system_note, notes=notes,
    )  # fmt: skip
