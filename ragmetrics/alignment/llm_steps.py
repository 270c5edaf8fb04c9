"""The alignment steps that change what an LLM judge is asked: few-shot examples and refined guidance.

Examples (`choose_examples`) come from the training labels only: both sides of the line in equal numbers
where the labels allow, the judge's disagreements with people first (largest error first), and within each
tier the sample least like those already chosen (Jaccard distance of content words), so the examples spread
over the data instead of repeating one case. Guidance candidates (`propose_guidance`) are written by the
judge's own model from up to `MAX_SHOWN` training disagreements (`prompts/align_refine.yaml`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics._async import run_sync
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.text.signals import content_units
from ragmetrics.judge.verdicts import InstructionEdits

__all__ = ["MAX_SHOWN", "REFINE_PROMPT", "choose_examples", "propose_guidance"]

REFINE_PROMPT = "align_refine"
MAX_SHOWN = 8
_SHOWN_CHARS = 1500


def _units(sample: RagSample) -> frozenset[str]:
    return content_units(f"{sample.question} {sample.answer or ''}")


def _distance(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def choose_examples(
    candidates: Sequence[int],
    samples: Sequence[RagSample],
    predictions: NDArray[np.float64],
    labels: NDArray[np.float64],
    k: int,
    threshold: float = 0.5,
) -> list[int]:
    """`k` sample indices from `candidates` (module doc); `predictions` are the judge's current scores (NaN:
    failed, never chosen)."""
    units = {i: _units(samples[i]) for i in candidates}
    chosen: list[int] = []
    sides = [
        [i for i in candidates if labels[i] >= threshold],
        [i for i in candidates if labels[i] < threshold],
    ]
    quota = [k - k // 2, k // 2] if len(sides[0]) >= len(sides[1]) else [k // 2, k - k // 2]
    for side, want in zip(sides, quota, strict=True):
        usable = [i for i in side if np.isfinite(predictions[i])]
        wrong = sorted(
            (i for i in usable if (predictions[i] >= threshold) != (labels[i] >= threshold)),
            key=lambda i: (-abs(predictions[i] - labels[i]), i),
        )
        wrong_set = set(wrong)
        right = [i for i in usable if i not in wrong_set]
        picked: list[int] = []
        for tier in (wrong, right):
            pool = list(tier)
            while pool and len(picked) < want:
                if not picked and not chosen:
                    best = pool[0]
                else:
                    best = max(
                        pool,
                        key=lambda i: (
                            min(_distance(units[i], units[j]) for j in [*chosen, *picked]),
                            -pool.index(i),
                        ),
                    )
                picked.append(best)
                pool.remove(best)
        chosen.extend(picked)
    return chosen


def _describe(sample: RagSample, reads: Sequence[str], judge_score: float, reason: str, label: float) -> str:
    lines = []
    for name in reads:
        if name == "contexts":
            for n, chunk in enumerate(sample.context_list, start=1):
                lines.append(f"Chunk {n}: {chunk[:_SHOWN_CHARS]}")
        else:
            value = getattr(sample, name, None)
            if isinstance(value, str):
                lines.append(f"{name.capitalize()}: {value[:_SHOWN_CHARS]}")
    lines.append(
        f"Judge: {'yes' if judge_score >= 0.5 else 'no'} (score {judge_score:.2f}){f'; reason: {reason}' if reason else ''}"
    )
    lines.append(f"People: {'yes' if label >= 0.5 else 'no'} (label {label:g})")
    return "\n".join(lines)


def propose_guidance(
    judge: Judge,
    instructions: str,
    guidance: str | None,
    shown: Sequence[tuple[RagSample, float, str, float]],
    reads: Sequence[str],
    candidates: int,
) -> list[tuple[str, str]]:
    """(guidance, reason) candidates from the judge's model for the disagreements `shown` (sample, judge
    score, judge reason, label); a JudgeError when the model gives no valid answer."""
    verdict = getattr(judge, "verdict", None)
    if verdict is None:
        raise TypeError("instruction refinement needs an LLM judge")
    values: dict[str, Any] = {
        "instructions": instructions,
        "guidance": guidance or "(none yet)",
        "candidates": candidates,
        "disagreements": [_describe(s, reads, p, r, y) for s, p, r, y in shown[:MAX_SHOWN]],
    }

    async def ask() -> Any:
        try:
            answer, _ = await verdict(REFINE_PROMPT, values)
            return answer
        finally:
            await judge.aclose()

    answer = run_sync(ask())
    assert isinstance(answer, InstructionEdits)
    return [(c.guidance.strip(), c.reason.strip()) for c in answer.candidates]
