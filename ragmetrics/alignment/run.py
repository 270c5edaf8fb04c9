"""`align_judge`: fit a judge metric to a team's labels, measured only on labels each fit never saw.

The labels are dealt into `folds` folds, stratified by label. Steps are tried in order (LLM judge: few-shot
examples, refined guidance, calibration; local judge: the evidence head, calibration); for each step and
each outer fold the step is fitted on the other folds, on top of what earlier kept steps fitted there, and
the held-out fold is scored. A step is kept only when its held-out gain in the deciding `statistic` has a
paired bootstrap 95 % interval above 0: a gain inside the noise is not a gain. Steps with choices of their
own (how many examples, which guidance, how strong a penalty) make them on the training folds alone.

What the report calls "after" is therefore a cross-fitted estimate: every held-out label is scored by an
alignment fitted without it. The aligned metric written to DIR is the kept steps refitted on all labels;
when no step is kept, only the report is written.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragmetrics.alignment.aligned_file import _aligned_entry, _drop_aligned, _write_aligned
from ragmetrics.alignment.aligner import EXAMPLE_COUNTS as EXAMPLE_COUNTS
from ragmetrics.alignment.aligner import GUIDANCE_CANDIDATES as GUIDANCE_CANDIDATES
from ragmetrics.alignment.aligner import LLM_STEPS, LOCAL_STEPS, State, StepName, _Aligner
from ragmetrics.alignment.crossfit import CURVE_SHARES as CURVE_SHARES
from ragmetrics.alignment.crossfit import _curve, _figures, _fit_steps, _HeldOut, _refit, _usable
from ragmetrics.alignment.figures import STATISTICS, confusion
from ragmetrics.alignment.labelled import join_labels, labels_sha256
from ragmetrics.alignment.outcome import _describe_final, _verdict, disagreements
from ragmetrics.alignment.outcome import dumps as dumps
from ragmetrics.alignment.plan import AlignmentPlan, plan_alignment
from ragmetrics.alignment.report import AlignmentReport
from ragmetrics.alignment.scoring import Scorer
from ragmetrics.errors import ConfigError
from ragmetrics.judge.aligned.artifact import FILENAME
from ragmetrics.judge.aligned.prompt_edit import EditedLibrary, PromptEdit
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.registry import resolve_judge_metric, spec
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.trust.labels import HumanLabels, load_labels

__all__ = ["LLM_STEPS", "LOCAL_STEPS", "AlignmentPlan", "align_judge", "plan_alignment"]


def _prompt_names(metric: str) -> tuple[str, ...]:
    metric_spec = spec(metric)
    return (f"rubric:{metric_spec.name}",) if metric_spec.plan == "rubric" else metric_spec.prompts


def _as_samples(samples: Sequence[RagSample | dict[str, Any]]) -> list[RagSample]:
    return [s if isinstance(s, RagSample) else RagSample.model_validate(s) for s in samples]


def align_judge(
    samples: Sequence[RagSample | dict[str, Any]],
    labels: HumanLabels | str | Path,
    metric: str,
    *,
    judge: JudgeSettings | None = None,
    out_dir: str | Path | None = None,
    run: str | None = None,
    folds: int = 5,
    seed: int = 0,
    statistic: str | None = None,
    threshold: float = 0.5,
    steps: Sequence[str] | None = None,
    budget: int | None = None,
    scale: float | None = None,
    say: Any = None,
) -> AlignmentReport:
    """Align `metric` of the judge `judge` describes to `labels` of `samples` (module doc); write the aligned
    metric (when a step was kept) and the report (always) to `out_dir`. `statistic` decides which steps are
    kept (default: balanced accuracy)."""
    started = time.perf_counter()
    settings = judge or JudgeSettings(backend="local")
    metric, statistic = _checked_choices(metric, statistic or "balanced_accuracy", folds)
    human = labels if isinstance(labels, HumanLabels) else load_labels(labels, scale=scale)
    data = join_labels(_as_samples(samples), human, metric, run=run, folds=folds)
    from ragmetrics.judge.select import resolve_backend

    backend, _ = resolve_backend(settings)
    chosen_steps = _chosen_steps(metric, backend, steps)
    build = _judge_builder(settings, backend, metric)
    instructions = _instructions(metric, build(None))
    scorer = Scorer(metric, build, budget=budget)
    aligner = _Aligner(data, metric, scorer, backend=backend, statistic=statistic, threshold=threshold, folds=folds,
                       seed=seed, make_judge=build, instructions=instructions)  # fmt: skip
    say = say or (lambda _msg: None)
    everyone = list(range(len(data.samples)))
    say(f"scoring {len(everyone)} labelled samples with the judge as it is")
    baseline = scorer.score(data.samples)
    excluded, usable = _usable(data, baseline, threshold)
    held = _HeldOut.of(aligner, usable, folds)
    before_scores = held.pooled([State() for _ in range(folds)])
    states, reports, kept = _fit_steps(aligner, held, chosen_steps, statistic, threshold, seed, say)
    after_scores = held.pooled(states)
    ok = np.isfinite(before_scores) & np.isfinite(after_scores)
    figures = _figures(data, before_scores[ok], after_scores[ok], held.y[ok], threshold, seed)
    curve, curve_note = _curve(
        aligner, chosen_steps, states, held.trains, held.tests, held.order, held.y, seed
    )
    final = _refit(aligner, kept, usable)
    info = build(None).info()
    report = AlignmentReport(
        metric=metric, judge={"backend": backend, "model": info.model, "embedding_model": info.embedding_model},
        labels={"source": data.source, "sha256": labels_sha256(data.source), "count": len(data.samples),
                "kind": data.kind, "run": data.run},
        statistic=statistic, threshold=threshold, folds=folds, seed=seed, n=int(ok.sum()), excluded=excluded,
        steps=reports, kept=list(kept), figures=figures,
        confusion_before=confusion(before_scores[ok], held.y[ok], threshold),
        confusion_after=confusion(after_scores[ok], held.y[ok], threshold),
        curve=curve, curve_note=curve_note, calls=scorer.calls, budget=budget, usage=scorer.usage.model_dump(),
        seconds=0.0,
    )  # fmt: skip
    _describe_final(report, final, instructions)
    if kept and out_dir is not None:
        report.written = str(
            _write_aligned(Path(out_dir), _aligned_entry(report, final, kept, data, backend, info))
        )
    report.disagreements = disagreements(
        data, held.order, before_scores, after_scores if kept else None, dict(zip(everyone, baseline, strict=True)),
        threshold,
    )  # fmt: skip
    report.verdict = _verdict(report)
    if not kept and out_dir is not None and _drop_aligned(Path(out_dir), metric):
        report.verdict += f"; the earlier alignment of {metric} in {Path(out_dir) / FILENAME} was removed"
    report.seconds = round(time.perf_counter() - started, 2)
    if out_dir is not None:
        from ragmetrics.alignment.render import write_reports

        write_reports(Path(out_dir), report, final.edit, metric)
    return report


def _checked_choices(metric: str, statistic: str, folds: int) -> tuple[str, str]:
    """The metric's registered name and the deciding statistic, checked."""
    canonical = resolve_judge_metric(metric)
    if canonical is None:
        spec(metric)  # raises with the known names
        raise ConfigError(f"unknown judge metric {metric!r}")
    if statistic not in STATISTICS:
        raise ConfigError(f"--statistic must be one of {', '.join(STATISTICS)}, not {statistic!r}")
    if folds < 2:
        raise ConfigError(f"--folds must be at least 2, not {folds}")
    return canonical, statistic


