"""The unified result schema that the retrieval core, the judge, comparisons and the nightly job all write.

A `RunResult` holds one run's scores: per query and metric, aggregates, failures, judge details and metadata.
A `Report` holds several runs scored on the same queries plus descriptive statistics and paired comparisons.
Both are plain pydantic models, so `model_dump_json()` / `model_validate_json()` round-trip them exactly.

This module is the schema's public name: each kind of record lives in a module of its own (`schema_run`,
`schema_trust`, `schema_comparison`, `schema_gate`, `schema_nightly`, `schema_report`, on `schema_base`),
and every record is re-exported here.
"""

from __future__ import annotations

from ragmetrics.schema_base import SCHEMA_VERSION, Interval
from ragmetrics.schema_comparison import (
    Choice,
    ComparisonSettings,
    DescriptiveStats,
    PairComparison,
    PairPowerFigures,
    PairwiseSummary,
    Preference,
    SeedPairComparison,
    TukeyPair,
)
from ragmetrics.schema_gate import GateResult, MetricCheck, QueryDrop
from ragmetrics.schema_nightly import (
    AdaptiveDecision,
    AdaptiveSummary,
    DatasetSummary,
    FormattingCheck,
    NightlyRun,
    NightWork,
    QrelsProvenance,
    RetrieverSeconds,
    SampleText,
    SkippedRow,
    SourceOnlyCheck,
    WorkFigures,
)
from ragmetrics.schema_report import Report, ReportMetadata
from ragmetrics.schema_run import (
    GEOMETRIC_FLOOR,
    CacheStats,
    ClaimEvidence,
    JudgeDetail,
    JudgeInfo,
    NotApplicableScore,
    RunMetadata,
    RunResult,
    SampleFailure,
    TokenUsage,
    aggregate_values,
)
from ragmetrics.schema_trust import (
    AGREEMENT_STATISTICS,
    CalibrationBin,
    JudgeNoiseStats,
    MetricAgreement,
    PairPPI,
    PeopleCeiling,
    PPIEstimate,
    RunTrust,
)

# In the order the records were written (the API reference lists them so: docs/reference/schema.md).
__all__ = [  # noqa: RUF022
    "SCHEMA_VERSION",
    "SampleFailure",
    "NotApplicableScore",
    "TokenUsage",
    "CacheStats",
    "JudgeInfo",
    "ClaimEvidence",
    "GEOMETRIC_FLOOR",
    "aggregate_values",
    "JudgeDetail",
    "RunMetadata",
    "Interval",
    "CalibrationBin",
    "AGREEMENT_STATISTICS",
    "PeopleCeiling",
    "MetricAgreement",
    "PPIEstimate",
    "JudgeNoiseStats",
    "PairPPI",
    "RunTrust",
    "RunResult",
    "DescriptiveStats",
    "PairComparison",
    "PairPowerFigures",
    "TukeyPair",
    "SeedPairComparison",
    "Choice",
    "Preference",
    "PairwiseSummary",
    "ComparisonSettings",
    "QueryDrop",
    "MetricCheck",
    "GateResult",
    "SkippedRow",
    "SourceOnlyCheck",
    "QrelsProvenance",
    "DatasetSummary",
    "SampleText",
    "WorkFigures",
    "NightWork",
    "AdaptiveDecision",
    "AdaptiveSummary",
    "FormattingCheck",
    "RetrieverSeconds",
    "NightlyRun",
    "ReportMetadata",
    "Report",
]
