"""Judge alignment from a team's labels (`ragmetrics align`, `ragmetrics.align_judge`): folds, steps, held-out
figures and reports. The aligned metric it writes is applied by `ragmetrics.judge.aligned`."""

from ragmetrics.alignment.report import AlignmentReport
from ragmetrics.alignment.run import AlignmentPlan, align_judge, plan_alignment

__all__ = ["AlignmentPlan", "AlignmentReport", "align_judge", "plan_alignment"]
