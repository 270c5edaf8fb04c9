"""A night judged by a cascade (`judge.cascade`): the labels read, split, and each metric sent up the cascade.

The labels (`judge.labels`) are split by sample id, deterministically (a hash, so a sample stays on its side
night after night and a sample labelled for every run is never calibrated in one run and held out in
another): with `simulated_annotators`, first a pool of labelled examples the annotators are shown (judged like
every sample, but neither calibrating nor held out: an annotator may have seen its label), then the held-out
share, the rest calibrates. Each judge of the cascade
is one session (its own cache keys: its endpoint and model), kept open across metrics and runs so every item
is asked once per view; a rerun finds every verdict in the cache and sends nothing.

The figures (coverage, guaranteed and reached agreement, requests per judge against the strongest judge
alone) go into each result's metadata (`cascade:<metric>`) and one note per metric.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import InputError
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.cache import VerdictCache
from ragmetrics.judge.cascade.config import check_confidence_source, check_enough_labels
from ragmetrics.judge.cascade.run import CascadeReport, Stage, run_cascade
from ragmetrics.schema import JudgeInfo, RunResult, TokenUsage

if TYPE_CHECKING:
    from ragmetrics.engines.base import Engine
    from ragmetrics.judge.panel_config import PanelMember
    from ragmetrics.nightly.config import JudgeConfig, NightlyConfig
    from ragmetrics.trust.labels import HumanLabels

__all__ = ["judge_cascade", "split_labels"]

Item = tuple[str, str]


def _order(sample_id: str) -> str:
    return hashlib.sha256(sample_id.encode()).hexdigest()


def split_labels(
    sample_ids: Sequence[str], held_out: float, examples: int
) -> tuple[list[str], set[str], set[str]]:
    """(example pool, held-out ids, calibration ids) of the labelled sample ids, by the hash of each id."""
    ordered = sorted(set(sample_ids), key=_order)
    pool, rest = ordered[:examples], ordered[examples:]
    cut = int(len(rest) * held_out)
    return pool, set(rest[:cut]), set(rest[cut:])


@dataclass
class _Judge:
    """One judge of the cascade: its views' sessions and the requests it was sent."""

    name: str
    sessions: list[_Session]
    asked: int = 0
    infos: list[JudgeInfo] = field(default_factory=list)

    def score(self, run: str, samples: Sequence[RagSample], metric: str) -> list[RunResult]:
        self.asked += len(samples) * len(self.sessions)
        return [s.score(samples, [metric], name=run, progress=False) for s in self.sessions]


def _labels(judge: JudgeConfig) -> HumanLabels:
    from ragmetrics.trust import load_labels

    assert judge.labels is not None
    return load_labels(judge.labels, scale=judge.label_scale)


class _Session:
    """One judge scoring in this process: a cascade's member or one simulated annotator."""

    def __init__(self, judge: Judge) -> None:
        self._judge = judge

    def score(
        self, samples: Sequence[RagSample], metrics: Sequence[str], *, name: str, progress: bool
    ) -> RunResult:
        from ragmetrics.judge.evaluate import evaluate_rag

        return evaluate_rag(samples, metrics, self._judge, name=name, progress=progress)

    def info(self) -> JudgeInfo:
        return self._judge.info()

    def close(self) -> None:
        from ragmetrics._async import run_sync

        run_sync(self._judge.aclose())


def _prompt_names(metric: str) -> tuple[str, ...]:
    from ragmetrics.judge.registry import resolve_judge_metric, spec

    if resolve_judge_metric(metric) is None or spec(metric).plan == "rubric":
        return (f"rubric:{metric}",)
    return spec(metric).prompts


def _sessions(
    member: PanelMember,
    judge: JudgeConfig,
    cache: VerdictCache | None,
    examples: Mapping[str, list[tuple[RagSample, float]]],
) -> list[_Session]:
    """The member's views: one judge (logprobs), `samples` seeds, or `samples` annotators with their examples.
    Each is cached under the member's identity (endpoint and model), so two members never share a verdict."""
    from ragmetrics.judge.panel import build_member, identity, member_settings

    base = member_settings(member, judge.settings())
    who = identity(base)
    if judge.confidence == "logprobs":
        return [_Session(build_member(base, who, cache))]
    seed = base.seed or 0
    views = [base.model_copy(update={"seed": seed + r}) for r in range(judge.samples)]
    if judge.confidence == "samples":
        return [_Session(build_member(s, who, cache)) for s in views]
    if who["backend"] != "openai":
        raise InputError(
            "simulated annotators are LLM judges shown labelled examples", field="judge.confidence"
        )
    from ragmetrics.judge.aligned.prompt_edit import EditedLibrary, PromptEdit, example_of
    from ragmetrics.judge.backends.llm import LLMJudge
    from ragmetrics.judge.prompts import default_library
    from ragmetrics.judge.registry import spec
    from ragmetrics.judge.rubric import RubricMetric

    rubrics = {m.name: m for m in judge.custom_metrics if isinstance(m, RubricMetric)}
    sessions = []
    for r, settings in enumerate(views):
        edits: dict[str, PromptEdit] = {}
        for metric, pool in examples.items():
            shots = pool[r * judge.shots : (r + 1) * judge.shots]
            reads = tuple(rubrics[metric].reads) if metric in rubrics else spec(metric).required
            edit = PromptEdit(examples=[example_of(s, label, reads) for s, label in shots])
            edits.update({name: edit for name in _prompt_names(metric)})
        library = EditedLibrary(default_library(), edits)
        sessions.append(_Session(LLMJudge(settings, cache=cache, prompts=library, identity=who)))
    return sessions


