"""The `sweep:` section of a config: the axes of a grid of retrieval configurations and how its winner is held out.

A sweep is a grid (chunking x retriever x fusion weights x reranker x k), not a list of runs, because the point is
to share work across it: every axis value is listed once, and `sweep.grid` expands them. An axis given as an empty
list is refused at load time with its key path (``sweep.k: empty axis``): a product over an empty axis is an empty
grid, which would otherwise "run" and choose nothing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragmetrics.chunking.model import ChunkingConfig
from ragmetrics.options import FusionNorm

__all__ = [
    "EarlyDropConfig",
    "SplitConfig",
    "SweepConfig",
    "SweepFusion",
    "SweepReranker",
    "SweepRetriever",
]

FIRST_STAGE_KINDS: tuple[str, ...] = ("bm25", "dense")
"""Retrievers a sweep builds an index for; the reranker is an axis of its own, not a retriever kind."""
SWEEP_FUSION_METHODS: tuple[str, ...] = ("wsum", "wmnz", "mixed", "weighted_bordafuse", "weighted_condorcet")
"""Fusion methods that take weights: the fusion axis is an axis of weights."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _non_empty(values: list[Any]) -> list[Any]:
    if not values:
        raise ValueError(
            "empty axis: list at least one value (a grid over an empty axis has no configuration)"
        )
    return values


class SweepRetriever(_Section):
    """One first-stage retriever of the grid: its index is built once per chunking and searched once per question."""

    name: str = Field(
        min_length=1, pattern=r"^[A-Za-z0-9_.@-]+$", description="its name in configuration names"
    )
    retriever: Literal["bm25", "dense"] = Field(description="bm25 or dense (ragmetrics.retrievers)")
    params: dict[str, Any] = Field(
        default_factory=dict, description="the retriever's parameters except top_k (the sweep sets the depth)"
    )

    @field_validator("params")
    @classmethod
    def _no_depth(cls, v: dict[str, Any]) -> dict[str, Any]:
        if "top_k" in v:
            raise ValueError(
                "top_k is set by the sweep (the largest k, or the reranker's candidates): remove it"
            )
        return v


class SweepFusion(_Section):
    """Hybrids of two retrievers of the grid, one per weight: weight w on the first, 1 - w on the second."""

    runs: tuple[str, str] = Field(description="names of two retrievers listed in sweep.retrievers")
    weights: list[float] = Field(
        description="the first retriever's weight, one hybrid per value, each in (0, 1)"
    )
    method: Literal["wsum", "wmnz", "mixed", "weighted_bordafuse", "weighted_condorcet"] = Field(
        default="wsum", description="a weighted fusion method of ragmetrics.retrieval.fusion"
    )
    norm: FusionNorm = Field(default="min-max", description="score normalisation before fusing")
    depth: int = Field(
        default=50,
        ge=1,
        le=10_000,
        description="how many results of each retriever are fused (and kept): explicit, so a hybrid's ranking never "
        "depends on the other axes of the grid",
    )

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: list[float]) -> list[float]:
        _non_empty(v)
        for i, w in enumerate(v):
            if not 0.0 < w < 1.0:
                raise ValueError(
                    f"[{i}]: weight {w} is not in (0, 1) (0 or 1 is a single retriever: list it alone)"
                )
            if w in v[:i]:
                raise ValueError(f"[{i}]: weight {w} is listed twice")
        return v


class SweepReranker(_Section):
    """A reranker of the grid: 'none', the local embedding reranker, or a team's scorer."""

    name: str = Field(
        min_length=1, pattern=r"^[A-Za-z0-9_.@-]+$", description="its name in configuration names"
    )
    kind: Literal["none", "embedding", "callable"] = Field(
        description="none: the first stage's order; embedding: MiniLM cosine (offline); callable: `scorer`"
    )
    scorer: str | None = Field(
        default=None, description="callable: 'package.module:function' taking (question, passages) -> scores"
    )
    candidates: int = Field(default=30, ge=1, le=1000, description="how many first-stage results it reorders")

    @model_validator(mode="after")
    def _scorer_where_needed(self) -> SweepReranker:
        if (self.kind == "callable") != (self.scorer is not None):
            raise ValueError("'scorer' is given exactly when kind is 'callable'")
        return self


