"""A config in, a Report and its artifacts out: the nightly job, callable from Python and from `ragmetrics run`.

Steps: load and validate the dataset; build every run (the dataset's own ranking, run files, retrievers);
score retrieval metrics where the dataset has judgments and judge metrics where samples have the fields;
merge each run's scores into one RunResult; compare the runs into one Report; check the baseline; write the
artifacts. Nothing is skipped silently: every metric left out of a run is named in the report's notes.
"""

from __future__ import annotations

import importlib
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
from ragmetrics.judge.registry import registered_metrics, required_fields
from ragmetrics.nightly.answers import (
    AnsweredRun,
    TargetCalls,
    call_pipeline,
    generate_answers,
    generator_runs,
    operational_result,
)
from ragmetrics.nightly.completeness import (
    Incomplete,
    failure_summary,
    find_incomplete,
    mark_call_failures,
    outputs_jsonl,
)
from ragmetrics.nightly.config import (
    DatasetRunSpec,
    FileRunSpec,
    FusionRunSpec,
    NightlyConfig,
    PipelineRunSpec,
    RetrieverRunSpec,
    load_config,
    run_name,
)
from ragmetrics.nightly.dataset import QADataset, load_dataset
from ragmetrics.nightly.gate import check_regressions, load_baseline
from ragmetrics.nightly.judged_samples import judged_samples_jsonl
from ragmetrics.options import OPERATIONAL_METRICS, ExitCode
from ragmetrics.render.safe_text import visible_controls
from ragmetrics.schema import (
    ComparisonSettings,
    DatasetSummary,
    GateResult,
    JudgeInfo,
    NightlyRun,
    NightWork,
    Report,
    ReportMetadata,
    RunResult,
    RunTrust,
    SampleText,
    WorkFigures,
)

if TYPE_CHECKING:
    from ragmetrics.engines import Engine
    from ragmetrics.judge.base import Judge
    from ragmetrics.retrieval.run import Run
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
        """3 when the night is incomplete (whatever the gate says: a broken night never passes), else 1 on a
        regression, else 4 when pairs were not comparable with the baseline (its data or judge changed), else 0."""
        if self.incomplete:
            return EXIT_INCOMPLETE
        if self.gate is not None and self.gate.failed:
            return EXIT_REGRESSION
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
) -> PipelineOutcome:
    """Run a whole evaluation. `baseline`, `output_dir` and `engine` ('local', 'ray') override the config;
    `write=False` skips artifacts; `refresh_pipeline` calls the pipeline and generator again instead of
    reusing their cached outputs."""
    if not isinstance(config, NightlyConfig):
        config = load_config(config)
    if engine is not None:
        config = config.model_copy(update={"engine": config.engine.model_copy(update={"kind": engine})})
    with own_metrics(config):
        return _run_pipeline(config, baseline, output_dir, progress, write, log, refresh_pipeline)


@contextmanager
def own_metrics(config: NightlyConfig) -> Iterator[None]:
    """The team's own metrics (judge.custom_metrics), in the registry for this run only."""
    where = [p for p in (config.source_dir, Path.cwd()) if p is not None]
    own = config.judge.metric_specs("judge.custom_metrics", where) if config.judge is not None else []
    with registered_metrics(own):
        yield


