"""What a night produced and the exit code `ragmetrics run` returns for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ragmetrics.nightly.completeness import Incomplete
from ragmetrics.options import ExitCode
from ragmetrics.schema import GateResult, Report

EXIT_OK = int(ExitCode.OK)
EXIT_REGRESSION = int(ExitCode.REGRESSION)
EXIT_INCOMPLETE = int(ExitCode.INCOMPLETE)
EXIT_NOT_COMPARABLE = int(ExitCode.NOT_COMPARABLE)


@dataclass
class PipelineOutcome:
    """What a pipeline run produced; `exit_code` is what `ragmetrics run` returns."""

    report: Report
    gate: GateResult | None = None
    folder: Path | None = None
    artifacts: dict[str, Path] = field(default_factory=dict)
    history_page: Path | None = None
    notes: list[str] = field(default_factory=list, repr=False)
    incomplete: list[Incomplete] = field(default_factory=list)
    """Run/metric pairs whose share of failed scores exceeds max_failure_rate: the night is not complete."""

    @property
    def exit_code(self) -> int:
        """3 when the night is incomplete (whatever the gate says: a broken night never passes) or, with
        baseline.require_fresh, when a run was scored on cached outputs alone, else 1 on a regression, else 5 when pairs were not checked because the judge was below trust.min_agreement, else 4 when pairs were not comparable with the baseline (its data or judge changed), else 0."""
        if self.incomplete:
            return EXIT_INCOMPLETE
        if self.gate is not None and self.gate.refused_stale and not self.gate.failed:
            return EXIT_INCOMPLETE  # baseline.require_fresh: tonight's build was not called, nothing to pass
        if self.gate is not None and self.gate.failed:
            return EXIT_REGRESSION
        if self.gate is not None and self.gate.untrusted:
            return int(ExitCode.JUDGE_UNTRUSTED)
        return EXIT_NOT_COMPARABLE if self.gate is not None and self.gate.not_comparable else EXIT_OK
