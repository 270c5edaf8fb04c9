"""Human labels: a file (CSV, JSONL or Parquet) of (sample id, metric, label), read strictly.

Columns: ``sample_id`` (or ``id`` / ``query_id``), ``metric`` (a judge metric such as context_relevancy),
``label``, and optionally ``run`` (labels of one run's outputs; without it a label applies to every run) and
``labeller`` (who gave it: several people may label one sample, once each). A label is 0/1, a score in [0, 1],
or a whole-number grade when the file's `scale` is given (grade / scale).

Where several people labelled a sample, what agreement, PPI and alignment read is the adjudicated label
(`adjudication`): ``majority`` (the most common label; a tie is the mean of the tied labels, so two people
split on yes/no give 0.5), ``mean``, or a labeller's name (a senior person, or the third person who decided
the disagreements: theirs where they gave one, else the majority). `HumanLabels.ratings` keeps every person's
label for the agreement between people (`trust.people`).
Every problem is an InputError naming the file, the 1-based line (data rows: line 2 is the first row of a
CSV, line 1 of a JSONL) and the field: a missing column, a label that is not a number or out of range, the
same (run, sample, metric) twice, and (when checked against results) a sample id no run has.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragmetrics._textfile import read_bytes, read_utf8
from ragmetrics.errors import InputError, json_problem

__all__ = ["HumanLabel", "HumanLabels", "labels_from_columns", "labels_from_rows", "load_labels", "table_rows"]

_ID_COLUMNS = ("sample_id", "id", "query_id")


@dataclass(frozen=True)
class HumanLabel:
    sample_id: str
    metric: str
    value: float  # in [0, 1]
    raw: float
    run: str | None
    line: int
    labeller: str | None = None


ADJUDICATION_RULES = ("majority", "mean")


@dataclass(frozen=True)
class HumanLabels:
    source: str
    labels: tuple[HumanLabel, ...]
    scale: float | None = None
    adjudication: str = "majority"
    """How several people's labels of one sample become one (module docstring)."""

    def metrics(self) -> list[str]:
        return sorted({label.metric for label in self.labels})

    def labellers(self, metric: str | None = None) -> list[str]:
        """The named labellers (of `metric`)."""
        return sorted({lab.labeller for lab in self.labels
                       if lab.labeller is not None and metric in (None, lab.metric)})  # fmt: skip

    def _applying(self, metric: str, run: str | None) -> dict[str, list[HumanLabel]]:
        """Sample id -> every label of `metric` that applies to `run`: a person's run-specific label wins over
        their general one."""
        found: dict[str, dict[str | None, HumanLabel]] = {}
        for label in self.labels:
            if label.metric != metric or label.run not in (None, run):
                continue
            mine = found.setdefault(label.sample_id, {})
            if label.labeller not in mine or label.run is not None:
                mine[label.labeller] = label
        return {sample: list(by_person.values()) for sample, by_person in found.items()}

    def ratings(self, metric: str, run: str | None = None) -> dict[str, dict[str, float]]:
        """Labeller -> sample id -> raw label of `metric` applying to `run` (named labellers only)."""
        out: dict[str, dict[str, float]] = {}
        for sample, labels in self._applying(metric, run).items():
            for label in labels:
                if label.labeller is not None:
                    out.setdefault(label.labeller, {})[sample] = label.raw
        return out

    def for_metric(self, metric: str, run: str | None = None) -> dict[str, HumanLabel]:
        """Sample id -> the label of `metric` that applies to `run` (a run-specific label wins over a general
        one); a sample several people labelled gets the adjudicated label (module docstring)."""
        return {sample: labels[0] if len(labels) == 1 else _adjudicated(labels, self.adjudication)
                for sample, labels in self._applying(metric, run).items()}  # fmt: skip

    def check_ids(self, known: Iterable[str]) -> None:
        """An InputError for the first label whose sample id is not among `known`."""
        ids = set(known)
        for label in self.labels:
            if label.sample_id not in ids:
                raise InputError(
                    f"unknown sample id {label.sample_id!r}: no judged sample has it",
                    source=self.source,
                    line=label.line,
                    field="sample_id",
                )

    def check_metrics(self, known: Iterable[str]) -> None:
        names = set(known)
        for label in self.labels:
            if label.metric not in names:
                raise InputError(
                    f"metric {label.metric!r} is not a judge metric of these results ({', '.join(sorted(names))})",
                    source=self.source,
                    line=label.line,
                    field="metric",
                )


def _adjudicated(labels: Sequence[HumanLabel], rule: str) -> HumanLabel:
    """One label from several people's (module docstring); it keeps the first label's line and run."""
    first = labels[0]
    if rule not in ADJUDICATION_RULES:
        senior = next((lab for lab in labels if lab.labeller == rule), None)
        if senior is not None:
            return senior
        rule = "majority"
    raws = [lab.raw for lab in labels]
    if rule == "mean":
        raw = float(np.mean(raws))
    else:
        values, counts = np.unique(raws, return_counts=True)
        raw = float(np.mean(values[counts == counts.max()]))
    # value = raw / scale (or raw itself): the labels' own ratio, 1 when every raw label is 0
    ratio = next((lab.value / lab.raw for lab in labels if lab.raw), 1.0)
    return HumanLabel(first.sample_id, first.metric, raw * ratio, raw, first.run, first.line, None)