def _run_pipeline(
    config: NightlyConfig,
    baseline: Path | None,
    output_dir: Path | None,
    progress: bool | None,
    write: bool,
    log: Log | None,
    refresh_pipeline: bool,
) -> PipelineOutcome:
    show = config.progress if progress is None else progress
    say: Log = log or (lambda message: print(visible_controls(message), file=sys.stderr))
    notes: list[str] = []
    timings: dict[str, float] = {}
    # Read the baseline first: a wrong path should fail in a second, not after an hour of judging.
    baseline_path = baseline if baseline is not None else config.baseline.path
    if baseline_path is None:  # a night pinned with `ragmetrics bless` is the default baseline
        from ragmetrics.nightly.artifacts import pinned_report

        baseline_path = pinned_report(output_dir or config.output.dir)
        if baseline_path is not None:
            notes.append(f"gate: against the pinned baseline {baseline_path.parent} (ragmetrics bless)")
    baseline_report = load_baseline(baseline_path) if baseline_path is not None else None
    # Resolved now: a path through `latest` points at tonight's folder once tonight is written.
    baseline_folder = baseline_path.resolve().parent.name if baseline_path is not None else None

    with _timed(timings, "dataset"):
        label_columns = (
            sorted(set((config.human_labels.columns or {}).values())) if config.human_labels else []
        )
        dataset = load_dataset(config.dataset, progress=show and sys.stderr.isatty(), keep=label_columns)
    for bad in dataset.skipped:
        notes.append(f"skipped {bad.describe(dataset.source)}")
    if dataset.skipped:
        say(
            f"ragmetrics: skipped {len(dataset.skipped)} bad rows of {dataset.source} (listed in report.json)"
        )

    calls = target_calls(config, output_dir=output_dir, refresh=refresh_pipeline, progress=show)
    answered: dict[str, AnsweredRun] = {}
    try:
        with _timed(timings, "runs"):
            runs = build_runs(config, dataset, progress=show, calls=calls, answered=answered)
        if config.generator is not None:
            with _timed(timings, "generator"):
                generate_for_runs(config, dataset, runs, answered, calls, notes)
    finally:
        if calls.cache is not None:
            calls.cache.close()
    for run_answers in answered.values():
        notes.extend(run_answers.notes)
    results: dict[str, RunResult] = {}
    judge_info: JudgeInfo | None = None
    judged_samples: dict[str, list[RagSample]] = {}
    from ragmetrics.engines import make_engine

    worker = (
        make_engine(config.engine.kind, **config.engine.options()) if config.engine.kind != "local" else None
    )
    try:
        with _timed(timings, "retrieval"):
            for name, result in score_retrieval(
                config, dataset, runs, notes, progress=show, engine=worker
            ).items():
                results[name] = result
        work_estimate = _judge_estimate(config, dataset, runs, answered, calls, output_dir)
        with _timed(timings, "judge"):
            judged, judge_info = score_judge(
                config,
                dataset,
                runs,
                notes,
                progress=show,
                engine=worker,
                answered=answered,
                judged=judged_samples,
            )
    finally:
        if worker is not None:
            worker.close()
    for name, result in judged.items():
        results[name] = results[name].merge(result) if name in results else result
    for name, run_answers in answered.items():
        operational = operational_result(run_answers)
        results[name] = results[name].merge(operational) if name in results else operational
    mark_call_failures(results, answered)
    ordered = [results[n] for n in runs if n in results]
    if not ordered:
        raise ConfigError("no run produced any score; check the notes above and the config's metrics")
    incomplete = find_incomplete(ordered, config.max_failure_rate)
    for line in failure_summary(ordered, incomplete, config.max_failure_rate):
        say(line)

    with _timed(timings, "compare"):
        report = compare_runs(config, ordered, notes)
    with _timed(timings, "trust"):
        labels = attach_human_labels(config, {r.name: r for r in report.runs}, report, dataset)
    report.metadata.config = config_snapshot(config)
    report.metadata.dataset_fingerprint = dataset.fingerprint
    report.metadata.truth_fingerprint = dataset.truth_fingerprint or None
    report.metadata.versions = versions()
    report.metadata.notes = [*report.metadata.notes, *notes]
    report.metadata.nightly = NightlyRun(
        name=config.name,
        dataset=DatasetSummary.model_validate(dataset.summary()),
        judge=judge_info,
        failures={r.name: _failure_counts(r) for r in ordered},
        samples={
            s.id: SampleText(question=s.question, answer=s.answer, reference=s.reference)
            for s in dataset.samples
        },
        timings_s=timings,
        work=_actual_work(work_estimate, calls, judge_info, timings),
    )

    gate = None
    if baseline_report is not None:
        gate = check_regressions(
            report,
            baseline_report,
            baseline_source=str(baseline_path),
            thresholds=config.baseline.threshold,
            metrics=config.baseline.metrics,
            test=config.compare.test,
            correction=config.compare.correction,
            alpha=config.compare.alpha,
            seed=config.compare.seed,
            permutations=config.compare.permutations,
            labels=labels,
            use_ppi=config.baseline.use_ppi,
            beyond_judge_noise=config.baseline.beyond_judge_noise,
            incomplete=[(i.run, i.metric, i.describe()) for i in incomplete],
            explicit=set(config.baseline.metrics or ()) | set(config.baseline.max_drop_per_metric),
            on_change=config.baseline.on_change,
        )
        report.metadata.nightly.regression = gate
    report.metadata.nightly.incomplete = [i.describe() for i in incomplete]

    outcome = PipelineOutcome(report=report, gate=gate, notes=notes, incomplete=incomplete)
    if write:
        from ragmetrics.nightly.artifacts import write_artifacts

        extra = {"pipeline_outputs.jsonl": outputs_jsonl(calls.records)} if calls.records else {}
        if judged_samples:
            extra["judged_samples.jsonl"] = judged_samples_jsonl(judged_samples)
        folder, written = write_artifacts(
            report,
            output_dir if output_dir is not None else config.output.dir,
            formats=config.output.formats,
            plots=config.output.plots,
            gate=gate,
            base_url=config.judge.base_url if config.judge is not None else None,
            keep=config.output.keep,
            extra_texts=extra,
            secrets=calls.secrets(),
            protect=[baseline_path.parent] if baseline_path is not None else [],
        )
        outcome.folder, outcome.artifacts = folder, written
        if config.output.history:
            outcome.history_page = _update_history(config, folder, report, notes, baseline_folder)
    return outcome


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
    estimate: NightWork, calls: TargetCalls, judge_info: JudgeInfo | None, timings: Mapping[str, float]
) -> NightWork:
    """The estimate beside what the night spent: requests and tokens from the judge's own count."""
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
    seconds = {"judge": timings.get("judge", 0.0)}
    if calls.made.get("pipeline"):
        seconds["pipeline"] = timings.get("runs", 0.0)
    if calls.made.get("generator"):
        seconds["generator"] = timings.get("generator", 0.0)
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