def _chosen_steps(metric: str, backend: str, steps: Sequence[str] | None) -> list[StepName]:
    """The steps to try, in order: those the backend takes (a deterministic metric: calibration only), or the
    asked ones among them."""
    allowed: tuple[StepName, ...] = LOCAL_STEPS if backend == "local" else LLM_STEPS
    if spec(metric).plan == "deterministic":
        allowed = ("calibration",)
    chosen: list[StepName] = [s for s in allowed if steps is None or s in steps]
    unknown = [s for s in (steps or []) if s not in ("few_shot", "instructions", "head", "calibration")]
    if unknown:
        raise ConfigError(f"unknown alignment step {unknown[0]!r}: few_shot, instructions, head, calibration")
    if steps is not None and not chosen:
        raise ConfigError(
            f"none of the steps {list(steps)} applies to the {backend} judge (it takes {', '.join(allowed)})"
        )
    return chosen


def _judge_builder(settings: JudgeSettings, backend: str, metric: str) -> Any:
    """A judge per prompt edit: the judge as it is (one, shared) for no edit or the local backend, else an LLM
    judge whose metric prompts carry the edit."""
    from ragmetrics.judge.select import make_judge

    base_settings = settings.model_copy(update={"aligned": None})
    shared: dict[str, Judge] = {}

    def build(edit: PromptEdit | None) -> Judge:
        if backend == "local" or edit is None or edit.empty():
            if "" not in shared:
                shared[""] = make_judge(base_settings)
            return shared[""]
        from ragmetrics.judge.backends.llm import LLMJudge
        from ragmetrics.judge.prompts import default_library

        library = EditedLibrary(default_library(), {p: edit for p in _prompt_names(metric)})
        return LLMJudge(base_settings, prompts=library)

    return build


def _instructions(metric: str, judge: Judge) -> str:
    prompts = getattr(judge, "prompts", None)
    if prompts is None:
        return spec(metric).description
    metric_spec = spec(metric)
    if metric_spec.plan == "rubric":
        return str(judge.rubric_prompt(metric_spec.rubric).system)  # type: ignore[attr-defined]
    return str(prompts.get(metric_spec.prompts[0]).system)
