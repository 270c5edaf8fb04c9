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

import difflib
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
from numpy.typing import NDArray

from ragmetrics._version import __version__
from ragmetrics.alignment.figures import STATISTICS, confusion, figure, paired_gain
from ragmetrics.alignment.folds import stratified_folds, stratified_subsample
from ragmetrics.alignment.labelled import LabelledSamples, join_labels, labels_sha256
from ragmetrics.alignment.llm_steps import choose_examples, propose_guidance
from ragmetrics.alignment.report import AlignmentReport, CurvePoint, Disagreement, FigureRow, StepReport
from ragmetrics.alignment.scoring import BudgetExceeded, Judged, Scorer
from ragmetrics.errors import FAILURE_CAUSES, ConfigError, FailureCause, InputError, JudgeError
from ragmetrics.judge.aligned.artifact import (
    FILENAME,
    AlignedMetric,
    AlignedSet,
    HeldOutFigure,
    LabelProvenance,
)
from ragmetrics.judge.aligned.calibration import Calibration, fit_cut, fit_isotonic
from ragmetrics.judge.aligned.evidence import evidence_features
from ragmetrics.judge.aligned.head import EvidenceHead, fit_head
from ragmetrics.judge.aligned.prompt_edit import EditedLibrary, PromptEdit, example_of
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.registry import resolve_judge_metric, spec
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.schema import Interval
from ragmetrics.trust.labels import HumanLabels, load_labels

__all__ = ["LLM_STEPS", "LOCAL_STEPS", "AlignmentPlan", "align_judge", "plan_alignment"]

StepName = Literal["few_shot", "instructions", "head", "calibration"]
LLM_STEPS: tuple[StepName, ...] = ("few_shot", "instructions", "calibration")
LOCAL_STEPS: tuple[StepName, ...] = ("head", "calibration")
EXAMPLE_COUNTS = (2, 4, 6)
GUIDANCE_CANDIDATES = 3
CURVE_SHARES = (0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class State:
    edit: PromptEdit | None = None
    head: EvidenceHead | None = None
    calibration: Calibration | None = None


@dataclass(frozen=True)
class AlignmentPlan:
    """The judge calls each step may make at most (`--dry-run` prints it; `--budget` bounds the total)."""

    labels: int
    folds: int
    steps: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.steps.values())

    def lines(self) -> list[str]:
        out = [
            f"{self.labels} labels in {self.folds} folds; judge calls at most (one call = one sample scored):"
        ]
        out += [f"  {name:<13} {calls:>7,}" for name, calls in self.steps.items()]
        out.append(f"  {'total':<13} {self.total:>7,}")
        return out


def _prompt_names(metric: str) -> tuple[str, ...]:
    metric_spec = spec(metric)
    return (f"rubric:{metric_spec.name}",) if metric_spec.plan == "rubric" else metric_spec.prompts


def _reads(metric: str) -> tuple[str, ...]:
    metric_spec = spec(metric)
    if metric_spec.plan == "rubric":
        return tuple(metric_spec.rubric.reads)
    return tuple(f for f in metric_spec.required if f in ("question", "contexts", "answer", "reference"))


