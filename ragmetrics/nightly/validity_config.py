"""The `validity:` section of a night's config: whether the night runs the validity study (which metric tracks
the answers, docs/validity.md) and with how many bootstrap resamples.

Why a switch: the study's pair sums grow with the square of (questions x runs) and its work with the number of
metrics; measured on this machine (1 CPU, t-test): 200 questions x 4 runs x 10 metrics, 1.2 CPU-seconds; 1,000
questions x 6 runs x 30 metrics, 46 CPU-seconds (68 with Fisher's test). A big night may want it off and run
`ragmetrics validity NIGHT` when someone asks. Apart from nightly/config_night.py, which only names the section."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ValidityConfig"]


class ValidityConfig(BaseModel):
    """The night's validity study (docs/validity.md)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=True,
        description="run the study in a night with answers (off: `ragmetrics validity NIGHT` still runs it later)",
    )
    samples: int = Field(default=1000, ge=100, le=100_000, description="bootstrap resamples of the questions")
