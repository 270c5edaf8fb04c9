"""Reading a JSONL file of objects, shared by the dataset loader and the built-in collection.

Every problem (unreadable file, bytes that are not UTF-8, a line that is not JSON or not an object) is an
InputError naming the file and the 1-based line, so it surfaces as exit code 2, never as a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ragmetrics._textfile import open_regular
from ragmetrics.errors import InputError, json_problem

ModelT = TypeVar("ModelT", bound=BaseModel)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSONL file in order (blank lines allowed)."""
    return [row for _, row in numbered_jsonl(path)]


def numbered_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) pairs, so later checks can name the line even after blank lines."""
    source = str(path)
    try:
        with open_regular(path, prefix="cannot read: ") as fh:
            # Decoded line by line (not by the text layer's chunks) so a bad byte is reported on its own line.
            for line_no, raw in enumerate(fh, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"not UTF-8 text: {exc.reason}", source=source, line=line_no) from None
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(json_problem(exc), source=source, line=line_no) from None
                if not isinstance(row, dict):
                    raise InputError("expected a JSON object", source=source, line=line_no)
                yield line_no, row
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None


def validated_jsonl(path: Path, model: type[ModelT], what: str) -> Iterator[tuple[int, ModelT]]:
    """(line, validated object) pairs of a JSONL file; an object `model` refuses is an InputError naming the
    file, the line and its first problem ("not a test-set item: question: Field required")."""
    for line, row in numbered_jsonl(path):
        try:
            yield line, model.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            raise InputError(
                f"not {what}: {where + ': ' if where else ''}{message}", source=str(path), line=line
            ) from None
