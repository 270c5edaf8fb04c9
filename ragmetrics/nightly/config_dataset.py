"""The `dataset:` section: where a night's QA samples come from (a shipped dataset, a file, traces or an
attack set) and how the user's columns map onto ours; one source, and no key that source would ignore."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ragmetrics.judge.text.language import check_language_code
from ragmetrics.nightly.config_base import _Section

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
