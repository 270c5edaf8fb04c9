"""The schema of `configs/*.yaml`: one validated object drives `ragmetrics run`.

Every section forbids unknown keys, and every error names its key path (``judge.max_concurency: unknown key``,
``retrieval.metrics[2]: unknown metric 'ndgc@10'``) so a typo never silently falls back to a default; values
are validated strictly, so YAML's ``yes`` never becomes a threshold of 1.0.
Relative paths resolve against the folder of the config file, so a config works from any working directory.
Secrets never live here: the judge reads its API key from the environment variable named by ``api_key_env``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ragmetrics._yaml import key_path, read_yaml_file
from ragmetrics.errors import ConfigError, InputError
from ragmetrics.judge.base import JUDGE_METRICS
from ragmetrics.judge.cascade.config import CascadeKeys, check_cascade_combination
from ragmetrics.judge.own_metrics import (
    CustomMetric,
    entry_point_definition,
    entry_point_names,
    load_metric_file,
)
from ragmetrics.judge.registry import JudgeMetricSpec, resolve_judge_metric
from ragmetrics.judge.rubric import RubricMetric
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.judge.text.language import check_language_code
from ragmetrics.nightly.utility_config import UtilityQrelsConfig
from ragmetrics.nightly.validity_config import ValidityConfig
from ragmetrics.options import FusionMethod, FusionNorm
from ragmetrics.sweep.config import SweepConfig
from ragmetrics.testset.settings import TestsetSettings

# The columns a QA dataset can provide, in our names; `dataset.mapping` maps the user's column names onto these.
DATASET_FIELDS: tuple[str, ...] = (
    "id",
    "question",
    "contexts",
    "context_ids",
    "answer",
    "reference",
    "language",
    "retrieved_ids",
    "retrieved_scores",
    "relevant_ids",
    "relevant_grades",
    "tool_calls",
    "reference_tool_calls",
    "conversation_id",
    "turn",
    "messages",
    "answerable",
)

# Built-in datasets, by the name a config uses in `dataset.builtin`.
BUILTIN_DATASETS: tuple[str, ...] = ("pydocs",)

RUN_SOURCES: tuple[str, ...] = ("dataset", "file", "retriever", "fusion", "pipeline")
OutputFormat = Literal["json", "parquet", "csv", "md", "html"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("json", "parquet", "csv", "md", "html")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN would silently turn a comparison off


class DatasetConfig(_Section):
    """Where the QA samples come from and how their columns map onto ours."""

    builtin: str | None = Field(default=None, description=f"a shipped dataset: one of {BUILTIN_DATASETS}")
    path: Path | None = Field(default=None, description="a local file or saved dataset folder, or a hub name")
    traces: Path | None = Field(
        default=None,
        description="a trace file (OTLP JSON from the OpenTelemetry Collector's file exporter, or a Langfuse "
        "export; docs/traces.md): the traced system's answers, contexts, rankings, latency, tokens and cost. "
        "With 'builtin' or 'path', traces are matched to its questions (metadata id, else the question's text) "
        "and scored against its references and qrels; alone, the traces are the dataset",
    )
    attacks: Path | None = Field(
        default=None,
        description="an attack set folder (`ragmetrics attack`, docs/attacks.md): its clean questions and attacks "
        "are the dataset, and every answering run gets the attack metrics (attack success per kind, refusals of "
        "clean questions); alone, without 'builtin', 'path' or 'traces'",
    )
    format: Literal["auto", "json", "jsonl", "csv", "parquet", "disk", "hub", "otlp", "langfuse"] = Field(
        default="auto",
        description="auto: from the file extension, or 'disk' for a folder; 'otlp' or 'langfuse' for a "
        "dataset of traces alone (with 'path' too, it is the format of 'path', and the traces' is read from "
        "their content)",
    )
    split: str = Field(
        default="train", description="the split to read (local files: the name given to the file)"
    )
    mapping: dict[str, str] = Field(default_factory=dict, description="user column name -> our field name")
    on_bad_row: Literal["fail", "skip"] = Field(
        default="fail",
        description="a row failing validation stops the run, or is skipped and listed in the report",
    )
    limit: int | None = Field(default=None, ge=1, description="use only the first N valid rows")
    language: str | None = Field(
        default=None,
        description="ISO 639 code of the dataset's texts ('ja', 'de'), for rows without a 'language' column "
        "value; unset: each text's script decides (Latin script reads as English, so set 'de', 'fr', ...)",
    )
    passages: Path | None = Field(
        default=None,
        description="JSONL of {id, text, title?} passages for retriever runs (builtin: the shipped ones; a "
        "test-set folder: its corpus when that is a JSONL file)",
    )
    relevant_order: Literal["set", "ranked"] = Field(
        default="set",
        description="relevant_ids without relevant_grades: 'set' makes each grade 1; 'ranked' reads them as "
        "listed most relevant first, grades by position (n for the first of n, down to 1)",
    )

    @field_validator("language")
    @classmethod
    def _language_code(cls, v: str | None) -> str | None:
        return check_language_code(v)

    @field_validator("builtin")
    @classmethod
    def _known_builtin(cls, v: str | None) -> str | None:
        if v is not None and v not in BUILTIN_DATASETS:
            raise ValueError(f"unknown builtin dataset {v!r}; available: {', '.join(BUILTIN_DATASETS)}")
        return v

    @field_validator("mapping")
    @classmethod
    def _known_targets(cls, v: dict[str, str]) -> dict[str, str]:
        seen: dict[str, str] = {}
        for user_col, ours in v.items():
            if ours not in DATASET_FIELDS:
                raise ValueError(
                    f"column {user_col!r} maps to unknown field {ours!r}; fields: {', '.join(DATASET_FIELDS)}"
                )
            if ours in seen:
                raise ValueError(f"columns {seen[ours]!r} and {user_col!r} both map to {ours!r}")
            seen[ours] = user_col
        return v

    @model_validator(mode="after")
    def _one_source(self) -> DatasetConfig:
        if self.attacks is not None:
            others = [k for k in ("builtin", "path", "traces") if getattr(self, k) is not None]
            if others:
                raise ValueError(f"'attacks' is a whole dataset: give it alone, without {others[0]!r}")
            ignored = sorted(
                {"format", "split", "mapping", "relevant_order", "limit", "on_bad_row"}
                & self.model_fields_set
            )
            if ignored:
                raise ValueError(f"{ignored[0]!r} applies to 'path' datasets, not to 'attacks'")
            return self
        if self.builtin is not None and self.path is not None:
            raise ValueError("give exactly one of 'builtin' or 'path'")
        if self.builtin is None and self.path is None and self.traces is None:
            raise ValueError("give exactly one of 'builtin' or 'path', or 'traces', or 'attacks'")
        trace_formats = ("otlp", "langfuse")
        if self.format in trace_formats and (self.traces is None or self.path is not None):
            raise ValueError(
                f"format {self.format!r} is the format of dataset.traces, which needs 'traces' and no 'path' "
                "(with 'path', format is the format of 'path' and the traces' is read from their content)"
            )
        if self.traces is not None and self.path is None and self.format not in ("auto", *trace_formats):
            raise ValueError(f"format {self.format!r} is for 'path'; traces are 'otlp' or 'langfuse'")
        if self.builtin is not None:
            ignored = sorted({"format", "split"} & self.model_fields_set)
            if self.traces is not None and self.format in ("auto", *trace_formats):
                ignored = [name for name in ignored if name != "format"]  # the traces' format
            if ignored:  # a built-in dataset has one format and one split: a value here would be ignored
                verb = "applies" if len(ignored) == 1 else "apply"
                raise ValueError(
                    f"{' and '.join(map(repr, ignored))} {verb} to 'path' datasets, not to 'builtin'"
                )
        if self.format == "hub" and self.path is None:
            raise ValueError("format 'hub' needs 'path' (the dataset's hub name)")
        return self


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


_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class HttpTarget(_Section):
    """An HTTP endpoint of the team's system: POST JSON in, JSON out (docs/nightly.md, "Your own pipeline")."""

    url: str = Field(description="http(s) URL the inputs are POSTed to as JSON")
    headers_env: dict[str, str] = Field(
        default_factory=dict,
        description="header name -> environment variable holding its value (credentials never in a config)",
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=86_400, description="per-request timeout (default: the call's timeout_s)"
    )

    @field_validator("url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        from urllib.parse import urlsplit

        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http:// or https:// URL with a host, got {v[:60]!r}")
        if parts.username or parts.password:
            raise ValueError("credentials in the URL are refused: put them in headers_env")
        return v

    @field_validator("headers_env")
    @classmethod
    def _names(cls, v: dict[str, str]) -> dict[str, str]:
        for header, env in v.items():
            if not _HEADER_NAME.match(header):
                raise ValueError(f"{header!r} is not a valid HTTP header name")
            if not _ENV_NAME.match(env):
                raise ValueError(f"header {header!r}: {env!r} is not an environment variable name")
        return v


Target = str | HttpTarget


def _check_target(v: Target) -> Target:
    if isinstance(v, str) and not _CALLABLE.match(v):
        raise ValueError(
            f"target {v!r}: expected 'package.module:function' (a Python callable) or a mapping with a url"
        )
    return v


class CallSettings(_Section):
    """How the team's code is called: which target, its version, concurrency, timeouts, retries."""

    target: Target = Field(description="'package.module:function', or {url, headers_env, timeout_s}")
    version: str | None = Field(
        default=None,
        min_length=1,
        description="part of the output cache key: your system's version (a callable's code is keyed anyway: "
        "its module and the project modules it imports; an endpoint's is not, so set it to your deploy's version)",
    )
    cache_key: str | None = Field(
        default=None,
        min_length=1,
        description="part of the output cache key: what decides outputs that the code does not show, such as an "
        "index version or a git SHA; a new value calls every question afresh",
    )
    cache_key_env: list[str] = Field(
        default_factory=list,
        description="environment variables whose values are part of the output cache key (as a hash; values "
        "are stored nowhere), beside those the callable's project code reads by name, which are keyed anyway",
    )
    concurrency: int = Field(default=8, ge=1, le=1024, description="calls in flight at once")
    timeout_s: float = Field(default=120.0, gt=0, le=86_400, description="per call, seconds")
    retries: int = Field(
        default=2, ge=0, le=20, description="HTTP: retries on 429, 5xx, timeouts and connection errors"
    )
    python_path: list[Path] = Field(
        default_factory=list,
        description="folders searched first for a callable target's module (relative to the config; the "
        "config's folder and the working directory are always searched)",
    )

    @field_validator("target")
    @classmethod
    def _target(cls, v: Target) -> Target:
        return _check_target(v)

    @field_validator("cache_key_env")
    @classmethod
    def _env_names(cls, v: list[str]) -> list[str]:
        for i, name in enumerate(v):
            if not _ENV_NAME.match(name):
                raise ValueError(f"[{i}]: {name!r} is not an environment variable name")
            if name in v[:i]:
                raise ValueError(f"[{i}]: {name!r} is listed twice")
        return v

    def cache_settings(self) -> dict[str, Any]:
        """The settings that reach a call's output, for its cache key (`nightly.call_identity`); how calls
        are made (concurrency, timeouts, retries, where the module is found) decides no output."""
        target = self.target if isinstance(self.target, str) else self.target.model_dump(exclude={"timeout_s"})
        return {"target": target, "version": self.version, "cache_key": self.cache_key,
                "cache_key_env": sorted(self.cache_key_env)}  # fmt: skip


class PipelineRunSpec(CallSettings):
    """The team's RAG system called once per question; its answers and contexts become a run."""

    source: Literal["pipeline"] = Field(description="the team's pipeline, called now for every question")
    name: str = Field(min_length=1, description="the run's name in the report")


class GeneratorConfig(CallSettings):
    """An answer for every run: the team's generator called with the question and a run's top-k contexts."""

    top_k: int = Field(default=3, ge=1, le=100, description="contexts passed to the generator per question")
    runs: list[str] | None = Field(
        default=None,
        description="runs to generate answers for (default: every run without answers of its own)",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        """`generator: "package.module:function"`, the shape a pipeline's target takes, means that target."""
        return {"target": data} if isinstance(data, str) else data


AnyRunSpec = DatasetRunSpec | FileRunSpec | RetrieverRunSpec | FusionRunSpec | PipelineRunSpec
RunSpec = Annotated[AnyRunSpec, Field(discriminator="source")]


class AdaptiveConfig(_Section):
    """An adaptive night (docs/adaptive.md): judge questions in a seeded random order, in batches, every run on
    the same ones, and stop once every decision is settled by an anytime-valid confidence sequence."""

    batch_size: int = Field(default=50, ge=1, description="questions judged between two looks")
    alpha: float = Field(default=0.05, gt=0, lt=1, description="error rate of all decisions together")
    margin: float = Field(
        default=0.01, ge=0, lt=1, description="a pair whose difference is shown within +-margin is level"
    )
    precision: float | None = Field(
        default=None, gt=0, lt=1, description="also settle each run's mean to +-this (half-width)"
    )
    max_questions: int | None = Field(default=None, ge=1, description="budget: questions judged at most")
    max_calls: int | None = Field(default=None, ge=1, description="budget: judge requests at most")
    max_cost: float | None = Field(default=None, gt=0, description="budget: judge cost in USD at most")
    seed: int = Field(default=0, description="the order questions are judged in")
    strata: str | None = Field(
        default=None, description="a dataset column: the order takes each stratum in turn, in proportion"
    )
    signal: str | None = Field(
        default=None,
        description="a free score on every question that predicts the judge's, used as a control variate: "
        "'local' (the built-in local judge's score of the same metric) or a retrieval metric of the night "
        "(e.g. 'ndcg@10')",
    )
    target: Literal["population", "questions"] = Field(
        default="population",
        description="pair and gate decisions about questions like these ('population', as the full night's "
        "paired tests) or about this dataset's own questions ('questions': a fixed regression set)",
    )


class JudgeConfig(CascadeKeys, JudgeSettings):
    """JudgeSettings (backend, model, base_url, concurrency, timeouts, cache) plus which metrics to judge
    (and a cascade's keys: judge.cascade.config)."""

    _metric_origins: dict[str, str] = PrivateAttr(default_factory=dict)
    adaptive: AdaptiveConfig | None = Field(
        default=None,
        description="judge until every decision is settled (anytime-valid), not every question: "
        "{batch_size, alpha, margin, precision, max_questions, max_calls, max_cost, seed, strata, signal, "
        "target}",
    )
    metric_files: list[Path] = Field(
        default_factory=list,
        description="metric definitions of your own, one YAML file each (a rubric, say); read into "
        "custom_metrics when the config loads; list their names in `metrics`",
    )
    custom_metrics: list[CustomMetric] = Field(
        default_factory=list,
        description="metrics of your own: contains, matches, python or rubric (docs/judge.md, 'Your own "
        "metrics'); list their names in `metrics`",
    )

    metrics: list[str] = Field(default_factory=list, description=f"judge metrics: {', '.join(JUDGE_METRICS)}")
    contexts_top_k: int = Field(
        default=3,
        ge=1,
        le=100,
        description="contexts of a run without its own: the texts of its top-k passages",
    )
    runs: list[str] | None = Field(
        default=None, description="runs to judge (default: every run with contexts)"
    )

    @field_validator("custom_metrics")
    @classmethod
    def _distinct_custom(cls, v: list[CustomMetric]) -> list[CustomMetric]:
        seen: set[str] = set()
        for i, item in enumerate(v):
            if item.name in seen:
                raise ValueError(f"[{i}]: metric {item.name!r} is defined twice")
            if resolve_judge_metric(item.name) is not None:
                raise ValueError(f"[{i}]: {item.name!r} is the name of a built-in metric; choose another")
            seen.add(item.name)
        return v

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, v: list[str], info: ValidationInfo) -> list[str]:
        own = [m.name for m in info.data.get("custom_metrics", [])]
        known = [*JUDGE_METRICS, *own, *entry_point_names()]

        def check(name: str) -> str | None:
            if name in known:
                return None
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return f"unknown metric {name!r}{hint} judge metrics: {', '.join(known)}"

        return _check_names(v, check)

    @model_validator(mode="after")
    def _custom_metrics_used(self) -> JudgeConfig:
        unused = sorted({m.name for m in self.custom_metrics} - set(self.metrics))
        if unused:
            raise ValueError(f"custom metric {unused[0]!r} is defined but not listed in judge.metrics")
        if self.adaptive is not None and self.repeats > 1 and not self.cascade:  # a cascade votes its repeats
            raise ValueError("judge.adaptive: judge.repeats > 1 is not supported with an adaptive night (set one)")
        if self.adaptive is not None and self.panel is not None and self.panel.combine in ("learned", "dawid_skene"):
            raise ValueError("judge.panel.combine: an adaptive night combines per unit: use mean or majority")
        check_cascade_combination(self.cascade, self.panel)  # judge.cascade.config
        return self

    def metric_specs(self, origin: str, search: Sequence[Path] = ()) -> list[JudgeMetricSpec]:
        """The specs of the custom metrics, to register for the run (`registry.registered_metrics`); Python
        metrics are imported now, from the folders in `search` first."""
        specs = [
            item.to_spec(self._metric_origins.get(item.name, origin), search) for item in self.custom_metrics
        ]
        defined = {*JUDGE_METRICS, *(m.name for m in self.custom_metrics)}
        for name in self.metrics:  # the rest are offered by installed packages
            if name not in defined and resolve_judge_metric(name) is None:
                specs.append(entry_point_definition(name).to_spec(f"entry point {name!r}", search))
        return specs

    def settings(self) -> JudgeSettings:
        """The backend settings alone, as `make_judge` takes them."""
        fields = set(JudgeSettings.model_fields)
        return JudgeSettings.model_validate(self.model_dump(include=fields))



class CompareConfig(_Section):
    test: Literal["fisher", "t", "wilcoxon", "sign"] = Field(
        default="fisher", description="paired test for comparisons and the regression gate"
    )
    correction: Literal["holm", "bonferroni", "none"] = Field(
        default="holm", description="multiple-testing correction"
    )
    alpha: float = Field(default=0.05, gt=0, lt=1, description="significance level after correction")
    seed: int = Field(default=42, description="seed of the randomisation test and the bootstrap")
    permutations: int = Field(default=10_000, ge=100, description="permutations of the fisher test")
    tukey: Literal["off", "blocked", "one-way"] = Field(
        default="off",
        description="also Tukey's HSD over every pair of runs at once, per metric (blocked: queries as blocks; "
        "one-way: as scipy and ranx)",
    )
    power: float = Field(
        default=0.8, gt=0, lt=1, description="the power the report's minimum detectable differences are for"
    )
    power_targets: dict[str, float] = Field(
        default_factory=dict,
        description="metric -> the difference to plan the questions for in the power table (default: the "
        "baseline's max_drop for it when above 0, else the observed difference)",
    )

    @field_validator("power_targets")
    @classmethod
    def _positive_targets(cls, v: dict[str, float]) -> dict[str, float]:
        bad = sorted(k for k, d in v.items() if not 0 < d < float("inf"))
        if bad:
            raise ValueError(f"targets must be positive differences; check {bad}")
        return v


class MlflowOutput(_Section):
    """Log every night to an MLflow tracking server (docs/mlflow.md; pip install 'ragmetrics[mlflow]')."""

    tracking_uri: str = Field(description="the tracking server, e.g. http://127.0.0.1:5000 (or sqlite:///mlflow.db)")
    experiment: str | None = Field(default=None, description="the MLflow experiment (default: the config's name)")
    timeout_s: float = Field(
        default=30.0, gt=0, description="the whole logging step, queued nights and loading MLflow's client "
        "included, gives up after this long: at worst timeout_s + 1 s (what is not logged stays queued and is "
        "completed next time; the night goes on)"
    )


class OutputConfig(_Section):
    dir: Path = Field(default=Path("ragmetrics-out"), description="each run writes a dated folder here")
    formats: list[OutputFormat] = Field(
        default_factory=lambda: list(OUTPUT_FORMATS), description="artifacts to write; json is required"
    )
    plots: bool = Field(default=True, description="every plot in report.html, as files in the night's plots/ folder (needs matplotlib)")
    keep: int | None = Field(
        default=30,
        ge=1,
        description="keep only the newest N dated folders under dir (older ones are deleted after a run; "
        "history.jsonl keeps every night's means for the history page); null keeps all",
    )
    history: bool = Field(
        default=True,
        description="after every night, add a line to history.jsonl in dir and rewrite history.html (the nights "
        "over time, drift, what changed; `ragmetrics history DIR` prints it)",
    )
    history_nights: int = Field(
        default=7,
        ge=5,
        le=365,
        description="the trend test looks at the last N comparable nights of each series (at least 5)",
    )
    mlflow: MlflowOutput | None = Field(
        default=None,
        description="{tracking_uri, experiment, timeout_s}: each night logged to MLflow (a tracker that is down "
        "never fails the night: the night is queued and logged next time)",
    )

    @field_validator("formats")
    @classmethod
    def _json_always(cls, v: list[OutputFormat]) -> list[OutputFormat]:
        if "json" not in v:
            raise ValueError("'json' is required: report.json is what a later run's --baseline reads")
        return list(dict.fromkeys(v))


class EngineConfig(_Section):
    """Where the work runs: this process, or a Ray cluster (pip install '.[ray]' in a clone; docs/scale.md)."""

    kind: Literal["local", "ray"] = Field(default="local", description="'local' (this process) or 'ray'")
    address: str | None = Field(
        default=None, description="ray: 'auto', 'ray://host:10001', or unset to start a local cluster"
    )
    workers: int = Field(default=2, ge=1, le=10_000, description="ray: judge actors")
    batch_size: int = Field(
        default=64, ge=1, description="ray: samples per judge task (the checkpoint granularity)"
    )
    num_cpus: int | None = Field(
        default=None, ge=1, description="ray: CPUs of a local cluster (default: all)"
    )
    worker_cpus: float = Field(default=1.0, gt=0, description="ray: CPUs reserved per judge actor")
    retrieval_shards: int | None = Field(
        default=None, ge=1, description="ray: retrieval tasks per run (default: 2 per worker)"
    )

    def options(self) -> dict[str, object]:
        """The keyword arguments of `RayEngine`."""
        return self.model_dump(exclude={"kind"})


class HumanLabelsConfig(_Section):
    """Human labels of judge metrics (docs/trust.md): agreement, PPI-corrected means, the PPI gate."""

    path: Path | None = Field(
        default=None,
        description="CSV, TSV, JSONL or Parquet: sample_id, metric, label (and optionally run, labeller)",
    )
    columns: dict[str, str] | None = Field(
        default=None,
        description="or labels in the QA dataset: judge metric -> the column holding its label (empty cells: "
        "unlabelled samples)",
    )
    scale: float | None = Field(
        default=None,
        gt=0,
        description="labels are whole-number grades 0..scale (divided by it); unset: in [0, 1]",
    )
    threshold: float = Field(default=0.5, ge=0, le=1, description="positive at or above it (accuracy, kappa)")
    confidence: float = Field(default=0.95, gt=0, lt=1, description="confidence of every interval")
    adjudication: str = Field(
        default="majority",
        description="several people's labels of one sample become one: 'majority' (a tie: the mean of the tied), "
        "'mean', or a labeller's name (theirs where they gave one, else the majority)",
    )

    @model_validator(mode="after")
    def _one_source(self) -> HumanLabelsConfig:
        if (self.path is None) == (self.columns is None):
            raise ValueError("give either path (a labels file) or columns (metric -> dataset column)")
        if self.columns is not None:
            if not self.columns:
                raise ValueError("columns is empty: map a judge metric to the column of its labels")
            unknown = sorted(set(self.columns) - set(JUDGE_METRICS))
            if unknown:
                raise ValueError(
                    f"unknown judge metric {unknown[0]!r} in columns; metrics: {', '.join(JUDGE_METRICS)}"
                )
        return self


class PairwiseConfig(_Section):
    """Side-by-side preferences (docs/trust.md, 'Pairwise'): people's, from a file `ragmetrics label --pairwise`
    writes, and the LLM pairwise judge's (both orders asked); each a sign test and Bradley-Terry per pair."""

    preferences: Path | None = Field(
        default=None, description="people's preferences: sample_id, left, right, choice (labeller optional)"
    )
    judge: bool = Field(default=False, description="also ask the LLM judge which answer is better, in both orders")
    pairs: list[tuple[str, str]] | None = Field(
        default=None, description="[a, b] run pairs (default: every pair of judged runs, b after a)"
    )
    metric: str | None = Field(
        default=None, description="the metric whose paired comparison is shown beside (default: the first judged)"
    )

    @model_validator(mode="after")
    def _something(self) -> PairwiseConfig:
        if self.preferences is None and not self.judge:
            raise ValueError("give preferences (a file of people's) and/or judge: true")
        return self


class AgreementFloor(_Section):
    """How well tonight's judge must agree with the human labels before the gate reads its scores."""

    statistic: Literal["accuracy", "balanced_accuracy", "kappa", "spearman", "kendall"] = Field(
        default="kappa", description="the agreement statistic (docs/trust.md, 'Reading the figures')"
    )
    value: float = Field(ge=-1, le=1, description="the floor: below it the metric neither passes nor fails")
    bound: Literal["estimate", "low"] = Field(
        default="estimate",
        description="compare the statistic's estimate, or (stricter) the low end of its 95 % interval",
    )
    metrics: list[str] | None = Field(
        default=None,
        description="judge metrics the floor applies to (default: every judge metric with labels); a metric "
        "named here with no labelled sample tonight is below the floor",
    )


class TrustConfig(_Section):
    """What the judge must show against people before its scores count (docs/trust.md)."""

    min_agreement: AgreementFloor | None = Field(
        default=None, description="an agreement floor on the labelled subset (needs human_labels)"
    )


class BaselineConfig(_Section):
    """The regression gate: a metric regresses when its mean drops by more than its threshold, significantly."""

    path: Path | None = Field(default=None, description="an earlier report.json; --baseline overrides it")
    max_drop: float = Field(default=0.0, ge=0, description="allowed absolute drop of the mean, every metric")
    max_drop_per_metric: dict[str, float] = Field(default_factory=dict, description="metric -> allowed drop")
    metrics: list[str] | None = Field(default=None, description="metrics the gate checks (default: all)")
    use_ppi: bool = Field(
        default=False,
        description="judge metrics with human_labels: gate on the PPI++ difference corrected by the labels "
        "instead of the paired test",
    )
    beyond_judge_noise: bool = Field(
        default=False,
        description="judge metrics judged with judge.repeats > 1: a drop must also exceed the judge's own noise",
    )
    require_fresh: bool = Field(
        default=False,
        description="a run whose pipeline and generator outputs all came from pipeline_cache (the team's code "
        "not called tonight) makes the gate incomplete, exit 3, instead of passing on stored outputs; by "
        "default the verdict only says so (set it in CI)",
    )
    on_change: Literal["not_comparable", "compare"] = Field(
        default="not_comparable",
        description="when the dataset, or a metric's judge (backend, model, embedding model, its prompts), "
        "differs from the baseline's: not_comparable lists those pairs unchecked and exits 4; compare checks "
        "them anyway, with a note",
    )

    @field_validator("max_drop_per_metric")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        for metric, drop in v.items():
            if drop < 0:
                raise ValueError(f"allowed drop for {metric!r} is negative ({drop})")
        return v

    def threshold(self, metric: str) -> float:
        return self.max_drop_per_metric.get(metric, self.max_drop)


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
        default=None, description="utility judgments (eRAG) for the runs, and their metrics on them (docs/utilities.md)"
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
        default=None, description="a grid of retrieval configurations, run by `ragmetrics sweep` (docs/sweeps.md)"
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
            raise ValueError("pairwise.judge: one LLM says which answer is better; it is not a panel's (judge.panel)")
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


def _check_names(names: list[str], check: Callable[[str], str | None]) -> list[str]:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise ValueError(f"[{i}]: metric {name!r} is listed twice")
        seen.add(name)
        problem = check(name)
        if problem is not None:
            raise ValueError(f"[{i}]: {problem}")
    return names


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


def _resolve(path: Path | None, base: Path) -> Path | None:
    if path is None:
        return None
    path = path.expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _resolve_paths(config: NightlyConfig, base: Path) -> NightlyConfig:
    """Make every relative path absolute against `base` (the config file's folder)."""
    ds = config.dataset
    if ds.format != "hub" and ds.path is not None:
        ds.path = _resolve(ds.path, base)
    ds.passages = _resolve(ds.passages, base)
    ds.traces = _resolve(ds.traces, base)
    ds.attacks = _resolve(ds.attacks, base)
    for spec in config.runs:
        if isinstance(spec, FileRunSpec):
            resolved = _resolve(spec.path, base)
            assert resolved is not None
            spec.path = resolved
    if config.judge is not None:
        config.judge.cache_path = _resolve(config.judge.cache_path, base)
        config.judge.aligned = _resolve(config.judge.aligned, base)
        config.judge.labels = _resolve(config.judge.labels, base)
        if config.judge.panel is not None and config.judge.panel.labels is not None:
            config.judge.panel.labels = _resolve(config.judge.panel.labels, base)
        config.judge.metric_files = [p for p in (_resolve(p, base) for p in config.judge.metric_files) if p]
        for i, item in enumerate(config.judge.custom_metrics):
            if isinstance(item, RubricMetric) and item.labelled_file is not None:
                labelled = _resolve(item.labelled_file, base)
                config.judge.custom_metrics[i] = item.model_copy(update={"labelled_file": labelled})
    config.pipeline_cache = _resolve(config.pipeline_cache, base)
    config.index_dir = _resolve(config.index_dir, base)
    calls = [s for s in config.runs if isinstance(s, PipelineRunSpec)]
    for settings in [*calls, *([config.generator] if config.generator is not None else [])]:
        settings.python_path = [p for p in (_resolve(p, base) for p in settings.python_path) if p is not None]
    out = _resolve(config.output.dir, base)
    assert out is not None
    config.output.dir = out
    config.baseline.path = _resolve(config.baseline.path, base)
    if config.human_labels is not None:
        config.human_labels.path = _resolve(config.human_labels.path, base)
    if config.pairwise is not None:
        config.pairwise.preferences = _resolve(config.pairwise.preferences, base)
    return config


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through Optional, list[...], unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found += _models_in(arg)
    return found


def _did_you_mean(loc: tuple[int | str, ...]) -> str:
    """ "; did you mean 'output'?" for a misspelt key, from the keys its section accepts."""
    models: list[type[BaseModel]] = [NightlyConfig]
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        nested: list[type[BaseModel]] = []
        for model in models:
            field = model.model_fields.get(str(part))
            if field is not None:
                nested += _models_in(field.annotation)
        if nested:
            models = nested
    known = sorted({name for model in models for name in model.model_fields})
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    if not close and loc[0] != str(loc[-1]) and str(loc[-1]) in NightlyConfig.model_fields:
        return f"; {loc[-1]!r} is a top-level section of the config, not a key here"
    return f"; did you mean {close[0]!r}?" if close else ""


def format_validation_error(exc: ValidationError, data: Any) -> list[str]:
    """One line per problem, each led by the key path as the user wrote it (tags of unions left out)."""
    lines = []
    for err in exc.errors():
        path, value_loc = key_path(err["loc"], data)
        kind = err["type"]
        ctx = err.get("ctx") or {}
        if kind == "extra_forbidden":
            message = "unknown key" + _did_you_mean(err["loc"])
        elif kind == "missing":
            message = "required key is missing"
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            path += f".{ctx.get('discriminator', 'source').strip(chr(39))}"
            tags = ", ".join(RUN_SOURCES)  # runs[] is the only tagged union of the schema
            got = (
                f"unknown value {ctx['tag']!r}" if kind == "union_tag_invalid" else "required key is missing"
            )
            message = f"{got}; one of: {tags}"
        elif kind in ("model_type", "dict_type", "model_attributes_type"):
            message = f"expected a mapping of keys, got {_short(err.get('input'))}"
        else:
            # Validation runs on JSON, but the user wrote YAML: say "list" where pydantic says "array".
            message = str(err["msg"]).removeprefix("Value error, ").replace("valid array", "valid list")
            # A validator can point below its own field: "[2]: unknown metric ..." -> "metrics[2]: ...".
            if message.startswith("[") and "]: " in message:
                index, message = message.split(": ", 1)
                path += index
            elif value_loc and err["type"] not in ("value_error", "assertion_error"):
                message = f"{message} (got {_short(err.get('input'))})"
        lines.append(f"{path}: {message}" if path else message)
    return lines


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_config(data: Any, *, base_dir: Path, source: str = "config") -> NightlyConfig:
    """Validate an already-parsed config mapping; relative paths resolve against `base_dir`."""
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"{source}: expected a mapping of sections at the top level, got {type(data).__name__}"
        )
    data, origins = with_metric_files(data, base_dir, source)
    try:
        # Strict, and through JSON so paths may still be strings: YAML's `yes` is not a drop of 1.0 and
        # "4" is not 4; a config says what it means or is refused.
        text = json.dumps(data, default=str)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{source}: cannot be read as plain keys and values: {exc}") from None
    try:
        config = NightlyConfig.model_validate_json(text, strict=True)
    except ValidationError as exc:
        lines = format_validation_error(exc, data)
        if len(lines) == 1:
            raise ConfigError(f"{source}: {lines[0]}") from None
        raise ConfigError(f"{source}: {len(lines)} problems:\n  " + "\n  ".join(lines)) from None
    config._source_dir = base_dir.resolve()
    if config.judge is not None:
        config.judge._metric_origins = origins
    return _resolve_paths(config, base_dir.resolve())


