"""Columns from nested mappings ``{query id: {document id: value}}`` (Python dicts, JSON objects)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval._build import Columns, Origin, ids_to_str
from ragmetrics.retrieval.id_codes import factorize_strings


def columns_from_nested(data: object, source: str, value_name: str) -> Columns:
    """Flatten a nested mapping without a per-entry Python loop beyond two `chain`s."""
    if not isinstance(data, Mapping):
        raise InputError(
            f"expected a mapping of query id -> {{document id: {value_name}}}, got {type(data).__name__}",
            source=source,
        )
    raw_keys = list(data.keys())
    query_origin = Origin(source, names=lambda i: f"query {raw_keys[i]!r}")
    keys = ids_to_str(raw_keys, query_origin, "query id")
    inner = list(data.values())
    for i, mapping in enumerate(inner):
        if not isinstance(mapping, Mapping):
            raise query_origin.error(
                f"expected a mapping of document id -> {value_name}, got {type(mapping).__name__}", i
            )
    query_vocab, key_codes = factorize_strings(keys, query_origin, "query id")
    if query_vocab.shape[0] != len(keys):
        same = Counter(keys).most_common(1)[0][0]
        spelled = ", ".join(repr(r) for r, k in zip(raw_keys, keys, strict=True) if k == same)
        raise InputError(f"query id {same!r} appears more than once (as {spelled})", source=source)
    sizes = np.fromiter(map(len, inner), dtype=np.int64, count=len(inner))
    entry_key = np.repeat(np.arange(len(inner), dtype=np.int64), sizes)
    raw_docs = list(chain.from_iterable(inner))
    values = list(chain.from_iterable(m.values() for m in inner))

    def name(i: int) -> str:
        return f"query {keys[int(entry_key[i])]!r}, document {raw_docs[i]!r}"

    origin = Origin(source, names=name)
    docs = ids_to_str(raw_docs, origin, "document id")
    doc_vocab, doc_codes = factorize_strings(docs, origin, "document id")
    return Columns(query_vocab, key_codes[entry_key], doc_vocab, doc_codes, value_column(values), origin)


def value_column(values: list[object]) -> NDArray[np.generic]:
    """A numeric array when numpy can infer one, else the original objects for the checks to name.

    Numpy would turn ``[1, "a"]`` into the strings ``["1", "a"]`` and ``[1, True]`` into the integers
    ``[1, 1]``; keeping objects lets the checks reject the value the user actually wrote.
    """
    if not values:
        return np.zeros(0, dtype=np.int64)
    try:
        array = np.array(values)
    except (ValueError, TypeError, OverflowError):
        array = None
    if (
        array is None
        or array.ndim != 1
        or array.dtype.kind not in "iufb"
        or (array.dtype.kind != "b" and bool in set(map(type, values)))
    ):
        array = np.empty(len(values), dtype=object)
        array[:] = values
    return array


def columns_from_flat(
    qids: Sequence[object],
    docs: Sequence[object],
    values: list[object],
    origin: Origin,
    labels: tuple[str, str] = ("query id", "document id"),
) -> Columns:
    """Columns from three aligned lists (JSON Lines, DataFrame columns already turned into lists)."""
    query_vocab, query_codes = factorize_strings(ids_to_str(qids, origin, labels[0]), origin, labels[0])
    doc_vocab, doc_codes = factorize_strings(ids_to_str(docs, origin, labels[1]), origin, labels[1])
    return Columns(query_vocab, query_codes, doc_vocab, doc_codes, value_column(values), origin)
