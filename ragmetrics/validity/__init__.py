"""Which metric to trust on your data (`ragmetrics validity NIGHT`): how well each retrieval and context metric
of a night predicts its end-to-end answer quality, per query and per system, with intervals from a bootstrap
over questions, each metric's discriminative power, and the metric that tracks the answers best, named only
where the data can tell.

The parts, one job each: `data` (a night's results as questions x runs matrices), `study` (the statistics),
`naming` (which metric wins, or that the data cannot tell), `model` (the result, as report.json stores it),
`section` (its text for the terminal and report.md), `plots` (each metric against answer quality; the tau
chart), `night` (a night's folder read and checked).
"""

from __future__ import annotations

from ragmetrics.validity.data import ValidityData, validity_data
from ragmetrics.validity.model import MetricValidity, ValidityResult, ValiditySettings, ValidityVerdict
from ragmetrics.validity.naming import name_best
from ragmetrics.validity.study import validity_study

__all__ = [
    "MetricValidity",
    "ValidityData",
    "ValidityResult",
    "ValiditySettings",
    "ValidityVerdict",
    "name_best",
    "validity_data",
    "validity_study",
]
