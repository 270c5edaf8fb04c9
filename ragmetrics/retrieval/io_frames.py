"""Columns from a pandas DataFrame or a `datasets.Dataset`, read column-wise (no per-row Python objects).

Neither pandas nor datasets is imported here: both are used through the objects the caller passes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval._build import Columns, Origin, ids_to_str
from ragmetrics.retrieval.id_codes import factorize_strings


def frame_columns(frame: Any, names: tuple[str, str, str], source: str) -> Columns:
    """Columns from a DataFrame; rows are named by their 0-based position (as in ``df.iloc``)."""
    columns = getattr(frame, "columns", None)
    if columns is None or not hasattr(frame, "__getitem__"):
        raise InputError(f"expected a pandas DataFrame, got {type(frame).__name__}", source=source)
    present = list(columns)
    for name in names:
        if name not in present:
            raise InputError(f"missing column {name!r} (columns: {present})", source=source, field=name)
    origin = Origin(source, positions=np.arange(len(frame), dtype=np.int64), unit="row")
    query_vocab, query_codes = factorize_strings(
        _id_column(frame[names[0]].to_numpy(), origin, names[0]), origin, names[0]
    )
    doc_vocab, doc_codes = factorize_strings(
        _id_column(frame[names[1]].to_numpy(), origin, names[1]), origin, names[1]
    )
    # Nullable pandas dtypes arrive as object arrays holding pd.NA; the value checks name the first one.
    values = frame[names[2]].to_numpy()
    return Columns(query_vocab, query_codes, doc_vocab, doc_codes, values, origin)


def dataset_columns(dataset: Any, names: tuple[str, str, str], source: str) -> Columns:
    """Columns from a `datasets.Dataset` through its Arrow-backed pandas view of just these columns."""
    column_names = getattr(dataset, "column_names", None)
    if not isinstance(column_names, list):
        hint = " (pick a split, e.g. ds['test'])" if isinstance(column_names, dict) else ""
        raise InputError(f"expected a datasets.Dataset, got {type(dataset).__name__}{hint}", source=source)
    for name in names:
        if name not in column_names:
            raise InputError(f"missing column {name!r} (columns: {column_names})", source=source, field=name)
    frame = dataset.select_columns(list(dict.fromkeys(names))).to_pandas()
    return frame_columns(frame, names, source)


def _id_column(values: NDArray[Any], origin: Origin, name: str) -> list[str]:
    kind = values.dtype.kind
    if values.shape[0] == 0:  # an empty frame's columns default to float64
        return []
    if kind == "U":
        return list(values.tolist())
    if kind in "iu":
        return list(map(str, values.tolist()))
    if kind == "O":
        return ids_to_str(values.tolist(), origin, name)
    raise InputError(
        f"ids must be strings or integers, got a column of dtype {values.dtype}",
        source=origin.source,
        field=name,
    )