@contextmanager
def _steps(description: str, total: int, enabled: bool) -> Iterator[Callable[[], None]]:
    """A progress bar for a multi-step stage (stderr, only on a terminal)."""
    if not enabled or total < 1 or not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda: bar.advance(task)


def target_calls(
    config: NightlyConfig,
    *,
    output_dir: Path | None = None,
    refresh: bool = False,
    progress: bool = False,
    dry_run: bool = False,
) -> TargetCalls:
    """The calls of the team's pipeline and generator for one night: their output cache (only when the
    config has a pipeline run or a generator), the folders a callable is imported from. A dry run reads the
    cache where it exists and never creates it."""
    from ragmetrics.nightly.target_calls import OutputCache

    needs = config.generator is not None or any(isinstance(s, PipelineRunSpec) for s in config.runs)
    cache = None
    if needs:
        path = config.pipeline_cache or (output_dir or config.output.dir) / "pipeline_cache.sqlite"
        cache = OutputCache(path) if not dry_run or path.exists() else None
    search = [Path.cwd()]
    if config.source_dir is not None:
        search.insert(0, config.source_dir)
    return TargetCalls(
        cache=cache,
        search=search,
        refresh=refresh,
        dry_run=dry_run,
        progress=(lambda label, total: _steps(label, total, True)) if progress else None,
    )


