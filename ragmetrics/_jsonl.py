"""Reading a JSONL file of objects, shared by the dataset loader and the built-in collection.

Every problem (unreadable file, bytes that are not UTF-8, a line that is not JSON or not an object, a string
holding a lone surrogate) is an InputError naming the file and the 1-based line, so it surfaces as exit
code 2, never as a traceback.

A lone surrogate ("\\ud800" escaped in JSON) passes `json.loads` but is not text: no UTF-8 file, cache or
HTTP answer can hold it, so it failed later and far from its cause (the labelling page's reply could not be
encoded mid-session). It is refused here, at the line and field it is on, as the bytes that are not UTF-8
are (docs/robustness.md, "Every persisted text is valid UTF-8").
"""

from __future__ import annotations

import json
import re
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
                found = lone_surrogate(row) if _MAY_ESCAPE_SURROGATE.search(raw) else None
                if found is not None:
                    raise InputError(found[1], source=source, line=line_no, field=found[0])
                yield line_no, row
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=source) from None


_MAY_ESCAPE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A line that can hold a surrogate: only a JSON escape can (their UTF-8 bytes are refused as not UTF-8)."""


def lone_surrogate(value: Any, where: str = "") -> tuple[str, str] | None:
    """(field path, problem) of the first string or key in `value` holding a lone surrogate, else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            code = ord(value[exc.start])
            return where, f"character {exc.start} is a lone surrogate (U+{code:04X}), not text"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            shown = key.encode("utf-8", "backslashreplace").decode("utf-8")
            path = f"{where}.{shown}" if where else shown
            found = lone_surrogate(key, path)
            if found is not None:
                return path, f"the key's {found[1]}"
            found = lone_surrogate(item, f"{where}.{key}" if where else key)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = lone_surrogate(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


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
