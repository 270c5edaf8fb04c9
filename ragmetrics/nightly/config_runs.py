"""What a night ranks and how rankings are scored: the `retrieval:` section and the `runs:` list, one spec
per source (the dataset's own ranking, a run file, a retriever, a fusion, the team's pipeline), told apart by
`source`, and the name each run's results carry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from ragmetrics.errors import InputError
from ragmetrics.nightly.config_base import _check_names, _Section
from ragmetrics.nightly.config_calls import CallSettings
from ragmetrics.options import FusionMethod, FusionNorm

RUN_SOURCES: tuple[str, ...] = ("dataset", "file", "retriever", "fusion", "pipeline")


class RetrievalConfig(_Section):
    metrics: list[str] = Field(
        default_factory=list, description="retrieval metrics, e.g. ndcg@10, map, recall@100"
    )
    query_set: Literal["qrels", "intersection"] = Field(
        default="qrels",
        description=(
            "qrels: mean over judged queries, a query the run lacks scores 0; intersection: trec_eval's "
            "default, and comparisons pair only the queries every run has"
        ),
    )

    tokenizer: str = Field(
        default="whitespace",
        description="token-budget metrics (recall@512tok): how passage lengths are counted, 'whitespace' or a "
        "tokenizers JSON file (the generator's own tokenizer gives its true budget)",
    )
    straddle: Literal["exclude", "include"] = Field(
        default="exclude",
        description="token-budget metrics: a passage crossing the budget is left out, or counted",
    )

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str]) -> list[str]:
        return _check_names(v, _check_retrieval_metric)


class DatasetRunSpec(_Section):
    """The pipeline's own ranking, from the dataset's retrieved_ids / retrieved_scores columns."""

    source: Literal["dataset"] = Field(description="the dataset's retrieved_ids / retrieved_scores")
    name: str = Field(default="pipeline", min_length=1, description="the run's name in the report")


class FileRunSpec(_Section):
    """A ranking stored in a file (TREC run format, or JSON/JSONL as `Run.from_json` reads it)."""

    source: Literal["file"] = Field(description="a run file")
    path: Path = Field(description="TREC run file, or JSON / JSONL as Run.from_json / from_jsonl read them")
    name: str | None = Field(default=None, min_length=1, description="default: the file's stem")
    format: Literal["auto", "trec", "json", "jsonl"] = Field(
        default="auto", description="auto: from the suffix"
    )


class RetrieverRunSpec(_Section):
    """A ranking built now by one of `ragmetrics.retrievers` over the dataset's passages."""

    source: Literal["retriever"] = Field(description="a retriever run now over the dataset's passages")
    retriever: str = Field(min_length=1, description="a kind of ragmetrics.retrievers.build_run, e.g. 'bm25'")
    name: str | None = Field(default=None, min_length=1, description="default: the retriever kind")
    params: dict[str, Any] = Field(default_factory=dict, description="the retriever's parameters, e.g. top_k")


class FusionRunSpec(_Section):
    """A run fused now from runs listed before it (a hybrid retriever: BM25 + dense, say)."""

    source: Literal["fusion"] = Field(description="runs listed earlier, fused by ragmetrics.fuse")
    name: str = Field(min_length=1, description="the fused run's name")
    runs: list[str] = Field(min_length=2, description="names of two or more runs listed before this one")
    method: FusionMethod = Field(
        default="rrf",
        description="any method of ragmetrics.retrieval.fusion except the trained ones (probfuse, segfuse, "
        "slidefuse, posfuse, mapfuse, bayesfuse: train them with ragmetrics.search_fusion, which reports "
        "their held-out score)",
    )
    norm: FusionNorm = Field(
        default="min-max", description="none | min-max | zmuv | max | sum | rank (score-based methods)"
    )
    weights: list[float] | None = Field(
        default=None,
        description="one weight per run: wsum, wmnz, mixed, weighted_bordafuse, weighted_condorcet",
    )
    k: float = Field(default=60.0, ge=0, description="rrf's k")
    gamma: float | None = Field(default=None, description="combgmnz's gamma (required there)")
    sigma: float | None = Field(default=None, gt=0, description="logn_isr's sigma (default 0.01)")
    phi: float | None = Field(default=None, gt=0, lt=1, description="rbc's phi (default 0.8)")

    @field_validator("method")
    @classmethod
    def _untrained(cls, v: str) -> str:
        from ragmetrics.options import TRAINED_FUSION_METHODS

        if v in TRAINED_FUSION_METHODS:
            raise ValueError(
                f"{v} is trained on qrels; a nightly run fuses with untrained methods (train it with "
                "ragmetrics.search_fusion, which reports its held-out score, and fuse the runs into a file run)"
            )
        return v


class PipelineRunSpec(CallSettings):
    """The team's RAG system called once per question; its answers and contexts become a run."""

    source: Literal["pipeline"] = Field(description="the team's pipeline, called now for every question")
    name: str = Field(min_length=1, description="the run's name in the report")


AnyRunSpec = DatasetRunSpec | FileRunSpec | RetrieverRunSpec | FusionRunSpec | PipelineRunSpec
RunSpec = Annotated[AnyRunSpec, Field(discriminator="source")]


def _default_runs() -> list[AnyRunSpec]:
    return [DatasetRunSpec(source="dataset")]


def run_name(spec: AnyRunSpec) -> str:
    """The name a run spec's results carry."""
    if spec.name is not None:
        return spec.name
    if isinstance(spec, FileRunSpec):
        return spec.path.stem
    if isinstance(spec, RetrieverRunSpec):
        return spec.retriever
    raise AssertionError("dataset runs always have a name")


def _check_retrieval_metric(name: str) -> str | None:
    from ragmetrics.retrieval.metrics import parse_metric

    try:
        parse_metric(name)
    except InputError as exc:
        what = exc.what.removeprefix(f"metric {name!r}: ")
        if what.startswith("unknown metric") and ";" in what:
            return f"unknown metric {name!r};{what.split(';', 1)[1]}"
        return f"invalid metric {name!r}: {what}"
    return None
