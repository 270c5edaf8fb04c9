"""Parquet files of qrels and runs: one row per (query, document) with three columns.

Why Parquet: a run of hundreds of millions of lines is 5-10x smaller than TREC text and reads column-wise
(the Ray engine reads partitioned runs the same way). Read through pyarrow into the same column checks as a
DataFrame (`io_frames`): ids may be strings or integers, values numbers; a missing column or a null is an
InputError naming the file and the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragmetrics._textfile import read_bytes
from ragmetrics.errors import InputError
from ragmetrics.retrieval import io_frames
from ragmetrics.retrieval._build import Columns


def parquet_columns(path: str | Path, names: tuple[str, str, str]) -> Columns:
    """The three named columns of a Parquet file, checked like a DataFrame's."""
    import pyarrow.parquet as pq

    source = str(path)
    read_bytes(Path(path), prefix="cannot read: ")  # a missing file is an InputError, not an Arrow error
    try:
        schema = pq.read_schema(path)
    except Exception as exc:
        raise InputError(f"not a readable Parquet file: {exc}", source=source) from None
    missing = [n for n in names if n not in schema.names]
    if missing:
        raise InputError(
            f"no column {missing[0]!r}; columns: {', '.join(schema.names)}", source=source, field=missing[0]
        )
    frame: Any = pq.read_table(path, columns=list(names)).to_pandas()
    return io_frames.frame_columns(frame, names, source)


def write_parquet(path: str | Path, columns: dict[str, list[Any]]) -> None:
    """Write equal-length columns (in order) as one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pq.write_table(pa.table(columns), path)
    except OSError as exc:
        raise InputError(f"cannot write: {exc}", source=str(path)) from None
