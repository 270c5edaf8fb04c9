"""What changed between consecutive nights besides the scores: the history's annotations.

A change of questions or judgments breaks every series (the nights before measure something else); a change of
judge (backend, model, embedding model, a prompt's version) breaks the series of judged metrics of that run;
changed system outputs, config sections or ragmetrics version are marked but do not break a series, since they
are what a team changes to make the system better (or what may have made it worse).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ragmetrics.history.record import JudgeStamp, NightRecord

Kind = Literal["data", "judge", "outputs", "config", "version"]


@dataclass(frozen=True)
class Annotation:
    night: int
    """Index of the night the change first shows in (the later of the two)."""
    kind: Kind
    text: str
    runs: tuple[str, ...] = ()
    """For a judge change, the runs it touches."""


def _judge_lines(old: JudgeStamp, new: JudgeStamp) -> list[str]:
    lines = []
    for name in ("backend", "model", "embedding_model"):
        before, after = getattr(old, name), getattr(new, name)
        if before != after:
            lines.append(f"judge {name.replace('_', ' ')} {before} -> {after}")
    changed = sorted(
        p
        for p in set(old.prompt_versions) & set(new.prompt_versions)
        if old.prompt_versions[p] != new.prompt_versions[p]
    )
    if changed:
        lines.append(f"prompt{'s' if len(changed) > 1 else ''} {', '.join(changed)} changed")
    # An alignment (`ragmetrics align`, judge.aligned) appears or goes as a prompt version of its own.
    prefix = "aligned:"
    added = sorted(
        p[len(prefix) :] for p in set(new.prompt_versions) - set(old.prompt_versions) if p.startswith(prefix)
    )
    gone = sorted(
        p[len(prefix) :] for p in set(old.prompt_versions) - set(new.prompt_versions) if p.startswith(prefix)
    )
    if added:
        lines.append(f"judge aligned to your labels for {', '.join(added)}")
    if gone:
        lines.append(f"judge no longer aligned for {', '.join(gone)}")
    return lines


def changes_between(records: Sequence[NightRecord]) -> list[Annotation]:
    """Every change between night i-1 and night i, in night order."""
    out: list[Annotation] = []
    for i in range(1, len(records)):
        old, new = records[i - 1], records[i]
        if old.truth_fingerprint and new.truth_fingerprint and old.truth_fingerprint != new.truth_fingerprint:
            out.append(Annotation(i, "data", "questions, references or relevance judgments changed"))
        elif (
            old.dataset_fingerprint
            and new.dataset_fingerprint
            and (old.dataset_fingerprint != new.dataset_fingerprint)
        ):
            out.append(Annotation(i, "outputs", "the system's outputs (answers, contexts, rankings) changed"))
        by_text: dict[str, list[str]] = {}
        for run, stamp in new.judges.items():
            before = old.judges.get(run)
            if before is None:
                continue
            for line in _judge_lines(before, stamp):
                by_text.setdefault(line, []).append(run)
        for text, runs in by_text.items():
            label = f"run{'s' if len(runs) > 1 else ''} {', '.join(runs)}"
            out.append(Annotation(i, "judge", f"{text} ({label})", runs=tuple(runs)))
        sections = sorted(
            k
            for k in set(old.config_sections) | set(new.config_sections)
            if old.config_sections.get(k) != new.config_sections.get(k)
        )
        if sections and old.config_sections and new.config_sections:
            out.append(Annotation(i, "config", f"config changed: {', '.join(sections)}"))
        if (
            old.ragmetrics_version
            and new.ragmetrics_version
            and old.ragmetrics_version != new.ragmetrics_version
        ):
            out.append(
                Annotation(i, "version", f"ragmetrics {old.ragmetrics_version} -> {new.ragmetrics_version}")
            )
    return out


def breaks_series(annotation: Annotation, run: str, judged: bool) -> bool:
    """Whether nights before `annotation` measure something else for this run's metric."""
    if annotation.kind == "data":
        return True
    return annotation.kind == "judge" and judged and run in annotation.runs
