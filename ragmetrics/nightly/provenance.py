"""What changed between the baseline report and tonight's, besides the scores, and which metrics it touches.

A judge metric moves when the judge changes: another backend, model, embedding model (the local judge's MiniLM
or e5 give the same answers different context recall), temperature or seed, a prompt the metric
uses (or the texts every prompt shares), or a setting that changes what a verdict means. None of that is a
change in the system's quality, so the gate reports it first and, by default, does not call such a move a
regression or a pass (`baseline.on_change`). A changed dataset touches every metric. A deterministic metric
(exact match, ROUGE-L, a team's Python function) has no judge, and retrieval metrics neither: a judge change
leaves them comparable.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ragmetrics.errors import JudgeError
from ragmetrics.judge.registry import spec
from ragmetrics.schema import JudgeInfo, Report

__all__ = ["Changes", "changes_since"]

VERDICT_SETTINGS = (
    "context_precision_mode",
    "answer_relevancy_questions",
    "noncommittal_rule",
    "answer_in_input_language",
)
"""Judge settings that change what a verdict or score means (concurrency, timeouts and the like do not)."""


@dataclass
class _JudgeChange:
    whole: list[str] = field(default_factory=list)
    """Changes that touch every judged metric of the run (backend, model, embeddings, shared texts, ...)."""
    prompts: set[str] = field(default_factory=set)
    """Prompts whose version changed: they touch the metrics that use them."""


@dataclass
class Changes:
    """What differs, as lines to report, and which (run, metric) pairs it makes not comparable."""

    lines: list[str] = field(default_factory=list)
    data_changed: bool = False
    judges: dict[str, _JudgeChange] = field(default_factory=dict)

    def why_not_comparable(self, run: str, metric: str) -> str | None:
        """The change that makes `metric` of `run` incomparable with the baseline, or None."""
        if self.data_changed:
            return "the dataset changed"
        change = self.judges.get(run)
        if change is None:
            return None
        try:
            metric_spec = spec(metric)
        except JudgeError:
            return None  # a retrieval or operational metric: no judge
        if metric_spec.plan == "deterministic":
            return None
        if change.whole:
            return "its judge changed: " + "; ".join(change.whole)
        used = set(metric_spec.prompts) | ({"_rubric"} if metric_spec.plan == "rubric" else set())
        used.add(f"aligned:{metric_spec.name}")
        touched = sorted(used & change.prompts)
        if f"aligned:{metric_spec.name}" in touched:
            return "its alignment to your labels changed (judge.aligned: added, removed or refitted)"
        return f"its prompt changed: {', '.join(touched)}" if touched else None


def _show(value: Any) -> str:
    return "none" if value is None else str(value)


def _judge_change(old: JudgeInfo, new: JudgeInfo) -> _JudgeChange:
    change = _JudgeChange()
    for name in ("backend", "model", "embedding_model", "temperature", "seed"):
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            change.whole.append(f"judge {name.replace('_', ' ')} {_show(before)} -> {_show(after)}")
    if old.prompt_versions.get("_shared") != new.prompt_versions.get("_shared"):
        change.whole.append("the texts every prompt shares (prompts/_shared.yaml) changed")
    for name in VERDICT_SETTINGS:
        before, after = old.settings.get(name), new.settings.get(name)
        if before != after and before is not None and after is not None:
            change.whole.append(f"judge setting {name} {before} -> {after}")
    for name in sorted(set(old.prompt_versions) | set(new.prompt_versions)):
        if name == "_shared":
            continue
        before, after = old.prompt_versions.get(name), new.prompt_versions.get(name)
        if before is not None and after is not None and before != after:
            change.prompts.add(name)
        elif name.startswith("aligned:") and before != after:
            change.prompts.add(name)  # aligned tonight and not then, or the other way: another scale
    return change


def changes_since(baseline: Report, current: Report) -> Changes:
    """Every difference of data, judge and version between the two reports, grouped for reading."""
    changes = Changes()
    old_print, new_print = baseline.metadata.truth_fingerprint, current.metadata.truth_fingerprint
    if old_print and new_print and old_print != new_print:
        changes.data_changed = True
        changes.lines.append(
            "dataset: the questions, references or relevance judgments differ from the baseline's "
            f"({old_print.removeprefix('sha256:')[:12]} -> {new_print.removeprefix('sha256:')[:12]})"
        )
    by_line: dict[str, list[str]] = defaultdict(list)
    old_runs = {r.name: r for r in baseline.runs}
    for run in current.runs:
        old = old_runs.get(run.name)
        if old is None or old.metadata.judge is None or run.metadata.judge is None:
            continue
        change = _judge_change(old.metadata.judge, run.metadata.judge)
        if change.whole or change.prompts:
            changes.judges[run.name] = change
            for line in change.whole:
                by_line[line].append(run.name)
            for name in sorted(change.prompts):
                before = old.metadata.judge.prompt_versions.get(name)
                after = run.metadata.judge.prompt_versions.get(name)
                if name.startswith("aligned:"):
                    metric = name.split(":", 1)[1]
                    what = (
                        "aligned" if before is None else "no longer aligned" if after is None else "realigned"
                    )
                    by_line[f"judge {what} to your labels for {metric}"].append(run.name)
                    continue
                by_line[f"prompt {name} changed (version {before} -> {after})"].append(run.name)
    for line, runs in by_line.items():
        changes.lines.append(f"{line} (run{'s' if len(runs) > 1 else ''} {', '.join(runs)})")
    if baseline.metadata.ragmetrics_version != current.metadata.ragmetrics_version:
        changes.lines.append(
            f"ragmetrics {baseline.metadata.ragmetrics_version} -> {current.metadata.ragmetrics_version}"
        )
    return changes
