"""The one builder every Qrels/Run reader funnels into.

Readers only extract three aligned columns (query id, document id, value; ids already factorised by
`id_codes`) plus, where they can, where each entry came from; everything else (value checks, duplicate
detection, CSR layout, ranking order) happens here once, with numpy and the `build_kernels`, so a million
entries build in a fraction of a second and every source reports errors the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError

Kind = Literal["qrels", "run"]
_A = TypeVar("_A", bound="np.ndarray[Any, Any]")


@dataclass(frozen=True, slots=True)
class Origin:
    """Where the entries came from, so an error can point at one entry.

    `positions` holds, per entry, the 1-based file line (`unit="line"`) or the 0-based row position
    (`unit="row"`). Sources without positions (dicts, JSON objects) pass `names`, which labels an entry
    by its query and document instead.
    """

    source: str
    positions: NDArray[np.int64] | None = None
    unit: Literal["line", "row"] = "line"
    names: Callable[[int], str] | None = None

    def error(self, what: str, entry: int | None = None, *, field: str | None = None) -> InputError:
        if entry is None:
            return InputError(what, source=self.source, field=field)
        if self.positions is not None and self.unit == "line":
            return InputError(what, source=self.source, line=int(self.positions[entry]), field=field)
        label = self.describe(entry)
        return InputError(f"{label}: {what}" if label else what, source=self.source, field=field)

    def describe(self, entry: int) -> str:
        """A short label of one entry: 'line 7', 'row 6' or "query 'q1', document 'd3'"."""
        if self.positions is not None:
            return f"{self.unit} {int(self.positions[entry])}"
        if self.names is not None:
            return self.names(entry)
        return ""


@dataclass(frozen=True, slots=True)
class Built:
    """The CSR arrays of one container (layout: docs/retrieval_io.md, "Internal layout")."""

    query_ids: tuple[str, ...]
    doc_vocab: NDArray[np.str_]
    offsets: NDArray[np.int64]
    doc_codes: NDArray[np.int64]
    values: NDArray[np.int64] | NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Columns:
    """Factorised columns ready for `_build.build`; `values` are still raw (checked by the container)."""

    query_vocab: NDArray[np.str_]
    query_codes: NDArray[np.int64]
    doc_vocab: NDArray[np.str_]
    doc_codes: NDArray[np.int64]
    values: NDArray[np.generic]
    origin: Origin


def check_grades(values: NDArray[np.generic], origin: Origin, label: str) -> NDArray[np.int64]:
    """Integer grades from a typed column; whole-valued floats pass, anything else is an error.

    Typed sources (dicts, JSON, DataFrames) often carry grades as float64 (a NaN elsewhere in a column,
    a JSON "2.0"); a whole number is still a grade, but 2.5 or NaN would only become one by truncation.
    """
    kind = values.dtype.kind
    if kind == "u" and values.shape[0] and int(values.max()) >= 2**63:
        i = int(np.argmax(values))
        raise origin.error(f"{label} {values[i].item()!r} does not fit a 64-bit integer", i, field=label)
    if kind in "iu":
        return values.astype(np.int64, copy=False)
    if kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(values) | (np.floor(values) != values) | (np.abs(values) > 2**53)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise origin.error(f"{label} {values[i].item()!r} is not an integer grade", i, field=label)
        return values.astype(np.int64)
    items = values.tolist()
    for i, v in enumerate(items):
        if not _is_number(v) or not _whole(v):
            raise origin.error(f"{label} {v!r} is not an integer grade", i, field=label)
        if not -(2**63) <= int(v) < 2**63:
            raise origin.error(f"{label} {v!r} does not fit a 64-bit integer", i, field=label)
    return np.array([int(v) for v in items], dtype=np.int64)


def check_scores(values: NDArray[np.generic], origin: Origin, label: str) -> NDArray[np.float64]:
    """Finite float64 scores from a typed column (ints are exact up to 2**53)."""
    if values.dtype.kind in "iuf":
        scores = values.astype(np.float64, copy=False)
    else:
        items = values.tolist()
        for i, v in enumerate(items):
            if not _is_number(v):
                raise origin.error(f"{label} {v!r} is not a number", i, field=label)
            if isinstance(v, int) and abs(v) >= 2**1023:  # float() would overflow
                raise origin.error(f"{label} {v!r} is not a finite number", i, field=label)
        scores = np.array(items, dtype=np.float64)
    finite = np.isfinite(scores)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise origin.error(f"{label} {scores[i].item()!r} is not a finite number", i, field=label)
    return scores


def _whole(v: float) -> bool:
    return isinstance(v, int | np.integer) or float(v).is_integer()


def _is_number(v: object) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool | np.bool_)


def ids_to_str(items: Sequence[object], origin: Origin, label: str) -> list[str]:
    """Ids must be strings; integers are accepted and written in decimal (ids like 101 in BEIR).

    A NUL inside an id is refused later, by `id_codes.factorize_strings`, which every reader calls.
    """
    if all(type(x) is str for x in items):
        out = cast("list[str]", items if isinstance(items, list) else list(items))
    else:
        out = []
        for i, x in enumerate(items):
            if isinstance(x, str):
                out.append(x)
            elif isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_):
                out.append(str(int(x)))
            else:
                raise origin.error(f"{label} {x!r} is not a string or integer id", i, field=label)
    return out


def build(
    query_vocab: NDArray[np.str_],
    query_codes: NDArray[np.int64],
    doc_vocab: NDArray[np.str_],
    doc_codes: NDArray[np.int64],
    values: NDArray[np.int64] | NDArray[np.float64],
    *,
    kind: Kind,
    origin: Origin,
) -> Built:
    """CSR arrays from already-factorised columns (vocabularies sorted ascending and unique).

    Every id of `query_vocab` becomes a query, with or without entries (a dict's ``"q": {}``).
    Qrels entries are ordered by document code; run entries by score descending, then document id
    descending, which is trec_eval's ranking rule, so the order of the input never matters.
    """
    nq = int(query_vocab.shape[0])
    nd = int(doc_vocab.shape[0])
    if nd and doc_vocab[0] == "":
        raise origin.error("empty document id", int(np.flatnonzero(doc_codes == 0)[0]))
    if nq and query_vocab[0] == "":
        raise origin.error("empty query id", int(np.flatnonzero(query_codes == 0)[0]))
    from ragmetrics.retrieval import build_kernels
    from ragmetrics.retrieval._lazy import numba_for

    query_codes = np.ascontiguousarray(query_codes, dtype=np.int64)
    doc_codes = np.ascontiguousarray(doc_codes, dtype=np.int64)
    with numba_for(int(doc_codes.shape[0])):
        order, offsets, earlier, later = build_kernels.group_by_query(query_codes, doc_codes, nq, nd)
    if later >= 0:
        q = str(query_vocab[query_codes[later]])
        d = str(doc_vocab[doc_codes[later]])
        first = origin.describe(earlier)
        also = f" (first at {first})" if first else ""
        raise origin.error(f"duplicate document {d!r} for query {q!r}{also}", later)
    ranked = kind == "run"
    scores = np.ascontiguousarray(values, dtype=np.float64) if ranked else np.zeros(0, dtype=np.float64)
    with numba_for(int(doc_codes.shape[0])):
        build_kernels.order_queries(order, offsets, scores, doc_codes, ranked)
    return Built(
        query_ids=tuple(query_vocab.tolist()),
        doc_vocab=readonly(doc_vocab),
        offsets=readonly(offsets),
        doc_codes=readonly(doc_codes[order]),
        values=readonly(values[order]),
    )


def readonly(array: _A) -> _A:
    """Mark an array read-only: containers are shared between threads and must never change."""
    array.flags.writeable = False
    return array
