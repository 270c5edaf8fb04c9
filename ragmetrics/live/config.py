"""`ragmetrics watch CONFIG`: what to read, how much of it to judge, with which metrics, in which windows, and
when to alert (docs/online.md). A YAML file of its own, validated as strictly as a night's config: every
problem is a ConfigError naming the file and key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from ragmetrics._yaml import read_yaml_file
from ragmetrics.errors import ConfigError
from ragmetrics.judge.base import JUDGE_METRICS
from ragmetrics.nightly.config_judge import JudgeConfig
from ragmetrics.nightly.config_load import format_validation_error, with_metric_files
from ragmetrics.nightly.config_output import EngineConfig

__all__ = ["WatchConfig", "load_watch_config", "window_seconds"]

_DURATION = re.compile(r"^\s*(\d+)\s*(m|h|d)\s*$")
_UNITS = {"m": 60, "h": 3600, "d": 86400}
OPERATIONAL = ("latency_s", "tokens", "cost")


def window_seconds(text: str) -> int:
    m = _DURATION.match(text)
    if m is None or int(m.group(1)) <= 0:
        raise ValueError(
            f"a window is a whole number of minutes, hours or days such as '15m', '1h', '1d'; got {text!r}"
        )
    seconds = int(m.group(1)) * _UNITS[m.group(2)]
    if 86400 % seconds and seconds % 86400:
        raise ValueError(
            f"window {text!r} does not divide a day (or a whole number of days): windows would drift"
        )
    return seconds


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class SourceConfig(_Section):
    """Where new traces come from."""

    kind: Literal["otlp_file", "receiver", "phoenix"] = Field(
        description="otlp_file: a growing OTLP JSON file (the Collector's file exporter, rotation followed); "
        "receiver: an OTLP/HTTP receiver of our own (protobuf and JSON on /v1/traces); phoenix: a Phoenix "
        "server's REST API (spans read with a cursor; scores written back as span annotations)"
    )
    url: str | None = Field(default=None, description="phoenix: the server, e.g. http://127.0.0.1:6006")
    project: str = Field(default="default", description="phoenix: the project whose traces are watched")
    api_key_env: str = Field(
        default="PHOENIX_API_KEY", description="phoenix: variable holding its API key, when it needs one"
    )
    path: Path | None = Field(default=None, description="otlp_file: the file the exporter writes")
    listen: str = Field(default="127.0.0.1:4318", description="receiver: host:port to listen on")
    max_spool_mb: float = Field(
        default=512.0, gt=0, description="receiver: unread spans kept on disk at most; beyond, it answers 503"
    )
    poll_s: float = Field(default=5.0, gt=0, description="seconds between polls")
    settle_s: float = Field(
        default=30.0, ge=0, description="a trace is complete when no span of it arrived for this long"
    )

    @model_validator(mode="after")
    def _needs(self) -> SourceConfig:
        if self.kind == "otlp_file" and self.path is None:
            raise ValueError("kind otlp_file needs path")
        if self.kind == "phoenix" and (self.url is None or not re.match(r"^https?://[^\s/]+", self.url)):
            raise ValueError(
                "kind phoenix needs url: the server's http(s) address, e.g. http://127.0.0.1:6006"
            )
        if self.kind == "receiver":
            host, _, port = self.listen.rpartition(":")
            if not host or not port.isdigit() or not 0 <= int(port) < 65536:
                raise ValueError(f"listen must be host:port, got {self.listen!r}")
        return self


class SegmentRule(_Section):
    attribute: str = Field(description="a root-span attribute, e.g. user.tier")
    values: list[str] = Field(min_length=1)


class AlwaysRules(_Section):
    """Traces judged whatever the rate (still within the budget): what a team most needs to see."""

    errors: bool = Field(default=True, description="traces with a span whose status is ERROR")
    slower_than_s: float | None = Field(default=None, gt=0, description="traces whose root took longer")
    segment: SegmentRule | None = None
    retrieval_score_below: float | None = Field(
        default=None,
        description="traces whose best retrieved document scored below this (the traced retriever's own score)",
    )


class SamplingConfig(_Section):
    rate: float = Field(
        default=0.1, ge=0, le=1, description="share of traces judged (by trace id, deterministic)"
    )
    seed: int = Field(default=0, description="changes which traces the rate picks, never how many")
    max_calls_per_window: int | None = Field(
        default=None,
        ge=0,
        description="judge calls (one trace scored on one judge metric) per window, at most",
    )
    max_tokens_per_window: int | None = Field(
        default=None,
        ge=0,
        description="judge tokens per window, at most, charged by a conservative estimate before any call",
    )
    max_cost_per_window: float | None = Field(
        default=None,
        ge=0,
        description="judge cost (USD) per window, at most: the token estimate at judge.price_per_million_tokens",
    )
    always: AlwaysRules = Field(default_factory=AlwaysRules)


class JudgeSection(JudgeConfig):
    """A night's judge section (backend, model, your own rubrics in `custom_metrics` / `metric_files`), with
    reference-free metrics by default: a production trace has no reference."""

    metrics: list[str] = Field(
        default_factory=lambda: ["faithfulness", "answer_relevancy"],
        description="reference-free judge metrics (and your rubrics) to score sampled traces with",
    )


class AlertConfig(_Section):
    max_drop: float = Field(
        default=0.0, ge=0, description="allowed drop of a window's mean below the baseline's"
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="significance of the drop")
    min_samples: int = Field(default=20, ge=2, description="a window with fewer scored traces is not tested")
    drift_windows: int = Field(
        default=8,
        ge=5,
        description="windows in the trend test (Mann-Kendall, as `ragmetrics history`); a "
        "significant worsening trend alerts like a drop",
    )
    webhook: str | None = Field(default=None, description="POST each alert as JSON here (http or https)")
    cluster_by_session: bool = Field(
        default=True,
        description="resample whole conversations (session.id) in the interval: turns are not independent",
    )

    @field_validator("webhook")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^https?://[^\s/]+", v):
            raise ValueError(f"webhook must be an http(s) URL, got {v!r}")
        return v


class GoldenConfig(_Section):
    """A QA set replayed through production: traces whose question is in it are judged against its references."""

    path: Path = Field(
        description="a QA file read as `ragmetrics run` reads datasets (question, reference, ids)"
    )
    metrics: list[str] = Field(
        default_factory=lambda: ["context_recall", "answer_correctness"],
        description="reference-based judge metrics for the matched traces",
    )

    @field_validator("metrics")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        unknown = [m for m in v if m not in JUDGE_METRICS]
        if unknown:
            raise ValueError(f"unknown judge metric {unknown[0]!r}; metrics: {', '.join(JUDGE_METRICS)}")
        return v


class WriteBack(_Section):
    """Where judged scores are written as span annotations (default: the Phoenix server the traces come from)."""

    phoenix_url: str | None = Field(default=None, description="a Phoenix server (none: no write-back)")
    project: str = "default"
    api_key_env: str = "PHOENIX_API_KEY"


class ConversationConfig(_Section):
    """How long a conversation's turns are kept for its later turns (docs/online.md, "Conversations")."""

    keep: str = Field(
        default="1d",
        description="a turn is kept this long after its conversation's latest turn ('30m', '6h', '1d', ...): a "
        "later turn arriving within it is judged with every kept earlier turn",
    )
    max_turns: int = Field(
        default=50, ge=1, le=1000, description="earlier turns kept per conversation at most (the latest ones)"
    )

    @field_validator("keep")
    @classmethod
    def _duration(cls, value: str) -> str:
        match = _DURATION.match(value)
        if match is None or int(match.group(1)) <= 0:
            raise ValueError(f"a duration such as '30m', '6h', '1d'; got {value!r}")
        return value

    def seconds(self) -> int:
        m = _DURATION.match(self.keep)
        assert m is not None
        return int(m.group(1)) * _UNITS[m.group(2)]


