"""What every step of one night shares: its config, how it reports, its notes and step timings, the
baseline read before anything runs, and what scoring produced.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.schema import AdaptiveSummary, JudgeInfo, Report, RunResult

if TYPE_CHECKING:
    from ragmetrics.retrievers import RetrieverTiming


Log = Callable[[str], None]


@dataclass
class Night:
    """What every step of one night shares: its config, how it reports, its notes and step timings."""

    config: NightlyConfig
    show: bool
    say: Log
    output_dir: Path | None
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    retrieved: dict[str, RetrieverTiming] = field(default_factory=dict)
    """Retriever run -> its index building and per-question search seconds."""
    extra_texts: dict[str, str] = field(default_factory=dict)
    """Further files of the night's folder by name (the utility judgments' `utility/` folder)."""


@dataclass
class Baseline:
    path: Path | None
    report: Report | None
    night: Path | None
    """The baseline's night folder, resolved (through `latest` or a pin's symlink) before tonight is written."""


@dataclass
class Scored:
    results: dict[str, RunResult]
    judge_info: JudgeInfo | None
    judged_samples: dict[str, list[RagSample]]
    work_estimate: Any
    adaptive: AdaptiveSummary | None = None


@contextmanager
def timed(timings: dict[str, float], step: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[step] = round(time.perf_counter() - start, 3)
