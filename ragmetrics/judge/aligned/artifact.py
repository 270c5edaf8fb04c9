"""The aligned metric `ragmetrics align` writes (`DIR/aligned.json`) and `judge: {aligned: DIR}` reads.

One entry per aligned metric: the steps kept, in the order they apply (the prompt edit changes what the
judge is asked; the evidence head and the calibration change the score it returns), their parameters, where
the labels came from (file, SHA-256, count, folds, seed) and the held-out agreement that justified keeping
them. `version()` hashes everything but the time of writing: it goes into the judge's prompt versions, so a
report, the history's change marks and the verdict cache all see a re-alignment.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragmetrics.errors import ConfigError
from ragmetrics.judge.aligned.calibration import Calibration
from ragmetrics.judge.aligned.head import EvidenceHead
from ragmetrics.judge.aligned.prompt_edit import PromptEdit
from ragmetrics.judge.prompts import content_version

__all__ = [
    "FILENAME",
    "FORMAT",
    "AlignedMetric",
    "AlignedSet",
    "HeldOutFigure",
    "LabelProvenance",
    "NothingAligned",
    "load_aligned",
    "nothing_kept",
]

FILENAME = "aligned.json"
FORMAT: Literal["ragmetrics-aligned-1"] = "ragmetrics-aligned-1"
Step = Literal["few_shot", "instructions", "head", "calibration"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class LabelProvenance(_Strict):
    source: str
    sha256: str
    count: int = Field(ge=1)
    kind: Literal["binary", "graded"]
    folds: int = Field(ge=2)
    seed: int
    runs: list[str] = Field(default_factory=list, description="runs whose outputs the labels describe")


class HeldOutFigure(_Strict):
    """One agreement statistic on labels the alignment never fitted on: before and after, 95 % CIs."""

    statistic: str
    n: int
    before: float | None
    before_low: float | None = None
    before_high: float | None = None
    after: float | None
    after_low: float | None = None
    after_high: float | None = None


class AlignedMetric(_Strict):
    metric: str
    backend: Literal["openai", "local"]
    model: str
    embedder: str | None = None
    steps: list[Step] = Field(min_length=1)
    prompt_edit: PromptEdit | None = None
    head: EvidenceHead | None = None
    calibration: Calibration | None = None
    labels: LabelProvenance
    heldout: HeldOutFigure
    created_at: datetime
    ragmetrics_version: str

    def version(self) -> str:
        return content_version(self.model_dump(mode="json", exclude={"created_at", "ragmetrics_version"}))

    def summary(self) -> str:
        """'aligned on 120 labels (head, calibration): held-out balanced accuracy 0.81 [0.74, 0.87], was 0.62'."""
        h = self.heldout

        def fmt(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.2f}"

        interval = f" [{fmt(h.after_low)}, {fmt(h.after_high)}]" if h.after_low is not None else ""
        return (
            f"aligned on {self.labels.count} labels ({', '.join(self.steps)}): held-out "
            f"{h.statistic.replace('_', ' ')} {fmt(h.after)}{interval}, was {fmt(h.before)}"
        )


class AlignedSet(_Strict):
    format: Literal["ragmetrics-aligned-1"] = FORMAT
    metrics: dict[str, AlignedMetric]


class NothingAligned(ConfigError):
    """The folder holds alignment reports but no aligned metric: every alignment kept no step."""


def nothing_kept(directory: str | Path) -> str | None:
    """Why a folder written by `ragmetrics align` holds no aligned metric (each report's verdict), or None when
    it holds one, or is not such a folder."""
    folder = Path(directory)
    if not folder.is_dir() or (folder / FILENAME).is_file():
        return None
    found = []
    for report in sorted(folder.glob("*.alignment.json")):
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and not data.get("kept"):
            found.append(f"{data.get('metric')}: {data.get('verdict')}")
    return "; ".join(found) or None


def load_aligned(directory: str | Path) -> AlignedSet:
    """The aligned metrics in `directory` (or an aligned.json file); a ConfigError names what is wrong (a
    `NothingAligned` when its alignments kept no step, saying what to do)."""
    path = Path(directory)
    why = nothing_kept(path)
    if why is not None:
        raise NothingAligned(
            f"judge.aligned: {path} holds no aligned metric: `ragmetrics align` kept no step ({why}). Label more "
            "samples (the report's learning curve shows how the held-out figure grows with labels) or align "
            "another judge; to run with the judge as it is, set judge.if_not_aligned: unaligned (the report then "
            "says the judge was not aligned)"
        )
    if path.is_dir():
        path = path / FILENAME
    if not path.is_file():
        raise ConfigError(
            f"judge.aligned: {path} does not exist (`ragmetrics align` writes {FILENAME} only when a step was "
            "kept; read its report to see why not)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        aligned = AlignedSet.model_validate(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"judge.aligned: {path} is not JSON: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"judge.aligned: {path}: {where}: {first['msg']}") from None
    for name, entry in aligned.metrics.items():
        if entry.metric != name:
            raise ConfigError(f"judge.aligned: {path}: metrics.{name} holds metric {entry.metric!r}")
    return aligned
