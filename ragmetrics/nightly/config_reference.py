"""The config reference in docs/nightly.md, generated from the config's models (`python -m
ragmetrics.nightly.config_reference`); a test keeps the docs in step with them. Apart from `config` so the
models are not mixed with the text about them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ragmetrics.judge.cascade.config import CascadeStep
from ragmetrics.judge.own_metrics import CustomMetric
from ragmetrics.judge.settings import EmbeddingSettings
from ragmetrics.nightly.config_calls import GeneratorConfig, HttpTarget
from ragmetrics.nightly.config_dataset import DatasetConfig
from ragmetrics.nightly.config_gate import BaselineConfig, CompareConfig
from ragmetrics.nightly.config_judge import JudgeConfig
from ragmetrics.nightly.config_output import EngineConfig, OutputConfig
from ragmetrics.nightly.config_runs import (
    DatasetRunSpec,
    FileRunSpec,
    FusionRunSpec,
    PipelineRunSpec,
    RetrievalConfig,
    RetrieverRunSpec,
)
from ragmetrics.nightly.config_trust import AgreementFloor, HumanLabelsConfig
from ragmetrics.nightly.utility_config import UtilityOpenAIConfig, UtilityQrelsConfig
from ragmetrics.nightly.validity_config import ValidityConfig
from ragmetrics.sweep.config import (
    EarlyDropConfig,
    SplitConfig,
    SweepConfig,
    SweepFusion,
    SweepReranker,
    SweepRetriever,
)
from ragmetrics.testset.settings import TestsetSettings

__all__ = ["render_reference"]


# What the judge keys inherited from JudgeSettings mean, for the generated reference (where the field has no
# description of its own).
_JUDGE_KEY_HELP: dict[str, str] = {
    "model": "chat model of the LLM judge",
    "base_url": "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1",
    "api_key_env": "name of the environment variable holding the API key (the key itself is never in a config)",
    "embedding_model": "embedding model (answer relevancy)",
    "temperature": "sampling temperature of the judge",
    "seed": "sampling seed sent to the endpoint",
    "max_concurrency": "requests in flight at once",
    "timeout_s": "per-request timeout, seconds",
    "max_retries": "retries on 429, 5xx, timeouts and connection errors",
    "max_repairs": "repair rounds on invalid output",
    "cache_path": "SQLite verdict cache; reruns and resumed runs reuse its verdicts",
    "use_cache": "false bypasses the cache",
    "local_model": "local judge: auto (MiniLM for English, multilingual-e5-small otherwise), minilm or e5",
    "answer_in_input_language": "ask the judge to write its reasons in the inputs' language",
    "context_precision_mode": "one call for all chunks, or one call per chunk (RAGAS's way)",
    "answer_relevancy_questions": "questions generated per answer",
    "noncommittal_rule": "any: one noncommittal generated question zeroes the score; all: every one must be",
}

_SECTIONS: tuple[tuple[str, type[BaseModel], str], ...] = (
    ("dataset", DatasetConfig, "where the QA samples come from (give builtin or path, and/or traces)"),
    ("retrieval", RetrievalConfig, "retrieval metrics, scored where the dataset has relevance judgments"),
    ("runs[] (source: dataset)", DatasetRunSpec, "the pipeline's own ranking, from the dataset"),
    ("runs[] (source: file)", FileRunSpec, "a ranking from a file"),
    ("runs[] (source: retriever)", RetrieverRunSpec, "a ranking built now by ragmetrics.retrievers"),
    ("runs[] (source: fusion)", FusionRunSpec, "a run fused now from runs listed before it"),
    ("runs[] (source: pipeline)", PipelineRunSpec, "the team's pipeline, called once per question"),
    (
        "runs[].target (an endpoint)",
        HttpTarget,
        "an HTTP target; a string target is 'package.module:function'",
    ),
    ("generator", GeneratorConfig, "answers for runs that have none (retriever, file, fusion runs)"),
    ("utility_qrels", UtilityQrelsConfig, "utility judgments (eRAG) as qrels; leave out for none (docs/utilities.md)"),
    ("utility_qrels.openai", UtilityOpenAIConfig, "the OpenAI-compatible generator of utility judgments"),
    ("validity", ValidityConfig, "the night's validity study: which metric tracks the answers (docs/validity.md)"),
    ("judge", JudgeConfig, "judge metrics and the judge backend; leave out for no judge metrics"),
    (
        "judge.embeddings",
        EmbeddingSettings,
        "the embedder of answer_relevancy / answer_similarity / answer_correctness, apart from the chat judge",
    ),
    ("compare", CompareConfig, "how runs are compared (and how the regression gate tests)"),
    ("output", OutputConfig, "where and what to write"),
    ("baseline", BaselineConfig, "the regression gate"),
    ("testset", TestsetSettings, "how `ragmetrics testset --config` builds a test collection"),
    ("human_labels", HumanLabelsConfig, "human labels of judge metrics (docs/trust.md); leave out for none"),
    (
        "trust.min_agreement",
        AgreementFloor,
        "an agreement floor: below it a judge metric neither passes nor fails the gate (exit 5)",
    ),
    ("engine", EngineConfig, "where the work runs (--engine overrides kind)"),
    ("sweep", SweepConfig, "a grid of retrieval configurations, run by `ragmetrics sweep` (docs/sweeps.md)"),
    ("sweep.retrievers[]", SweepRetriever, "a first-stage retriever: one index per chunking"),
    ("sweep.fusion", SweepFusion, "hybrids of two retrievers, one per weight"),
    ("sweep.rerankers[]", SweepReranker, "a reranker, applied once per retrieval arm and chunking"),
    ("sweep.split", SplitConfig, "the selection and confirmation halves"),
    ("sweep.early_drop", EarlyDropConfig, "clear losers dropped early by anytime-valid sequences"),
)


def _type_name(annotation: Any) -> str:
    if annotation == list[CustomMetric]:
        return "list of metric definitions (type: contains, matches or python)"
    if annotation == list[CascadeStep] | None:
        return "list of judges (as panel members) or {name, panel: [members]} | null"
    text = repr(annotation) if not isinstance(annotation, type) else annotation.__name__
    # A section is named by the path a reader imports it from, not by the module of config_* that defines it.
    text = re.sub(r"\bragmetrics\.nightly\.config_\w+\.", "ragmetrics.nightly.config.", text)
    text = re.sub(r"\b(typing|pathlib|ragmetrics\.config)\.", "", text)
    text = re.sub(r"\bragmetrics(\.\w+)*\.(\w+Settings)\b", r"\2 (below)", text)
    optional = re.fullmatch(r"Optional\[(.*)\]", text)
    if optional:
        text = f"{optional.group(1)} | None"
    text = text.replace("Literal[", "one of [").replace("PosixPath", "path").replace("Path", "path")
    return re.sub(r"\bNone(Type)?\b", "null", text).replace("dict[", "mapping[")


def _default_text(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, Path):
        return f"`{value}`"
    return f"`{json.dumps(value, default=str)}`"


def render_reference() -> str:
    """The config reference of docs/nightly.md, generated from the models so it cannot drift from them."""
    lines = [
        'Top level: `name` (title of the report, default `"ragmetrics"`), `progress` (default `true`), '
        "`max_failure_rate` (default `0.05`: a run/metric with a larger share of failed scores makes the night "
        "incomplete, exit 3), `pipeline_cache` (default: `pipeline_cache.sqlite` in `output.dir`), `index_dir` (default "
        "`.ragmetrics-cache/index` beside the config: the reference retrievers' persisted indexes and chunk "
        "vectors, keyed by content and shared with `ragmetrics testset` and `ragmetrics sweep`; `null` builds them in "
        "memory every night; "
        "docs/benchmarks.md), and the "
        'sections below. Unknown keys are errors, and so are values of another type (`yes` is not a number, `"4"` '
        "is not an integer): nothing is coerced.",
        "",
    ]
    for title, model, purpose in _SECTIONS:
        lines += [f"**{title}**: {purpose}", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        for key, field in model.model_fields.items():
            help_text = field.description or _JUDGE_KEY_HELP.get(key, "")
            type_text = _type_name(field.annotation).replace("|", "\\|")
            lines.append(
                f"| `{key}` | {type_text} | {_default_text(field)} | {help_text.replace('|', '/')} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render_reference())
