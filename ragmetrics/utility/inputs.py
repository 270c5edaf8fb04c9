"""The inputs of `ragmetrics utility`: questions with references and passage texts, as JSON Lines.

Questions: ``{"id", "question", "reference"}`` per line (`reference` may be absent or null: that question is
skipped and counted); passages: ``{"id", "text"}`` per line (a ``title`` is ignored). The built-in collection's
questions.jsonl and passages.jsonl have these shapes. Every problem is an InputError naming the file, the
line and the field (exit 2 at the CLI).
"""

from __future__ import annotations

from pathlib import Path

from ragmetrics._jsonl import numbered_jsonl
from ragmetrics.errors import InputError
from ragmetrics.utility.build import UtilityQuestion

__all__ = ["read_passages", "read_questions"]


def _text(row: dict[str, object], key: str, source: str, line: int, *, optional: bool = False) -> str | None:
    value = row.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"{key!r} must be a non-empty string, got {value!r}", source=source, line=line, field=key
        )
    return value


def read_questions(path: str | Path) -> dict[str, UtilityQuestion]:
    """Question id -> question and reference (None when the line has none)."""
    source = str(path)
    out: dict[str, UtilityQuestion] = {}
    for line, row in numbered_jsonl(Path(path)):
        qid = _text(row, "id", source, line)
        assert qid is not None
        if qid in out:
            raise InputError(f"question id {qid!r} is listed twice", source=source, line=line, field="id")
        question = _text(row, "question", source, line)
        assert question is not None
        reference = row.get("reference")
        if reference is not None and not isinstance(reference, str):
            raise InputError(
                f"'reference' must be a string or null, got {type(reference).__name__}",
                source=source,
                line=line,
                field="reference",
            )
        out[qid] = UtilityQuestion(qid, question, reference if reference and reference.strip() else None)
    if not out:
        raise InputError("no questions", source=source)
    return out


def read_passages(path: str | Path) -> dict[str, str]:
    """Passage id -> text."""
    source = str(path)
    out: dict[str, str] = {}
    for line, row in numbered_jsonl(Path(path)):
        pid = _text(row, "id", source, line)
        assert pid is not None
        if pid in out:
            raise InputError(f"passage id {pid!r} is listed twice", source=source, line=line, field="id")
        text = _text(row, "text", source, line)
        assert text is not None
        out[pid] = text
    if not out:
        raise InputError("no passages", source=source)
    return out
