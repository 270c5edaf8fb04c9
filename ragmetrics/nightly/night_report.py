"""The night's report: the compared runs with their human labels, and what the night was (its config as
run, versions, dataset and qrels provenance, failures, timings and the work it spent).
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from importlib import metadata as importlib_metadata
from typing import TYPE_CHECKING, Any

from ragmetrics.judge.conversation import conversation_clusters
from ragmetrics.nightly.answers import TargetCalls
from ragmetrics.nightly.compare_night import compare_runs
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.night_state import Night, Scored, timed
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.nightly.trust_night import attach_human_labels
from ragmetrics.schema import (
    DatasetSummary,
    JudgeInfo,
    NightlyRun,
    NightWork,
    QrelsProvenance,
    Report,
    RetrieverSeconds,
    RunResult,
    SampleText,
    WorkFigures,
)

if TYPE_CHECKING:
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrievers import RetrieverTiming
    from ragmetrics.trust.labels import HumanLabels


def night_report(
    night: Night, dataset: QADataset, ordered: list[RunResult], scored: Scored, calls: TargetCalls
) -> tuple[Report, HumanLabels | None]:
    """The compared runs as the night's report, with its human labels attached and what the night was."""
    config = night.config
    with timed(night.timings, "compare"):
        report = compare_runs(config, ordered, night.notes, conversation_clusters(dataset.samples))
    with timed(night.timings, "trust"):
        labels = attach_human_labels(config, {r.name: r for r in report.runs}, report, dataset)
    report.metadata.config = config_snapshot(config)
    report.metadata.dataset_fingerprint = dataset.fingerprint
    report.metadata.truth_fingerprint = dataset.truth_fingerprint or None
    report.metadata.versions = versions()
    report.metadata.notes = [*report.metadata.notes, *night.notes]
    report.metadata.nightly = NightlyRun(
        name=config.name,
        dataset=DatasetSummary.model_validate(
            {**dataset.summary(), "qrels": _provenance(config, dataset, [r.name for r in ordered])}
        ),
        judge=scored.judge_info,
        failures={r.name: _failure_counts(r) for r in ordered},
        samples={
            s.id: SampleText(
                question=s.question,
                answer=s.answer,
                reference=s.reference,
                turn=s.turn,
                tool_calls=None if s.tool_calls is None else [c.model_dump() for c in s.tool_calls],
            )
            for s in dataset.samples
        },
        timings_s=night.timings,
        work=_actual_work(scored.work_estimate, calls, scored.judge_info, night.timings, night.retrieved),
        adaptive=scored.adaptive,
        retrievers=_retriever_seconds(night.retrieved),
    )
    return report, labels


def check_on_source_qrels(
    night: Night, dataset: QADataset, runs: dict[str, Run | None], report: Report
) -> None:
    """On pooled qrels, the retrieval runs compared again on source-only qrels (`nightly.source_only`), kept with
    the qrels' provenance so every verdict line can say whether the two agree."""
    from ragmetrics.nightly.source_only import source_only_check

    provenance = report.metadata.nightly.dataset.qrels if report.metadata.nightly is not None else None
    if provenance is not None:
        provenance.source_only = source_only_check(night.config, dataset, runs, report)


def _retriever_seconds(retrieved: Mapping[str, RetrieverTiming]) -> dict[str, RetrieverSeconds]:
    return {
        name: RetrieverSeconds(
            index_s=round(t.index_s, 6),
            search_s={q: round(v, 6) for q, v in t.search_s.items()},
            embedded=t.embedded,
            reused=t.reused,
        )
        for name, t in retrieved.items()
    }


def _provenance(config: NightlyConfig, dataset: QADataset, compared: list[str]) -> QrelsProvenance | None:
    """Where the night's relevance grades came from, with a warning per compared run they may favour (runs
    matched to the pool by what they are: a retriever's kind, settings and models; a fusion by its inputs)."""
    from ragmetrics.nightly.config import FusionRunSpec, RetrieverRunSpec, run_name
    from ragmetrics.nightly.qrels_provenance import ComparedRun, favour_warnings, qrels_provenance
    from ragmetrics.retrievers.identity import ranking_identity

    provenance = qrels_provenance(dataset.relevance, dataset.source, dataset.testset_folder)
    if provenance is None:
        return None
    known: dict[str, ComparedRun] = {}
    for spec in config.runs:
        if isinstance(spec, RetrieverRunSpec):
            name = run_name(spec)
            known[name] = ComparedRun(name, ranking_identity(spec.retriever, spec.params))
        elif isinstance(spec, FusionRunSpec):
            known[spec.name] = ComparedRun(spec.name, fused_from=tuple(spec.runs))
    return favour_warnings(provenance, [known.get(name, ComparedRun(name)) for name in compared])


def _actual_work(
    estimate: NightWork,
    calls: TargetCalls,
    judge_info: JudgeInfo | None,
    timings: Mapping[str, float],
    retrieved: Mapping[str, RetrieverTiming],
) -> NightWork:
    """The estimate beside what the night spent: requests and tokens from the judge's own count; seconds per
    stage where they went: the pipeline's and generator's calls (shown on a cached night too, ~0), the
    retrievers' index building and their searches, the judge."""
    from ragmetrics.nightly.estimate import actual_work

    usage = judge_info.usage if judge_info is not None else None
    spent = WorkFigures(
        judge_calls=usage.calls if usage is not None else 0,
        prompt_tokens=usage.prompt_tokens if usage is not None else 0,
        completion_tokens=usage.completion_tokens if usage is not None else 0,
        embedding_tokens=usage.embedding_tokens if usage is not None else 0,
        cost_usd=usage.cost_usd if usage is not None else None,
        judge_units=estimate.estimate.judge_units,
    )
    seconds: dict[str, float] = {r: calls.seconds[r] for r in ("pipeline", "generator") if r in calls.seconds}
    if retrieved:
        seconds["retriever index"] = sum(t.index_s for t in retrieved.values())
        seconds["retrieval"] = sum(sum(t.search_s.values()) for t in retrieved.values())
        counted = [t.embedded for t in retrieved.values() if t.embedded is not None]
        spent.chunks_embedded = sum(counted) if counted else None
    if "judge" in timings:  # a night that judged nothing has no judge time, not 0 s of it
        seconds["judge"] = timings["judge"]
    return actual_work(estimate, made=calls.made, usage=spent, seconds=seconds)


def config_snapshot(config: NightlyConfig) -> dict[str, Any]:
    """The config as run, for report.json; credentials embedded in a base_url are removed."""
    data = config.model_dump(mode="json")
    judge = data.get("judge")
    if isinstance(judge, dict) and judge.get("base_url"):
        from ragmetrics.judge.openai.scrub import public_url  # the one rule for recording an endpoint

        judge["base_url"] = public_url(judge["base_url"])
    return data


_VERSIONED = ("numpy", "numba", "scipy", "pydantic", "datasets", "pyarrow", "openai", "onnxruntime", "rich")


def versions() -> dict[str, str]:
    """Versions that can change a score: Python, ragmetrics and the libraries it computes with."""
    from ragmetrics._version import __version__

    found = {"python": platform.python_version(), "ragmetrics": __version__}
    for package in _VERSIONED:
        try:
            found[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            continue
    return found


def _failure_counts(result: RunResult) -> dict[str, int]:
    counts: dict[str, int] = {}
    for failure in result.failures:
        counts[failure.metric] = counts.get(failure.metric, 0) + 1
    return counts