def table_rows(path: Path, what: str = "labels") -> list[tuple[int, Mapping[str, Any]]]:
    """The rows of a CSV, TSV, JSONL or Parquet file with their 1-based line numbers (a CSV's data starts on
    line 2), every problem an InputError naming the file and line."""
    source = str(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        read_bytes(path, prefix="cannot read: ")  # a missing file is an InputError, not an Arrow error
        try:
            table = pq.read_table(path)
        except Exception as exc:
            raise InputError(f"not a readable Parquet file: {exc}", source=source) from None
        return [(i, row) for i, row in enumerate(table.to_pylist(), start=1)]
    text = read_utf8(path)
    if suffix in (".jsonl", ".ndjson"):
        rows: list[tuple[int, Mapping[str, Any]]] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(json_problem(exc), source=source, line=number) from None
            if not isinstance(row, dict):
                raise InputError("expected a JSON object per line", source=source, line=number)
            rows.append((number, row))
        return rows
    if suffix in (".csv", ".tsv"):
        import csv
        import io

        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter="\t" if suffix == ".tsv" else ",")
        try:
            return [(number, row) for number, row in enumerate(reader, start=2)]
        except csv.Error as exc:  # a stray carriage return or NUL: named, not a traceback
            raise InputError(f"not valid CSV: {exc}", source=source, line=reader.line_num) from None
    raise InputError(f"unknown {what} format {suffix!r}: use .csv, .tsv, .jsonl or .parquet", source=source)


def _number(value: Any, source: str, line: int, field: str = "label") -> float:
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"label {value!r} is not a number", source=source, line=line, field=field) from None
    if not math.isfinite(number):
        raise InputError(f"label {value!r} is not a finite number", source=source, line=line, field=field)
    return number


def load_labels(path: str | Path, *, scale: float | None = None, adjudication: str = "majority") -> HumanLabels:
    """Read and check a labels file (module doc); `scale` turns whole-number grades 0..scale into [0, 1];
    `adjudication`: majority, mean or a labeller's name."""
    path = Path(path)
    source = str(path)
    if scale is not None and not scale > 0:
        raise InputError(f"scale must be positive, got {scale}", source=source, field="scale")
    rows = table_rows(path)
    if not rows:
        raise InputError("no labels in the file", source=source)
    labels = labels_from_rows(rows, source=source, scale=scale)
    if adjudication not in ADJUDICATION_RULES and adjudication not in labels.labellers():
        raise InputError(
            f"adjudication {adjudication!r} is neither {' nor '.join(ADJUDICATION_RULES)} nor a labeller of the "
            f"file ({', '.join(labels.labellers()) or 'it names none'})", source=source, field="adjudication",
        )  # fmt: skip
    return replace(labels, adjudication=adjudication)


def labels_from_columns(
    rows: Sequence[tuple[int, str, Mapping[str, Any]]],
    columns: Mapping[str, str],
    *,
    source: str,
    scale: float | None = None,
) -> HumanLabels:
    """Labels kept in columns of the QA dataset: `rows` are (row number, sample id, the row's values) and
    `columns` maps a metric to the column holding its label; an empty cell (null) is an unlabelled sample."""
    if scale is not None and not scale > 0:
        raise InputError(f"scale must be positive, got {scale}", source=source, field="scale")
    out: list[tuple[int, Mapping[str, Any]]] = []
    for line, sample_id, values in rows:
        for metric, column in columns.items():
            value = values.get(column)
            if value is not None and value != "":
                out.append(
                    (line, {"sample_id": sample_id, "metric": metric, "label": value, "_column": column})
                )
    if not out:
        raise InputError(
            f"no labels: columns {', '.join(sorted(set(columns.values())))} are empty in every row",
            source=source,
        )
    return labels_from_rows(out, source=source, scale=scale)


def labels_from_rows(
    rows: Sequence[tuple[int, Mapping[str, Any]]], *, source: str, scale: float | None = None
) -> HumanLabels:
    """Check label rows (line number, {sample_id, metric, label, run?}) into `HumanLabels`."""
    labels: list[HumanLabel] = []
    seen: dict[tuple[str | None, str, str, str | None], int] = {}
    for line, row in rows:
        id_column = next((c for c in _ID_COLUMNS if c in row), None)
        if id_column is None:
            raise InputError(
                f"no sample id column (one of {', '.join(_ID_COLUMNS)})",
                source=source,
                line=line,
                field="sample_id",
            )
        for column in ("metric", "label"):
            if column not in row or row[column] in (None, ""):
                raise InputError(f"missing {column}", source=source, line=line, field=column)
        sample_id = str(row[id_column]).strip()
        if not sample_id:
            raise InputError("empty sample id", source=source, line=line, field=id_column)
        label_field = str(row.get("_column", "label"))
        raw = _number(row["label"], source, line, label_field)
        if scale is not None:
            if raw < 0 or raw > scale:
                raise InputError(
                    f"grade {raw:g} is outside 0..{scale:g}", source=source, line=line, field=label_field
                )
            value = raw / scale
        elif 0.0 <= raw <= 1.0:
            value = raw
        else:
            raise InputError(
                f"label {raw:g} is outside [0, 1]; for graded labels give the scale (e.g. human_labels.scale: 3)",
                source=source,
                line=line,
                field=label_field,
            )
        run = row.get("run")
        run = str(run).strip() or None if run not in (None, "") else None
        metric = str(row["metric"]).strip()
        labeller = row.get("labeller")
        labeller = str(labeller).strip() or None if labeller not in (None, "") else None
        key = (run, sample_id, metric, labeller)
        if key in seen:
            raise InputError(
                f"duplicate label for sample {sample_id!r}, metric {metric!r}"
                + (f", run {run!r}" if run else "")
                + (f", labeller {labeller!r}" if labeller else "")
                + f" (first on line {seen[key]})",
                source=source,
                line=line,
                field="sample_id",
            )
        seen[key] = line
        labels.append(HumanLabel(sample_id, metric, value, raw, run, line, labeller))
    return HumanLabels(source=source, labels=tuple(labels), scale=scale)
