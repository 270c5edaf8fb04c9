"""A team's own metrics (a rubric, say) among the units `ragmetrics judges` scores the candidates on.

The candidates file defines them as a night's config does (`judge.metric_files`, `judge.custom_metrics`;
`nightly.candidate_metrics` loads them through the night's own loader). Here they are checked against the
labels before any judge is asked: the comparison cuts the people's labels and the judges' scores at one
threshold in (0, 1), so a metric must score within [0, 1], and a person's label of a rubric with a scale must be
one of its levels' scores (people and judges rating on the same scale), or the agreement measured would be
that of two different questions. Registered for the run (`registry.registered_metrics`), a rubric is judged by
the LLM judge through its generated prompt, whose version (a hash of everything it sends) is part of every
verdict's cache key: two rubrics with one name never share a verdict.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError, InputError
from ragmetrics.judge.registry import JudgeMetricSpec, judge_metric_names, resolve_judge_metric
from ragmetrics.judge.rubric import RubricMetric
from ragmetrics.trust.labels import HumanLabels

__all__ = ["OwnMetric", "check_labels_fit", "check_metrics_known", "snippet_keys"]


@dataclass(frozen=True)
class OwnMetric:
    """One metric the candidates file defines: its registry spec, where it is defined (for errors and the
    snippet) and its definition."""

    spec: JudgeMetricSpec
    where: str
    """the metric file, or 'candidates.yaml: judge.custom_metrics[i]' for an inline definition"""
    file: Path | None
    """the metric file (absolute), None when defined inline"""
    definition: dict[str, Any]
    """the definition as JSON (what the snippet writes for an inline one)"""
    by_name: bool = False
    """a night resolves it by its name alone (a shipped conversation rubric, an installed package's metric):
    the snippet lists it in `metrics` and defines nothing"""

    @property
    def name(self) -> str:
        return self.spec.name


def check_metrics_known(wanted: Sequence[str], human: HumanLabels, *, from_option: bool) -> None:
    """An InputError for a metric to score that is no judge metric (built-in or defined in the candidates
    file): named at `--metric` when the option chose it, else at the first label of it (file, line, field)."""
    for name in wanted:
        if resolve_judge_metric(name) is not None:
            continue
        close = difflib.get_close_matches(name, judge_metric_names(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        message = (f"{name!r} is not a judge metric{hint} (a metric of your own is defined in the candidates "
                   f"file's judge.metric_files or judge.custom_metrics); known: {', '.join(judge_metric_names())}")  # fmt: skip
        if from_option:
            raise InputError(message, field="--metric")
        line = min(label.line for label in human.labels if label.metric == name)
        raise InputError(message, source=human.source, line=line, field="metric")


def _levels(rubric: RubricMetric) -> dict[str, float] | None:
    """A scale rubric's level (or category, or yes/no) -> score, by label; None for a checklist."""
    scale = rubric.scale
    if scale is None:
        return None
    return {scale.label(rating): score for rating, score in scale.scores().items()}


def check_labels_fit(own: Iterable[OwnMetric], human: HumanLabels, wanted: Sequence[str]) -> None:
    """Each own metric to score fits the labels: it scores within [0, 1] (a ConfigError naming where it is
    defined and the field), and every person's label of a scale rubric is one of its levels' scores (an
    InputError naming the labels file, line and field)."""
    for metric in own:
        if metric.name not in wanted:
            continue
        low, high = metric.spec.value_range
        rubric = metric.spec.rubric
        field = "scale" if isinstance(rubric, RubricMetric) and rubric.scale is not None else "range"
        if high is None or low < 0 or high > 1:
            raise ConfigError(
                f"{metric.where}: {field}: metric {metric.name!r} scores {low:g} to {'inf' if high is None else f'{high:g}'}"
                ", but labels (and --threshold) are on [0, 1]: score its levels within [0, 1] (for five levels: 0, "
                "0.25, 0.5, 0.75, 1) and give labels as those scores, or as grades with --scale"
            )
        levels = _levels(rubric) if isinstance(rubric, RubricMetric) else None
        if levels is None:
            continue
        for label in human.labels:
            if label.metric != metric.name:
                continue
            if not any(math.isclose(label.value, s, rel_tol=1e-9, abs_tol=1e-9) for s in levels.values()):
                shown = f"{label.raw:g}" + (f" ({label.value:g} on [0, 1])" if label.value != label.raw else "")
                scores = ", ".join(f"{name} = {score:g}" for name, score in levels.items())
                raise InputError(
                    f"label {shown} of rubric metric {metric.name!r} ({metric.where}) is none of its levels' "
                    f"scores ({scores}): people and judges must rate on one scale",
                    source=human.source,
                    line=label.line,
                    field="label",
                )


def snippet_keys(own: Iterable[OwnMetric], metrics: Sequence[str]) -> dict[str, Any]:
    """The night's judge keys that define the scored own metrics: `metric_files` (absolute paths, the
    snippet being pasted elsewhere), `custom_metrics` (inline definitions) and `metrics` (a night judges
    only what it lists and refuses a defined metric it does not list). Empty when none was scored."""
    scored = [m for m in own if m.name in metrics]
    if not scored:
        return {}
    keys: dict[str, Any] = {"metrics": list(metrics)}
    files = [str(m.file) for m in scored if m.file is not None and not m.by_name]
    inline = [m.definition for m in scored if m.file is None and not m.by_name]
    if files:
        keys["metric_files"] = files
    if inline:
        keys["custom_metrics"] = inline
    return keys
