"""A side-by-side labelling session (`ragmetrics label REPORT --pairwise A,B`): one question with two runs'
answers, which is better?

The runs are not named on the page and which run is left is decided per question by the seed (and written
down with the choice), so neither the run's name nor a fixed side can lead the person; the page says which
run was which only after the answer, as it reveals the judge's verdict in the single-run session. Choices are
written, one row per question and person, to the file `pairwise: {preferences: ...}` reads
(`trust.preferences`), through the same lock and atomic replace as labels.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics._textfile import write_atomic
from ragmetrics.errors import InputError
from ragmetrics.labeling.session import Verdict, report_json
from ragmetrics.labeling.store import locked
from ragmetrics.nightly.gate import load_baseline
from ragmetrics.nightly.judged_samples import FILENAME, read_judged_samples
from ragmetrics.trust.preferences import load_preferences

__all__ = ["PairwiseSession"]

CHOICES = ({"key": "1", "text": "the left answer is better", "value": 1.0},
           {"key": "2", "text": "the right answer is better", "value": 0.0},
           {"key": "t", "text": "neither: a tie", "value": 0.5})  # fmt: skip
_CHOICE_OF = {1.0: "left", 0.0: "right", 0.5: "tie"}


@dataclass(frozen=True)
class PairwisePlan:
    labelled: int
    total: int

    def describe(self) -> str:
        return f"{self.labelled} of {self.total} questions compared"


class PairwiseSession:
    """The state behind the side-by-side page (module docstring); the same interface as `LabelSession`."""

    metric = "pairwise"

    def __init__(
        self, report_path: Path, runs: tuple[str, str], preferences_path: Path, *, target: int | None = None,
        seed: int = 0,
    ) -> None:  # fmt: skip
        path = report_json(report_path)
        report = load_baseline(path)
        a, b = runs
        if a == b:
            raise InputError("give two different runs", field="--pairwise")
        samples = read_judged_samples(path.parent / FILENAME)
        for run in runs:
            if run not in samples or not any(s.answer is not None for s in samples[run].values()):
                answered = sorted(r for r, got in samples.items() if any(s.answer is not None for s in got.values()))
                raise InputError(f"run {run!r} has no answers in this report (runs with answers: "
                                 f"{', '.join(answered) or 'none'})", source=str(path), field="--pairwise")  # fmt: skip
        shared = sorted(q for q, s in samples[a].items()
                        if s.answer is not None and q in samples[b] and samples[b][q].answer is not None)  # fmt: skip
        if not shared:
            raise InputError(f"no question has answers of both {a} and {b}", source=str(path))
        rng = random.Random(seed)
        rng.shuffle(shared)
        self.order = shared
        self.sides = {q: (a, b) if rng.random() < 0.5 else (b, a) for q in shared}
        self.samples = {run: samples[run] for run in runs}
        self.run = f"{a} vs {b}"
        self.runs = runs
        self.target = min(target if target is not None else len(shared), len(shared))
        self.store = _PreferenceStore(preferences_path)
        self._scores = {r.name: r.per_query for r in report.runs if r.name in runs}
        self.source = str(path.parent)

    def _mine(self) -> dict[str, str]:
        return {p.sample_id: p.choice for p in self.store.read() if {p.left, p.right} == set(self.runs)}

    def plan(self) -> PairwisePlan:
        return PairwisePlan(len(self._mine()), len(self.order))

    def next_position(self, after: int = -1) -> int | None:
        done = self._mine()
        return next((i for i in range(after + 1, len(self.order)) if self.order[i] not in done), None)

    def item(self, position: int) -> dict[str, Any]:
        if not 0 <= position < len(self.order):
            raise IndexError(position)
        question = self.order[position]
        left, right = self.sides[question]
        one, two = self.samples[left][question], self.samples[right][question]
        contexts = list(dict.fromkeys([*(one.contexts or []), *(two.contexts or [])]))
        choice = self._mine().get(question)
        value = next((v for v, c in _CHOICE_OF.items() if c == choice), None)
        return {"position": position, "sample_id": question,
                "texts": {"question": one.question, "sources": contexts, "left answer": one.answer,
                          "right answer": two.answer}, "label": value}  # fmt: skip

    def label(self, position: int, value: float, *, labeller: str | None = None) -> Verdict:
        if not 0 <= position < len(self.order):
            raise IndexError(f"no question at position {position}")
        choice = next((c for v, c in _CHOICE_OF.items() if abs(v - value) < 1e-9), None)
        if choice is None:
            raise ValueError(f"label {value} is not one of the offered answers")
        question = self.order[position]
        left, right = self.sides[question]
        self.store.put({"sample_id": question, "left": left, "right": right, "choice": choice,
                        **({"labeller": labeller} if labeller else {})})  # fmt: skip
        scores = [self._scores.get(run, {}).get(question, {}) for run in (left, right)]
        shown = ", ".join(f"{k} {scores[0].get(k)} vs {scores[1].get(k)}" for k in sorted(scores[0]) if k in scores[1])
        return Verdict(1.0 if choice == "left" else 0.0 if choice == "right" else 0.5,
                       f"left was {left}, right was {right}" + (f"; metrics {shown}" if shown else ""))  # fmt: skip

    def status(self) -> dict[str, Any]:
        plan = self.plan()
        return {"run": self.run, "metric": self.metric, "ask": "Which answer is better for this question?",
                "choices": list(CHOICES), "total": len(self.order), "labelled": plan.labelled,
                "target": self.target, "plan": plan.describe(), "labels_file": str(self.store.path)}  # fmt: skip


class _PreferenceStore:
    """Preference rows by (question, pair, labeller), the whole file replaced atomically under a lock."""

    def __init__(self, path: Path) -> None:
        if path.suffix.lower() != ".jsonl":
            raise InputError("preferences are written as .jsonl", source=str(path))
        self.path = path
        self.read()  # a damaged file is an error now, not a fresh start that drops someone's work

    def read(self) -> list[Any]:
        return load_preferences(self.path) if self.path.exists() and self.path.stat().st_size else []

    def put(self, row: dict[str, str]) -> None:
        with locked(self.path):
            rows = [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines()
                    if line.strip()] if self.path.exists() else []  # fmt: skip
            key = (row["sample_id"], frozenset((row["left"], row["right"])), row.get("labeller"))
            rows = [r for r in rows if (r.get("sample_id"), frozenset((r.get("left"), r.get("right"))),
                                        r.get("labeller") or None) != key]  # fmt: skip
            rows.append(row)
            write_atomic(self.path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
