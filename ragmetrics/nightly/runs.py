"""The runs of a night: each config run built (retriever, file, fusion, the team's pipeline), its retrieval
scores, the samples the judge sees for it, and answers generated for runs that have none. Shared by the night
(`pipeline`) and its dry run (`estimate`), which therefore never import each other."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics._textfile import check_regular_file
from ragmetrics.errors import ConfigError, InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.registry import required_fields
from ragmetrics.nightly.answers import (
    AnsweredRun,
    TargetCalls,
    call_pipeline,
    generate_answers,
    generator_runs,
)
from ragmetrics.nightly.applicability import mark_not_applicable, not_applicable_note
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.nightly.config_runs import (
    DatasetRunSpec,
    FileRunSpec,
    FusionRunSpec,
    PipelineRunSpec,
    RetrieverRunSpec,
    run_name,
)
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.schema import (
    RunResult,
)

if TYPE_CHECKING:
    from ragmetrics.engines import Engine
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrievers import RetrieverTiming


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
    retrieved: dict[str, RetrieverTiming] | None = None,
) -> dict[str, Run | None]:
    """Every run the config lists, by name, in config order; None for a run with no ranking (a dataset
    without retrieved ids, a pipeline that returns contexts no passage matches). Pipeline runs call the
    team's system now and leave their answers in `answered`; retriever runs leave where their time went
    (index building, each question's search) in `retrieved`."""
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
            elif isinstance(spec, DatasetRunSpec) and dataset.traced is not None:
                answered[name] = traced_answers(name, dataset)
                runs[name] = answered[name].run
                runs.update(dataset.traced.span_runs(name))
            else:
                dry = calls.dry_notes if calls is not None and calls.dry_run else None
                runs[name] = _build_run(spec, name, i, dataset, retrieved, dry_notes=dry, depth=_depth(config),
                                        index_dir=config.index_dir)  # fmt: skip
            advance()
    return runs


def retrieval_seconds(
    config: NightlyConfig, retrieved: Mapping[str, RetrieverTiming]
) -> dict[str, dict[str, float]]:
    """Run name -> query id -> seconds its retrieval took: a retriever run's own searches, and a fusion run's
    the sum of the runs it fuses (the night searches them one after the other), where all of them were timed.
    Runs from files, the dataset or the team's pipeline are absent: their retrieval is in their own figures."""
    seconds: dict[str, dict[str, float]] = {name: dict(t.search_s) for name, t in retrieved.items()}
    for spec in config.runs:
        if isinstance(spec, FusionRunSpec) and all(n in seconds for n in spec.runs):
            parts = [seconds[n] for n in spec.runs]
            shared = set.intersection(*(set(p) for p in parts))
            seconds[run_name(spec)] = {q: sum(p[q] for p in parts) for q in sorted(shared)}
    return seconds


def traced_answers(name: str, dataset: QADataset) -> AnsweredRun:
    """The traced system as one run: the dataset's answers and ranking (from the traces), latency, tokens
    and cost per question, and a `trace_missing` failure for each question no trace answered."""
    traced = dataset.traced
    assert traced is not None
    return AnsweredRun(
        name=name,
        samples=dataset.samples,
        failed=traced.missing_failures(),
        lacking={qid: dict(fields) for qid, fields in traced.lacking.items()},
        latency_s=dict(traced.latency_s),
        tokens=dict(traced.tokens),
        cost=dict(traced.cost),
        run=dataset.run(name) if dataset.has_run else None,
        notes=list(traced.notes),
        stages=["traces"],
    )


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
    spec: DatasetRunSpec | FileRunSpec | RetrieverRunSpec,
    name: str,
    index: int,
    dataset: QADataset,
    retrieved: dict[str, RetrieverTiming] | None = None,
    *,
    dry_notes: list[str] | None = None,
    depth: int = 10,
    index_dir: Path | None = None,
) -> Run | None:
    """One run of the config; in a dry run (`dry_notes` given: how each estimate was made goes there) a
    retriever run is a stand-in built on a sample of the corpus, `depth` passages deep."""
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
    if dry_notes is not None:  # estimated from a sample of the corpus: a dry run must not embed it all (dry_retrievers)
        from ragmetrics.nightly.dry_retrievers import estimate_retriever

        try:
            stand_in, timing, how = estimate_retriever(spec.retriever, dict(spec.params), passages, queries, name, depth,
                                                       index_dir=index_dir)  # fmt: skip
        except (InputError, ConfigError) as exc:
            raise ConfigError(f"runs[{index}] (retriever {spec.retriever!r}): {exc}") from None
        if retrieved is not None:
            retrieved[name] = timing
        dry_notes.append(how)
        return stand_in
    try:
        run: Run
        run, timing = retrievers.build_timed_run(spec.retriever, dict(spec.params), passages, queries, name,
                                                 index_dir=index_dir)  # fmt: skip
    except (InputError, ConfigError) as exc:
        raise ConfigError(f"runs[{index}] (retriever {spec.retriever!r}): {exc}") from None
    if retrieved is not None:
        retrieved[name] = timing
    if dataset.attacks is not None:  # each question sees its own attack's planted documents only
        from ragmetrics.attacks.exposure import own_documents_only
        from ragmetrics.retrieval.run import Run

        own = own_documents_only(run.to_dict(), dataset.attacks.rows)
        run = Run.from_dict(own, name=name, source=run.source)
    return run


