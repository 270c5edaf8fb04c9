"""A config in, a Report and its artifacts out: the nightly job, callable from Python and from `ragmetrics run`.

Steps: load and validate the dataset; build every run (the dataset's own ranking, run files, retrievers);
score retrieval metrics where the dataset has judgments and judge metrics where samples have the fields;
merge each run's scores into one RunResult; compare the runs into one Report; check the baseline; write the
artifacts. Nothing is skipped silently: every metric left out of a run is named in the report's notes.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics._async import run_sync
from ragmetrics.errors import ConfigError, InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.conversation import conversation_clusters
from ragmetrics.judge.registry import registered_metrics
from ragmetrics.nightly.agreement_floor import agreement_floor
from ragmetrics.nightly.answers import (
    AnsweredRun,
    TargetCalls,
    operational_result,
)
from ragmetrics.nightly.applicability import mark_missing
from ragmetrics.nightly.attacked import (
    attack_artifacts,
    attack_results,
    attack_summary_of,
    attacks_note,
    exposure_results,
    exposure_summary_of,
    judge_behaviours,
    pipeline_run_names,
    unjudge_attacks,
)
from ragmetrics.nightly.completeness import (
    Incomplete,
    failure_summary,
    find_incomplete,
    mark_call_failures,
    outputs_jsonl,
)
from ragmetrics.nightly.config import (
    NightlyConfig,
    load_config,
)
from ragmetrics.nightly.dataset import QADataset
from ragmetrics.nightly.gate import check_regressions, load_baseline
from ragmetrics.nightly.judged_samples import judged_samples_jsonl
from ragmetrics.nightly.load import load_dataset
from ragmetrics.nightly.runs import (  # the night's runs, shared with the dry run
    build_runs,
    generate_for_runs,
    judge_plan,
    retrieval_seconds,
    score_retrieval,
    target_calls,
    traced_run_names,
)
from ragmetrics.nightly.utility_night import add_utility_scores
from ragmetrics.options import OPERATIONAL_METRICS, ExitCode
from ragmetrics.render.safe_text import visible_controls
from ragmetrics.schema import (
    AdaptiveSummary,
    ComparisonSettings,
    DatasetSummary,
    GateResult,
    JudgeInfo,
    NightlyRun,
    NightWork,
    QrelsProvenance,
    Report,
    ReportMetadata,
    RetrieverSeconds,
    RunResult,
    RunTrust,
    SampleText,
    WorkFigures,
)

if TYPE_CHECKING:
    from ragmetrics.engines import Engine
    from ragmetrics.engines.base import JudgeSession
    from ragmetrics.judge.base import Judge
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrievers import RetrieverTiming
    from ragmetrics.trust.labels import HumanLabels

EXIT_OK = int(ExitCode.OK)
EXIT_REGRESSION = int(ExitCode.REGRESSION)
EXIT_INCOMPLETE = int(ExitCode.INCOMPLETE)
EXIT_NOT_COMPARABLE = int(ExitCode.NOT_COMPARABLE)

_VERSIONED = ("numpy", "numba", "scipy", "pydantic", "datasets", "pyarrow", "openai", "onnxruntime", "rich")

Log = Callable[[str], None]


@dataclass
class PipelineOutcome:
    """What a pipeline run produced; `exit_code` is what `ragmetrics run` returns."""

    report: Report
    gate: GateResult | None = None
    folder: Path | None = None
    artifacts: dict[str, Path] = field(default_factory=dict)
    history_page: Path | None = None
    notes: list[str] = field(default_factory=list, repr=False)
    incomplete: list[Incomplete] = field(default_factory=list)
    """Run/metric pairs whose share of failed scores exceeds max_failure_rate: the night is not complete."""

    @property
    def exit_code(self) -> int:
        """3 when the night is incomplete (whatever the gate says: a broken night never passes) or, with
        baseline.require_fresh, when a run was scored on cached outputs alone, else 1 on a regression, else 5 when pairs were not checked because the judge was below trust.min_agreement, else 4 when pairs were not comparable with the baseline (its data or judge changed), else 0."""
        if self.incomplete:
            return EXIT_INCOMPLETE
        if self.gate is not None and self.gate.refused_stale and not self.gate.failed:
            return EXIT_INCOMPLETE  # baseline.require_fresh: tonight's build was not called, nothing to pass
        if self.gate is not None and self.gate.failed:
            return EXIT_REGRESSION
        if self.gate is not None and self.gate.untrusted:
            return int(ExitCode.JUDGE_UNTRUSTED)
        return EXIT_NOT_COMPARABLE if self.gate is not None and self.gate.not_comparable else EXIT_OK


def run_pipeline(
    config: NightlyConfig | str | Path,
    *,
    baseline: Path | None = None,
    output_dir: Path | None = None,
    progress: bool | None = None,
    write: bool = True,
    log: Log | None = None,
    engine: str | None = None,
    refresh_pipeline: bool = False,
    adaptive: bool = False,
) -> PipelineOutcome:
    """Run a whole evaluation. `baseline`, `output_dir` and `engine` ('local', 'ray') override the config;
    `write=False` skips artifacts; `refresh_pipeline` calls the pipeline and generator again instead of
    reusing their cached outputs."""
    if not isinstance(config, NightlyConfig):
        config = load_config(config)
    if engine is not None:
        from ragmetrics.nightly.engine_fit import engine_problem

        if (problem := engine_problem(engine, config.judge)) is not None:
            raise ConfigError(f"--engine {engine}: {problem}")
        config = config.model_copy(update={"engine": config.engine.model_copy(update={"kind": engine})})
    if adaptive:
        config = with_adaptive(config)
    if config.sweep is not None:  # said, not silently ignored: a night scores `runs:`, `ragmetrics sweep` the grid
        (log or (lambda m: print(m, file=sys.stderr)))("ragmetrics: note: the sweep: section is run by `ragmetrics sweep`")
    with own_metrics(config):
        return _run_pipeline(config, baseline, output_dir, progress, write, log, refresh_pipeline)


def with_adaptive(config: NightlyConfig) -> NightlyConfig:
    """The config with judge.adaptive on (its own settings kept when it has them); an error without a judge."""
    from ragmetrics.nightly.config import AdaptiveConfig

    if config.judge is None or not config.judge.metrics:
        raise ConfigError("--adaptive: the config judges nothing (judge.metrics is empty)")
    if config.judge.adaptive is not None:
        return config
    judge = config.judge.model_copy(update={"adaptive": AdaptiveConfig()})
    return config.model_copy(update={"judge": judge})


@contextmanager
def own_metrics(config: NightlyConfig) -> Iterator[None]:
    """The team's own metrics (judge.custom_metrics), in the registry for this run only."""
    where = [p for p in (config.source_dir, Path.cwd()) if p is not None]
    own = config.judge.metric_specs("judge.custom_metrics", where) if config.judge is not None else []
    with registered_metrics(own):
        yield


