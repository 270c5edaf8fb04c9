"""The cascade's keys in a night's `judge:` section (docs/judges.md, "A cascade with a guarantee").

    judge:
      metrics: [helpful]
      cascade:                          # cheapest first; members as judge.panel names them
        - {name: small, model: qwen2.5-7b, base_url: http://gpu-1:8080/v1}
        - {name: large, model: gpt-4o}
      agreement: 0.9                    # agreement with people guaranteed on decided items
      delta: 0.1                        # ... with probability at least 1 - delta
      labels: labels.csv                # sample_id, metric, label: what the thresholds are certified on

Every problem is a pydantic error at the key that holds it (`judge.agreement`, `judge.labels`), which the config
loader turns into an exit 2 naming that key. The one check that needs the labels read (are there enough?) is
`check_enough_labels`, run when the night loads them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragmetrics.errors import InputError
from ragmetrics.judge.cascade.thresholds import minimum_labels, stage_delta
from ragmetrics.judge.panel_config import PanelMember

__all__ = [
    "CONFIDENCE_SOURCES",
    "CascadeKeys",
    "CascadePanel",
    "check_cascade_combination",
    "check_enough_labels",
    "labels_needed",
]

ConfidenceSource = Literal["logprobs", "samples", "simulated_annotators"]
CONFIDENCE_SOURCES: tuple[str, ...] = ("logprobs", "samples", "simulated_annotators")
DEFAULT_AGREEMENT, DEFAULT_DELTA = 0.9, 0.1


class CascadePanel(BaseModel):
    """A panel as one step of the cascade: its members' agreement (their spread) is the verdict's confidence."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = Field(min_length=1, description="how the cascade's notes name this step")
    panel: list[PanelMember] = Field(
        min_length=2, description="the members (as in judge.panel), at least two"
    )


def _step_kind(value: object) -> str:
    panel = isinstance(value, CascadePanel) or (isinstance(value, dict) and "panel" in value)
    return "function-panel" if panel else "function-judge"


# The tags start with "function-" as pydantic's own callable steps do, so an error's key path (`_yaml.key_path`)
# leaves them out: `judge.cascade[0].backend`, as the user wrote it.
CascadeStep = Annotated[
    Annotated[PanelMember, Tag("function-judge")] | Annotated[CascadePanel, Tag("function-panel")],
    Discriminator(_step_kind),
]
"""A judge, or a panel (a mapping with a `panel` key): each error is the one of the shape written."""


class CascadeKeys(BaseModel):
    """The keys a judge section takes for a cascade; mixed into the night's JudgeConfig."""

    cascade: list[CascadeStep] | None = Field(
        default=None,
        min_length=1,
        description="judges tried in order, cheapest first (members as in panel: {name, model, base_url, "
        "api_key_env, price_per_million_tokens, ...}; or {name, panel: [members]}, confident by the members' "
        "agreement): each decides where it is confident, the rest go on, the last abstains (docs/cascade.md)",
    )
    agreement: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description=f"cascade: agreement with people guaranteed on decided items (default {DEFAULT_AGREEMENT})",
    )
    delta: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description=f"cascade: the guarantee holds with probability at least 1 - delta (default {DEFAULT_DELTA})",
    )
    confidence: ConfidenceSource = Field(
        default="logprobs",
        description="cascade: a verdict's confidence from 'logprobs' (the server's probability of the verdict), "
        "'samples' (agreement of `samples` seeded verdicts) or 'simulated_annotators' (`samples` judges each "
        "shown `shots` different labelled examples)",
    )
    samples: int = Field(
        default=5, ge=2, le=20, description="cascade: verdicts per item for samples/annotators"
    )
    shots: int = Field(
        default=3, ge=1, le=20, description="cascade: labelled examples per simulated annotator"
    )
    held_out: float = Field(
        default=0.3,
        ge=0,
        lt=1,
        description="cascade: share of the labelled items kept out of calibration, to measure the agreement reached",
    )
    label_scale: float | None = Field(
        default=None, gt=0, description="cascade: labels are grades out of this scale (unset: in [0, 1])"
    )
    labels: Path | None = Field(
        default=None,
        validate_default=True,
        description="cascade: people's labels the thresholds are certified on (sample_id, metric, label; "
        "CSV, TSV, JSONL or Parquet)",
    )

    @field_validator("agreement", "delta", "confidence", "held_out")
    @classmethod
    def _only_with_a_cascade(cls, value: object, info: ValidationInfo) -> object:
        defaults = {"confidence": "logprobs", "held_out": 0.3}
        given = value is not None and value != defaults.get(str(info.field_name))
        # a cascade that failed its own validation is absent from info.data: its error is the one to read
        if given and "cascade" in info.data and not info.data["cascade"]:
            raise ValueError(f"{info.field_name} applies to a cascade: set judge.cascade too")
        return value

    @field_validator("labels")
    @classmethod
    def _labels_to_calibrate_on(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if info.data.get("cascade") and value is None:
            raise ValueError(
                "a cascade needs people's labels to calibrate its thresholds on: name the labels file "
                "(sample_id, metric, label)"
            )
        return value

    @model_validator(mode="after")
    def _names_distinct(self) -> CascadeKeys:
        if self.cascade:
            names = [m.name if isinstance(m, CascadePanel) else m.label() for m in self.cascade]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"cascade: two judges are named {twice[0]!r}; give each a distinct `name`")
        return self

    @property
    def agreement_target(self) -> float:
        return DEFAULT_AGREEMENT if self.agreement is None else self.agreement

    @property
    def cascade_delta(self) -> float:
        return DEFAULT_DELTA if self.delta is None else self.delta