def _depth(config: NightlyConfig) -> int:
    """How deep a dry run's stand-in rankings go: as deep as the judge or the generator reads."""
    return max(10, config.judge.contexts_top_k if config.judge is not None else 0,
               config.generator.top_k if config.generator is not None else 0)  # fmt: skip


def _read_run_file(path: Path, fmt: str, name: str) -> Run:
    from ragmetrics.retrieval.run import Run

    if not path.exists():
        broken = " (a symbolic link to a path that does not exist)" if path.is_symlink() else ""
        raise InputError(f"run file not found{broken}", source=str(path))
    check_regular_file(path, prefix="run file: ")  # a directory, FIFO or device (/dev/zero) said as such
    if path.is_dir():
        raise InputError("run file: is a directory, expected a file", source=str(path))
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
    lengths = passage_lengths(config, dataset)
    budget = {"lengths": lengths, "straddle": config.retrieval.straddle} if lengths is not None else {}
    out: dict[str, RunResult] = {}
    unjudged = dataset.unjudged()
    with _steps("retrieval metrics", len(ranked), progress) as advance:
        for name, run in ranked.items():
            if engine is None:
                result = evaluate(
                    qrels, run, metrics, query_set=config.retrieval.query_set, name=name, **budget
                )
            else:
                result = engine.score_retrieval(
                    qrels, run, metrics, query_set=config.retrieval.query_set, name=name, **budget
                )
            out[name] = mark_not_applicable(result, unjudged)
            advance()
    note = not_applicable_note(unjudged, dataset.unanswerable, dataset.attack_ids)
    if note is not None:
        notes.append(note)
    return out


def traced_run_names(config: NightlyConfig, dataset: QADataset) -> list[str]:
    """The runs built from traces other than the traced system itself: one per traced retriever/reranker."""
    if dataset.traced is None:
        return []
    own = [run_name(s) for s in config.runs if isinstance(s, DatasetRunSpec)]
    return [name for prefix in own for name in dataset.traced.span_run_names(prefix)]


def passage_lengths(config: NightlyConfig, dataset: QADataset) -> Any:
    """Token counts of the dataset's passages when a token-budget metric is asked for, else None."""
    from ragmetrics.retrieval.metric_parse import parse_metrics

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
    unanswerable = dataset.unanswerable
    attacked = dataset.attack_ids
    for name in wanted:
        samples = run_samples(config, dataset, name, runs[name], config.judge.contexts_top_k, answered)
        if samples is not None and attacked:  # attacks are scored by their checks; the judge sees clean twins
            samples = [s for s in samples if s.id not in attacked]
        if samples is None:
            message = f"judge metrics not computed for run {name!r}: no passages to build its contexts from"
            if config.judge.runs is not None:
                raise ConfigError(f"judge.runs: {message} (set dataset.passages)")
            notes.append(message)
            continue
        samples = [_with_dataset_fields(s, dataset, unanswerable) for s in samples]
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


def _with_dataset_fields(sample: RagSample, dataset: QADataset, unanswerable: set[str]) -> RagSample:
    """The sample with what the dataset knows beside its text: the ids its qrels judge relevant (citation
    metrics), whether the question is answerable at all (whichever run's sample it is), and its other
    columns (metrics of the team's own)."""
    graded = dataset.relevance.get(sample.id)
    update: dict[str, Any] = {}
    if sample.id in unanswerable and sample.answerable is None:
        update["answerable"] = False
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