@dataclass
class _Night:
    """What every step of one night shares: its config, how it reports, its notes and step timings."""

    config: NightlyConfig
    show: bool
    say: Log
    output_dir: Path | None
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    retrieved: dict[str, RetrieverTiming] = field(default_factory=dict)
    """Retriever run -> its index building and per-question search seconds."""
    extra_texts: dict[str, str] = field(default_factory=dict)
    """Further files of the night's folder by name (the utility judgments' `utility/` folder)."""


@dataclass
class _Baseline:
    path: Path | None
    report: Report | None
    night: Path | None
    """The baseline's night folder, resolved (through `latest` or a pin's symlink) before tonight is written."""


@dataclass
class _Scored:
    results: dict[str, RunResult]
    judge_info: JudgeInfo | None
    judged_samples: dict[str, list[RagSample]]
    work_estimate: Any
    adaptive: AdaptiveSummary | None = None


def _run_pipeline(
    config: NightlyConfig,
    baseline: Path | None,
    output_dir: Path | None,
    progress: bool | None,
    write: bool,
    log: Log | None,
    refresh_pipeline: bool,
) -> PipelineOutcome:
    night = _Night(config, config.progress if progress is None else progress,
                   log or (lambda message: print(visible_controls(message), file=sys.stderr)), output_dir)  # fmt: skip
    unaligned = _unaligned_note(config)
    if unaligned is not None:
        night.notes.append(unaligned)
        night.say(f"ragmetrics: {unaligned}")
    # Read the baseline first: a wrong path should fail in a second, not after an hour of judging.
    base = _read_baseline(night, baseline)
    dataset = _load_dataset(night)
    calls = target_calls(config, output_dir=output_dir, refresh=refresh_pipeline, progress=night.show)
    runs, answered = _answer(night, dataset, calls)
    scored = _score(night, dataset, runs, answered, calls, base.report)
    results = scored.results
    with _timed(night.timings, "utility_qrels"):
        add_utility_scores(config, dataset, runs, results, night.notes, night.extra_texts,
                           output_dir=output_dir, search=calls.search)  # fmt: skip
    attacks = _score_attacks(night, dataset, runs, answered, results) if dataset.attacks is not None else None
    mark_call_failures(results, answered)
    if dataset.traced is not None:  # a question without a trace has no ranking in any run from the traces
        for name in traced_run_names(config, dataset):
            if name in results:
                mark_missing(results[name], dataset.traced.missing_failures())
    ordered = [results[n] for n in runs if n in results]
    if not ordered:
        raise ConfigError("no run produced any score; check the notes above and the config's metrics")
    incomplete = find_incomplete(ordered, config.max_failure_rate)
    for line in failure_summary(ordered, incomplete, config.max_failure_rate):
        night.say(line)
    report, labels = _report(night, dataset, ordered, scored, calls)
    _check_on_source_qrels(night, dataset, runs, report)
    if scored.judged_samples:
        from ragmetrics.nightly.formatting_check import check_formatting

        said: list[str] = []
        with _timed(night.timings, "formatting_check"):
            settings = config.judge.settings() if config.judge is not None else None
            checks = check_formatting(settings, report, scored.judged_samples, scored.judge_info, said)
        report.metadata.nightly.formatting = checks  # type: ignore[union-attr]
        report.metadata.notes = [*report.metadata.notes, *said]
        night.notes.extend(said)
        from ragmetrics.nightly.sufficiency import night_sufficiency

        report.metadata.nightly.sufficiency = night_sufficiency(  # type: ignore[union-attr]
            report, scored.judged_samples, scored.judge_info
        )
    if config.pairwise is not None:
        from ragmetrics.nightly.pairwise_night import pairwise_summaries

        with _timed(night.timings, "pairwise"):
            report.metadata.pairwise = pairwise_summaries(config, report, scored.judged_samples, night.notes)
    if scored.judged_samples and config.validity.enabled:  # which metric tracks the answers (validity_night)
        from ragmetrics.nightly.validity_night import attach_validity

        with _timed(night.timings, "validity"):
            attach_validity(report, scored.judged_samples, night.notes, samples=config.validity.samples)
    elif scored.judged_samples:
        off = "validity: not studied tonight (validity.enabled: false); `ragmetrics validity` runs it"
        report.metadata.notes = [*report.metadata.notes, off]
        night.notes.append(off)
    gate = None
    if base.report is not None:
        assert base.path is not None
        gate = _gate(config, report, base.report, str(base.path), labels, incomplete, scored.adaptive)
        gate.from_cache = calls.from_cache_only()
        gate.require_fresh = config.baseline.require_fresh
        report.metadata.nightly.regression = gate  # type: ignore[union-attr]
    report.metadata.nightly.incomplete = [i.describe() for i in incomplete]  # type: ignore[union-attr]
    outcome = PipelineOutcome(report=report, gate=gate, notes=night.notes, incomplete=incomplete)
    if write:
        _write(night, outcome, base, calls, scored.judged_samples, attacks)
    return outcome


