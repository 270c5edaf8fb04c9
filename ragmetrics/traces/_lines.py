"""Trace exports come as JSON Lines (one export per line, as the Collector's file exporter and most tools write
them) or as one JSON document (pretty-printed, or an array): read either, streaming the lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragmetrics._textfile import open_regular, read_utf8
from ragmetrics.errors import InputError, json_fault, json_problem

__all__ = ["json_lines_or_document"]


def json_lines_or_document(path: Path, what: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) per non-blank line, parsed as it is read; when the first such line is not
    JSON the file is one document, yielded whole as line 1. A later line that is not JSON is an InputError
    naming the file, the line and `what` the line should have been."""
    source = str(path)
    lines = 0
    with open_regular(path, prefix="cannot read: ") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                parsed = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                if lines:
                    problem = json_problem(exc) if isinstance(exc, json.JSONDecodeError) else str(exc)
                    raise InputError(f"not {what}: {problem}", source=source, line=number) from None
                break
            lines += 1
            yield number, parsed
        else:
            return
    try:
        yield 1, json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise InputError(json_problem(exc), source=source, line=json_fault(exc)[0]) from None
