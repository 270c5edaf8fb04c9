"""How a judge is chosen and configured; shared by code, configs/*.yaml and the CLI.

Secrets are never settings: the API key is read from the environment variable named by `api_key_env`
at the moment a client is built, and is never stored, hashed into cache keys, logged or written out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

PRICE_KEYS = ("prompt", "completion", "embedding")


class JudgeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["openai", "local"] | None = Field(
        default=None,
        description="None: 'openai' when base_url is set or the API-key variable is non-empty, else 'local'",
    )
    model: str = "gpt-4o-mini"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    embedding_model: str = "text-embedding-3-small"
    temperature: float = 0.0
    seed: int | None = 42
    max_concurrency: int = Field(default=8, ge=1, le=1024)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    max_repairs: int = Field(default=2, ge=0)
    cache_path: Path | None = Path(".ragmetrics-cache/verdicts.sqlite")
    use_cache: bool = True
    answer_in_input_language: bool = False
    context_precision_mode: Literal["per_sample", "per_chunk"] = "per_sample"
    answer_relevancy_questions: int = Field(default=3, ge=1, le=20)
    noncommittal_rule: Literal["any", "all"] = Field(
        default="all",
        description="answer_relevancy is 0 when 'all' generated questions are flagged noncommittal (RAGAS >= 0.3.6, "
        "ResponseRelevancy) or when 'any' is (RAGAS before 0.3.6)",
    )
    answer_correctness_weights: tuple[float, float] = Field(
        default=(0.75, 0.25),
        description="answer_correctness = weighted mean of (statement F1, answer similarity), as RAGAS",
    )
    price_per_million_tokens: dict[str, float] | None = Field(
        default=None,
        description="optional {'prompt': USD, 'completion': USD, 'embedding': USD} per 1M tokens",
    )

    @field_validator("answer_correctness_weights")
    @classmethod
    def _weights(cls, value: tuple[float, float]) -> tuple[float, float]:
        if min(value) < 0 or sum(value) <= 0:
            raise ValueError(f"weights must be >= 0 with a positive sum, got {list(value)}")
        return value

    @field_validator("price_per_million_tokens")
    @classmethod
    def _known_price_keys(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        # An unknown key (say 'input', as some price lists call prompt tokens) would otherwise be ignored
        # and the run would report a cost of 0 for the tokens it meant to price.
        if value is None:
            return None
        unknown = sorted(set(value) - set(PRICE_KEYS))
        if unknown:
            raise ValueError(f"unknown price keys {unknown}; use {list(PRICE_KEYS)} (USD per 1M tokens)")
        negative = sorted(k for k, v in value.items() if not v >= 0)
        if negative:
            raise ValueError(f"prices must be finite and >= 0; check {negative}")
        return value