def _read_baseline(night: _Night, baseline: Path | None) -> _Baseline:
    """The baseline report: the one given, the config's, or the night pinned with `ragmetrics bless`."""
    config = night.config
    path = baseline if baseline is not None else config.baseline.path
    if path is None:
        from ragmetrics.nightly.artifacts import pinned_report

        path = pinned_report(night.output_dir or config.output.dir)
        if path is not None:
            night.notes.append(f"gate: against the pinned baseline {path.parent} (ragmetrics bless)")
    report = load_baseline(path) if path is not None else None
    # Resolved now: a path through `latest` points at tonight's folder once tonight is written, and a pin made
    # with a symlink to a night's report.json (pins/release.json) protects that night, not the pin's folder.
    return _Baseline(path, report, path.resolve().parent if path is not None else None)


def _load_dataset(night: _Night) -> QADataset:
    config = night.config
    with _timed(night.timings, "dataset"):
        label_columns = (
            sorted(set((config.human_labels.columns or {}).values())) if config.human_labels else []
        )
        dataset = load_dataset(config.dataset, progress=night.show and sys.stderr.isatty(), keep=label_columns)
    for bad in dataset.skipped:
        night.notes.append(f"skipped {bad.describe(dataset.source)}")
    if dataset.skipped:
        night.say(f"ragmetrics: skipped {len(dataset.skipped)} bad rows of {dataset.source} (listed in report.json)")
    return dataset