def _default_rerankers() -> list[SweepReranker]:
    return [SweepReranker(name="none", kind="none")]


class SplitConfig(_Section):
    """How questions are split into a selection half and a confirmation half."""

    seed: int = Field(default=0, description="the split and the order questions are scored in")
    selection_share: float = Field(
        default=0.5, gt=0, lt=1, description="share of each stratum used to select"
    )
    strata: str | None = Field(
        default="auto",
        description="'auto': the dataset's `kind` column (ragmetrics testset writes one) when it has it, else the "
        "number of relevant documents (1, 2, 3+); a column name; or null for no strata",
    )


class EarlyDropConfig(_Section):
    """Configurations clearly losing are dropped between batches of selection questions (anytime-valid)."""

    enabled: bool = Field(
        default=True, description="drop clear losers early (their later judge calls are saved)"
    )
    batch_size: int = Field(default=8, ge=1, description="selection questions scored between two looks")
    alpha: float = Field(
        default=0.05,
        gt=0,
        lt=1,
        description="chance that the truly best configuration is ever dropped, at most",
    )


class SweepConfig(_Section):
    """A grid of retrieval configurations, its winner chosen on one half of the questions and confirmed on the other."""

    metric: str = Field(
        min_length=1,
        description="the quality the winner is chosen on: one of retrieval.metrics (computed on the top-k "
        "passages) or judge.metrics (judged on the top-k passages as contexts; no answer is generated)",
    )
    chunking: list[ChunkingConfig] | None = Field(
        default=None,
        description="chunkings of the dataset's passages, each read as a whole document (ragmetrics.chunking: "
        "{method, size, overlap, ...}); the passage qrels become span qrels and each chunking is scored on chunk "
        "qrels derived from them, so every chunking is compared on the same questions; unset: the passages as given",
    )
    retrievers: list[SweepRetriever] = Field(
        description="first-stage retrievers, one index each per chunking"
    )
    fusion: SweepFusion | None = Field(default=None, description="hybrids of two retrievers, one per weight")
    rerankers: list[SweepReranker] = Field(
        default_factory=_default_rerankers,
        description="rerankers, each applied once per retriever and chunking",
    )
    k: list[int] = Field(
        description="how many passages the system passes on; retrieval runs once for the largest"
    )
    baseline: str | None = Field(
        default=None,
        description="the configuration the winner must beat, by name (default: the grid's first)",
    )
    split: SplitConfig = Field(default_factory=SplitConfig)
    early_drop: EarlyDropConfig = Field(default_factory=EarlyDropConfig)
    price_per_1k_tokens: float = Field(
        default=0.00015,
        ge=0,
        description="USD per 1,000 context tokens a generator reads (the cost axis of the Pareto chart)",
    )
    ray: bool = Field(
        default=False, description="build each chunking's and retriever's stage on the Ray engine"
    )

    @field_validator("chunking", "retrievers", "rerankers", "k")
    @classmethod
    def _axis(cls, v: list[Any] | None) -> list[Any] | None:
        return v if v is None else _non_empty(v)

    @field_validator("k")
    @classmethod
    def _depths(cls, v: list[int]) -> list[int]:
        for i, k in enumerate(v):
            if k < 1:
                raise ValueError(f"[{i}]: k must be >= 1, got {k}")
            if k in v[:i]:
                raise ValueError(f"[{i}]: k={k} is listed twice")
        return v

    @model_validator(mode="after")
    def _names(self) -> SweepConfig:
        for label, names in (
            ("retrievers", [r.name for r in self.retrievers]),
            ("rerankers", [r.name for r in self.rerankers]),
        ):
            for i, name in enumerate(names):
                if name in names[:i]:
                    raise ValueError(f"{label}[{i}]: name {name!r} is used twice")
        if self.fusion is not None:
            known = [r.name for r in self.retrievers]
            for name in self.fusion.runs:
                if name not in known:
                    raise ValueError(
                        f"fusion.runs: no retriever named {name!r}; retrievers: {', '.join(known)}"
                    )
            if self.fusion.runs[0] == self.fusion.runs[1]:
                raise ValueError("fusion.runs: two different retrievers are fused")
            if self.fusion.depth < max(self.k):
                raise ValueError(f"fusion.depth ({self.fusion.depth}) is below the largest k ({max(self.k)})")
        return self
