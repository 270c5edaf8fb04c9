"""People's pairwise preferences: a file (CSV or JSONL) of which of two runs' answers was better, read strictly.

A CSV, TSV, JSONL or Parquet file. Columns: ``sample_id`` (or ``id`` / ``query_id``), ``left`` and ``right`` (the runs whose answers were shown
on each side, in that order), ``choice`` (``left``, ``right``, ``tie``, or the preferred run's name), and
optionally ``labeller``. `ragmetrics label --pairwise A,B` writes this file. Every problem is an InputError
naming the file, the line and the field; one person judging one question twice is an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.schema import Choice, Preference
from ragmetrics.trust.labels import table_rows

__all__ = ["load_preferences", "preference_rows"]

_ID_COLUMNS = ("sample_id", "id", "query_id")


def load_preferences(path: str | Path) -> list[Preference]:
    path = Path(path)
    rows = [(line, dict(row)) for line, row in table_rows(path, "preferences")]
    if not rows:
        raise InputError("no preferences in the file", source=str(path))
    return preference_rows(rows, source=str(path))


def preference_rows(rows: list[tuple[int, dict[str, Any]]], *, source: str) -> list[Preference]:
    out: list[Preference] = []
    seen: dict[tuple[str, frozenset[str], str | None], int] = {}
    for line, row in rows:
        id_column = next((c for c in _ID_COLUMNS if c in row), None)
        if id_column is None:
            raise InputError(f"no sample id column (one of {', '.join(_ID_COLUMNS)})", source=source, line=line,
                             field="sample_id")  # fmt: skip
        values = {}
        for column in (id_column, "left", "right", "choice"):
            value = row.get(column)
            if value is None or not str(value).strip():
                raise InputError(f"missing {column}", source=source, line=line, field=column)
            values[column] = str(value).strip()
        left, right, raw = values["left"], values["right"], values["choice"]
        if left == right:
            raise InputError(f"left and right are the same run {left!r}", source=source, line=line, field="right")
        choice: Choice
        if raw in ("left", "right", "tie"):
            choice = raw  # type: ignore[assignment]
        elif raw == left:
            choice = "left"
        elif raw == right:
            choice = "right"
        else:
            raise InputError(f"choice {raw!r} is none of left, right, tie, {left!r}, {right!r}", source=source,
                             line=line, field="choice")  # fmt: skip
        labeller = row.get("labeller")
        labeller = str(labeller).strip() or None if labeller not in (None, "") else None
        key = (values[id_column], frozenset((left, right)), labeller)
        if key in seen:
            raise InputError(f"{values[id_column]!r} judged twice for {left} vs {right}"
                             + (f" by {labeller!r}" if labeller else "") + f" (first on line {seen[key]})",
                             source=source, line=line, field=id_column)  # fmt: skip
        seen[key] = line
        out.append(Preference(values[id_column], left, right, choice, labeller))
    return out