def _answer(night: _Night, dataset: QADataset, calls: TargetCalls) -> tuple[dict[str, Run | None], dict[str, AnsweredRun]]:
    """Every run built (the team's pipeline called), and the generator's answers for runs that have none."""
    config = night.config
    answered: dict[str, AnsweredRun] = {}
    try:
        with _timed(night.timings, "runs"):
            runs = build_runs(config, dataset, progress=night.show, calls=calls, answered=answered,
                              retrieved=night.retrieved)  # fmt: skip
        if config.generator is not None:
            with _timed(night.timings, "generator"):
                generate_for_runs(config, dataset, runs, answered, calls, night.notes)
    finally:
        if calls.cache is not None:
            calls.cache.close()
    for name, search_s in retrieval_seconds(config, night.retrieved).items():
        if name in answered and "pipeline" not in answered[name].stages:  # the generator answered a retriever run
            answered[name].add_retrieval(search_s)
    for run_answers in answered.values():
        night.notes.extend(run_answers.notes)
    night.notes.extend(f"pipeline cache: {who}: {what}" for who, what in calls.identities.items())
    return runs, answered


def _score(
    night: _Night,
    dataset: QADataset,
    runs: dict[str, Run | None],
    answered: dict[str, AnsweredRun],
    calls: TargetCalls,
    baseline: Report | None,
) -> _Scored:
    """Retrieval and judge metrics of every run (on the configured engine), and the answering runs'
    latency, tokens and cost."""
    from ragmetrics.engines import make_engine

    config = night.config
    results: dict[str, RunResult] = {}
    adaptive: list[AdaptiveSummary] = []
    judged_samples: dict[str, list[RagSample]] = {}
    worker = (
        make_engine(config.engine.kind, **config.engine.options()) if config.engine.kind != "local" else None
    )
    try:
        with _timed(night.timings, "retrieval"):
            results.update(score_retrieval(config, dataset, runs, night.notes, progress=night.show, engine=worker))
        work_estimate = _judge_estimate(config, dataset, runs, answered, calls, night.output_dir)
        with _timed(night.timings, "judge"):
            judged, judge_info = score_judge(config, dataset, runs, night.notes, progress=night.show, engine=worker,
                                             answered=answered, judged=judged_samples, baseline=baseline,
                                             adaptive=adaptive, retrieval=results)  # fmt: skip
    finally:
        if worker is not None:
            worker.close()
    for name, result in judged.items():
        if dataset.attacks is not None:
            result = unjudge_attacks(result, dataset)
        _merge_into(results, name, result)
    for name, run_answers in answered.items():
        _merge_into(results, name, operational_result(run_answers))
    summary = adaptive[0] if adaptive else None
    if summary is not None:
        requests = (f"; {summary.calls} judge requests against about {summary.calls_full_estimate} for a full night"
                    if summary.calls else "")  # fmt: skip
        night.notes.append(
            f"adaptive night: {summary.judged} of {summary.questions} questions judged ({summary.stopped}): "
            f"{summary.units} of {summary.units_full} judge scores{requests}"
        )
        night.notes.extend(f"adaptive: {d.text}" for d in summary.decisions)
    return _Scored(results, judge_info, judged_samples, work_estimate, summary)


def _merge_into(results: dict[str, RunResult], name: str, result: RunResult) -> None:
    results[name] = results[name].merge(result) if name in results else result


def _score_attacks(
    night: _Night,
    dataset: QADataset,
    runs: dict[str, Run | None],
    answered: dict[str, AnsweredRun],
    results: dict[str, RunResult],
) -> dict[str, Any]:
    """The attack metrics and exposure of an attack set's night, merged into `results`; attacks.json's summary.

    Attack success is measured on the team's system (the pipeline hook passes planted documents and
    system-prompt additions); a generator answering a retriever's contexts is not the system under attack.
    Exposure (did planted text reach the contexts, at what rank) is measured on every run with contexts,
    retriever runs included: their index holds the planted documents (attacks.exposure)."""
    config = night.config
    attacked_runs = {n: a for n, a in answered.items() if n in pipeline_run_names(config)}
    for name in answered:
        if name not in attacked_runs:
            night.notes.append(
                f"attack success not computed for run {name!r}: it is measured on pipeline runs, which get "
                "the system-prompt additions too (docs/attacks.md, 'The hook'); its exposure is"
            )
    with _timed(night.timings, "attack checks"):
        verdicts = judge_behaviours(config, dataset, attacked_runs)
        exposure, exposed = exposure_results(config, dataset, runs, answered)
    for name, attacked in attack_results(dataset, attacked_runs, verdicts).items():
        _merge_into(results, name, attacked)
    for name, exposures in exposure.items():
        _merge_into(results, name, exposures)
    attacks = attack_summary_of(dataset, attacked_runs, results, verdicts, config.compare.alpha)
    attacks["exposure"] = exposure_summary_of(dataset, exposed, results, config.compare.alpha)
    night.notes.append(attacks_note(attacks))
    return attacks


