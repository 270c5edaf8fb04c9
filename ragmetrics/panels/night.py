"""A night judged by a panel (``judge: {panel: ...}``): the combinations that need the whole night, and what the
report says about the panel.

`PanelJudge` scores each unit as its members' mean or majority and records every member's score in the unit's
detail. Here, once every run is judged:

- ``combine: learned`` refits the score of every unit from the members' scores with weights learned from the
  panel's `labels` (per metric). A labelled unit gets weights fitted on the other folds' labels only
  (cross-fitted, as `ragmetrics judges` measures it); an unlabelled unit gets weights fitted on every label.
- ``combine: dawid_skene`` replaces each unit's score by the posterior of a "yes" under the Dawid-Skene model
  fitted (per metric, pooled over the runs) to the members' verdicts: no labels needed.
- the judges' agreement with each other (Krippendorff alpha on their verdicts, per metric) goes into the
  judge's info beside the people's (where two or more people labelled the same items), with each member's
  share of the bill, so the report can show them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ragmetrics.alignment.folds import stratified_folds
from ragmetrics.errors import InputError
from ragmetrics.judge.panel_config import PanelSettings
from ragmetrics.schema import JudgeDetail, JudgeInfo, RunResult
from ragmetrics.trust.labels import HumanLabels, load_labels
from ragmetrics.trust.panel_combine import cross_fitted, dawid_skene, fit_weights
from ragmetrics.trust.people import krippendorff_alpha

__all__ = ["finish_panel_night", "people_alpha", "people_labels"]

Unit = tuple[str, str]  # (run, sample id)


def _member_scores(results: Mapping[str, RunResult], metric: str, names: list[str]) -> dict[Unit, list[float]]:
    """(run, sample) -> the members' scores of `metric`, in member order, for every unit the panel scored."""
    out: dict[Unit, list[float]] = {}
    for run, result in results.items():
        for qid, per_metric in result.details.items():
            detail = per_metric.get(metric)
            if detail is None or result.per_query.get(qid, {}).get(metric) is None:
                continue
            by_judge = {v.get("judge"): v.get("score") for v in detail.verdicts}
            if all(isinstance(by_judge.get(n), float | int) for n in names):
                out[(run, qid)] = [float(by_judge[n]) for n in names]  # type: ignore[arg-type]
    return out


def _learned(
    units: list[Unit], matrix: np.ndarray[Any, np.dtype[np.float64]], labels: Mapping[str, float],
    panel: PanelSettings, metric: str,
) -> tuple[np.ndarray[Any, np.dtype[np.float64]], str]:  # fmt: skip
    labelled = [i for i, (_, qid) in enumerate(units) if qid in labels]
    if len(labelled) < panel.folds:
        raise InputError(
            f"judge.panel.labels: combine 'learned' needs at least {panel.folds} labels of {metric} "
            f"(one per fold) on judged samples; found {len(labelled)}",
            field="judge.panel.labels",
        )
    y = np.array([labels[units[i][1]] for i in labelled], dtype=np.float64)
    out = fit_weights(matrix[labelled], y).predict(matrix)
    # Folds of samples, not units: one sample judged in several runs carries one label, which must never be
    # in the training folds of its own units.
    samples = sorted({units[i][1] for i in labelled})
    if len(samples) < panel.folds:
        raise InputError(
            f"judge.panel.labels: combine 'learned' needs labels of {metric} on at least {panel.folds} judged "
            f"samples (one per fold); found {len(samples)}",
            field="judge.panel.labels",
        )
    sample_fold = dict(zip(samples, stratified_folds([labels[q] for q in samples], panel.folds, panel.seed),
                           strict=True))  # fmt: skip
    fold_of = np.array([sample_fold[units[i][1]] for i in labelled], dtype=np.int64)
    out[labelled] = cross_fitted(matrix[labelled], y, fold_of)
    return out, f"weights learned from {len(labelled)} labels (cross-fitted on the labelled samples)"


def finish_panel_night(
    panel: PanelSettings,
    results: dict[str, RunResult],
    info: JudgeInfo | None,
    *,
    people: HumanLabels | None = None,
) -> tuple[dict[str, RunResult], JudgeInfo | None]:
    """The night's judged runs with the run-wide combination applied and the panel's agreement recorded."""
    if info is None or "panel" not in info.settings:
        return results, info
    names = [m["name"] for m in info.settings["panel"]["members"]]
    human = load_labels(panel.labels, scale=panel.scale) if panel.labels is not None else None
    metrics = sorted({m for r in results.values() for m in r.metadata.metrics})
    agreement: dict[str, Any] = {}
    for metric in metrics:
        scores = _member_scores(results, metric, names)
        if not scores:
            continue
        units = list(scores)
        matrix = np.array([scores[u] for u in units], dtype=np.float64)
        votes = (matrix >= panel.threshold).astype(np.float64)
        judges = krippendorff_alpha(votes.T) if len(units) > 1 else math.nan
        entry: dict[str, Any] = {"judges_alpha": None if math.isnan(judges) else judges, "items": len(units)}
        combined = None
        how = ""
        if panel.combine == "learned" and human is not None:
            labels = {qid: lab.value for qid, lab in human.for_metric(metric).items()}
            combined, how = _learned(units, matrix, labels, panel, metric)
        elif panel.combine == "dawid_skene":
            fitted = dawid_skene(votes)
            combined = fitted.posterior
            how = "Dawid-Skene (EM, no labels)"
            entry["dawid_skene_accuracy"] = dict(zip(names, fitted.accuracy(), strict=True))
        if combined is not None:
            for (run, qid), value in zip(units, combined, strict=True):
                result = results[run]
                result.per_query[qid][metric] = float(value)
                old = result.details[qid][metric]
                result.details[qid][metric] = JudgeDetail(
                    verdicts=old.verdicts, reason=f"panel of {len(names)} judges combined by {how}",
                    cached=old.cached,
                )  # fmt: skip
        if people is not None:
            entry["people_alpha"] = people_alpha(people, [metric], panel.threshold)
        agreement[metric] = entry
    for result in results.values():
        result.recompute_aggregate()
    settings = {**info.settings, "panel": {**info.settings["panel"], "agreement": agreement}}
    info = info.model_copy(update={"settings": settings})
    for result in results.values():
        if result.metadata.judge is not None:
            result.metadata.judge = info
    return results, info


def people_alpha(
    people: HumanLabels, metrics: list[str], threshold: float, run: str | None = None
) -> float | None:
    """Krippendorff alpha among the people on their yes/no decisions over `metrics`' items (None with fewer
    than two named labellers): the figure the judges' own alpha stands beside."""
    columns: list[dict[str, float]] = []
    persons: set[str] = set()
    for metric in metrics:
        ratings = people.ratings(metric, run)
        persons |= set(ratings)
        items = sorted({i for per in ratings.values() for i in per})
        columns.extend({p: ratings[p][i] for p in ratings if i in ratings[p]} for i in items)
    if len(persons) < 2:
        return None
    scale = people.scale or 1.0
    matrix = np.array([[float(c[p] / scale >= threshold) if p in c else np.nan for c in columns]
                       for p in sorted(persons)])  # fmt: skip
    value = krippendorff_alpha(matrix)
    return None if math.isnan(value) else value


def people_labels(spec: Any) -> HumanLabels | None:
    """The night's human labels file (`human_labels.path`), when it has one, for the people's agreement."""
    path = getattr(spec, "path", None)
    if path is None:
        return None
    return load_labels(path, scale=spec.scale, adjudication=spec.adjudication)
