"""The night's steps up to its scores: the baseline read first, the dataset loaded, every run built and
answered, retrieval and judge metrics scored (and an attack set's metrics), on the configured engine.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.answers import AnsweredRun, TargetCalls, operational_result
from ragmetrics.nightly.attacked import (
    attack_results,
    attack_summary_of,
    attacks_note,
    exposure_results,
    exposure_summary_of,
    judge_behaviours,
    pipeline_run_names,
    unjudge_attacks,
)
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.gate import load_baseline
from ragmetrics.nightly.judge_night import score_judge
from ragmetrics.nightly.load import load_dataset
from ragmetrics.nightly.night_state import Baseline, Night, Scored, timed
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.nightly.runs import (  # the night's runs, shared with the dry run
    build_runs,
    generate_for_runs,
    judge_plan,
    retrieval_seconds,
    score_retrieval,
)
from ragmetrics.schema import AdaptiveSummary, NightWork, Report, RunResult

if TYPE_CHECKING:
    from ragmetrics.retrieval.run import Run


def read_baseline(night: Night, baseline: Path | None) -> Baseline:
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
    return Baseline(path, report, path.resolve().parent if path is not None else None)


def load_night_dataset(night: Night) -> QADataset:
    config = night.config
    with timed(night.timings, "dataset"):
        label_columns = (
            sorted(set((config.human_labels.columns or {}).values())) if config.human_labels else []
        )
        dataset = load_dataset(
            config.dataset, progress=night.show and sys.stderr.isatty(), keep=label_columns
        )
    for bad in dataset.skipped:
        night.notes.append(f"skipped {bad.describe(dataset.source)}")
    if dataset.skipped:
        night.say(
            f"ragmetrics: skipped {len(dataset.skipped)} bad rows of {dataset.source} (listed in report.json)"
        )
    return dataset


def answer_runs(
    night: Night, dataset: QADataset, calls: TargetCalls
) -> tuple[dict[str, Run | None], dict[str, AnsweredRun]]:
    """Every run built (the team's pipeline called), and the generator's answers for runs that have none."""
    config = night.config
    answered: dict[str, AnsweredRun] = {}
    try:
        with timed(night.timings, "runs"):
            runs = build_runs(config, dataset, progress=night.show, calls=calls, answered=answered,
                              retrieved=night.retrieved)  # fmt: skip
        if config.generator is not None:
            with timed(night.timings, "generator"):
                generate_for_runs(config, dataset, runs, answered, calls, night.notes)
    finally:
        if calls.cache is not None:
            calls.cache.close()
    for name, search_s in retrieval_seconds(config, night.retrieved).items():
        # the generator answered a retriever run
        if name in answered and "pipeline" not in answered[name].stages:
            answered[name].add_retrieval(search_s)
    for run_answers in answered.values():
        night.notes.extend(run_answers.notes)
    night.notes.extend(f"pipeline cache: {who}: {what}" for who, what in calls.identities.items())
    return runs, answered


def score_runs(
    night: Night,
    dataset: QADataset,
    runs: dict[str, Run | None],
    answered: dict[str, AnsweredRun],
    calls: TargetCalls,
    baseline: Report | None,
) -> Scored:
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
        with timed(night.timings, "retrieval"):
            results.update(
                score_retrieval(config, dataset, runs, night.notes, progress=night.show, engine=worker)
            )
        work_estimate = _judge_estimate(config, dataset, runs, answered, calls, night.output_dir)
        with timed(night.timings, "judge"):
            judged, judge_info = score_judge(config, dataset, runs, night.notes, progress=night.show, engine=worker,
                                             answered=answered, judged=judged_samples, baseline=baseline,
                                             adaptive=adaptive, retrieval=results)  # fmt: skip
    finally:
        if worker is not None:
            worker.close()
    for name, result in judged.items():
        if dataset.attacks is not None:
            result = unjudge_attacks(result, dataset)
        merge_into(results, name, result)
    for name, run_answers in answered.items():
        merge_into(results, name, operational_result(run_answers))
    summary = adaptive[0] if adaptive else None
    if summary is not None:
        requests = (f"; {summary.calls} judge requests against about {summary.calls_full_estimate} for a full night"
                    if summary.calls else "")  # fmt: skip
        night.notes.append(
            f"adaptive night: {summary.judged} of {summary.questions} questions judged ({summary.stopped}): "
            f"{summary.units} of {summary.units_full} judge scores{requests}"
        )
        night.notes.extend(f"adaptive: {d.text}" for d in summary.decisions)
    return Scored(results, judge_info, judged_samples, work_estimate, summary)


def merge_into(results: dict[str, RunResult], name: str, result: RunResult) -> None:
    results[name] = results[name].merge(result) if name in results else result


def score_attacks(
    night: Night,
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
    with timed(night.timings, "attack checks"):
        verdicts = judge_behaviours(config, dataset, attacked_runs)
        exposure, exposed = exposure_results(config, dataset, runs, answered)
    for name, attacked in attack_results(dataset, attacked_runs, verdicts).items():
        merge_into(results, name, attacked)
    for name, exposures in exposure.items():
        merge_into(results, name, exposures)
    attacks = attack_summary_of(dataset, attacked_runs, results, verdicts, config.compare.alpha)
    attacks["exposure"] = exposure_summary_of(dataset, exposed, results, config.compare.alpha)
    night.notes.append(attacks_note(attacks))
    return attacks


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


def unaligned_note(config: NightlyConfig) -> str | None:
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