class _Aligner:
    def __init__(
        self,
        data: LabelledSamples,
        metric: str,
        scorer: Scorer,
        *,
        backend: str,
        statistic: str,
        threshold: float,
        folds: int,
        seed: int,
        make_judge: Any,
        instructions: str,
    ) -> None:
        self.data, self.metric, self.scorer = data, metric, scorer
        self.backend, self.statistic, self.threshold = backend, statistic, threshold
        self.folds, self.seed, self.make_judge = folds, seed, make_judge
        self.instructions = instructions
        self.samples = data.samples
        self.y = data.labels
        self.fold_of = stratified_folds(self.y.tolist(), folds, seed)
        self.reads = _reads(metric)
        self._rows: dict[tuple[str, int], dict[str, float]] = {}

    def evidence(self, state: State, i: int, j: Judged) -> dict[str, float]:
        """Sample i's evidence features under `state`'s prompt, computed once (the head and the curve refit
        on them many times)."""
        key = ("" if state.edit is None else state.edit.model_dump_json(), i)
        row = self._rows.get(key)
        if row is None:
            assert j.value is not None
            row = self._rows[key] = evidence_features(self.samples[i], j.value, j.verdicts)
        return row

    # -- scores under a state ---------------------------------------------------------------------------
    def judged(self, state: State, idx: Sequence[int]) -> list[Judged]:
        return self.scorer.score([self.samples[i] for i in idx], state.edit)

    def predict(self, state: State, idx: Sequence[int]) -> NDArray[np.float64]:
        out = np.full(len(idx), np.nan)
        for n, (i, j) in enumerate(zip(idx, self.judged(state, idx), strict=True)):
            if j.value is None:
                continue
            value = j.value
            if state.head is not None:
                value = float(state.head.probability([self.evidence(state, i, j)])[0])
            if state.calibration is not None:
                value = float(state.calibration.apply([value])[0])
            out[n] = value
        return out

    def stat(self, scores: NDArray[np.float64], idx: Sequence[int]) -> float:
        ok = np.isfinite(scores)
        if ok.sum() < 2:
            return math.nan
        return (
            figure(
                self.statistic,
                scores[ok],
                self.y[np.asarray(idx)[ok]],
                threshold=self.threshold,
                seed=self.seed,
            ).value
            or math.nan
        )

    # -- steps ------------------------------------------------------------------------------------------
    def fit(self, step: StepName, state: State, train: list[int]) -> tuple[State, str]:
        if step == "calibration":
            scores = self.predict(state, train)
            ok = np.isfinite(scores)
            y = self.y[np.asarray(train)[ok]]
            cal = (
                fit_cut(scores[ok], y, self.threshold)
                if self.data.kind == "binary"
                else fit_isotonic(scores[ok], y)
            )
            return replace(state, calibration=cal), cal.describe()
        if step == "head":
            judged = self.judged(state, train)
            rows, ys = [], []
            for i, j in zip(train, judged, strict=True):
                if j.value is not None:
                    rows.append(self.evidence(state, i, j))
                    ys.append(float(self.y[i]))
            head = fit_head(rows, ys, seed=self.seed)
            return replace(state, head=head, calibration=None), f"penalty {head.penalty:g}"
        if step == "few_shot":
            return self._fit_examples(state, train)
        return self._fit_guidance(state, train)

    def _fit_examples(self, state: State, train: list[int]) -> tuple[State, str]:
        current = dict(zip(train, self.predict(state, train).tolist(), strict=True))
        preds = np.full(len(self.samples), np.nan)
        for i, v in current.items():
            preds[i] = v
        best: tuple[float, int, list[int]] | None = None
        base = state.edit or PromptEdit()
        for k in EXAMPLE_COUNTS:
            if k > len(train) // 2:
                break
            chosen = choose_examples(train, self.samples, preds, self.y, k, self.threshold)
            rest = [i for i in train if i not in set(chosen)]
            edit = PromptEdit(
                guidance=base.guidance,
                examples=[example_of(self.samples[i], float(self.y[i]), self.reads) for i in chosen],
            )
            value = self.stat(self.predict(replace(state, edit=edit), rest), rest)
            if math.isfinite(value) and (best is None or value > best[0]):
                best = (value, k, chosen)
        if best is None:
            return state, "no example set could be scored"
        _, k, chosen = best
        edit = PromptEdit(
            guidance=base.guidance,
            examples=[example_of(self.samples[i], float(self.y[i]), self.reads) for i in chosen],
        )
        return replace(state, edit=edit), f"{k} examples ({', '.join(self.samples[i].id for i in chosen)})"

    def _fit_guidance(self, state: State, train: list[int]) -> tuple[State, str]:
        judged = self.judged(state, train)
        preds = self.predict(state, train)
        wrong = [
            (i, j, float(p))
            for i, j, p in zip(train, judged, preds.tolist(), strict=True)
            if math.isfinite(p) and (p >= self.threshold) != (self.y[i] >= self.threshold)
        ]
        if not wrong:
            return state, "no disagreement on the training labels"
        wrong.sort(key=lambda t: (-abs(t[2] - float(self.y[t[0]])), t[0]))
        shown = [
            (
                self.samples[i],
                p,
                str(next((v.get("reason") for v in j.verdicts if v.get("reason")), "")),
                float(self.y[i]),
            )
            for i, j, p in wrong
        ]
        base = state.edit or PromptEdit()
        left = self.scorer.remaining()
        if left is not None and left < 1:
            raise BudgetExceeded("a guidance request needs 1 judge call, 0 left of the budget")
        proposals = propose_guidance(
            self.make_judge(None), self.instructions, base.guidance, shown, self.reads, GUIDANCE_CANDIDATES
        )
        self.scorer.calls += 1
        scored: list[tuple[float, int, str]] = []
        start = self.stat(preds, train)
        for n, (text, _) in enumerate(proposals):
            guidance = text if not base.guidance else f"{base.guidance}\n{text}"
            edit = PromptEdit(guidance=guidance, examples=list(base.examples))
            value = self.stat(self.predict(replace(state, edit=edit), train), train)
            if math.isfinite(value):
                scored.append((value, -n, guidance))
        if not scored:
            return state, "no candidate could be scored"
        value, _, guidance = max(scored)
        if not value > start:
            return state, f"no candidate beat the training labels' {start:.3f}"
        return replace(state, edit=PromptEdit(guidance=guidance, examples=list(base.examples))), (
            f"candidate scoring {value:.3f} on training labels (was {start:.3f})"
        )