def _report(
    night: _Night, dataset: QADataset, ordered: list[RunResult], scored: _Scored, calls: TargetCalls
) -> tuple[Report, HumanLabels | None]:
    """The compared runs as the night's report, with its human labels attached and what the night was."""
    config = night.config
    with _timed(night.timings, "compare"):
        report = compare_runs(config, ordered, night.notes, conversation_clusters(dataset.samples))
    with _timed(night.timings, "trust"):
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
            s.id: SampleText(question=s.question, answer=s.answer, reference=s.reference, turn=s.turn,
                             tool_calls=None if s.tool_calls is None else [c.model_dump() for c in s.tool_calls])
            for s in dataset.samples
        },
        timings_s=night.timings,
        work=_actual_work(scored.work_estimate, calls, scored.judge_info, night.timings, night.retrieved),
        adaptive=scored.adaptive,
        retrievers=_retriever_seconds(night.retrieved),
    )
    return report, labels


def _check_on_source_qrels(night: _Night, dataset: QADataset, runs: dict[str, Run | None], report: Report) -> None:
    """On pooled qrels, the retrieval runs compared again on source-only qrels (`nightly.source_only`), kept with
    the qrels' provenance so every verdict line can say whether the two agree."""
    from ragmetrics.nightly.source_only import source_only_check

    provenance = report.metadata.nightly.dataset.qrels if report.metadata.nightly is not None else None
    if provenance is not None:
        provenance.source_only = source_only_check(night.config, dataset, runs, report)


def _retriever_seconds(retrieved: Mapping[str, RetrieverTiming]) -> dict[str, RetrieverSeconds]:
    return {
        name: RetrieverSeconds(index_s=round(t.index_s, 6), search_s={q: round(v, 6) for q, v in t.search_s.items()},
                               embedded=t.embedded, reused=t.reused)
        for name, t in retrieved.items()
    }


def _gate(
    config: NightlyConfig,
    report: Report,
    baseline: Report,
    source: str,
    labels: HumanLabels | None,
    incomplete: list[Incomplete],
    adaptive: AdaptiveSummary | None,
) -> GateResult:
    anytime = {(d.run, d.metric): d for d in adaptive.decisions if d.kind == "gate"} if adaptive else None
    return check_regressions(
        report, baseline, baseline_source=source, thresholds=config.baseline.threshold,
        metrics=config.baseline.metrics, test=config.compare.test, correction=config.compare.correction,
        alpha=config.compare.alpha, seed=config.compare.seed, permutations=config.compare.permutations,
        labels=labels, use_ppi=config.baseline.use_ppi, beyond_judge_noise=config.baseline.beyond_judge_noise,
        incomplete=[(i.run, i.metric, i.describe()) for i in incomplete],
        explicit=set(config.baseline.metrics or ()) | set(config.baseline.max_drop_per_metric),
        on_change=config.baseline.on_change, below_floor=agreement_floor(config, report), anytime=anytime,
    )  # fmt: skip


def _write(
    night: _Night,
    outcome: PipelineOutcome,
    base: _Baseline,
    calls: TargetCalls,
    judged_samples: dict[str, list[RagSample]],
    attacks: dict[str, Any] | None,
) -> None:
    """The night's artifacts (and its entry in the history) in its folder."""
    from ragmetrics.nightly.artifacts import write_artifacts

    config = night.config
    extra = {"pipeline_outputs.jsonl": outputs_jsonl(calls.records)} if calls.records else {}
    extra.update(night.extra_texts)
    if judged_samples:
        extra["judged_samples.jsonl"] = judged_samples_jsonl(judged_samples)
    if attacks is not None:
        extra.update(attack_artifacts(attacks, config.name))
    folder, written = write_artifacts(
        outcome.report, night.output_dir if night.output_dir is not None else config.output.dir,
        formats=config.output.formats, plots=config.output.plots, gate=outcome.gate,
        base_url=config.judge.base_url if config.judge is not None else None, keep=config.output.keep,
        extra_texts=extra, secrets=calls.secrets(), protect=[base.night] if base.night is not None else [],
    )  # fmt: skip
    outcome.folder, outcome.artifacts = folder, written
    if config.output.history:
        outcome.history_page = _update_history(
            config, folder, outcome.report, night.notes, base.night.name if base.night is not None else None
        )
    if config.output.mlflow is not None:
        _log_to_mlflow(night, folder)


