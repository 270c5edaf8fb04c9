"""People's labels applied to a test set: rejected questions set aside, person grades in the qrels, and how
far people agree with what the build decided.

- A question labelled "no" (not sensible, or not answered by its sources) leaves questions.jsonl and the qrels
  and goes to rejected.jsonl with its label; "partly" keeps it and is counted.
- A qrels label (0-3, the judge's scale) becomes a grade of origin `person` on the test set's scale (the
  judge's mapping, `pooling.judge_to_scale`) and replaces the grade it was given for.
- testset.json's `review` says how many were labelled, the share of questions rejected, and the agreement of
  people with the grades they checked (accuracy and Cohen's kappa of relevant / not relevant, with bootstrap
  intervals), separately for source and judge grades; testset.html shows it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ragmetrics.testset.build_result import attach_qrels
from ragmetrics.testset.duplicates import share_duplicate_grades, shared_count
from ragmetrics.testset.output import (
    read_grades,
    read_items,
    read_manifest,
    source_texts,
    write_atomic,
    write_grades,
    write_items,
)
from ragmetrics.testset.page import render_page
from ragmetrics.testset.pooling import judge_to_scale
from ragmetrics.testset.settings import Grade
from ragmetrics.trust import agreement_model
from ragmetrics.trust.agreement import agreement
from ragmetrics.trust.labels import load_labels

__all__ = ["PAIR_SEPARATOR", "QRELS_METRIC", "QUESTION_METRIC", "RUN", "review_testset"]

RUN = "testset"
QUESTION_METRIC = "testset_question"
QRELS_METRIC = "passage_relevance"
PAIR_SEPARATOR = "\t"


def review_testset(folder: Path, labels_path: Path) -> dict[str, Any]:
    """Apply the labels in `labels_path` to the test set in `folder` (module docstring); returns the review."""
    manifest = read_manifest(folder)
    items = read_items(folder)
    grades = read_grades(folder)
    top = max(1, int(manifest.get("settings", {}).get("source_grade", 2)))
    question_labels: dict[str, float] = {}
    pair_labels: dict[tuple[str, str], float] = {}
    for label in load_labels(labels_path).labels:
        if label.run not in (None, RUN):
            continue
        if label.metric == QUESTION_METRIC:
            question_labels[label.sample_id] = label.raw
        elif label.metric == QRELS_METRIC and PAIR_SEPARATOR in label.sample_id:
            qid, doc = label.sample_id.split(PAIR_SEPARATOR, 1)
            pair_labels[(qid, doc)] = label.raw
    known = {i.id for i in items}
    rejected_ids = {q for q, v in question_labels.items() if v == 0.0 and q in known}
    review: dict[str, Any] = {
        "questions_labelled": sum(1 for q in question_labels if q in known),
        "questions_rejected": len(rejected_ids),
        "questions_partly": sum(1 for q, v in question_labels.items() if v == 0.5 and q in known),
    }
    labelled = review["questions_labelled"]
    review["share_rejected"] = round(len(rejected_ids) / labelled, 4) if labelled else None
    by_pair = {(g.query_id, g.doc_id): g for g in grades}
    checked = [(by_pair[p], v) for p, v in pair_labels.items() if p in by_pair]
    review["qrels_labelled"] = len(checked)
    for origin in ("source", "judge"):
        pairs = [(g, v) for g, v in checked if g.origin == origin]
        review[f"agreement_with_{origin}"] = _agreement(pairs, top) if pairs else None
    new_grades = []
    for grade in grades:
        value = pair_labels.get((grade.query_id, grade.doc_id))
        if value is not None:
            grade = Grade(
                query_id=grade.query_id,
                doc_id=grade.doc_id,
                grade=judge_to_scale(round(value * 3), top),
                origin="person",
                reason=f"labelled by a person (was {grade.origin} {grade.grade})",
            )
        if grade.query_id not in rejected_ids:
            new_grades.append(grade)
    groups = manifest.get("duplicates", {}).get("groups", [])
    new_grades = share_duplicate_grades(new_grades, groups)  # a person's grade holds for every copy
    kept = [i for i in items if i.id not in rejected_ids]
    attach_qrels(kept, new_grades)
    rejected = [{**i.model_dump(), "label": question_labels[i.id]} for i in items if i.id in rejected_ids]
    write_items(folder, kept)
    if rejected:
        write_atomic(
            folder / "rejected.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rejected)
        )
    write_grades(folder, new_grades)
    manifest["review"] = review
    manifest["questions"] = len(kept)
    manifest["answerable"] = sum(1 for i in kept if i.answerable)
    origins = {"source": 0, "judge": 0, "person": 0}
    for g in new_grades:
        if g.grade > 0:
            origins[g.origin] += 1
    manifest.setdefault("qrels", {})["relevant_by_origin"] = origins
    manifest["qrels"]["grades"] = len(new_grades)
    manifest["qrels"]["shared_with_copies"] = shared_count(new_grades)
    write_atomic(folder / "testset.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    sources = source_texts(kept, manifest.get("corpus_path"))
    write_atomic(folder / "testset.html", render_page(manifest, kept, sources))
    return review


def _agreement(pairs: list[tuple[Grade, float]], top: int) -> dict[str, Any]:
    """People against the grades they checked: relevant (person 2-3 of 3, grade > 0) or not."""
    build = np.array([min(1.0, g.grade / top) for g, _ in pairs])
    people = np.array([v for _, v in pairs])
    stats = agreement_model(QRELS_METRIC, agreement(build, people, kind="graded", threshold=0.5, seed=0))
    out: dict[str, Any] = {"pairs": len(pairs)}
    for name in ("accuracy", "kappa"):
        value = getattr(stats, name)
        if value is not None and value.estimate is not None:
            out[name] = round(float(value.estimate), 3)
            out[f"{name}_ci"] = [
                None if value.low is None else round(float(value.low), 3),
                None if value.high is None else round(float(value.high), 3),
            ]
    return out
