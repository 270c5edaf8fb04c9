"""After the report: the gate against the baseline, then the night's artifacts, its entry in the history
and MLflow.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.agreement_floor import agreement_floor
from ragmetrics.nightly.answers import TargetCalls
from ragmetrics.nightly.attacked import attack_artifacts
from ragmetrics.nightly.completeness import Incomplete, outputs_jsonl
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.gate import check_regressions
from ragmetrics.nightly.judged_samples import judged_samples_jsonl
from ragmetrics.nightly.night_state import Baseline, Night
from ragmetrics.nightly.pipeline_outcome import PipelineOutcome
from ragmetrics.schema import AdaptiveSummary, GateResult, Report

if TYPE_CHECKING:
    from ragmetrics.trust.labels import HumanLabels


def check_gate(
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


def write_night(
    night: Night,
    outcome: PipelineOutcome,
    base: Baseline,
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


def _log_to_mlflow(night: Night, folder: Path) -> None:
    """The night (after any queued before it) to MLflow: one line says where it went, or why it is queued (a
    tracker that is down is never a failure)."""
    settings = night.config.output.mlflow
    assert settings is not None
    import importlib.util

    if importlib.util.find_spec("mlflow") is None:  # the extra is not installed: said, the night stands
        night.say(
            "ragmetrics: output.mlflow: the mlflow package is not installed; pip install 'ragmetrics[mlflow]'"
        )
        return
    from ragmetrics.mlflow.nights import MlflowTarget, log_backlog

    # None: the config's name
    target = MlflowTarget(settings.tracking_uri, settings.experiment, settings.timeout_s)
    for line in log_backlog(folder.parent, folder, target):
        night.say(f"ragmetrics: {line}")


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
