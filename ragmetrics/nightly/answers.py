"""Runs that answer: the team's pipeline called per question, and a generator that answers from any run.

A pipeline run (`source: pipeline`) calls the team's system with each question; its contexts become the run's
ranking (by the ids it returns, else matched to the dataset's passages by text, else no ranking) and its
answers are judged like the dataset's. The generator (`generator:`) answers every other run's questions from
that run's top-k contexts, so answer metrics exist for retriever, file and fusion runs too. Both record per
question what the call took (latency, and tokens and cost when reported) as the run's operational metrics,
and every question whose call failed, with its cause, so it is counted and never dropped.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics._async import run_sync
from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.call_identity import CallIdentity, call_identity
from ragmetrics.nightly.config_calls import CallSettings, GeneratorConfig
from ragmetrics.nightly.config_runs import PipelineRunSpec
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.nightly.target_calls import CallRecord, OutputCache, call_all, plan_all
from ragmetrics.nightly.targets import CallableCaller, Caller, Role, TargetOutput, make_caller
from ragmetrics.options import OPERATIONAL_METRICS
from ragmetrics.schema import NotApplicableScore, RunMetadata, RunResult, SampleFailure

if TYPE_CHECKING:
    from ragmetrics.retrieval.run import Run

__all__ = ["AnsweredRun", "TargetCalls", "call_pipeline", "generate_answers", "operational_result"]

UNMATCHED_PREFIX = "unmatched:"
"""Ids given to a pipeline's contexts that match no passage: they hold their rank and are never relevant."""


@dataclass
class TargetCalls:
    """What every call of a night shares: the output cache, where to import callables from, --refresh-pipeline."""

    cache: OutputCache | None
    search: list[Path]
    refresh: bool = False
    progress: Callable[[str, int], Any] | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    """Every call's line for pipeline_outputs.jsonl, in call order."""
    header_secrets: list[str] = field(default_factory=list)
    """Header values of HTTP targets, redacted from every artifact."""
    dry_run: bool = False
    """Count the calls instead of making them (`ragmetrics run --dry-run`); outputs are placeholders."""
    dry_contexts: int = 3
    """Stand-in passages per placeholder pipeline output in a dry run (the judge's contexts_top_k)."""
    dry_notes: list[str] = field(default_factory=list)
    """How a dry run estimated what it did not run (a retriever built on a sample of the corpus)."""
    made: dict[str, int] = field(default_factory=dict)
    """role -> calls made (or, in a dry run, that would be made); cached outputs are not calls."""
    served: dict[str, list[int]] = field(default_factory=dict)
    """run -> [outputs from earlier nights' calls, outputs from calls made tonight] of the pipeline and
    generator (a run asking what another run asked tonight gets tonight's output: fresh, not stored)."""
    _identities: dict[tuple[str, str], CallIdentity] = field(default_factory=dict, repr=False)
    identities: dict[str, str] = field(default_factory=dict)
    """'role target' -> what its outputs' cache key covers (`CallIdentity.describe`), for the report's notes."""

    def from_cache_only(self) -> list[str]:
        """Runs whose every output of the team's code came from the cache: tonight's build was not called for
        them, so their scores are the stored outputs' (`baseline.require_fresh`)."""
        return [
            f"run {run!r}: all {cached} outputs of the pipeline/generator came from pipeline_cache, none was "
            "called tonight"
            for run, (cached, fresh) in self.served.items()
            if cached and not fresh
        ]
    seconds: dict[str, float] = field(default_factory=dict)
    """role -> wall seconds its calls took (cached outputs included, which take ~0): the pipeline's and the
    generator's own time, apart from the retrievers' index building that happens in the same stage."""

    def secrets(self) -> list[str]:
        return list(self.header_secrets)

    def _identity(self, settings: CallSettings, caller: Caller) -> CallIdentity:
        """The build `caller` calls (`call_identity`), worked out once per target and settings a night."""
        fn = caller.function if isinstance(caller, CallableCaller) else None
        memo = (caller.label, json.dumps(settings.cache_settings(), sort_keys=True, default=str))
        if memo not in self._identities:
            search = [*settings.python_path, *self.search]
            self._identities[memo] = call_identity(settings.cache_settings(), fn=fn, search=search)
        return self._identities[memo]

    def run(
        self, settings: CallSettings, role: Role, run: str, inputs: Sequence[tuple[str, dict[str, Any]]]
    ) -> list[CallRecord]:
        caller = make_caller(
            settings.target,
            concurrency=settings.concurrency,
            timeout_s=settings.timeout_s,
            retries=settings.retries,
            version=settings.version,
            search=[*settings.python_path, *self.search],
        )
        self.header_secrets.extend(getattr(caller, "secrets", []))
        identity = self._identity(settings, caller)
        self.identities.setdefault(f"{role} {caller.label}", identity.describe())
        if self.dry_run:
            planned = plan_all(
                caller, role, inputs, self.cache, refresh=self.refresh, contexts=self.dry_contexts,
                build=identity.key,
            )  # fmt: skip
            self.made[role] = self.made.get(role, 0) + sum(r.planned for r in planned)
            run_sync(caller.aclose())
            return planned
        bar = self.progress(f"calling the {role} for {run}", len(inputs)) if self.progress else None
        started = time.perf_counter()
        with bar if bar is not None else contextlib.nullcontext(lambda: None) as advance:
            records = run_sync(
                call_all(
                    caller, role, inputs, self.cache, concurrency=settings.concurrency, refresh=self.refresh,
                    advance=advance, build=identity.key,
                )
            )  # fmt: skip
        self.seconds[role] = self.seconds.get(role, 0.0) + time.perf_counter() - started
        self.made[role] = self.made.get(role, 0) + sum(not r.cached for r in records)
        tally = self.served.setdefault(run, [0, 0])
        tally[0] += sum(r.output is not None and r.cached and not r.tonight for r in records)
        tally[1] += sum(r.output is not None and (not r.cached or r.tonight) for r in records)
        for record in records:
            line = record.to_json(role, caller.label, caller.version)
            self.records.append({"run": run, **line})
        return records