def build_runs(
    config: NightlyConfig,
    dataset: QADataset,
    *,
    progress: bool = False,
    calls: TargetCalls | None = None,
    answered: dict[str, AnsweredRun] | None = None,
) -> dict[str, Run | None]:
    """Every run the config lists, by name, in config order; None for a run with no ranking (a dataset
    without retrieved ids, a pipeline that returns contexts no passage matches). Pipeline runs call the
    team's system now and leave their answers in `answered`."""
    runs: dict[str, Run | None] = {}
    answered = answered if answered is not None else {}
    with _steps("building runs", len(config.runs), progress) as advance:
        for i, spec in enumerate(config.runs):
            name = run_name(spec)
            if isinstance(spec, FusionRunSpec):
                runs[name] = _fuse_runs(spec, i, runs)
            elif isinstance(spec, PipelineRunSpec):
                calls = calls if calls is not None else TargetCalls(cache=None, search=[Path.cwd()])
                answered[name] = call_pipeline(spec, dataset, calls)
                runs[name] = answered[name].run
            else:
                runs[name] = _build_run(spec, name, i, dataset)
            advance()
    return runs


def _fuse_runs(spec: FusionRunSpec, index: int, built: dict[str, Run | None]) -> Run:
    from ragmetrics.retrieval.fusion import fuse

    unknown = [n for n in spec.runs if n not in built]
    if unknown:
        raise ConfigError(
            f"runs[{index}] (fusion {spec.name!r}): {', '.join(map(repr, unknown))} must be runs listed before it; "
            f"listed so far: {', '.join(built) or 'none'}"
        )
    unranked = [n for n in spec.runs if built[n] is None]
    if unranked:
        raise ConfigError(
            f"runs[{index}] (fusion {spec.name!r}): {', '.join(map(repr, unranked))} has no ranking to fuse "
            "(no retrieved ids or context ids)"
        )
    try:
        ranked = [run for n in spec.runs if (run := built[n]) is not None]
        return fuse(ranked, spec.method, norm=spec.norm, weights=spec.weights, k=spec.k, gamma=spec.gamma,
                    sigma=spec.sigma, phi=spec.phi, name=spec.name)  # fmt: skip
    except InputError as exc:
        raise ConfigError(f"runs[{index}] (fusion {spec.name!r}): {exc}") from None


def _build_run(
    spec: DatasetRunSpec | FileRunSpec | RetrieverRunSpec, name: str, index: int, dataset: QADataset
) -> Run | None:
    if isinstance(spec, DatasetRunSpec):
        # Without retrieved ids the dataset's run has no ranking: its contexts and answers are still judged.
        return dataset.run(name) if dataset.has_run else None
    if isinstance(spec, FileRunSpec):
        return _read_run_file(spec.path, spec.format, name)
    if dataset.passages is None:
        raise ConfigError(
            f"runs[{index}]: retriever {spec.retriever!r} needs passages: set dataset.passages "
            "(a JSONL of {id, text})"
        )
    retrievers = importlib.import_module("ragmetrics.retrievers")
    passages = [p.as_dict() for p in dataset.passages.values()]
    queries = [(s.id, s.question) for s in dataset.samples]
    try:
        run: Run = retrievers.build_run(spec.retriever, dict(spec.params), passages, queries, name)
    except (InputError, ConfigError) as exc:
        raise ConfigError(f"runs[{index}] (retriever {spec.retriever!r}): {exc}") from None
    return run


def _read_run_file(path: Path, fmt: str, name: str) -> Run:
    from ragmetrics.retrieval.run import Run

    if not path.is_file():
        raise InputError("run file not found", source=str(path))
    readers = {"auto": Run.read, "trec": Run.from_trec, "json": Run.from_json, "jsonl": Run.from_jsonl}
    run: Run = readers[fmt](path, name)
    return run


