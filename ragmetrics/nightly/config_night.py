"""A whole nightly config: every section together, and the checks that span sections (run names unique,
the runs a judge or generator names exist, metrics to score, the baseline's metrics among them)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, PrivateAttr, model_validator

from ragmetrics.nightly.config_base import _Section
from ragmetrics.nightly.config_calls import GeneratorConfig
from ragmetrics.nightly.config_dataset import DatasetConfig
from ragmetrics.nightly.config_gate import BaselineConfig, CompareConfig
from ragmetrics.nightly.config_judge import JudgeConfig
from ragmetrics.nightly.config_output import EngineConfig, OutputConfig
from ragmetrics.nightly.config_runs import (
    PipelineRunSpec,
    RetrievalConfig,
    RetrieverRunSpec,
    RunSpec,
    _default_runs,
    run_name,
)
from ragmetrics.nightly.config_trust import HumanLabelsConfig, PairwiseConfig, TrustConfig
from ragmetrics.nightly.utility_config import UtilityQrelsConfig
from ragmetrics.nightly.validity_config import ValidityConfig
from ragmetrics.sweep.config import SweepConfig
from ragmetrics.testset.settings import TestsetSettings


class NightlyConfig(_Section):
    """A whole evaluation: dataset, what to score, how to compare, where to write, what to gate on."""

    name: str = Field(default="ragmetrics", min_length=1, description="title of the report")
    dataset: DatasetConfig
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    runs: list[RunSpec] = Field(default_factory=lambda: _default_runs())
    judge: JudgeConfig | None = None
    compare: CompareConfig = Field(default_factory=CompareConfig)
    output: OutputConfig = Field(default_factory=OutputConfig)
    baseline: BaselineConfig = Field(default_factory=BaselineConfig)
    human_labels: HumanLabelsConfig | None = None
    pairwise: PairwiseConfig | None = None
    trust: TrustConfig | None = None
    engine: EngineConfig = Field(default_factory=EngineConfig)
    generator: GeneratorConfig | None = None
    utility_qrels: UtilityQrelsConfig | None = Field(
        default=None,
        description="utility judgments (eRAG) for the runs, and their metrics on them (docs/utilities.md)",
    )
    validity: ValidityConfig = Field(
        default_factory=ValidityConfig, description="the night's validity study (docs/validity.md)"
    )
    testset: TestsetSettings | None = Field(
        default=None,
        description="how `ragmetrics testset --config` builds a test collection (docs/testset.md)",
    )
    max_failure_rate: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="a run/metric whose share of failed scores (judge, pipeline or generator) exceeds this makes "
        "the night incomplete: exit 3, causes on stderr, and the gate reports it instead of passing",
    )
    pipeline_cache: Path | None = Field(
        default=None,
        description="SQLite cache of pipeline and generator outputs (default: pipeline_cache.sqlite in output.dir)",
    )
    index_dir: Path | None = Field(
        default=Path(".ragmetrics-cache/index"),
        description="folder of the reference retrievers' persisted indexes and chunk vectors (ragmetrics.index), "
        "keyed by content: a night over chunks indexed before embeds none; `ragmetrics testset --config` and "
        "`ragmetrics sweep` use the same folder; null: build them in memory every night",
    )
    progress: bool = Field(
        default=True, description="progress bars on a terminal (--no-progress turns them off)"
    )
    sweep: SweepConfig | None = Field(
        default=None,
        description="a grid of retrieval configurations, run by `ragmetrics sweep` (docs/sweeps.md)",
    )
    _source_dir: Path | None = PrivateAttr(default=None)

    @property
    def source_dir(self) -> Path | None:
        """The folder of the config file (relative paths and a pipeline's module are found from there)."""
        return self._source_dir

    @model_validator(mode="after")
    def _consistent(self) -> NightlyConfig:
        names: dict[str, int] = {}
        for i, spec in enumerate(self.runs):
            name = run_name(spec)
            if name in names:
                raise ValueError(f"runs[{i}]: run name {name!r} is already used by runs[{names[name]}]")
            names[name] = i
        if not self.runs:
            raise ValueError("runs: at least one run is needed")
        if self.dataset.attacks is not None and not any(
            isinstance(s, PipelineRunSpec | RetrieverRunSpec) for s in self.runs
        ):
            raise ValueError(
                "dataset.attacks: an attack set is answered by the team's system (a run with source: pipeline) or "
                "searched by a retriever (source: retriever, for exposure); list one (docs/attacks.md)"
            )
        if self.generator is not None and self.generator.runs is not None:
            for name in self.generator.runs:
                if name not in names:
                    raise ValueError(f"generator.runs: no run named {name!r}; runs: {', '.join(names)}")
        if self.judge is not None and self.judge.runs is not None:
            for name in self.judge.runs:
                if name not in names:
                    raise ValueError(f"judge.runs: no run named {name!r}; runs: {', '.join(names)}")
        metrics = set(self.all_metrics())
        if not metrics:
            raise ValueError("no metrics: set retrieval.metrics and/or judge.metrics")
        floor = self.trust.min_agreement if self.trust is not None else None
        if floor is not None:
            if self.human_labels is None:
                raise ValueError(
                    "trust.min_agreement needs human_labels: the floor is checked on labelled samples"
                )
            judged = set(self.judge.metrics) if self.judge is not None else set()
            for name in floor.metrics or ():
                if name not in judged:
                    raise ValueError(f"trust.min_agreement.metrics: {name!r} is not among judge.metrics")
        unknown = [
            m
            for m in (*self.baseline.max_drop_per_metric, *(self.baseline.metrics or ()))
            if m not in metrics
        ]
        if unknown:
            raise ValueError(f"baseline: {', '.join(map(repr, unknown))} not among this config's metrics")
        if self.pairwise is not None and self.pairwise.judge and self.judge is not None and self.judge.panel:
            raise ValueError(
                "pairwise.judge: one LLM says which answer is better; it is not a panel's (judge.panel)"
            )
        from ragmetrics.nightly.engine_fit import engine_problem

        if (problem := engine_problem(self.engine.kind, self.judge)) is not None:
            raise ValueError(problem)
        return self

    def all_metrics(self) -> list[str]:
        from ragmetrics.options import ATTACK_METRICS, EXPOSURE_METRICS

        judged = self.judge.metrics if self.judge is not None else []
        attacked = [*ATTACK_METRICS, *EXPOSURE_METRICS] if self.dataset.attacks is not None else []
        utility = self.utility_qrels.report_metrics(self.retrieval.metrics) if self.utility_qrels else []
        return [*self.retrieval.metrics, *judged, *attacked, *utility]