@dataclass
class AnsweredRun:
    """One run's samples with answers (dataset order) and what producing them cost, per question."""

    name: str
    samples: list[RagSample]
    failed: dict[str, tuple[str, str]] = field(default_factory=dict)
    """query id -> (cause, message) of the pipeline or generator call that produced nothing for it."""
    lacking: dict[str, dict[str, str]] = field(default_factory=dict)
    """query id -> sample field -> why its output lacks that field (a trace without a retriever span: its
    contexts): the message of the `missing_field` failures of the metrics that read the field (cause
    `trace_incomplete`), while its other scores (latency, the ranking, metrics of other fields) stand."""
    latency_s: dict[str, float] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)
    run: Run | None = None
    notes: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    """Which calls the operational metrics add up: 'pipeline', 'generator', 'retrieval' (a retriever run's
    search and rerank per question, `add_retrieval`), or several."""

    def add_retrieval(self, search_s: Mapping[str, float]) -> None:
        """Add each question's retrieval seconds to its latency: a retriever run answered by the generator
        makes its user wait for both, so a slow reranker must not look fast because only generation was timed.
        Questions whose answer failed keep their failure (no latency); the others all have a search time."""
        for sample in self.samples:
            seconds = search_s.get(sample.id)
            if seconds is not None and sample.id not in self.failed and sample.id in self.latency_s:
                self.latency_s[sample.id] += seconds
        if "retrieval" not in self.stages:
            self.stages.insert(0, "retrieval")


def _extras(dataset: QADataset, qid: str) -> dict[str, Any]:
    return dict(dataset.extras.get(qid, {}))


def pipeline_input(dataset: QADataset, sample: RagSample) -> dict[str, Any]:
    """What the pipeline is called with: the question, its id and language, and the dataset's other columns
    (never the reference answer, relevance judgments or the dataset's own contexts and answer)."""
    return {
        **_extras(dataset, sample.id),
        "id": sample.id,
        "question": sample.question,
        "language": sample.question_language,
    }