def score_retrieval(
    config: NightlyConfig,
    dataset: QADataset,
    runs: dict[str, Run | None],
    notes: list[str],
    *,
    progress: bool = False,
    engine: Engine | None = None,
) -> dict[str, RunResult]:
    """Retrieval metrics for every run, where the dataset has relevance judgments."""
    metrics = config.retrieval.metrics
    if not metrics:
        return {}
    if not dataset.has_qrels:
        notes.append(
            f"retrieval metrics not computed: {dataset.source} has no relevant_ids (relevance judgments)"
        )
        return {}
    if all(run is None for run in runs.values()):
        notes.append("retrieval metrics not computed: no run has a ranking (retrieved or context ids)")
        return {}
    from ragmetrics.retrieval.evaluate import evaluate

    unranked = [name for name, run in runs.items() if run is None]
    if unranked:
        notes.append(
            f"retrieval metrics not computed for {', '.join(map(repr, unranked))}: no ranking (the dataset has "
            "no retrieved_ids, or the pipeline gave no context ids and its contexts match no passage)"
        )
    ranked = {name: run for name, run in runs.items() if run is not None}
    if not ranked:
        return {}
    qrels = dataset.qrels()
    lengths = _passage_lengths(config, dataset)
    budget = {"lengths": lengths, "straddle": config.retrieval.straddle} if lengths is not None else {}
    out: dict[str, RunResult] = {}
    with _steps("retrieval metrics", len(ranked), progress) as advance:
        for name, run in ranked.items():
            if engine is None:
                out[name] = evaluate(
                    qrels, run, metrics, query_set=config.retrieval.query_set, name=name, **budget
                )
            else:
                out[name] = engine.score_retrieval(
                    qrels, run, metrics, query_set=config.retrieval.query_set, name=name, **budget
                )
            advance()
    return out


def _passage_lengths(config: NightlyConfig, dataset: QADataset) -> Any:
    """Token counts of the dataset's passages when a token-budget metric is asked for, else None."""
    from ragmetrics.retrieval.metrics import parse_metrics

    if not any(request.budget for request in parse_metrics(config.retrieval.metrics)):
        return None
    if dataset.passages is None:
        raise ConfigError(
            "token-budget metrics (e.g. recall@512tok) need the passages' texts to count their tokens: set "
            "dataset.passages (JSONL of {id, text})"
        )
    from ragmetrics.retrieval.budget import TokenLengths, count_tokens

    texts = {pid: passage.text for pid, passage in dataset.passages.items()}
    return TokenLengths(count_tokens(texts, config.retrieval.tokenizer))


def run_samples(
    config: NightlyConfig,
    dataset: QADataset,
    name: str,
    run: Run | None,
    top_k: int,
    answered: Mapping[str, AnsweredRun] | None = None,
) -> list[RagSample] | None:
    """A run's samples as they are judged (and answered by a generator): the pipeline's or the generator's
    where they produced them, the dataset's own for its run, else the texts of the run's top-k passages.
    None when the run has no contexts to offer (no passages to look its ids up in)."""
    if answered is not None and name in answered:
        return answered[name].samples
    own = {run_name(s) for s in config.runs if isinstance(s, DatasetRunSpec)}
    if name in own and (
        run is None or dataset.passages is None or any(s.contexts is not None for s in dataset.samples)
    ):
        return dataset.samples
    if dataset.passages is not None and run is not None:
        return contexts_from_run(run, dataset, top_k, keep_answers=name in own)
    return None


def judge_plan(
    config: NightlyConfig,
    dataset: QADataset,
    runs: Mapping[str, Run | None],
    notes: list[str],
    answered: Mapping[str, AnsweredRun] | None = None,
) -> dict[str, tuple[list[RagSample], list[str]]]:
    """Per run: the samples to judge and the metrics that apply to them (the rest named in `notes`)."""
    if config.judge is None or not config.judge.metrics:
        return {}
    wanted = config.judge.runs if config.judge.runs is not None else list(runs)
    plan: dict[str, tuple[list[RagSample], list[str]]] = {}
    for name in wanted:
        samples = run_samples(config, dataset, name, runs[name], config.judge.contexts_top_k, answered)
        if samples is None:
            message = f"judge metrics not computed for run {name!r}: no passages to build its contexts from"
            if config.judge.runs is not None:
                raise ConfigError(f"judge.runs: {message} (set dataset.passages)")
            notes.append(message)
            continue
        samples = [_with_dataset_fields(s, dataset) for s in samples]
        metrics = []
        for metric in config.judge.metrics:
            if any(not s.missing_fields(metric) for s in samples):
                metrics.append(metric)
            else:
                needed = ", ".join(required_fields(metric))
                notes.append(f"{metric} not computed for run {name!r}: no sample has all of {needed}")
        if metrics:
            plan[name] = (samples, metrics)
    return plan


