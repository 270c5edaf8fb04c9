"""A judge with aligned metrics: the team's judge, asked through aligned prompts, its scores mapped by the
fitted head and calibration (`judge: {aligned: DIR}`, or `AlignedJudge(judge, load_aligned(DIR))`).

Every other metric passes through untouched. An aligned score keeps the judge's verdicts and says in its
reason what the alignment did to the number ("judge score 0.67 -> aligned 0.31"); `info()` records each
aligned metric's summary in the judge's settings and its version among the prompt versions, so the report's
judge section, the history's change marks and comparisons with an unaligned night all show it.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.judge.aligned.artifact import AlignedMetric, AlignedSet
from ragmetrics.judge.aligned.evidence import evidence_features
from ragmetrics.judge.base import Judge, MetricOutcome, RagSample
from ragmetrics.schema import JudgeInfo

__all__ = ["AlignedJudge", "aligned_score", "check_backend"]


def aligned_score(entry: AlignedMetric, sample: RagSample, outcome: MetricOutcome) -> float:
    """The aligned value of a judged sample: head (local judge), then calibration."""
    value = outcome.value
    if entry.head is not None:
        row = evidence_features(sample, value, outcome.detail.verdicts)
        value = float(entry.head.probability([row])[0])
    if entry.calibration is not None:
        value = float(entry.calibration.apply([value])[0])
    return min(1.0, max(0.0, value))


def check_backend(aligned: AlignedSet, backend: str, source: str) -> None:
    for name, entry in aligned.metrics.items():
        if entry.backend != backend:
            raise ConfigError(
                f"judge.aligned: {source}: {name} was aligned for the {entry.backend} judge, but this judge is "
                f"{backend}: a head or calibration fitted on one judge's scores means nothing for another's; "
                "align again with this judge"
            )


class AlignedJudge:
    """Wraps any `Judge` (module doc); attributes it does not define are the wrapped judge's."""

    def __init__(self, inner: Judge, aligned: AlignedSet, source: str = "aligned") -> None:
        check_backend(aligned, inner.backend, source)
        if inner.backend == "local":
            used = inner.info().settings.get("local_model")
            for name, entry in aligned.metrics.items():
                if (
                    entry.head is not None
                    and entry.embedder is not None
                    and used is not None
                    and entry.embedder != used
                ):
                    raise ConfigError(
                        f"judge.aligned: {source}: {name}'s head was fitted with local_model {entry.embedder!r}, "
                        f"this judge uses {used!r}: its cosines are on another model's scale; set local_model "
                        f"{entry.embedder!r} or align again"
                    )
        self.inner = inner
        self.aligned = aligned
        self.source = source

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def backend(self) -> str:
        return self.inner.backend

    def supported_metrics(self) -> tuple[str, ...]:
        return self.inner.supported_metrics()

    async def score(self, metric: str, sample: RagSample) -> MetricOutcome:
        outcome = await self.inner.score(metric, sample)
        entry = self.aligned.metrics.get(metric)
        if entry is None or (entry.head is None and entry.calibration is None):
            return outcome
        value = aligned_score(entry, sample, outcome)
        reason = (outcome.detail.reason or "").rstrip()
        note = f"judge score {outcome.value:.3f} -> aligned {value:.3f} ({', '.join(entry.steps)})"
        detail = outcome.detail.model_copy(update={"reason": f"{reason}; {note}" if reason else note})
        return MetricOutcome(value=value, detail=detail)

    def info(self) -> JudgeInfo:
        info = self.inner.info()
        versions = dict(info.prompt_versions)
        aligned: dict[str, Any] = {}
        for name, entry in sorted(self.aligned.metrics.items()):
            versions[f"aligned:{name}"] = entry.version()
            aligned[name] = {
                "summary": entry.summary(),
                "steps": list(entry.steps),
                "labels": entry.labels.count,
            }
        settings = {**info.settings, "aligned": aligned, "aligned_source": self.source}
        return info.model_copy(update={"prompt_versions": versions, "settings": settings})

    async def aclose(self) -> None:
        await self.inner.aclose()