def call_pipeline(spec: PipelineRunSpec, dataset: QADataset, calls: TargetCalls) -> AnsweredRun:
    """Call the team's pipeline for every question; its answers, contexts and ranking as one run."""
    inputs = [(s.id, pipeline_input(dataset, s)) for s in dataset.samples]
    records = calls.run(spec, "pipeline", spec.name, inputs)
    answered = AnsweredRun(name=spec.name, samples=[], stages=["pipeline"])
    outputs: dict[str, TargetOutput] = {}
    for sample, record in zip(dataset.samples, records, strict=True):
        if record.output is None:
            answered.failed[sample.id] = (f"pipeline_{record.cause}", str(record.message))
            answered.samples.append(
                RagSample(
                    id=sample.id,
                    question=sample.question,
                    reference=sample.reference,
                    language=sample.language,
                )
            )
            continue
        out = record.output
        outputs[sample.id] = out
        _add_costs(answered, sample.id, out)
        contexts = out.contexts
        answered.samples.append(
            RagSample(
                id=sample.id,
                question=sample.question,
                contexts=contexts,
                context_ids=out.context_ids if contexts is not None else None,
                answer=out.answer,
                reference=sample.reference,
                language=sample.language,
            )
        )
    answered.run, notes = ranking_from_outputs(spec.name, outputs, dataset)
    answered.notes.extend(notes)
    if answered.run is not None:  # the samples carry the ids the ranking was built from (matched ones too)
        ranking = answered.run.to_dict()
        answered.samples = [
            s.model_copy(update={"context_ids": list(ranking.get(s.id, {}))})
            if s.contexts is not None
            and s.context_ids is None
            and len(ranking.get(s.id, {})) == len(s.contexts)
            else s
            for s in answered.samples
        ]
    return answered


def _add_costs(answered: AnsweredRun, qid: str, out: TargetOutput) -> None:
    answered.latency_s[qid] = answered.latency_s.get(qid, 0.0) + out.latency_s
    if out.tokens is not None:
        answered.tokens[qid] = answered.tokens.get(qid, 0.0) + out.tokens
    if out.cost is not None:
        answered.cost[qid] = answered.cost.get(qid, 0.0) + out.cost


_SPACES = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def ranking_from_outputs(
    name: str, outputs: dict[str, TargetOutput], dataset: QADataset
) -> tuple[Run | None, list[str]]:
    """The pipeline's ranking: its context ids when it gives them; else its contexts matched to the dataset's
    passages by text (whitespace and case aside; else a context inside exactly one passage). A context that
    matches nothing keeps its rank under an `unmatched:` id that no judgment names, so it counts as
    retrieved and not relevant; the report names how many there were."""
    from ragmetrics.retrieval.run import Run

    with_ids = {q: o for q, o in outputs.items() if o.context_ids is not None}
    if not with_ids and dataset.passages is None:
        if outputs:
            return None, [
                f"run {name!r}: no ranking (the pipeline returned no context_ids and dataset.passages is not "
                "set to match its contexts against); retrieval metrics not computed for it"
            ]
        return None, []
    by_text: dict[str, str] = {}
    texts: list[tuple[str, str]] = []
    if dataset.passages is not None:
        for passage_id, passage in dataset.passages.items():
            by_text.setdefault(_norm(passage.text), passage_id)
            texts.append((passage_id, _norm(passage.text)))
    ranking: dict[str, dict[str, float]] = {}
    unmatched = 0
    examples: list[str] = []
    matched_by_text = 0
    for qid, out in outputs.items():
        if out.context_ids is not None:
            ids = out.context_ids
        else:
            ids = []
            for rank, context in enumerate(out.contexts or []):
                key = _norm(context)
                pid: str | None = by_text.get(key)
                if pid is None and len(key) >= 20:
                    inside = [p for p, t in texts if key in t]
                    pid = inside[0] if len(inside) == 1 else None
                if pid is None or pid in ids:
                    unmatched += 1
                    if len(examples) < 3:
                        examples.append(f"{qid}[{rank}]")
                    pid = f"{UNMATCHED_PREFIX}{qid}:{rank}"
                else:
                    matched_by_text += 1
                ids.append(pid)
        scores = out.context_scores or [float(len(ids) - i) for i in range(len(ids))]
        ranking[qid] = dict(zip(ids, scores, strict=True))
    notes = []
    if matched_by_text:
        notes.append(f"run {name!r}: {matched_by_text} contexts matched to dataset passages by their text")
    if unmatched:
        notes.append(
            f"run {name!r}: {unmatched} contexts match no dataset passage (e.g. {', '.join(examples)}); "
            "they keep their rank as retrieved, non-relevant documents"
        )
    if not ranking:
        return None, notes
    return Run.from_dict(ranking, name=name, source=f"pipeline {name}"), notes


