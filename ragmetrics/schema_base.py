"""What every record of the result schema shares: the schema's version, strict models (an unknown key is an
error, not a silently kept value) built when first used, and an estimate with its interval.

Apart from the records so each kind of record can live in a module of its own (`ragmetrics.schema` names them
all)."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = "2"
"""2: comparison settings (align, correction scope) and the nightly run's block are typed fields, not `extra`.
A schema-1 report (ragmetrics 0.1.0) loads: its `metadata.extra` keys migrate into the typed fields."""


def _now() -> datetime:
    return datetime.now(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False, defer_build=True)


class Interval(_Model):
    """An estimate with its confidence interval; None where the figure is undefined (never NaN)."""

    estimate: float | None
    low: float | None = None
    high: float | None = None