def check_cascade_combination(cascade: object, panel: object) -> None:
    """ValueError (at `judge`) for a cascade beside a top-level `judge.panel`, pointing to a panel step.

    A top-level panel combines its members' verdicts after the night; a cascade decides per item whose verdict
    is kept, by a threshold certified on that verdict's confidence. A panel over the whole cascade would certify
    nothing about the combination it reports, so the panel goes inside the cascade, as one step, where its
    members' agreement is the confidence the threshold is certified on. (`judge.repeats` does combine with a
    cascade: each step's views are asked that many times and voted on together, docs/cascade.md.)
    """
    if cascade and panel is not None:
        raise ValueError(
            "judge.cascade with judge.panel: a cascade's step can itself be a panel, confident by its members' "
            "agreement: move the members into a step of judge.cascade, e.g. `cascade: [{name: small, ...}, "
            "{name: trio, panel: [member, member, member]}]`, and drop judge.panel (a panel around the whole "
            "cascade would combine verdicts after their thresholds were certified, voiding the guarantee)"
        )


def labels_needed(target: float, delta: float, judges: int, held_out: float) -> int:
    """Labelled items (per metric) without which not even a perfect first judge could be certified: the
    calibration share must hold `minimum_labels` at the first judge's level delta / judges."""
    calibrating = minimum_labels(target, stage_delta(delta, judges))
    return math.ceil(calibrating / (1.0 - held_out) - 1e-9)


def check_enough_labels(counts: dict[str, int], keys: CascadeKeys, source: str) -> None:
    """An InputError naming judge.labels when a metric has fewer labels than the guarantee needs."""
    assert keys.cascade is not None
    needed = labels_needed(keys.agreement_target, keys.cascade_delta, len(keys.cascade), keys.held_out)
    for metric, count in sorted(counts.items()):
        if count < needed:
            calibrating = minimum_labels(
                keys.agreement_target, stage_delta(keys.cascade_delta, len(keys.cascade))
            )
            raise InputError(
                f"metric {metric!r} has {count} labelled items; the guarantee (agreement "
                f"{keys.agreement_target:g} with probability {1 - keys.cascade_delta:g}, {len(keys.cascade)} "
                f"judges) needs at least {needed}: {calibrating} to calibrate on (even with no disagreement, "
                f"fewer cannot certify a threshold) plus the held_out share {keys.held_out:g}",
                source=source,
                field="judge.labels",
            )


def check_confidence_source(keys: CascadeKeys, metrics: list[str], custom: list[object]) -> None:
    """An InputError naming judge.confidence when `logprobs` cannot give a metric's verdicts a confidence.

    Log-probabilities state how sure a judge is of its rating: a rubric on a yes/no or ordinal scale whose
    score is probability-weighted (the levels' probabilities; on an ordinal scale the verdict's confidence is
    the probability of the levels on its side of the threshold, `cascade.confidence`). Other metrics (claim
    fractions, categories, checklists) carry no probability of the verdict itself, so every item would be
    abstained on; they take `samples` or `simulated_annotators`.
    """
    if keys.confidence != "logprobs":
        return
    from ragmetrics.judge.rubric import BinaryScale, OrdinalScale, RubricMetric

    rubrics = {m.name: m for m in custom if isinstance(m, RubricMetric)}
    for metric in metrics:
        rubric = rubrics.get(metric)
        scale = rubric.scale if rubric is not None else None
        if not isinstance(scale, BinaryScale | OrdinalScale) or scale.weighting != "probability":
            raise InputError(
                f"metric {metric!r} is not a yes/no rubric, nor one on an ordinal scale, weighted by probability, "
                "so its verdicts carry no log-probability to be confident by: use confidence: samples or "
                "simulated_annotators",
                field="judge.confidence",
            )