def generator_runs(
    config_runs: Sequence[str], generator: GeneratorConfig, has_answers: Callable[[str], bool]
) -> list[str]:
    """The runs a generator answers for: those named, or every run without answers of its own."""
    if generator.runs is not None:
        return list(generator.runs)
    return [name for name in config_runs if not has_answers(name)]


def generate_answers(
    generator: GeneratorConfig, name: str, samples: list[RagSample], calls: TargetCalls, dataset: QADataset,
    prior: AnsweredRun | None = None,
) -> AnsweredRun:  # fmt: skip
    """Answer each sample from its top-k contexts with the team's generator; samples without contexts are
    still asked (a generator may answer from nothing), samples a pipeline failed on are not."""
    answered = prior or AnsweredRun(name=name, samples=[])
    answered.stages.append("generator")
    inputs = []
    for sample in samples:
        if sample.id in answered.failed:
            continue
        contexts = list(sample.contexts or [])[: generator.top_k]
        ids = list(sample.context_ids)[: generator.top_k] if sample.context_ids is not None else None
        payload = {
            **_extras(dataset, sample.id),
            "id": sample.id,
            "question": sample.question,
            "language": sample.question_language,
            "contexts": contexts,
        }
        if ids is not None:
            payload["context_ids"] = ids
        inputs.append((sample.id, payload))
    records = {r.query_id: r for r in calls.run(generator, "generator", name, inputs)}
    out_samples = []
    for sample in samples:
        record = records.get(sample.id)
        if record is None:
            out_samples.append(sample)
        elif record.output is None:
            answered.failed[sample.id] = (f"generator_{record.cause}", str(record.message))
            out_samples.append(sample.model_copy(update={"answer": None}))
        else:
            _add_costs(answered, sample.id, record.output)
            out_samples.append(sample.model_copy(update={"answer": record.output.answer}))
    answered.samples = out_samples
    return answered


def operational_result(answered: AnsweredRun) -> RunResult:
    """latency_s, and tokens and cost where the calls reported them, per question, as one RunResult.

    A question whose call failed has no value and a recorded failure; a question whose call reported no
    tokens (or cost) while others did is not applicable for that metric, not zero.
    """
    values = {"latency_s": answered.latency_s, "tokens": answered.tokens, "cost": answered.cost}
    metrics = [m for m in OPERATIONAL_METRICS if m == "latency_s" or values[m]]
    per_query: dict[str, dict[str, float | None]] = {}
    failures: list[SampleFailure] = []
    not_applicable: list[NotApplicableScore] = []
    for sample in answered.samples:
        scores: dict[str, float | None] = {}
        for metric in metrics:
            failed = answered.failed.get(sample.id)
            value = values[metric].get(sample.id)
            if failed is not None:
                scores[metric] = None
                failures.append(
                    SampleFailure(query_id=sample.id, metric=metric, cause=failed[0], message=failed[1])
                )
            elif value is None:
                scores[metric] = None
                not_applicable.append(
                    NotApplicableScore(
                        query_id=sample.id,
                        metric=metric,
                        reason=f"the {' and '.join(answered.stages)} reported no {metric}",
                    )
                )
            else:
                scores[metric] = float(value)
        per_query[sample.id] = scores
    result = RunResult(
        name=answered.name,
        per_query=per_query,
        failures=failures,
        not_applicable=not_applicable,
        metadata=RunMetadata(
            kind="operational",
            metrics=metrics,
            num_queries=len(per_query),
            metric_settings={"operational_stages": list(answered.stages), "lower_is_better": metrics},
        ),
    )
    result.recompute_aggregate()
    return result
