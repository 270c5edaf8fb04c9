"""How a judge is chosen and configured; shared by code, configs/*.yaml and the CLI.

Secrets are never settings: the API key is read from the environment variable named by `api_key_env`
at the moment a client is built, and is never stored, hashed into cache keys, logged or written out.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragmetrics.judge.panel_config import PanelSettings
from ragmetrics.judge.prices import check_prices

TokenPooling = Literal["refuse", "mean", "first", "last"]
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_DURATION_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def retry_failed_delay_s(policy: str) -> float:
    """Seconds after which a recorded failure is tried again: 0 for 'always', infinity for 'never'."""
    if policy == "always":
        return 0.0
    if policy == "never":
        return math.inf
    m = _DURATION.match(policy)
    if m is None:
        raise ValueError(
            f"retry_failed must be 'always', 'never' or a delay such as '30m', '12h', '7d'; got {policy!r}"
        )
    return float(m.group(1)) * _DURATION_UNITS[m.group(2)]


class EmbeddingSettings(BaseModel):
    """The embedder of answer_relevancy, answer_similarity and answer_correctness, chosen apart from the chat
    judge: a chat-only server (llama.cpp started without --embedding) can pair with the local model or with a
    second server. Keys left unset fall back to the judge's own (base_url, api_key_env, model)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN would silently turn a comparison off

    backend: Literal["openai", "local"] = Field(
        default="openai",
        description="'openai': any OpenAI-compatible /v1/embeddings; 'local': the built-in model",
    )
    model: str | None = Field(default=None, description="embedding model (default: judge.embedding_model)")
    base_url: str | None = Field(
        default=None, description="embeddings endpoint (default: the judge's base_url)"
    )
    api_key_env: str | None = Field(
        default=None, description="environment variable with its API key (default: the judge's)"
    )
    pooling: TokenPooling = Field(
        default="refuse",
        description="a server answering one vector per token (llama.cpp with --pooling none): 'mean', 'first' "
        "or 'last' pools them; 'refuse' fails with how to start the server",
    )


class BatchSettings(BaseModel):
    """judge.batch: chat verdicts through the OpenAI Batch API (ragmetrics.judge.openai.batch)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    price_factor: float = Field(
        default=0.5, gt=0, le=1, description="batch price as a share of the synchronous one (OpenAI: half)"
    )
    gather_s: float = Field(
        default=0.5, ge=0, description="requests go out as one batch once none has arrived for this long"
    )
    poll_s: float = Field(default=5.0, gt=0, description="first wait between two looks at a running batch")
    poll_max_s: float = Field(default=60.0, gt=0, description="longest wait between two looks (backoff x1.5)")
    wait_s: float = Field(
        default=86_400.0, gt=0, description="stop waiting after this long (a rerun waits on, never resubmits)"
    )


class JudgeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN would silently turn a comparison off

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
    max_requests: int | None = Field(
        default=None,
        ge=0,
        description="a hard cap on the requests this judge sends, chat and embeddings, to its endpoint and to "
        "judge.embeddings' (an adaptive night's max_calls; one cap shared by a panel's members or a cascade's "
        "judges): a request past it is not sent and its verdict fails with cause budget_reached (not recorded in "
        "the cache)",
    )
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    breaker_failures: int = Field(
        default=10,
        ge=1,
        description="circuit breaker: failed attempts in a row (connection, timeout, 5xx, 429, auth) that, "
        "lasting breaker_outage_s too, stop the run's requests (recorded as failed with that cause)",
    )
    breaker_outage_s: float = Field(
        default=10.0, ge=0.0, description="circuit breaker: how long the faults must last before it opens"
    )
    max_repairs: int = Field(default=2, ge=0)
    max_tokens: int | None = Field(
        default=None,
        ge=16,
        description="cap on the tokens of one answer; unset: sized per request, 384 + 120 per verdict asked for",
    )
    adaptive_concurrency: bool = Field(
        default=True,
        description="halve the requests in flight when requests time out, are rate-limited or queue up at the "
        "server, and grow them back one at a time (AIMD) up to max_concurrency",
    )
    retry_failed: str = Field(
        default="always",
        description="units whose last attempt failed (invalid output, a refused request, a timeout) are "
        "recorded in the cache: 'always' tries them again, 'never' reports the recorded failure without a "
        "call, a delay ('30m', '12h', '7d') tries again once the failure is that old",
    )
    repeats: int = Field(
        default=1,
        ge=1,
        le=20,
        description="judge every unit this many times with distinct seeds (seed + repeat) to measure the "
        "judge's own noise (docs/trust.md); results keep repeat 0's scores, each repeat is cached apart (a "
        "cascade instead votes each step's repeats together before its confidence test: docs/cascade.md)",
    )
    embeddings: EmbeddingSettings | None = Field(
        default=None, description="a separate embedder (default: the judge's endpoint and embedding_model)"
    )
    local_model: Literal["auto", "minilm", "e5"] = Field(
        default="auto",
        description="the local judge's embedding model: 'auto' (MiniLM for English samples, multilingual-e5-small "
        "for other languages), 'minilm' or 'e5' for every sample",
    )
    aligned: Path | None = Field(
        default=None,
        description="a folder written by `ragmetrics align` (or its aligned.json): its metrics are judged "
        "through the aligned prompt, head and calibration fitted on your labels (docs/trust.md)",
    )
    if_not_aligned: Literal["error", "unaligned"] = Field(
        default="error",
        description="when `aligned` names a folder whose alignments kept no step: stop with what to do (error), "
        "or judge with the judge as it is (unaligned; the night's notes say so)",
    )
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
    batch: BatchSettings | None = Field(
        default=None,
        description="true (or {price_factor, gather_s, poll_s, poll_max_s, wait_s}): chat "
        "verdicts go through the OpenAI Batch API at batch prices; resumable, never submitted twice",
    )

    panel: PanelSettings | None = Field(
        default=None,
        description="several judges on every (sample, metric), combined per metric: a list of members "
        "({name, backend, model, base_url, api_key_env, price_per_million_tokens, ...}; the rest from here) or "
        "{members, combine: mean|majority|learned|dawid_skene, labels, folds, threshold} (docs/judges.md)",
    )

    @field_validator("batch", mode="before")
    @classmethod
    def _batch_switch(cls, value: Any) -> Any:
        if value is True:
            return {}
        return None if value is False else value

    @field_validator("retry_failed")
    @classmethod
    def _retry_failed(cls, value: str) -> str:
        retry_failed_delay_s(value)
        return value

    @field_validator("answer_correctness_weights")
    @classmethod
    def _weights(cls, value: tuple[float, float]) -> tuple[float, float]:
        if min(value) < 0 or sum(value) <= 0:
            raise ValueError(f"weights must be >= 0 with a positive sum, got {list(value)}")
        return value

    @field_validator("price_per_million_tokens")
    @classmethod
    def _known_price_keys(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        return check_prices(value)
