"""The schema of `configs/*.yaml`: one validated object drives `ragmetrics run`.

Every section forbids unknown keys, and every error names its key path (``judge.max_concurency: unknown key``,
``retrieval.metrics[2]: unknown metric 'ndgc@10'``) so a typo never silently falls back to a default; values
are validated strictly, so YAML's ``yes`` never becomes a threshold of 1.0.
Relative paths resolve against the folder of the config file, so a config works from any working directory.
Secrets never live here: the judge reads its API key from the environment variable named by ``api_key_env``.

This module is the config's public name: each section lives in a module of its own (`config_dataset`,
`config_runs`, `config_calls`, `config_judge`, `config_trust`, `config_gate`, `config_output`), the whole
config in `config_night`, and reading a file in `config_load`; everything a caller needs is re-exported here.
"""

from __future__ import annotations

from ragmetrics.nightly.config_calls import CallSettings, GeneratorConfig, HttpTarget, Target
from ragmetrics.nightly.config_dataset import BUILTIN_DATASETS, DATASET_FIELDS, DatasetConfig
from ragmetrics.nightly.config_gate import BaselineConfig, CompareConfig
from ragmetrics.nightly.config_judge import AdaptiveConfig, JudgeConfig
from ragmetrics.nightly.config_load import (
    format_validation_error,
    load_config,
    parse_config,
    with_metric_files,
)
from ragmetrics.nightly.config_night import NightlyConfig
from ragmetrics.nightly.config_output import (
    OUTPUT_FORMATS,
    EngineConfig,
    MlflowOutput,
    OutputConfig,
    OutputFormat,
)
from ragmetrics.nightly.config_runs import (
    RUN_SOURCES,
    AnyRunSpec,
    DatasetRunSpec,
    FileRunSpec,
    FusionRunSpec,
    PipelineRunSpec,
    RetrievalConfig,
    RetrieverRunSpec,
    RunSpec,
    run_name,
)
from ragmetrics.nightly.config_trust import AgreementFloor, HumanLabelsConfig, PairwiseConfig, TrustConfig

# In the order the sections are read (the API reference lists them so: docs/reference/nightly.md).
__all__ = [  # noqa: RUF022
    "DATASET_FIELDS",
    "BUILTIN_DATASETS",
    "RUN_SOURCES",
    "OutputFormat",
    "OUTPUT_FORMATS",
    "DatasetConfig",
    "RetrievalConfig",
    "DatasetRunSpec",
    "FileRunSpec",
    "RetrieverRunSpec",
    "FusionRunSpec",
    "HttpTarget",
    "Target",
    "CallSettings",
    "PipelineRunSpec",
    "GeneratorConfig",
    "AnyRunSpec",
    "RunSpec",
    "AdaptiveConfig",
    "JudgeConfig",
    "CompareConfig",
    "MlflowOutput",
    "OutputConfig",
    "EngineConfig",
    "HumanLabelsConfig",
    "PairwiseConfig",
    "AgreementFloor",
    "TrustConfig",
    "BaselineConfig",
    "NightlyConfig",
    "run_name",
    "format_validation_error",
    "parse_config",
    "with_metric_files",
    "load_config",
]
