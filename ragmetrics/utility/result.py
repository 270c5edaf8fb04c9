"""What a utility build produced, and its folder on disk (docs/utilities.md, "Files").

A folder holds:

- `utility.qrels`: TREC qrels ``query_id 0 doc_id grade``, one line per scored pair (a failed pair has no line:
  it is unjudged, never 0);
- `abstention.jsonl`: ``{"query_id", "doc_id", "p_abstain"}`` per pair with a probability, the JSON Lines form
  of `retrieval.utilities.AbstentionProbabilities` that `udcg@k` reads (absent when no pair has one);
- `judgments.jsonl`: every pair: ids, answer, score, grade, p_abstain, cached, and for a failed pair its cause
  and message;
- `utility.json`: the manifest: ``"qrels": {"origin": "utility", "relevant_by_origin": {"utility": n}}``,
  the provenance (generator identity, metric, created, k, runs, max_grade), the counts (pairs, scored,
  failed by cause, cached, requests sent, cost) and the skipped questions (no reference).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.utilities import AbstentionProbabilities, MissingUtility

__all__ = [
    "MANIFEST",
    "PairJudgment",
    "UtilityFolder",
    "UtilityJudgments",
    "UtilityPlan",
    "read_folder",
    "read_manifest",
]

MANIFEST = "utility.json"
QRELS_FILE = "utility.qrels"
ABSTENTION_FILE = "abstention.jsonl"
JUDGMENTS_FILE = "judgments.jsonl"
RELEVANT_GRADE = 1


@dataclass(frozen=True)
class PairJudgment:
    """One (question, passage): the answer from the passage alone, its score and grade; or why there is none."""

    query_id: str
    doc_id: str
    answer: str | None
    p_abstain: float | None
    score: float | None
    grade: int | None
    cached: bool
    cause: str | None = None
    message: str | None = None
    p_abstain_missing: str | None = None
    """Why an answered pair has no p_abstain (generators.P_ABSTAIN_MISSING); None when it has one or failed."""


@dataclass(frozen=True)
class UtilityPlan:
    """The dry run: what a build would send and what it could cost (upper bounds: `requests` and `cost_bound`
    count the possible refused logprobs request, `refused_request`), nothing sent."""

    pairs: int
    cached: int
    requests: int
    cost_bound: float
    within_budget: int
    skipped_questions: list[str]
    skipped_pairs: int
    generator: dict[str, Any]
    cached_without_logprobs: int = 0
    """Of `requests`, pairs a build answered without logprobs after the server refused them: at a server that
    still refuses, one refused request confirms it and these are read from the cache, not sent."""
    refused_request: int = 0
    """1 when the generator asks for logprobs (and there is a pair to ask): counted in `requests`, `cost_bound`
    and `within_budget` as the one request a server refusing logprobs answers with HTTP 400 before the pair is
    asked again without them (taken from the budget first, as the build takes it), else 0."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class UtilityJudgments:
    """Every pooled pair's judgment, the provenance and the counts of a build."""

    judgments: list[PairJudgment]
    provenance: dict[str, Any]
    skipped_questions: list[str] = field(default_factory=list)
    skipped_pairs: int = 0
    requests: int = 0
    cost: float = 0.0

    @property
    def failed(self) -> dict[str, int]:
        """Pairs without a grade, by cause."""
        return dict(Counter(j.cause for j in self.judgments if j.grade is None and j.cause is not None))

    def grades(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for j in self.judgments:
            if j.grade is not None:
                out.setdefault(j.query_id, {})[j.doc_id] = j.grade
        return out

    def qrels(self) -> Qrels:
        """The graded qrels (source "utility"); an InputError when no pair was scored."""
        grades = self.grades()
        if not grades:
            raise InputError(
                "no pair was scored: there are no utility qrels (see the failures)", field="utility"
            )
        return Qrels.from_dict(grades, source="utility")

    def abstention(self) -> AbstentionProbabilities | None:
        """The probabilities of abstaining, for `udcg@k`; None when the generator gave none."""
        rows: dict[str, dict[str, float]] = {}
        for j in self.judgments:
            if j.p_abstain is not None:
                rows.setdefault(j.query_id, {})[j.doc_id] = j.p_abstain
        return AbstentionProbabilities.from_dict(rows, source="utility") if rows else None

    def counts(self) -> dict[str, Any]:
        scored = sum(1 for j in self.judgments if j.grade is not None)
        return {
            "pairs": len(self.judgments),
            "scored": scored,
            "relevant": sum(1 for j in self.judgments if j.grade is not None and j.grade >= RELEVANT_GRADE),
            "failed": self.failed,
            "cached": sum(1 for j in self.judgments if j.cached),
            "requests": self.requests,
            "cost_usd": round(self.cost, 9),
            "skipped_questions": len(self.skipped_questions),
            "skipped_pairs": self.skipped_pairs,
            "with_p_abstain": sum(1 for j in self.judgments if j.p_abstain is not None),
            "without_p_abstain": dict(
                Counter(j.p_abstain_missing for j in self.judgments if j.p_abstain_missing is not None)
            ),
        }

    def manifest(self) -> dict[str, Any]:
        counts = self.counts()
        return {
            "schema": "ragmetrics-utility-1",
            "qrels": {"origin": "utility", "relevant_by_origin": {"utility": counts["relevant"]}},
            "provenance": self.provenance,
            "counts": counts,
            "skipped_questions": {"ids": self.skipped_questions, "why": "no reference answer"},
            "files": {
                "qrels": QRELS_FILE,
                "abstention": ABSTENTION_FILE if counts["with_p_abstain"] else None,
                "judgments": JUDGMENTS_FILE,
            },
        }

    def texts(self) -> dict[str, str]:
        """The folder's files by name (module docstring); abstention.jsonl only when a pair has a probability."""
        grades = self.grades()
        lines = [f"{q} 0 {d} {g}" for q, docs in grades.items() for d, g in docs.items()]
        out = {QRELS_FILE: "".join(f"{line}\n" for line in lines)}
        abstention = [
            json.dumps(
                {"query_id": j.query_id, "doc_id": j.doc_id, "p_abstain": j.p_abstain}, ensure_ascii=False
            )
            for j in self.judgments
            if j.p_abstain is not None
        ]
        if abstention:
            out[ABSTENTION_FILE] = "".join(f"{line}\n" for line in abstention)
        out[JUDGMENTS_FILE] = "".join(
            json.dumps(asdict(j), ensure_ascii=False) + "\n" for j in self.judgments
        )
        out[MANIFEST] = json.dumps(self.manifest(), indent=2, ensure_ascii=False) + "\n"
        return out

    def write(self, folder: str | Path) -> Path:
        """Write the folder (module docstring); each file replaced whole (written aside, then renamed)."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        texts = self.texts()
        if ABSTENTION_FILE not in texts and (out / ABSTENTION_FILE).exists():
            (
                out / ABSTENTION_FILE
            ).unlink()  # a stale file from an earlier build must not be read as tonight's
        for name, text in texts.items():
            _replace(out / name, text)
        return out


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(folder: str | Path) -> Mapping[str, Any] | None:
    """A utility folder's manifest, or None when `folder` holds none (or a broken one): a quick look. What
    reads the folder's grades reads it strictly (`read_folder`, `utility.manifest.read_utility_manifest`)."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == "ragmetrics-utility-1" else None


@dataclass(frozen=True)
class UtilityFolder:
    """A utility folder read back: its qrels, its probabilities of abstaining (None without the file), the
    manifest (provenance, counts, skipped questions) and every pair's judgment."""

    qrels: Qrels
    abstention: AbstentionProbabilities | None
    manifest: Mapping[str, Any]
    judgments: list[PairJudgment]


def read_folder(folder: str | Path, *, missing: MissingUtility = "skip") -> UtilityFolder:
    """Read what `UtilityJudgments.write` (or a night's `utility/`) wrote; an InputError naming the file when it
    is not a utility folder. `missing` is the abstention probabilities' rule for a passage without one."""
    from ragmetrics.utility.manifest import check_against_qrels, read_utility_manifest

    root = Path(folder)
    if not (root / MANIFEST).is_file():
        raise InputError(f"no {MANIFEST}: not a utility folder", source=str(root))
    checked = read_utility_manifest(root / MANIFEST)  # damaged: an error naming the file and the field
    manifest = checked.raw
    abstention_path = root / ABSTENTION_FILE
    abstention = (
        AbstentionProbabilities.read(abstention_path, missing=missing) if abstention_path.is_file() else None
    )
    from ragmetrics._jsonl import numbered_jsonl

    judgments = []
    for line, row in numbered_jsonl(root / JUDGMENTS_FILE):
        try:
            judgments.append(PairJudgment(**row))
        except TypeError as exc:
            raise InputError(
                f"not a pair judgment: {exc}", source=str(root / JUDGMENTS_FILE), line=line
            ) from None
    qrels = Qrels.read(checked.qrels_path)
    check_against_qrels(checked, qrels.to_dict())  # a manifest from another build is an error, not a label
    return UtilityFolder(qrels, abstention, manifest, judgments)