def _log_to_mlflow(night: _Night, folder: Path) -> None:
    """The night (after any queued before it) to MLflow: one line says where it went, or why it is queued (a
    tracker that is down is never a failure)."""
    settings = night.config.output.mlflow
    assert settings is not None
    import importlib.util

    if importlib.util.find_spec("mlflow") is None:  # the extra is not installed: said, the night stands
        night.say("ragmetrics: output.mlflow: the mlflow package is not installed; pip install 'ragmetrics[mlflow]'")
        return
    from ragmetrics.mlflow.nights import MlflowTarget, log_backlog

    target = MlflowTarget(settings.tracking_uri, settings.experiment, settings.timeout_s)  # None: the config's name
    for line in log_backlog(folder.parent, folder, target):
        night.say(f"ragmetrics: {line}")


def _unaligned_note(config: NightlyConfig) -> str | None:
    """What the night says when judge.aligned names alignments that kept no step and if_not_aligned lets it run
    with the judge as it is (with `error`, making the judge stops the night with what to do)."""
    judge = config.judge
    if judge is None or judge.aligned is None or judge.if_not_aligned != "unaligned":
        return None
    from ragmetrics.judge.aligned.artifact import nothing_kept

    why = nothing_kept(judge.aligned)
    if why is None:
        return None
    return (f"judge not aligned: {judge.aligned} holds no aligned metric ({why}); judged with the judge as it is "
            "(judge.if_not_aligned: unaligned)")  # fmt: skip


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


def _judge_estimate(
    config: NightlyConfig,
    dataset: QADataset,
    runs: Mapping[str, Run | None],
    answered: Mapping[str, AnsweredRun],
    calls: TargetCalls,
    output_dir: Path | None,
) -> NightWork:
    """What the judge stage is estimated to cost, made just before it runs (as `--dry-run` makes it), with
    the pipeline and generator calls this night made (an estimate of those would be their own count)."""
    from ragmetrics.nightly.estimate import estimate_work

    return estimate_work(config, judge_plan(config, dataset, runs, [], answered), calls.made, output_dir)


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


def _update_history(
    config: NightlyConfig, folder: Path, report: Report, notes: list[str], baseline_folder: str | None
) -> Path | None:
    """Add tonight to the output root's history and redraw history.html. A history that cannot be written
    does not undo the night (its artifacts are in place): it is said in the notes instead."""
    from ragmetrics.history import update_history

    try:
        return update_history(
            folder.parent,
            report,
            folder,
            nights=config.output.history_nights,
            alpha=config.compare.alpha,
            correction=config.compare.correction,
            baseline_folder=baseline_folder,
        )
    except OSError as exc:
        notes.append(f"history not updated: {exc}")
        return None


