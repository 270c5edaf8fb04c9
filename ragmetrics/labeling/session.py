"""One labelling session: a run and metric of a report, the order to label in, and the labels file.

Built from a report folder (report.json with judged_samples.jsonl beside it). The judge's score and reason
of each sample stay here and are handed out only after the person has labelled that sample (`label`), so the
page cannot anchor anyone on the judge's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics._textfile import read_utf8
from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.labeling.questions import Question, question_for
from ragmetrics.labeling.selection import LabelPlan, label_plan, labelling_order
from ragmetrics.labeling.store import LabelStore
from ragmetrics.nightly.gate import load_baseline
from ragmetrics.nightly.judged_samples import FILENAME, read_judged_samples
from ragmetrics.schema import Report

__all__ = ["LabelSession", "report_json"]

DEFAULT_TARGET = 30
"""Labels a session aims at unless told otherwise: below 30 the normal intervals of PPI are optimistic
(ragmetrics.trust.ppi.SMALL_N)."""


def report_json(where: Path) -> Path:
    """report.json of a report folder, of a `latest` link or pointer file, or the file itself."""
    if where.is_file() and where.name != "report.json" and where.stat().st_size < 4096:
        target = read_utf8(where, limit=4096).strip()  # `latest` as a one-line pointer file
        candidate = (where.parent / target).resolve()
        if candidate.is_dir():
            where = candidate
    if where.is_dir():
        where = where / "report.json"
    if not where.exists():
        raise InputError(
            "no report.json here: give a report folder written by `ragmetrics run`", source=str(where)
        )
    return where


@dataclass(frozen=True)
class Verdict:
    score: float
    reason: str | None


class LabelSession:
    """The state behind the labelling page (module doc)."""

    def __init__(
        self,
        report_path: Path,
        metric: str,
        labels_path: Path,
        *,
        run: str | None = None,
        target: int | None = None,
        seed: int = 0,
    ) -> None:
        path = report_json(report_path)
        report = load_baseline(path)
        self.run = self._pick_run(report, run, metric, path)
        self.metric = metric
        self.question: Question = question_for(metric)
        samples = read_judged_samples(path.parent / FILENAME).get(self.run)
        if not samples:
            raise InputError(f"run {self.run!r} has no judged samples", source=str(path.parent / FILENAME))
        result = next(r for r in report.runs if r.name == self.run)
        self._verdicts: dict[str, Verdict] = {}
        for sample_id, scores in result.per_query.items():
            score = scores.get(metric)
            if score is None or sample_id not in samples:
                continue  # failed, not applicable or not judged: nothing to compare a label with
            detail = result.details.get(sample_id, {}).get(metric)
            self._verdicts[sample_id] = Verdict(float(score), detail.reason if detail is not None else None)
        if not self._verdicts:
            raise InputError(
                f"run {self.run!r} has no {metric} score to label against (every sample failed or was "
                "not applicable)",
                source=str(path),
            )
        self.samples: dict[str, RagSample] = samples
        self.order = labelling_order({sid: v.score for sid, v in self._verdicts.items()}, seed=seed)
        self.store = LabelStore(labels_path)
        self.target = min(target if target is not None else DEFAULT_TARGET, len(self.order))
        self.source = str(path.parent)

    @staticmethod
    def _pick_run(report: Report, run: str | None, metric: str, path: Path) -> str:
        judged = [r.name for r in report.runs if metric in r.metrics]
        if run is not None:
            if run not in judged:
                raise InputError(
                    f"run {run!r} has no {metric} scores; runs with them: {', '.join(judged) or 'none'}",
                    source=str(path),
                    field="run",
                )
            return run
        if len(judged) == 1:
            return judged[0]
        if not judged:
            known = sorted({m for r in report.runs for m in r.metrics})
            raise InputError(
                f"no run has {metric} scores; metrics in this report: {', '.join(known)}",
                source=str(path),
                field="metric",
            )
        raise InputError(
            f"several runs have {metric} scores; pick one with --run: {', '.join(judged)}", source=str(path)
        )

    def labels(self) -> dict[str, float]:
        return {
            sid: v for sid, v in self.store.for_metric(self.run, self.metric).items() if sid in self._verdicts
        }

    def plan(self) -> LabelPlan:
        return label_plan({sid: v.score for sid, v in self._verdicts.items()}, self.labels())

    def next_position(self, after: int = -1) -> int | None:
        """The first position after `after` whose sample has no label yet."""
        labelled = self.labels()
        for position in range(after + 1, len(self.order)):
            if self.order[position] not in labelled:
                return position
        return None

    def item(self, position: int) -> dict[str, Any]:
        """What the page shows at `position`: the texts and any label already given, never the verdict."""
        if not 0 <= position < len(self.order):
            raise IndexError(position)
        sample = self.samples[self.order[position]]
        texts = {field: getattr(sample, field) for field in self.question.shows}
        return {
            "position": position,
            "sample_id": sample.id,
            "texts": texts,
            "label": self.labels().get(sample.id),
        }

    def label(self, position: int, value: float, *, labeller: str | None = None) -> Verdict:
        """Record the person's label at `position`; returns the judge's verdict, now that it cannot anchor."""
        if not 0 <= position < len(self.order):  # a negative index would silently label from the end
            raise IndexError(f"no sample at position {position}")
        allowed = {c.value for c in self.question.choices}
        if not any(abs(value - a) < 1e-9 for a in allowed):
            raise ValueError(f"label {value} is not one of the offered answers")
        sample_id = self.order[position]
        self.store.set(self.run, self.metric, sample_id, value, labeller)
        return self._verdicts[sample_id]

    def status(self) -> dict[str, Any]:
        plan = self.plan()
        return {
            "run": self.run,
            "metric": self.metric,
            "ask": self.question.ask,
            "choices": [{"key": c.key, "text": c.text, "value": c.value} for c in self.question.choices],
            "total": len(self.order),
            "labelled": plan.labelled,
            "target": self.target,
            "plan": plan.describe(),
            "labels_file": str(self.store.path),
        }
