"""The aligned metric written to DIR/aligned.json: built from the refitted steps and the held-out figure
(`_aligned_entry`), added beside other metrics' entries or replacing its own, atomically (`_write_aligned`), and
removed when a new alignment kept no step (`_drop_aligned`).

Why its own module: the file is shared by every metric aligned for one judge; writing it keeps the other
entries and refuses a folder aligned for another judge."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ragmetrics._version import __version__
from ragmetrics.alignment.aligner import State, StepName
from ragmetrics.alignment.labelled import LabelledSamples
from ragmetrics.alignment.report import AlignmentReport
from ragmetrics.errors import ConfigError
from ragmetrics.judge.aligned.artifact import (
    FILENAME,
    AlignedMetric,
    AlignedSet,
    HeldOutFigure,
    LabelProvenance,
)


def _aligned_entry(
    report: AlignmentReport,
    final: State,
    kept: Sequence[StepName],
    data: LabelledSamples,
    backend: Literal["openai", "local"],
    info: Any,
) -> AlignedMetric:
    """The aligned metric to write: the refitted steps, where the labels came from, the held-out figure."""
    decided = next(r for r in report.figures if r.statistic == report.statistic)
    return AlignedMetric(
        metric=report.metric, backend=backend, model=info.model, embedder=_embedder(backend, info),
        steps=list(kept), prompt_edit=final.edit, head=final.head, calibration=final.calibration,
        labels=LabelProvenance(source=data.source, sha256=report.labels["sha256"], count=len(data.samples),
                               kind=data.kind, folds=report.folds, seed=report.seed,
                               runs=[data.run] if data.run else []),
        heldout=HeldOutFigure(statistic=report.statistic, n=report.n, before=decided.before.estimate,
                              before_low=decided.before.low, before_high=decided.before.high,
                              after=decided.after.estimate, after_low=decided.after.low,
                              after_high=decided.after.high),
        created_at=datetime.now(UTC), ragmetrics_version=__version__,
    )  # fmt: skip


def _write_aligned(out_dir: Path, entry: AlignedMetric) -> Path:
    """Add (or replace) `entry` in DIR/aligned.json, keeping other metrics' entries; atomically."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / FILENAME
    metrics = _existing(path)
    others = sorted({e.backend for name, e in metrics.items() if name != entry.metric} - {entry.backend})
    if others:
        raise ConfigError(
            f"{path} holds metrics aligned for the {others[0]} judge; a folder serves one judge "
            f"(judge.aligned): write this {entry.backend} alignment to another folder"
        )
    metrics[entry.metric] = entry
    text = AlignedSet(metrics=metrics).model_dump_json(indent=2)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _embedder(backend: str, info: Any) -> str | None:
    """What the fitted numbers are tied to besides the backend: the local judge's model choice (its cosines
    are on that model's scale), or the LLM judge's embedding model."""
    if backend == "local":
        return str(info.settings.get("local_model", info.embedding_model))
    return str(info.embedding_model) if info.embedding_model else None


def _existing(path: Path) -> dict[str, AlignedMetric]:
    if not path.exists():
        return {}
    from ragmetrics.judge.aligned.artifact import load_aligned

    return dict(load_aligned(path).metrics)


def _drop_aligned(out_dir: Path, metric: str) -> bool:
    """Remove an earlier alignment of `metric` from DIR/aligned.json (this one kept no step, so the earlier
    one no longer stands); True when there was one."""
    path = out_dir / FILENAME
    metrics = _existing(path)
    if metric not in metrics:
        return False
    del metrics[metric]
    if metrics:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(AlignedSet(metrics=metrics).model_dump_json(indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
    else:
        path.unlink()
    return True