class WatchConfig(_Section):
    _source_dir: Path | None = PrivateAttr(default=None)

    name: str = "ragmetrics live"
    source: SourceConfig
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    judge: JudgeSection = Field(default_factory=lambda: JudgeSection(backend="local"))
    window: str = Field(default="1h", description="window length: '15m', '1h', '1d', ...")
    baseline_window: str | None = Field(
        default=None,
        description="the pinned window alerts compare with (its start, as the store names it); "
        "default: the first closed window",
    )
    alerts: AlertConfig = Field(default_factory=AlertConfig)
    output: Path = Field(default=Path("ragmetrics-live"), description="the store, history.jsonl and the page")
    engine: EngineConfig = Field(
        default_factory=EngineConfig, description="where the judging runs, as for nights"
    )
    nights: Path | None = Field(
        default=None,
        description="the output folder of your `ragmetrics run` nights: each window shows the last night's mean "
        "of each metric beside its own (test-set questions against production's)",
    )
    golden: GoldenConfig | None = Field(
        default=None, description="a known QA set: its questions' traces are always judged, with references"
    )
    write_back: WriteBack | None = Field(
        default=None, description="annotations in Phoenix (default: the phoenix source's own server)"
    )
    conversations: ConversationConfig = Field(
        default_factory=ConversationConfig,
        description="a sampled turn is judged with its conversation's earlier turns, sampled or not",
    )

    @model_validator(mode="after")
    def _priced(self) -> WatchConfig:
        prices = self.judge.price_per_million_tokens or {}
        if self.sampling.max_cost_per_window is not None and not prices:
            raise ValueError(
                "sampling.max_cost_per_window needs judge.price_per_million_tokens to turn tokens into cost"
            )
        return self

    @property
    def source_dir(self) -> Path | None:
        """The config file's folder (where a team's Python metrics are imported from first)."""
        return self._source_dir

    def annotation_target(self) -> WriteBack | None:
        if self.write_back is not None:
            return self.write_back if self.write_back.phoenix_url else None
        if self.source.kind == "phoenix":
            return WriteBack(
                phoenix_url=self.source.url, project=self.source.project, api_key_env=self.source.api_key_env
            )
        return None

    @field_validator("window")
    @classmethod
    def _window(cls, v: str) -> str:
        window_seconds(v)
        return v


def load_watch_config(path: str | Path) -> WatchConfig:
    path = Path(path)
    data = read_yaml_file(path, what="config")
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping of sections at the top level")
    data, origins = with_metric_files(data, path.parent, str(path))
    try:
        config = WatchConfig.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as exc:
        lines = format_validation_error(exc, data)
        raise ConfigError(f"{path}: " + ("; ".join(lines))) from None
    config.judge._metric_origins = origins
    base = path.parent.resolve()
    config._source_dir = base

    def resolve(p: Path | None) -> Any:
        return None if p is None else (p if p.is_absolute() else base / p)

    config.source.path = resolve(config.source.path)
    config.output = resolve(config.output)
    config.judge.cache_path = resolve(config.judge.cache_path)
    config.judge.aligned = resolve(config.judge.aligned)
    if config.golden is not None:
        config.golden.path = resolve(config.golden.path)
    config.nights = resolve(config.nights)
    return config
