"""Before the verdict calls runs different on a judge metric, check on the night's own answers that the metric
does not move with their formatting (the rule: `judge.text.formatting`).

Only metrics with at least one significant pair are checked, on the runs of those pairs, so a night where
nothing differs pays nothing. With the local judge the check re-scores up to `SAMPLE_ANSWERS` answers per run,
three re-formattings each (embeddings are cached, so about 150 short texts a run). With an LLM judge it is not
run: each re-formatted answer would be a new request the night's budget did not plan, so the night says so in
its notes instead of pretending to have checked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.select import make_judge
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.judge.text.formatting import (
    CHECKED_METRICS,
    FormattingCheck,
    answer_changed,
    perturbations,
    sample_ids,
)
from ragmetrics.schema import FormattingCheck as FormattingRecord
from ragmetrics.schema import JudgeInfo, Report

__all__ = ["check_formatting"]

_SEPARATOR = "\x1fformat:"
"""Between an answer's id and a perturbation's name in the re-scored samples' ids (no id holds it)."""


def _significant_runs(report: Report, metric: str) -> list[str]:
    names: list[str] = []
    for c in report.comparisons:
        if c.metric == metric and c.significant:
            names += [n for n in (c.baseline, c.candidate) if n not in names]
    return names


def check_formatting(
    settings: JudgeSettings | None,
    report: Report,
    judged: Mapping[str, list[RagSample]],
    judge_info: JudgeInfo | None,
    notes: list[str],
) -> list[FormattingRecord]:
    """The formatting check of every checked judge metric with a significant pair (module doc), judged as the
    night judged (`settings`, `judge_info`: who judged); its lines are appended to `notes`."""
    metrics = [m for m in report.metrics if m in CHECKED_METRICS and _significant_runs(report, m)]
    if not metrics or settings is None:
        return []
    if judge_info is None or judge_info.backend != "local":
        notes.append(
            f"formatting check not run for {', '.join(metrics)}: with an LLM judge every re-formatted answer is a "
            "new request; the local judge checks it (judge.text.formatting)"
        )
        return []
    # The night's judge as it ran (its model, cache and alignment); backend set so no fallback notice is logged.
    judge = make_judge(settings.model_copy(update={"backend": "local"}))
    records = [_check(metric, report, judged, judge) for metric in metrics]
    notes.extend(r.text for r in records)
    return records


def _check(
    metric: str, report: Report, judged: Mapping[str, list[RagSample]], judge: Judge
) -> FormattingRecord:
    originals: dict[str, float] = {}
    variants: list[RagSample] = []
    for run in _significant_runs(report, metric):
        samples = {s.id: s for s in judged.get(run, [])}
        # Only scored answers can be checked: a failed or not-applicable score has nothing to move.
        scores = {
            q: score
            for q, v in report.run(run).per_query.items()
            if q in samples and (score := v.get(metric)) is not None
        }
        for qid in sample_ids(scores):
            sample = samples[qid]
            key = f"{run}{_SEPARATOR}{qid}"
            originals[key] = scores[qid]
            formats = perturbations(str(sample.answer or ""), sample.context_list, sample.language)
            variants += [
                sample.model_copy(update={"answer": text, "id": f"{key}{_SEPARATOR}{name}"})
                for name, text in formats.items()
            ]
    result = evaluate_rag(variants, [metric], judge, progress=False) if variants else None
    moved: Counter[str] = Counter()
    changed = 0
    for key, original in originals.items():
        perturbed = {
            s.id.rsplit(_SEPARATOR, 1)[1]: (result.per_query.get(s.id, {}).get(metric) if result else None)
            for s in variants
            if s.id.rsplit(_SEPARATOR, 1)[0] == key
        }
        names = answer_changed(original, perturbed)
        moved.update(names)
        changed += bool(names)
    check = FormattingCheck(metric, len(originals), changed, dict(moved))
    return FormattingRecord(
        metric=metric,
        checked=check.checked,
        changed=check.changed,
        by_perturbation=check.by_perturbation,
        depends=check.depends,
        text=check.describe(),
    )