def judge_cascade(
    config: NightlyConfig,
    plan: Mapping[str, tuple[list[RagSample], list[str]]],
    notes: list[str],
    *,
    engine: Engine | None = None,
) -> tuple[dict[str, RunResult], JudgeInfo | None]:
    """Every run's judge metrics through the cascade; the first judge's info with the cascade's usage."""
    judge_config = config.judge
    assert judge_config is not None and judge_config.cascade is not None and judge_config.labels is not None
    metrics = sorted({m for _, ms in plan.values() for m in ms})
    check_confidence_source(judge_config, metrics, list(judge_config.custom_metrics))
    labels = _labels(judge_config)
    labels.check_metrics(metrics)
    by_metric: dict[str, dict[Item, float]] = {}
    samples_by_id = {s.id: s for samples, _ in plan.values() for s in samples}
    for metric in metrics:
        found: dict[Item, float] = {}
        for run, (samples, run_metrics) in plan.items():
            if metric not in run_metrics:
                continue
            applying = labels.for_metric(metric, run)
            found.update({(run, s.id): applying[s.id].value for s in samples if s.id in applying})
        by_metric[metric] = found
    annotators = judge_config.confidence == "simulated_annotators"
    pool_size = judge_config.samples * judge_config.shots if annotators else 0
    counts = {m: len({sid for _, sid in found}) - pool_size for m, found in by_metric.items()}
    check_enough_labels(counts, judge_config, str(judge_config.labels))
    splits = {
        m: split_labels([sid for _, sid in found], judge_config.held_out, pool_size)
        for m, found in by_metric.items()
    }
    examples = {
        m: [(samples_by_id[sid], next(v for (_, s), v in by_metric[m].items() if s == sid)) for sid in pool]
        for m, (pool, _, _) in splits.items()
    }
    del engine  # the cascade's judges score in this process (each member's identity in its cache keys)
    base = judge_config.settings()
    cache = VerdictCache(base.cache_path, enabled=base.use_cache) if base.cache_path else None
    judges = [
        _Judge(member.label(base.model, base.base_url), _sessions(member, judge_config, cache, examples))
        for member in judge_config.cascade
    ]
    results: dict[str, RunResult] = {}
    try:
        for metric in metrics:
            pool, _, calibrating = splits[metric]
            runs = {run: samples for run, (samples, run_metrics) in plan.items() if metric in run_metrics}
            # the annotators' examples are judged like any item, but neither calibrate nor count as held out
            labelled = {item: v for item, v in by_metric[metric].items() if item[1] not in pool}
            calibration = {item for item in labelled if item[1] in calibrating}
            before = [j.asked for j in judges]
            out, report = run_cascade(
                [Stage(j.name, j.score) for j in judges],
                runs,
                metric,
                labelled,
                calibration,
                target=judge_config.agreement_target,
                delta=judge_config.cascade_delta,
                need_probabilities=judge_config.confidence == "logprobs",
            )
            asked = [j.asked - b for j, b in zip(judges, before, strict=True)]
            notes.append(_note(report, asked, sum(len(v) for v in runs.values()), len(judges[-1].sessions)))
            for run, result in out.items():
                results[run] = result if run not in results else results[run].merge(result)
        infos = [[s.info() for s in j.sessions] for j in judges]
    finally:
        for j in judges:
            for s in j.sessions:
                s.close()
        if cache is not None:
            cache.close()
    info = _info(infos, [j.name for j in judges])
    for result in results.values():
        result.metadata.judge = info
        result.metadata.kind = "judge"
    return results, info


def _note(report: CascadeReport, asked: Sequence[int], items: int, strongest_views: int) -> str:
    coverage = "n/a" if report.coverage is None else f"{report.coverage:.1%}"
    reached = (
        f"{report.held_out_agreement:.3f} on {report.held_out_decided} decided held-out labels"
        if report.held_out_agreement is not None
        else "not measured (no held-out label was decided)"
    )
    per_judge = ", ".join(
        f"{s.judge}: asked about {n} items, {s.decided} decided (threshold "
        f"{'none certified' if s.threshold.threshold is None else f'{s.threshold.threshold:.4g}'})"
        for s, n in zip(report.stages, asked, strict=True)
    )
    alone = items * strongest_views
    return (
        f"cascade {report.metric}: {report.decided} decided, {report.abstained} abstained (never scored), "
        f"{report.failed} failed; coverage {coverage}; agreement with people guaranteed >= {report.target:g} "
        f"with probability >= {1 - report.delta:g} (if the labelled and judged items are exchangeable); "
        f"reached {reached}; {per_judge}; the strongest judge alone: asked about {alone} items"
    )


def _add(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    counts = {k: getattr(a, k) + getattr(b, k) for k in TokenUsage.model_fields if k != "cost_usd"}
    cost = None if a.cost_usd is None and b.cost_usd is None else (a.cost_usd or 0.0) + (b.cost_usd or 0.0)
    return TokenUsage(**counts, cost_usd=cost)


def _info(infos: Sequence[Sequence[JudgeInfo]], names: Sequence[str]) -> JudgeInfo | None:
    """The first judge's info with the whole cascade's usage; each judge's usage in its settings."""
    if not infos or not infos[0]:
        return None
    total = TokenUsage()
    per_judge: dict[str, Any] = {}
    for name, views in zip(names, infos, strict=True):
        usage = TokenUsage()
        for view in views:
            usage = _add(usage, view.usage)
        per_judge[name] = usage.model_dump()
        total = _add(total, usage)
    first = infos[0][0]
    return first.model_copy(
        update={"usage": total, "settings": {**first.settings, "cascade_usage": per_judge}}
    )
