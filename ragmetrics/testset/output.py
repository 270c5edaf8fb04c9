"""A test set on disk, and back: the folder a nightly config reads as its dataset with no conversion.

    DIR/questions.jsonl  one TestItem per line: id, question, reference, kind, language, source_ids,
                         answerable, generator, relevant_ids and relevant_grades (the qrels, so the file alone
                         is a complete QA dataset for `ragmetrics run`)
    DIR/qrels.txt        TREC qrels (query 0 doc grade), judged-non-relevant pool entries included as 0
    DIR/grades.tsv       every grade with its origin (source, judge, person) and the judge's reason
    DIR/spans.jsonl      the source judgments as spans of documents, when the corpus has offsets (evidence.py)
    DIR/testset.json     settings, counts, coverage, filters with examples, pool, review, provenance
    DIR/testset.html     the same for people (ragmetrics.testset.page)

Every file is written to a temporary name and renamed into place, so a killed build never leaves half a file
that a nightly job would read as a smaller test set.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics._jsonl import validated_jsonl
from ragmetrics._textfile import read_utf8
from ragmetrics._version import __version__
from ragmetrics.errors import InputError, json_fault, json_problem
from ragmetrics.testset.build_result import FILTERS, TestSet
from ragmetrics.testset.duplicates import shared_count
from ragmetrics.testset.settings import Grade, TestItem

__all__ = [
    "FILTERS",
    "MANIFEST",
    "is_testset_dir",
    "read_grades",
    "read_items",
    "read_manifest",
    "summary",
    "write_atomic",
    "write_grades",
    "write_items",
    "write_testset",
]

MANIFEST = "testset.json"
EXAMPLES_PER_FILTER = 5


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file, fsync and rename: never half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def summary(testset: TestSet) -> dict[str, Any]:
    """What testset.json holds (module docstring)."""
    examples: dict[str, list[dict[str, Any]]] = {}
    for record in testset.filtered:
        bucket = examples.setdefault(record.filter, [])
        if len(bucket) < EXAMPLES_PER_FILTER:
            bucket.append(
                {
                    "kind": record.kind,
                    "question": record.question,
                    "source_ids": record.source_ids,
                    "why": record.detail,
                }
            )
    return {
        "format": "ragmetrics.testset/1",
        "ragmetrics": __version__,
        "corpus": testset.corpus_source,
        "corpus_path": testset.corpus_path,
        "generator": testset.generator,
        "judge": testset.judge,
        "settings": testset.settings.model_dump(),
        "questions": len(testset.items),
        "answerable": sum(1 for i in testset.items if i.answerable),
        "kinds": testset.kind_counts(),
        "languages": testset.language_counts(),
        "chunks": {
            "total": testset.n_chunks,
            "eligible": testset.eligible_chunks,
            "skipped": testset.skipped_chunks,
            "skipped_examples": testset.skipped_examples,
        },
        "coverage": testset.coverage,
        "groups": testset.groups,
        "drafts": testset.drafts,
        "filters": {
            name: {"count": count, "examples": examples.get(name, [])}
            for name, count in testset.filter_counts().items()
        },
        "qrels": {
            "grades": len(testset.grades),
            "relevant_by_origin": testset.origin_counts(),
            "relevant_per_question": _relevant_per_question(testset),
            "shared_with_copies": shared_count(testset.grades),
        },
        "duplicates": {"groups": testset.duplicate_groups},
        "pool": testset.pool,
        "review": testset.review,
        "notes": testset.notes,
        "seconds": testset.seconds,
    }


def _relevant_per_question(testset: TestSet) -> float:
    answerable = [i for i in testset.items if i.answerable]
    if not answerable:
        return 0.0
    return round(
        sum(sum(1 for g in i.relevant_grades or [] if g > 0) for i in answerable) / len(answerable), 3
    )


def write_testset(testset: TestSet, folder: str | Path) -> dict[str, Path]:
    """Write every file of the module docstring into `folder` (created, mode 0755) and return their paths."""
    from ragmetrics.testset.page import render_page

    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", source=str(out))
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o755)
    paths = {
        "questions": out / "questions.jsonl",
        "qrels": out / "qrels.txt",
        "grades": out / "grades.tsv",
        "manifest": out / MANIFEST,
        "html": out / "testset.html",
    }
    write_items(out, testset.items)
    write_grades(out, testset.grades)
    from ragmetrics.testset.evidence import write_evidence_spans

    if (spans := write_evidence_spans(testset, out)) is not None:
        paths["spans"] = spans
    data = summary(testset)
    write_atomic(paths["manifest"], json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    write_atomic(paths["html"], render_page(data, testset.items, source_texts(testset.items, testset.corpus)))
    return paths


def source_texts(items: Sequence[TestItem], corpus: Any) -> dict[str, str]:
    """Chunk id -> text of every question's source chunk, read from `corpus` (a Corpus, or the path or
    'builtin' a manifest names) in one pass; {} when the corpus cannot be read (the page then shows ids)."""
    from ragmetrics.testset.corpus import Corpus, open_corpus

    wanted = {d for i in items for d in i.source_ids}
    if corpus is None or not wanted:
        return {}
    try:
        source = corpus if isinstance(corpus, Corpus) else open_corpus(corpus)
        return {cid: chunk.text for cid, chunk in source.texts_of(wanted).items()}
    except (InputError, OSError):
        return {}


def write_items(folder: Path, items: Sequence[TestItem]) -> None:
    """questions.jsonl: one item per line."""
    write_atomic(
        folder / "questions.jsonl",
        "".join(json.dumps(i.model_dump(), ensure_ascii=False) + "\n" for i in items),
    )


def write_grades(folder: Path, grades: Sequence[Grade]) -> None:
    """qrels.txt (TREC) and grades.tsv (every grade with its origin and reason), in the same order."""
    ordered = sorted(grades, key=lambda g: (g.query_id, -g.grade, g.doc_id))
    write_atomic(folder / "qrels.txt", "".join(f"{g.query_id} 0 {g.doc_id} {g.grade}\n" for g in ordered))
    lines = ["query_id\tdoc_id\tgrade\torigin\treason"]
    for g in ordered:
        reason = (g.reason or "").replace("\t", " ").replace("\n", " ").replace("\r", " ")
        lines.append(f"{g.query_id}\t{g.doc_id}\t{g.grade}\t{g.origin}\t{reason}")
    write_atomic(folder / "grades.tsv", "\n".join(lines) + "\n")


def is_testset_dir(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file() and (path / "questions.jsonl").is_file()


def read_items(folder: Path) -> list[TestItem]:
    """The items of a test-set folder, each validated; a bad line is an InputError naming it."""
    return [item for _, item in validated_jsonl(folder / "questions.jsonl", TestItem, "a test-set item")]


def read_grades(folder: Path) -> list[Grade]:
    """The grades of a test-set folder with their origins (grades.tsv)."""
    path = folder / "grades.tsv"
    grades = []
    for number, line in enumerate(read_utf8(path).splitlines(), start=1):
        if number == 1 or not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != 5:
            raise InputError("expected 5 tab-separated cells", source=str(path), line=number)
        try:
            grades.append(
                Grade(
                    query_id=cells[0],
                    doc_id=cells[1],
                    grade=int(cells[2]),
                    origin=cells[3],  # type: ignore[arg-type]
                    reason=cells[4] or None,
                )
            )
        except ValueError as exc:
            raise InputError(
                f"bad grade: {str(exc).splitlines()[-1].strip()}", source=str(path), line=number
            ) from None
    return grades


def read_manifest(folder: Path) -> dict[str, Any]:
    return read_format_manifest(folder / MANIFEST, "ragmetrics.testset/1", "a ragmetrics test-set manifest")


def read_format_manifest(path: Path, expected: str, what: str) -> dict[str, Any]:
    """A JSON manifest whose `format` must be `expected` (a test set's, an attack set's); anything else is an
    InputError naming the file (and the line, for JSON that does not parse)."""
    try:
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise InputError(json_problem(exc), source=str(path), line=json_fault(exc)[0]) from None
    if not isinstance(data, dict) or data.get("format") != expected:
        raise InputError(f"not {what} (format {expected!r} expected)", source=str(path))
    return data