def _with_dataset_fields(sample: RagSample, dataset: QADataset) -> RagSample:
    """The sample with what the dataset knows beside its text: the ids its qrels judge relevant (citation
    metrics) and its other columns (metrics of the team's own)."""
    graded = dataset.relevance.get(sample.id)
    update: dict[str, Any] = {}
    if graded is not None and sample.relevant_ids is None:
        update["relevant_ids"] = sorted(d for d, g in graded.items() if g >= 1)
    if sample.extra is None and dataset.extras.get(sample.id):
        update["extra"] = dict(dataset.extras[sample.id])
    return sample.model_copy(update=update) if update else sample


def generate_for_runs(
    config: NightlyConfig,
    dataset: QADataset,
    runs: Mapping[str, Run | None],
    answered: dict[str, AnsweredRun],
    calls: TargetCalls,
    notes: list[str],
) -> None:
    """Answers from the config's generator for every run it applies to (into `answered`): the question and
    the run's top-k contexts in, an answer out; the judge then sees exactly the contexts it answered from."""
    generator = config.generator
    assert generator is not None
    own = {run_name(s) for s in config.runs if isinstance(s, DatasetRunSpec)}

    def has_answers(name: str) -> bool:
        if name in answered:
            return any(s.answer is not None for s in answered[name].samples)
        return name in own and any(s.answer is not None for s in dataset.samples)

    for name in generator_runs(list(runs), generator, has_answers):
        samples = run_samples(config, dataset, name, runs[name], generator.top_k, answered)
        if samples is None:
            message = f"generator: run {name!r} has no contexts to answer from (set dataset.passages)"
            if generator.runs is not None:
                raise ConfigError(message)
            notes.append(message)
            continue
        if name not in answered:
            samples = [
                s.model_copy(
                    update={
                        "contexts": None if s.contexts is None else s.contexts[: generator.top_k],
                        "context_ids": None if s.context_ids is None else s.context_ids[: generator.top_k],
                    }
                )
                for s in samples
            ]
        answered[name] = generate_answers(generator, name, samples, calls, dataset, prior=answered.get(name))


def contexts_from_run(
    run: Run, dataset: QADataset, top_k: int, *, keep_answers: bool = False
) -> list[RagSample]:
    """Samples whose contexts are the texts of the run's top-k passages.

    Answers are kept only for the dataset's own run (`keep_answers`): another run's contexts did not produce them.
    """
    assert dataset.passages is not None
    ranking = run.to_dict()
    samples = []
    for sample in dataset.samples:
        doc_ids = list(ranking.get(sample.id, {}))[:top_k]
        unknown = [d for d in doc_ids if d not in dataset.passages]
        if unknown:
            raise InputError(
                f"run {run.name!r} retrieved {unknown[0]!r} for query {sample.id!r}, which is not a passage "
                "of the dataset, so its context text is unknown",
                source=run.source,
            )
        samples.append(
            RagSample(
                id=sample.id,
                question=sample.question,
                contexts=[dataset.passages[d].text for d in doc_ids],
                context_ids=doc_ids,
                answer=sample.answer if keep_answers else None,
                reference=sample.reference,
                language=sample.language,
            )
        )
    return samples


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
) -> tuple[dict[str, RunResult], JudgeInfo | None]:
    """Judge metrics per run through one judge (one cache, one usage count); returns the judge's final info.
    `judged`, when given, receives each run's samples exactly as the judge saw them.

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
        labels = load_labels(spec.path, scale=spec.scale)
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


def compare_runs(config: NightlyConfig, results: list[RunResult], notes: list[str]) -> Report:
    """One Report over every run; metrics that not every run has are described but not tested."""
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
            metadata=ReportMetadata(query_count=len({q for r in results for q in r.per_query})),
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