def _est(f: Any) -> Interval:
    return Interval(estimate=f.value, low=f.low, high=f.high)


def plan_alignment(n: int, folds: int, steps: Sequence[str]) -> AlignmentPlan:
    """At most how many judge calls each step makes for `n` labels (every sample scored once per distinct
    prompt; the baseline scores each labelled sample once)."""
    train = n - n // folds
    out: dict[str, int] = {"judge as it is": n}
    for step in steps:
        if step == "few_shot":
            ks = [k for k in EXAMPLE_COUNTS if k <= train // 2] or [EXAMPLE_COUNTS[0]]
            out[step] = folds * (len(ks) * train + n // folds + 1) + len(ks) * n
        elif step == "instructions":
            out[step] = (
                folds * (1 + GUIDANCE_CANDIDATES * train + n // folds + 1) + 1 + GUIDANCE_CANDIDATES * n
            )
        else:
            out[step] = 0
    return AlignmentPlan(labels=n, folds=folds, steps=out)


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
    curve, curve_note = _curve(aligner, chosen_steps, states, held.trains, held.tests, held.order, held.y, seed)
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
        report.written = str(_write_aligned(Path(out_dir), _aligned_entry(report, final, kept, data, backend, info)))
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


def _usable(data: LabelledSamples, baseline: list[Judged], threshold: float) -> tuple[dict[str, str], list[int]]:
    """The labelled samples the judge could not score (id -> cause) and the positions of those it did; stops
    when it failed on most of them, or scored only one side of the labels."""
    everyone = range(len(data.samples))
    excluded = {data.samples[i].id: str(j.failure) for i, j in zip(everyone, baseline, strict=True) if j.value is None}
    usable = [i for i in everyone if data.samples[i].id not in excluded]
    failed = {k: v for k, v in excluded.items() if v != "not applicable"}
    if len(failed) * 2 > len(data.samples):
        first_id, first_cause = next(iter(failed.items()))
        cause = first_cause.split(":", 1)[0]
        raise JudgeError(
            f"the judge could not score {len(failed)} of {len(data.samples)} labelled samples (e.g. {first_id}: "
            f"{first_cause}); nothing to align on: fix the judge and run again (verdicts already given are cached)",
            cause=cast(FailureCause, cause) if cause in FAILURE_CAUSES else "internal_error",
        )
    if len(set((data.labels[usable] >= threshold).tolist())) < 2:
        raise InputError(
            f"the judge scored only one side of the labels ({len(excluded)} labelled samples failed)",
            source=data.source, field="label",
        )  # fmt: skip
    return excluded, usable


@dataclass(frozen=True)
class _HeldOut:
    """The outer folds: each fold's training and held-out positions, the held-out positions in pooled order and
    their labels."""

    aligner: _Aligner
    trains: list[list[int]]
    tests: list[list[int]]
    order: list[int]
    y: NDArray[np.float64]

    @classmethod
    def of(cls, aligner: _Aligner, usable: list[int], folds: int) -> _HeldOut:
        fold_of = aligner.fold_of
        trains = [[i for i in usable if fold_of[i] != f] for f in range(folds)]
        tests = [[i for i in usable if fold_of[i] == f] for f in range(folds)]
        order = [i for f in range(folds) for i in tests[f]]
        return cls(aligner, trains, tests, order, aligner.y[order])

    def pooled(self, per_fold: Sequence[State]) -> NDArray[np.float64]:
        """Every held-out label's score under its own fold's state, in `order`."""
        return np.concatenate([self.aligner.predict(per_fold[f], self.tests[f]) for f in range(len(self.tests))])


def _fit_steps(
    aligner: _Aligner,
    held: _HeldOut,
    chosen_steps: Sequence[StepName],
    statistic: str,
    threshold: float,
    seed: int,
    say: Any,
) -> tuple[list[State], list[StepReport], list[StepName]]:
    """Each step fitted per fold on top of the kept ones, kept when its held-out gain's interval is above 0."""
    states = [State() for _ in held.tests]
    reports: list[StepReport] = []
    kept: list[StepName] = []
    for step in chosen_steps:
        calls_before = aligner.scorer.calls
        try:
            candidates, choices = [], []
            for f, train in enumerate(held.trains):
                state, note = aligner.fit(step, states[f], train)
                candidates.append(state)
                choices.append(f"fold {f + 1}: {note}")
            current, proposed = held.pooled(states), held.pooled(candidates)
        except BudgetExceeded as exc:
            reports.append(StepReport(name=step, kept=False, why=f"over budget: {exc}",
                                      calls=aligner.scorer.calls - calls_before))  # fmt: skip
            continue
        except JudgeError as exc:
            reports.append(StepReport(name=step, kept=False, why=f"the judge failed: {exc.cause}: {exc}",
                                      calls=aligner.scorer.calls - calls_before))  # fmt: skip
            continue
        ok = np.isfinite(current) & np.isfinite(proposed)
        y = held.y[ok]
        gain = paired_gain(statistic, current[ok], proposed[ok], y, threshold=threshold, seed=seed)
        before_f = figure(statistic, current[ok], y, threshold=threshold, seed=seed)
        after_f = figure(statistic, proposed[ok], y, threshold=threshold, seed=seed)
        keep = gain.low is not None and gain.low > 0
        why = _why(statistic, gain, keep)
        reports.append(StepReport(
            name=step, kept=keep, why=why, gain=_est(gain), before=_est(before_f), after=_est(after_f),
            choices=choices, calls=aligner.scorer.calls - calls_before,
        ))  # fmt: skip
        say(f"{step}: {'kept' if keep else 'not kept'} ({why})")
        if keep:
            states = candidates
            kept.append(step)
    return states, reports, kept


def _why(statistic: str, gain: Any, keep: bool) -> str:
    """Why a step was kept or not, from its held-out gain and interval."""
    if gain.value is None:
        return f"{statistic} is undefined on the held-out labels"
    if keep:
        return f"held-out {statistic} {gain.value:+.3f}, 95 % CI [{gain.low:+.3f}, {gain.high:+.3f}] above 0"
    if gain.high is not None and gain.high < 0:
        return (f"held-out {statistic} {gain.value:+.3f}, 95 % CI [{gain.low:+.3f}, {gain.high:+.3f}] below 0: "
                "it made the judge worse")  # fmt: skip
    if gain.low is None:
        return f"held-out {statistic} {gain.value:+.3f}, too few labels for an interval"
    return f"held-out {statistic} {gain.value:+.3f}, 95 % CI [{gain.low:+.3f}, {gain.high:+.3f}] covers 0: within the noise"


def _figures(
    data: LabelledSamples,
    before: NDArray[np.float64],
    after: NDArray[np.float64],
    y: NDArray[np.float64],
    threshold: float,
    seed: int,
) -> list[FigureRow]:
    """Every statistic on the held-out labels, before and after (Kendall's tau only for graded labels)."""
    figures = []
    for name in STATISTICS:
        if name == "kendall" and data.kind == "binary":
            continue
        b = figure(name, before, y, threshold=threshold, seed=seed)
        a = figure(name, after, y, threshold=threshold, seed=seed)
        figures.append(FigureRow(statistic=name, before=_est(b), after=_est(a)))
    return figures


def _refit(aligner: _Aligner, kept: Sequence[StepName], usable: list[int]) -> State:
    """The kept steps refitted on every usable label: what the aligned metric applies."""
    final = State()
    for step in kept:
        try:
            final, _note = aligner.fit(step, final, usable)
        except BudgetExceeded as exc:
            raise ConfigError(f"the budget ran out refitting the kept step {step} on all labels: {exc}") from None
    return final


def _describe_final(report: AlignmentReport, final: State, instructions: str) -> None:
    """What the refitted alignment holds, in the report: examples, guidance and its diff, head, calibration."""
    if final.edit is not None:
        report.examples = [{"sample_id": e.sample_id, "label": e.label} for e in final.edit.examples]
        report.guidance_after = final.edit.guidance
        if final.edit.guidance:
            report.instruction_diff = "\n".join(difflib.unified_diff(
                instructions.splitlines(), (instructions.rstrip("\n") + "\n" + final.edit.guidance).splitlines(),
                "instructions as shipped", "aligned", lineterm="",
            ))  # fmt: skip
    if final.head is not None:
        report.head_weights = final.head.weights()
        report.head_penalty = final.head.penalty
    if final.calibration is not None:
        report.calibration = final.calibration.describe()


def _aligned_entry(
    report: AlignmentReport,
    final: State,
    kept: Sequence[StepName],
    data: LabelledSamples,
    backend: Literal["openai", "local"],
    info: Any,
) -> AlignedMetric:
    """The aligned metric to write: the refitted steps, where the labels came from, the held-out figure."""
    decided = next(r for r in report.figures if r.statistic == report.statistic)
    return AlignedMetric(
        metric=report.metric, backend=backend, model=info.model, embedder=_embedder(backend, info),
        steps=list(kept), prompt_edit=final.edit, head=final.head, calibration=final.calibration,
        labels=LabelProvenance(source=data.source, sha256=report.labels["sha256"], count=len(data.samples),
                               kind=data.kind, folds=report.folds, seed=report.seed,
                               runs=[data.run] if data.run else []),
        heldout=HeldOutFigure(statistic=report.statistic, n=report.n, before=decided.before.estimate,
                              before_low=decided.before.low, before_high=decided.before.high,
                              after=decided.after.estimate, after_low=decided.after.low,
                              after_high=decided.after.high),
        created_at=datetime.now(UTC), ragmetrics_version=__version__,
    )  # fmt: skip


def disagreements(
    data: LabelledSamples,
    order: Sequence[int],
    before: NDArray[np.float64],
    after: NDArray[np.float64] | None,
    judged: dict[int, Judged],
    threshold: float,
) -> list[Disagreement]:
    """The held-out samples where the judge (aligned, when a step was kept; else as it is) falls on the other side
    of `threshold` from people's label, worst first (largest distance from the label), with the judge's reasons."""
    used = after if after is not None else before
    found: list[tuple[float, Disagreement]] = []
    for position, i in enumerate(order):
        score, label = float(used[position]), float(data.labels[i])
        if not np.isfinite(score) or (score >= threshold) == (label >= threshold):
            continue
        sample = data.samples[i]
        answer = sample.answer if sample.answer is None else sample.answer[:300]
        found.append((abs(score - label), Disagreement(
            sample_id=sample.id, question=sample.question, answer=answer, label=label,
            judge=round(float(before[position]), 4),
            aligned=None if after is None else round(float(after[position]), 4),
            reason=_reasons(judged[i].verdicts),
        )))  # fmt: skip
    found.sort(key=lambda item: (-item[0], item[1].sample_id))
    return [d for _, d in found]


def _reasons(verdicts: Sequence[dict[str, object]]) -> str:
    """The judge's verdicts as one line: each statement (or question) with its verdict and reason."""
    parts = []
    for v in verdicts:
        what = next((str(v[k]) for k in ("statement", "claim", "question", "item") if v.get(k)), "")
        verdict = v.get("verdict", v.get("score"))
        reason = str(v.get("reason") or "").strip()
        parts.append(" ".join(p for p in (f"{what[:120]!r}" if what else "", f"-> {verdict}" if verdict is not None else "",
                                          f"({reason[:200]})" if reason else "") if p))  # fmt: skip
    return "; ".join(parts)[:600]


def _instructions(metric: str, judge: Judge) -> str:
    prompts = getattr(judge, "prompts", None)
    if prompts is None:
        return spec(metric).description
    metric_spec = spec(metric)
    if metric_spec.plan == "rubric":
        return str(judge.rubric_prompt(metric_spec.rubric).system)  # type: ignore[attr-defined]
    return str(prompts.get(metric_spec.prompts[0]).system)


def _write_aligned(out_dir: Path, entry: AlignedMetric) -> Path:
    """Add (or replace) `entry` in DIR/aligned.json, keeping other metrics' entries; atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / FILENAME
    metrics = _existing(path)
    others = sorted({e.backend for name, e in metrics.items() if name != entry.metric} - {entry.backend})
    if others:
        raise ConfigError(
            f"{path} holds metrics aligned for the {others[0]} judge; a folder serves one judge "
            f"(judge.aligned): write this {entry.backend} alignment to another folder"
        )
    metrics[entry.metric] = entry
    text = AlignedSet(metrics=metrics).model_dump_json(indent=2)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _embedder(backend: str, info: Any) -> str | None:
    """What the fitted numbers are tied to besides the backend: the local judge's model choice (its cosines
    are on that model's scale), or the LLM judge's embedding model."""
    if backend == "local":
        return str(info.settings.get("local_model", info.embedding_model))
    return str(info.embedding_model) if info.embedding_model else None


def _existing(path: Path) -> dict[str, AlignedMetric]:
    if not path.exists():
        return {}
    from ragmetrics.judge.aligned.artifact import load_aligned

    return dict(load_aligned(path).metrics)


def _drop_aligned(out_dir: Path, metric: str) -> bool:
    """Remove an earlier alignment of `metric` from DIR/aligned.json (this one kept no step, so the earlier
    one no longer stands); True when there was one."""
    path = out_dir / FILENAME
    metrics = _existing(path)
    if metric not in metrics:
        return False
    del metrics[metric]
    if metrics:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(AlignedSet(metrics=metrics).model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
    else:
        path.unlink()
    return True


def _curve(
    aligner: _Aligner,
    steps: Sequence[StepName],
    states: Sequence[State],
    trains: Sequence[list[int]],
    tests: Sequence[list[int]],
    order: Sequence[int],
    y_order: NDArray[np.float64],
    seed: int,
) -> tuple[list[CurvePoint], str]:
    """Held-out agreement of the refit steps (head, calibration) fitted on a share of each training fold."""
    cheap = [s for s in steps if s in ("head", "calibration")]
    if not cheap:
        return [], "no learning curve: the steps tried all ask the judge again (few-shot, guidance)"
    points: list[CurvePoint] = []
    pooled_at: dict[float, NDArray[np.float64]] = {}
    for share in CURVE_SHARES:
        preds = []
        sizes = []
        for f, (train, test) in enumerate(zip(trains, tests, strict=True)):
            sub = (
                stratified_subsample(train, aligner.y.tolist(), share, seed + f) if share < 1 else list(train)
            )
            sizes.append(len(sub))
            start = State(edit=states[f].edit)
            try:
                for step in cheap:
                    start, _ = aligner.fit(step, start, sub)
            except (ValueError, BudgetExceeded):
                pass
            preds.append(aligner.predict(start, test))
        pooled = np.concatenate(preds)
        pooled_at[share] = pooled
        ok = np.isfinite(pooled)
        f_ = figure(aligner.statistic, pooled[ok], y_order[ok], threshold=aligner.threshold, seed=seed)
        points.append(CurvePoint(share=share, labels=round(float(np.mean(sizes))), value=_est(f_)))
    half, full = pooled_at[0.5], pooled_at[1.0]
    ok = np.isfinite(half) & np.isfinite(full)
    gain = paired_gain(
        aligner.statistic, half[ok], full[ok], y_order[ok], threshold=aligner.threshold, seed=seed
    )
    steps_text = " + ".join(cheap)
    if gain.value is None:
        note = f"learning curve of {steps_text}: undefined on these labels"
    elif gain.low is not None and gain.low > 0:
        note = (f"learning curve of {steps_text}: still rising from half to all training labels ({gain.value:+.3f}, "
                f"CI [{gain.low:+.3f}, {gain.high:+.3f}]): more labels would likely help")  # fmt: skip
    elif gain.value > 0.005:
        note = (f"learning curve of {steps_text}: {gain.value:+.3f} from half to all training labels, within the "
                "noise: more labels may help a little")  # fmt: skip
    else:
        note = (f"learning curve of {steps_text}: flat from half to all training labels ({gain.value:+.3f}): more "
                "labels of this kind are unlikely to help")  # fmt: skip
    return points, note


def _verdict(report: AlignmentReport) -> str:
    row = next(r for r in report.figures if r.statistic == report.statistic)

    def fmt(e: Interval) -> str:
        if e.estimate is None:
            return "n/a"
        return f"{e.estimate:.3f}" + (f" [{e.low:.3f}, {e.high:.3f}]" if e.low is not None else "")

    if not report.kept:
        return (f"{report.metric}: no step beat the judge as it is on held-out labels; nothing aligned "
                f"(held-out {report.statistic} {fmt(row.before)}, {report.n} labels)")  # fmt: skip
    return (f"{report.metric}: aligned ({', '.join(report.kept)}); held-out {report.statistic} {fmt(row.before)} -> "
            f"{fmt(row.after)} on {report.n} labels")  # fmt: skip


def dumps(report: AlignmentReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False)