def _shipped_rubrics_named(judge: Mapping[str, Any]) -> list[Path]:
    """Files of the shipped conversation rubrics that `judge.metrics` names and no file or inline definition
    declares (docs/conversations.md)."""
    from ragmetrics.judge.conversation import SHIPPED_RUBRICS, shipped_rubric_path

    metrics = judge.get("metrics")
    inline = judge.get("custom_metrics")
    declared = (
        {m.get("name") for m in inline if isinstance(m, Mapping)} if isinstance(inline, list) else set()
    )
    if not isinstance(metrics, list):
        return []
    return [
        shipped_rubric_path(m)
        for m in metrics
        if isinstance(m, str) and m in SHIPPED_RUBRICS and m not in declared
    ]


def with_metric_files(
    data: Mapping[str, Any], base_dir: Path, source: str
) -> tuple[Mapping[str, Any], dict[str, str]]:
    """The config with the definitions of `judge.metric_files` appended to `judge.custom_metrics` (each
    file checked on its own, so a problem names the file), and which file defined which metric."""
    judge = data.get("judge")
    files = judge.get("metric_files") if isinstance(judge, Mapping) else None
    if isinstance(judge, Mapping) and (files is None or isinstance(files, list)):
        files = [*(files or []), *_shipped_rubrics_named(judge)]
    if not isinstance(judge, Mapping) or not isinstance(files, list) or not files:
        return data, {}
    inline = judge.get("custom_metrics") or []
    if not isinstance(inline, list):
        return data, {}  # validation says what is wrong with it
    loaded: list[Any] = []
    origins: dict[str, str] = {}
    for i, entry in enumerate(files):
        if isinstance(entry, Path):  # a shipped conversation rubric, unless a file of the team's defines it
            definition = load_metric_file(entry)
            if definition.name in origins:
                continue
            origins[definition.name] = f"shipped rubric {entry.name}"
            loaded.append(definition.model_dump(mode="json"))
            continue
        if not isinstance(entry, str) or not entry.strip():
            raise ConfigError(f"{source}: judge.metric_files[{i}]: expected a file path, got {entry!r}")
        path = _resolve(Path(entry), base_dir.resolve())
        assert path is not None
        definition = load_metric_file(path)
        origins[definition.name] = str(path)
        loaded.append(definition.model_dump(mode="json"))
    return {**data, "judge": {**judge, "custom_metrics": [*inline, *loaded]}}, origins


def load_config(path: str | Path) -> NightlyConfig:
    """Read and validate a YAML config (`yaml.safe_load`); any problem is a ConfigError naming file and key."""
    path = Path(path)
    data = read_yaml_file(path, what="config")
    return parse_config(data, base_dir=path.parent, source=str(path))
