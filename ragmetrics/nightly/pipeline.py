"""A config in, a Report and its artifacts out: the nightly job, callable from Python and from `ragmetrics run`.

Steps: load and validate the dataset; build every run (the dataset's own ranking, run files, retrievers);
score retrieval metrics where the dataset has judgments and judge metrics where samples have the fields;
merge each run's scores into one RunResult; compare the runs into one Report; check the baseline; write the
artifacts. Nothing is skipped silently: every metric left out of a run is named in the report's notes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ragmetrics.errors import ConfigError
from ragmetrics.judge.registry import registered_metrics
from ragmetrics.nightly.applicability import mark_missing
from ragmetrics.nightly.compare_night import compare_runs, power_targets
from ragmetrics.nightly.completeness import failure_summary, find_incomplete, mark_call_failures
from ragmetrics.nightly.config import NightlyConfig, load_config
from ragmetrics.nightly.judge_night import score_judge
from ragmetrics.nightly.night_finish import check_gate, write_night
from ragmetrics.nightly.night_report import check_on_source_qrels, config_snapshot, night_report, versions
from ragmetrics.nightly.night_state import Log, Night, timed
from ragmetrics.nightly.night_steps import (
    answer_runs,
    load_night_dataset,
    read_baseline,
    score_attacks,
    score_runs,
    unaligned_note,
)
from ragmetrics.nightly.pipeline_outcome import (
    EXIT_INCOMPLETE,
    EXIT_NOT_COMPARABLE,
    EXIT_OK,
    EXIT_REGRESSION,
    PipelineOutcome,
)
from ragmetrics.nightly.runs import (  # the night's runs, shared with the dry run
    build_runs,
    judge_plan,
    target_calls,
    traced_run_names,
)
from ragmetrics.nightly.trust_night import attach_human_labels
from ragmetrics.nightly.utility_night import add_utility_scores
from ragmetrics.render.safe_text import visible_controls

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_NOT_COMPARABLE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "PipelineOutcome",
    "attach_human_labels",
    "build_runs",
    "compare_runs",
    "config_snapshot",
    "judge_plan",
    "own_metrics",
    "power_targets",
    "run_pipeline",
    "score_judge",
    "versions",
    "with_adaptive",
]


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
    # said, not silently ignored: a night scores `runs:`, `ragmetrics sweep` the grid
    if config.sweep is not None:
        (log or (lambda m: print(m, file=sys.stderr)))(
            "ragmetrics: note: the sweep: section is run by `ragmetrics sweep`"
        )
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


def _run_pipeline(
    config: NightlyConfig,
    baseline: Path | None,
    output_dir: Path | None,
    progress: bool | None,
    write: bool,
    log: Log | None,
    refresh_pipeline: bool,
) -> PipelineOutcome:
    night = Night(config, config.progress if progress is None else progress,
                  log or (lambda message: print(visible_controls(message), file=sys.stderr)), output_dir)  # fmt: skip
    unaligned = unaligned_note(config)
    if unaligned is not None:
        night.notes.append(unaligned)
        night.say(f"ragmetrics: {unaligned}")
    # Read the baseline first: a wrong path should fail in a second, not after an hour of judging.
    base = read_baseline(night, baseline)
    dataset = load_night_dataset(night)
    calls = target_calls(config, output_dir=output_dir, refresh=refresh_pipeline, progress=night.show)
    runs, answered = answer_runs(night, dataset, calls)
    scored = score_runs(night, dataset, runs, answered, calls, base.report)
    results = scored.results
    with timed(night.timings, "utility_qrels"):
        add_utility_scores(config, dataset, runs, results, night.notes, night.extra_texts,
                           output_dir=output_dir, search=calls.search)  # fmt: skip
    attacks = score_attacks(night, dataset, runs, answered, results) if dataset.attacks is not None else None
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
    report, labels = night_report(night, dataset, ordered, scored, calls)
    check_on_source_qrels(night, dataset, runs, report)
    if scored.judged_samples:
        from ragmetrics.nightly.formatting_check import check_formatting

        said: list[str] = []
        with timed(night.timings, "formatting_check"):
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

        with timed(night.timings, "pairwise"):
            report.metadata.pairwise = pairwise_summaries(config, report, scored.judged_samples, night.notes)
    if scored.judged_samples and config.validity.enabled:  # which metric tracks the answers (validity_night)
        from ragmetrics.nightly.validity_night import attach_validity

        with timed(night.timings, "validity"):
            attach_validity(report, scored.judged_samples, night.notes, samples=config.validity.samples)
    elif scored.judged_samples:
        off = "validity: not studied tonight (validity.enabled: false); `ragmetrics validity` runs it"
        report.metadata.notes = [*report.metadata.notes, off]
        night.notes.append(off)
    gate = None
    if base.report is not None:
        assert base.path is not None
        gate = check_gate(config, report, base.report, str(base.path), labels, incomplete, scored.adaptive)
        gate.from_cache = calls.from_cache_only()
        gate.require_fresh = config.baseline.require_fresh
        report.metadata.nightly.regression = gate  # type: ignore[union-attr]
    report.metadata.nightly.incomplete = [i.describe() for i in incomplete]  # type: ignore[union-attr]
    outcome = PipelineOutcome(report=report, gate=gate, notes=night.notes, incomplete=incomplete)
    if write:
        write_night(night, outcome, base, calls, scored.judged_samples, attacks)
    return outcome