@contextmanager
def _timed(timings: dict[str, float], step: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[step] = round(time.perf_counter() - start, 3)


def score_judge(
    config: NightlyConfig,
    dataset: QADataset,
    runs: Mapping[str, Run | None],
    notes: list[str],
    *,
    progress: bool = False,
    engine: Engine | None = None,
    answered: Mapping[str, AnsweredRun] | None = None,
    judged: dict[str, list[RagSample]] | None = None,
    baseline: Report | None = None,
    adaptive: list[AdaptiveSummary] | None = None,
    retrieval: Mapping[str, RunResult] | None = None,
) -> tuple[dict[str, RunResult], JudgeInfo | None]:
    """Judge metrics per run through one judge (one cache, one usage count); returns the judge's final info.
    `judged`, when given, receives each run's samples exactly as the judge saw them. With `judge.adaptive`
    the questions are judged in batches until every decision is settled (`nightly.adaptive_night`; the gate's
    decisions against `baseline`), and the night's summary is appended to `adaptive`.

    With `judge.repeats` = k > 1 every unit is judged k times with seeds seed, seed + 1, ... (each repeat
    cached under its own key); the results keep repeat 0's scores and carry the noise figures in `trust.noise`.
    """
    from ragmetrics.engines import LocalEngine

    plan = judge_plan(config, dataset, runs, notes, answered)
    if judged is not None:
        judged.update({name: samples for name, (samples, _) in plan.items()})
    if not plan:
        return {}, None
    assert config.judge is not None
    base = config.judge.settings()
    if config.judge.cascade and config.judge.adaptive is None:
        from ragmetrics.nightly.cascade_night import judge_cascade

        return judge_cascade(config, plan, notes, engine=engine)
    if config.judge.adaptive is not None:
        from ragmetrics.nightly.adaptive_night import judge_adaptively

        # the night's request budget is also the judge's hard cap: trimming batches to it (adaptive_night) is
        # planned, the cap is what no request in flight can pass
        caps = [c for c in (base.max_requests, config.judge.adaptive.max_calls) if c is not None]
        capped = base.model_copy(update={"max_requests": min(caps) if caps else None})
        cascade = None
        if config.judge.cascade:  # a cascade's batches: decided items only, the abstained counted in its notes
            from ragmetrics.nightly.cascade_night import CascadeSession

            # each of its judges stops at the budget's cap too (the planned trimming counts them all: estimate)
            capped_judge = config.judge.model_copy(update={"max_requests": capped.max_requests})
            cascade = CascadeSession(config.model_copy(update={"judge": capped_judge}), plan)
        session: JudgeSession = cascade or (engine or LocalEngine()).judge_session(capped)
        try:
            results, summary = judge_adaptively(config, dataset, plan, session, baseline=baseline, progress=progress,
                                                retrieval=retrieval)  # fmt: skip
            if cascade is not None:
                notes.extend(cascade.finish(results))
            adaptive_info = session.info()
        finally:
            session.close()
        if adaptive is not None:
            adaptive.append(summary)
        return results, adaptive_info
    rounds: list[dict[str, RunResult]] = []
    info: JudgeInfo | None = None
    for repeat in range(base.repeats):
        settings = base if repeat == 0 else base.model_copy(update={"seed": (base.seed or 0) + repeat})
        session = (engine or LocalEngine()).judge_session(settings)
        try:
            rounds.append(
                {
                    name: session.score(
                        samples,
                        metrics,
                        name=name if repeat == 0 else f"{name} (repeat {repeat})",
                        progress=progress,
                    )
                    for name, (samples, metrics) in plan.items()
                }
            )
            if repeat == 0:
                info = session.info()
        finally:
            session.close()
    out = rounds[0]
    if len(rounds) > 1:
        from ragmetrics.trust import judge_noise_stats

        for name, result in out.items():
            noise = [
                stats
                for metric in result.metadata.metrics
                if (stats := judge_noise_stats([r[name] for r in rounds], metric, seed=config.compare.seed))
                is not None
            ]
            result.trust = (result.trust or RunTrust()).model_copy(update={"noise": noise})
        if base.backend == "local" or (info is not None and info.backend == "local"):
            notes.append(
                "judge.repeats with the local judge: it is deterministic, so repeats agree exactly (noise 0)"
            )
    if base.panel is not None:  # run-wide combinations and the panel's agreement (ragmetrics.panels.night)
        from ragmetrics.panels.night import finish_panel_night, people_labels

        out, info = finish_panel_night(base.panel, out, info, people=people_labels(config.human_labels))
    return out, info


def attach_human_labels(
    config: NightlyConfig, results: dict[str, RunResult], report: Report, dataset: QADataset
) -> HumanLabels | None:
    """Agreement and PPI estimates on every judged run, and PPI-corrected paired differences, from the
    config's human labels; returns the labels (the gate's PPI switch uses them)."""
    if config.human_labels is None:
        return None
    from ragmetrics.trust import judge_agreement, load_labels, ppi_difference
    from ragmetrics.trust.labels import labels_from_columns

    spec = config.human_labels
    if spec.columns is not None:
        labels = labels_from_columns(dataset.kept, spec.columns, source=dataset.source, scale=spec.scale)
    else:
        assert spec.path is not None  # the config allows exactly one of them
        labels = load_labels(spec.path, scale=spec.scale, adjudication=spec.adjudication)
    judged = [
        r for r in results.values() if r.metadata.judge is not None or r.metadata.kind in ("judge", "mixed")
    ]
    labels.check_ids(
        {q for r in judged for q in r.per_query} or {q for r in results.values() for q in r.per_query}
    )
    judge_metrics = set(config.judge.metrics) if config.judge is not None else set()
    labels.check_metrics(judge_metrics)
    for result in judged:
        trust = judge_agreement(
            result,
            labels,
            metrics=[m for m in result.metadata.metrics if m in judge_metrics],
            threshold=spec.threshold,
            confidence=spec.confidence,
            seed=config.compare.seed,
            check_ids=False,
        )
        noise = result.trust.noise if result.trust is not None else []
        result.trust = trust.model_copy(update={"noise": noise})
    pairs = []
    for comparison in report.comparisons:
        if comparison.metric not in judge_metrics:
            continue
        a, b = results.get(comparison.baseline), results.get(comparison.candidate)
        if a is None or b is None:
            continue
        pair = ppi_difference(a, b, labels, comparison.metric, confidence=spec.confidence)
        if pair is not None:
            pairs.append(pair)
    report.metadata.ppi_pairs = pairs
    return labels


def _close(judge: Judge) -> None:
    run_sync(judge.aclose())


def compare_runs(
    config: NightlyConfig,
    results: list[RunResult],
    notes: list[str],
    clusters: dict[str, str] | None = None,
) -> Report:
    """One Report over every run; metrics that not every run has are described but not tested. With
    `clusters` (turn id -> conversation id), every test, interval, power figure and gate check counts
    conversations (`comparison.clusters`)."""
    from ragmetrics.comparison.descriptive import describe

    # The configured metrics, then latency, tokens and cost where the pipeline or generator measured them.
    wanted = [
        *config.all_metrics(),
        *(m for m in OPERATIONAL_METRICS if any(m in r.metrics for r in results)),
    ]
    everywhere = [m for m in wanted if all(m in r.metrics for r in results)]
    partial = [m for m in wanted if m not in everywhere and any(m in r.metrics for r in results)]
    for metric in list(everywhere):
        failed = [r.name for r in results if all(v is None for v in r.scores(metric))]
        if failed:
            everywhere.remove(metric)
            notes.append(
                f"{metric}: every score failed for {', '.join(failed)} (causes in the runs' failures); not compared"
            )
    c = config.compare
    if len(results) >= 2 and everywhere:
        from ragmetrics.comparison.pairs import compare_results

        report = compare_results(
            results,
            everywhere,
            test=c.test,
            correction=c.correction,
            seed=c.seed,
            alpha=c.alpha,
            permutations=c.permutations,
            # trec_eval's convention leaves out the queries a run lacks; the comparison must not score them 0.
            align="intersection" if config.retrieval.query_set == "intersection" else "union",
            clusters=clusters,
        )
    else:
        if len(results) < 2:
            notes.append("one run only: descriptive statistics, no significance tests")
        report = Report(
            runs=results,
            metrics=everywhere,
            settings=ComparisonSettings(
                test=c.test,
                correction=c.correction,
                alpha=c.alpha,
                seed=c.seed,
                permutations=c.permutations if c.test == "fisher" else None,
            ),
            metadata=ReportMetadata(
                query_count=len({q for r in results for q in r.per_query}), clusters=clusters
            ),
        )
    for metric in partial:
        have = [r.name for r in results if metric in r.metrics]
        notes.append(f"{metric}: only for {', '.join(have)}; described, not compared")
    for result in results:
        sources = result.metadata.metric_settings.get("claim_relevance")
        if isinstance(sources, dict) and sources:
            said = ", ".join(f"{n} by the {source}" for source, n in sources.items())
            notes.append(f"{result.name}: claim diagnostics decided which chunks are relevant {said}")
    for result in results:
        stats = report.descriptive.setdefault(result.name, {})
        for metric in result.metrics:
            if metric not in stats:
                described = describe(
                    result.scores(metric), not_applicable=result.not_applicable_count(metric)
                )
                if described is not None:
                    stats[metric] = described
    if c.tukey != "off" and len(results) >= 2 and everywhere:
        from ragmetrics.comparison.tukey import tukey_pairs

        try:
            report.metadata.tukey = tukey_pairs(
                results, everywhere, alpha=c.alpha, blocked=c.tukey == "blocked"
            )
        except InputError as exc:  # e.g. fewer than 2 questions every run scored: said, not fatal
            notes.append(f"Tukey's HSD not computed: {exc.what}")
    if report.comparisons:
        from ragmetrics.comparison.report_power import report_power

        targets = power_targets(config, report, notes)
        report.metadata.power = report_power(report, power=c.power, targets=targets)
    return report


def power_targets(config: NightlyConfig, report: Report, notes: list[str]) -> dict[str, float]:
    """The difference each metric's power row plans for: compare.power_targets, else the gate's max_drop."""
    targets = {m: config.baseline.threshold(m) for m in report.metrics if config.baseline.threshold(m) > 0}
    for metric, diff in config.compare.power_targets.items():
        if metric in report.metrics:
            targets[metric] = diff
        else:
            notes.append(
                f"compare.power_targets: {metric} was not compared tonight; no power row plans for it"
            )
    return targets


def config_snapshot(config: NightlyConfig) -> dict[str, Any]:
    """The config as run, for report.json; credentials embedded in a base_url are removed."""
    data = config.model_dump(mode="json")
    judge = data.get("judge")
    if isinstance(judge, dict) and judge.get("base_url"):
        from ragmetrics.judge.openai.scrub import public_url  # the one rule for recording an endpoint

        judge["base_url"] = public_url(judge["base_url"])
    return data


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
