"""The alignment steps as one fold sees them: what a fold's alignment holds (`State`: a prompt edit, an evidence
head, a calibration), the labelled samples scored under it, and each step fitted on training positions
(`_Aligner.fit`: few-shot examples, guidance, the evidence head, calibration).

Why its own module: the cross-fitting (`crossfit`) calls these fits per fold and for the final refit; the fits
themselves do not know about folds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ragmetrics.alignment.figures import figure
from ragmetrics.alignment.folds import stratified_folds
from ragmetrics.alignment.labelled import LabelledSamples
from ragmetrics.alignment.llm_steps import choose_examples, propose_guidance
from ragmetrics.alignment.scoring import BudgetExceeded, Judged, Scorer
from ragmetrics.judge.aligned.calibration import Calibration, fit_cut, fit_isotonic
from ragmetrics.judge.aligned.evidence import evidence_features
from ragmetrics.judge.aligned.head import EvidenceHead, fit_head
from ragmetrics.judge.aligned.prompt_edit import PromptEdit, example_of
from ragmetrics.judge.registry import spec

__all__ = ["EXAMPLE_COUNTS", "GUIDANCE_CANDIDATES", "LLM_STEPS", "LOCAL_STEPS", "State", "StepName"]


StepName = Literal["few_shot", "instructions", "head", "calibration"]
LLM_STEPS: tuple[StepName, ...] = ("few_shot", "instructions", "calibration")
LOCAL_STEPS: tuple[StepName, ...] = ("head", "calibration")
EXAMPLE_COUNTS = (2, 4, 6)
GUIDANCE_CANDIDATES = 3


@dataclass(frozen=True)
class State:
    edit: PromptEdit | None = None
    head: EvidenceHead | None = None
    calibration: Calibration | None = None


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
