"""`ragmetrics sweep CONFIG`: the grid built, its shared stages run once, the race on the selection half, the
winner confirmed on the confirmation half, and what each configuration costs a user (latency, tokens, cost)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragmetrics.errors import ConfigError, InputError
from ragmetrics.sweep.early import Drop, Race
from ragmetrics.sweep.grid import AS_GIVEN, Configuration, expand, pick_baseline
from ragmetrics.sweep.pareto import Point, operational_points
from ragmetrics.sweep.scoring import Objective, Scores, check_metric
from ragmetrics.sweep.select import Confirmation, confirm, rank_finalists
from ragmetrics.sweep.split import Split, relevant_strata, split_questions
from ragmetrics.sweep.stages import Mapper, Stages, build_stages

if TYPE_CHECKING:
    from ragmetrics.nightly.config_night import NightlyConfig
    from ragmetrics.nightly.qa_dataset import QADataset
    from ragmetrics.sweep.config import SweepConfig

__all__ = ["SweepResult", "run_sweep", "sweep_inputs"]


@dataclass
class SweepResult:
    name: str
    metric: str
    metric_kind: str
    grid: list[Configuration]
    baseline: Configuration
    split: Split
    stages: Stages
    scores: Scores
    drops: list[Drop]
    runner_up: str | None
    confirmation: Confirmation
    points: list[Point]
    units_asked: int
    judge_calls: int
    units_full: int
    """Units a sweep without early dropping would have asked for: every configuration on the selection half, and
    the winner, runner-up and baseline on the confirmation half."""
    failures: dict[str, dict[str, str]] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    relevance: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """chunking label -> question id -> judged id -> grade: what each chunking was scored against."""
    qrels_source: str = "as given"
    """What the judgments are: 'as given' (the dataset's qrels on its passages), or, with a chunking axis,
    `chunked.SPAN_QRELS` or `chunked.PASSAGE_QRELS`."""
    qrels_note: str = "the dataset's qrels, on its passages as given"

    @property
    def units_avoided(self) -> int:
        return self.units_full - self.units_asked


@dataclass(frozen=True)
class SweepInputs:
    questions: dict[str, str]
    references: dict[str, str | None]
    relevance: dict[str, dict[str, dict[str, int]]]
    """chunking label -> question id -> judged passage (or chunk) id -> grade."""
    corpora: dict[str, list[dict[str, str]]]
    strata: dict[str, str]
    strata_source: str
    left_out: dict[str, str] = field(default_factory=dict)
    """Question id -> why the sweep cannot score it (no judged relevant document; the metric does not apply)."""
    qrels_source: str = "as given"
    qrels_note: str = "the dataset's qrels, on its passages as given"


def _strata(sweep: SweepConfig, dataset: QADataset, qids: Sequence[str]) -> tuple[dict[str, str], str]:
    column = sweep.split.strata
    if column is None:
        return dict.fromkeys(qids, "all"), "none"
    has = {q: dataset.extras.get(q, {}).get(column) for q in qids}
    if column == "auto":
        has = {q: dataset.extras.get(q, {}).get("kind") for q in qids}
        if all(v is None for v in has.values()):
            return relevant_strata(dataset.relevance, qids), "relevant documents (no 'kind' column)"
        column = "kind"
    missing = [q for q, v in has.items() if v is None]
    if missing:
        raise ConfigError(
            f"sweep.split.strata: question {missing[0]!r} has no {column!r} value ({len(missing)} of {len(qids)} "
            "lack one); name another column, or null for no strata"
        )
    return {q: str(v) for q, v in has.items()}, column


def sweep_inputs(config: NightlyConfig, dataset: QADataset, metric_kind: str) -> SweepInputs:
    """The questions a sweep scores, and the corpus of each chunking of the axis."""
    sweep = config.sweep
    assert sweep is not None
    if dataset.passages is None:
        raise ConfigError("sweep: the dataset has no passages to retrieve from; set dataset.passages")
    passages = [p.as_dict() for p in dataset.passages.values()]
    judgments = None
    if sweep.chunking is not None:
        from ragmetrics.sweep.chunked import axis_judgments

        judgments = axis_judgments(dataset, {p["id"]: p["text"] for p in passages})
    spans = judgments is not None and judgments.spans is not None
    samples, left_out = [], {}
    for sample in dataset.samples:
        judged = judgments.relevant(sample.id) if judgments is not None and spans else None
        why = _unscorable(sweep.metric, metric_kind, sample, dataset.relevance.get(sample.id, {}), judged)
        if why is None:
            samples.append(sample)
        else:
            left_out[sample.id] = why
    if not samples:
        raise ConfigError(
            f"sweep: no question can be scored on {sweep.metric!r} (no judged relevant document)"
        )
    qids = [s.id for s in samples]
    strata, source = _strata(sweep, dataset, qids)
    if sweep.chunking is not None:
        from ragmetrics.sweep.chunked import chunked_inputs

        corpora, relevance = chunked_inputs(sweep, samples, dataset, passages, judgments)
    else:
        corpora = {AS_GIVEN: passages}
        relevance = {AS_GIVEN: {q: dict(dataset.relevance.get(q, {})) for q in qids}}
    return SweepInputs(
        questions={s.id: s.question for s in samples},
        references={s.id: s.reference for s in samples},
        relevance=relevance,
        corpora=corpora,
        strata=strata,
        strata_source=source,
        left_out=left_out,
        **({"qrels_source": judgments.source, "qrels_note": judgments.note} if judgments is not None else {}),
    )


def _unscorable(
    metric: str, kind: str, sample: Any, relevance: Mapping[str, int], spans: Mapping[str, int] | None = None
) -> str | None:
    """Why a question gets no score on the sweep's metric, whatever the configuration (None: it gets one).
    `spans`: the question's span judgments, when the chunking axis is judged on the test set's spans."""
    if kind == "retrieval":
        if spans is not None:
            return None if any(g >= 1 for g in spans.values()) else "no judged relevant span"
        return None if any(g >= 1 for g in relevance.values()) else "no judged relevant document"
    from ragmetrics.judge.base import reference_not_applicable

    why = reference_not_applicable(metric, sample)
    return None if why is None else str(why)


def _make_judge(config: NightlyConfig) -> Any:
    from ragmetrics.judge.select import make_judge

    assert config.judge is not None
    return make_judge(config.judge.settings())


def run_sweep(
    config: NightlyConfig,
    *,
    dataset: QADataset | None = None,
    mapper: Mapper | None = None,
    judge: Any = None,
) -> SweepResult:
    """Run the `sweep:` section of `config` (module docstring). `mapper` runs the first stages elsewhere (Ray);
    `judge` replaces the judge the config describes (tests pass a counting one)."""
    sweep = config.sweep
    if sweep is None:
        raise ConfigError("the config has no 'sweep:' section (docs/sweeps.md)")
    judge_metrics = config.judge.metrics if config.judge is not None else []
    kind = check_metric(sweep.metric, config.retrieval.metrics, judge_metrics)
    grid = expand(sweep)
    baseline = pick_baseline(sweep, grid)
    if dataset is None:
        from ragmetrics.nightly.load import load_dataset

        dataset = load_dataset(config.dataset, progress=False)
    inputs = sweep_inputs(config, dataset, kind)
    split = split_questions(
        list(inputs.questions), inputs.strata, seed=sweep.split.seed, share=sweep.split.selection_share,
        source=inputs.strata_source,
    )  # fmt: skip
    stages = build_stages(
        sweep, grid, inputs.corpora, inputs.questions, mapper=mapper, index_dir=config.index_dir
    )
    objective = Objective(
        metric=sweep.metric,
        stages=stages,
        questions=inputs.questions,
        passages={c: {p["id"]: p["text"] for p in corpus} for c, corpus in inputs.corpora.items()},
        relevance=inputs.relevance,
        references=inputs.references,
        judge=(judge if judge is not None else _make_judge(config)) if kind == "judge" else None,
    )
    by_name = {c.name: c for c in grid}
    scores: Scores = {c.name: {} for c in grid}
    race = Race([c.name for c in grid], sweep.early_drop.alpha)
    batch = sweep.early_drop.batch_size if sweep.early_drop.enabled else len(split.selection)
    for start in range(0, len(split.selection), batch):
        qids = list(split.selection[start : start + batch])
        fresh = objective.score([by_name[n] for n in race.alive], qids)
        for name, row in fresh.items():
            scores[name].update(row)
        if sweep.early_drop.enabled and start + batch < len(split.selection):
            race.feed(fresh, qids)
    if not any(v is not None for name in race.alive for v in scores[name].values()):
        causes = sorted({why for rows in objective.failures.values() for why in rows.values()})[:3]
        raise InputError(
            f"sweep: no configuration has a score on the selection half; every {sweep.metric} failed "
            f"({'; '.join(causes) or 'no cause recorded'})"
        )
    winner, runner_up = rank_finalists(scores, race.alive, [d.name for d in race.drops], split.selection)
    finalists = list(dict.fromkeys([winner, *([runner_up] if runner_up else []), baseline.name]))
    for name, row in objective.score([by_name[n] for n in finalists], list(split.confirmation)).items():
        scores[name].update(row)
    others = [(baseline.name, "baseline")] if baseline.name != winner else []
    if runner_up == baseline.name:  # one configuration in both roles: one test, not the same test twice
        others = [(baseline.name, "baseline and runner-up")]
    elif runner_up is not None:
        others.append((runner_up, "runner-up"))
    confirmation = confirm(
        winner, others, scores, split.selection, split.confirmation, test=config.compare.test,
        alpha=config.compare.alpha, seed=config.compare.seed, permutations=config.compare.permutations,
        correction=config.compare.correction,
    )  # fmt: skip
    points = operational_points(
        grid, stages, scores, split.selection, objective.passages, sweep.price_per_1k_tokens
    )
    return SweepResult(
        name=config.name,
        metric=sweep.metric,
        metric_kind=kind,
        grid=grid,
        baseline=baseline,
        split=split,
        stages=stages,
        scores=scores,
        drops=race.drops,
        runner_up=runner_up,
        confirmation=confirmation,
        points=points,
        units_asked=objective.units_asked,
        judge_calls=objective.judge_calls,
        units_full=len(grid) * len(split.selection) + len(finalists) * len(split.confirmation),
        failures=objective.failures,
        left_out=inputs.left_out,
        relevance=inputs.relevance,
        qrels_source=inputs.qrels_source,
        qrels_note=inputs.qrels_note,
    )


def selection_means(result: SweepResult) -> Mapping[str, float | None]:
    from ragmetrics.sweep.select import mean_of

    return {c.name: mean_of(result.scores[c.name], result.split.selection) for c in result.grid}
