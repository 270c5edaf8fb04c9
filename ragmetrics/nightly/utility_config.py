"""The `utility_qrels:` section of a night's config: build utility judgments (eRAG) for the night's runs and
score every run's retrieval metrics on them too (docs/utilities.md, "Utility judgments in a night").

Apart from nightly/config_night.py, which only names the section, so the config modules do not grow."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["UtilityOpenAIConfig", "UtilityQrelsConfig"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class UtilityOpenAIConfig(_Section):
    """An OpenAI-compatible model answering with the documented RAG prompt (prompts/_rag_answer.yaml)."""

    model: str = Field(min_length=1, description="the chat model")
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint (default: OpenAI's)")
    api_key_env: str = Field(default="OPENAI_API_KEY", description="environment variable holding the API key")
    temperature: float = Field(default=0.0, ge=0, le=2, description="sampling temperature")
    max_tokens: int = Field(default=64, ge=1, le=4096, description="longest answer, tokens")
    seed: int | None = Field(default=0, description="sampling seed sent to the endpoint")
    logprobs: bool = Field(
        default=True, description="ask for logprobs: the probability of abstaining that udcg@k reads"
    )
    top_logprobs: int = Field(default=20, ge=0, le=20, description="alternatives per token position")
    timeout_s: float = Field(default=60.0, gt=0, le=3600, description="per request, seconds")
    price_in: float = Field(default=0.0, ge=0, description="USD per million prompt tokens (for max_cost)")
    price_out: float = Field(
        default=0.0, ge=0, description="USD per million completion tokens (for max_cost)"
    )


class UtilityQrelsConfig(_Section):
    """Utility judgments for the night: each passage in the runs' pooled top k given alone to a generator, its
    answer scored against the reference, the scores as qrels (written to the night's `utility/` folder), and
    every run's retrieval metrics on them as `utility:<metric>` (udcg with the probabilities of abstaining)."""

    generator: Literal["extractive", "night", "openai"] = Field(
        default="extractive",
        description="extractive (offline, deterministic), night (the night's `generator:` target, a callable "
        "or an HTTP endpoint), or openai (the `openai` settings below)",
    )
    openai: UtilityOpenAIConfig | None = Field(default=None, description="generator openai: the model")
    metric: Literal["token_f1", "exact_match", "answer_correctness"] = Field(
        default="token_f1",
        description="answer metric against the reference (answer_correctness: the judge's)",
    )
    k: int = Field(default=10, ge=1, le=1000, description="pool depth per run")
    runs: list[str] | None = Field(default=None, description="runs to pool (default: every ranked run)")
    max_grade: int = Field(default=3, ge=1, le=100, description="grade = round-half-up(score x max_grade)")
    metrics: list[str] | None = Field(
        default=None,
        description="retrieval metrics on the utility qrels (default: retrieval.metrics + udcg@k)",
    )
    max_requests: int | None = Field(default=None, ge=0, description="at most this many generator calls")
    max_cost: float | None = Field(
        default=None, ge=0, description="at most this many USD (calls reserved at their bound)"
    )
    cost_per_call: float = Field(
        default=0.0, ge=0, description="generator night: USD one call is reserved at"
    )
    concurrency: int = Field(default=4, ge=1, le=256, description="generator calls in flight at once")
    retries: int = Field(
        default=1, ge=0, le=10, description="re-asks after a passing failure (each budgeted)"
    )
    cache: Path | None = Field(
        default=None, description="answer cache (default: utility_cache.sqlite in output.dir)"
    )
    folder: Path | None = Field(
        default=None,
        description="score the runs on the utility judgments already in this folder (`ragmetrics utility -o "
        "DIR`, or a night's utility/) instead of building them: nothing is sent, and its utility.json says "
        "where they came from (generator, metric, when, k, runs)",
    )

    def scored_metrics(self, retrieval_metrics: list[str]) -> list[str]:
        """The retrieval metrics scored on the utility qrels: `metrics`, or the night's and udcg@k."""
        chosen = self.metrics if self.metrics is not None else [*retrieval_metrics, f"udcg@{self.k}"]
        return list(dict.fromkeys(chosen))

    def report_metrics(self, retrieval_metrics: list[str]) -> list[str]:
        """Their names in the night's report: `utility:<metric>`."""
        return [f"utility:{m}" for m in self.scored_metrics(retrieval_metrics)]

    @field_validator("metrics")
    @classmethod
    def _known(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            from ragmetrics.retrieval.metric_parse import parse_metrics

            parse_metrics(value)  # an unknown metric fails with the config, not after the generator ran
        return value

    @model_validator(mode="after")
    def _openai_given(self) -> UtilityQrelsConfig:
        if self.generator == "openai" and self.openai is None:
            raise ValueError("generator openai needs the `openai` settings (at least `model`)")
        if self.generator != "openai" and self.openai is not None:
            raise ValueError(f"`openai` settings are only read with generator openai, not {self.generator!r}")
        return self
