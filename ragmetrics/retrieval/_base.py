"""What Qrels and Run share: the CSR layout over sorted query ids and a sorted document vocabulary."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval import io_json, io_trec
from ragmetrics.retrieval._build import readonly


@dataclass(frozen=True, eq=False, slots=True, weakref_slot=True)
class CsrBase:
    """Immutable per-query slices of document codes; subclasses add the aligned value array.

    `query_ids` is sorted ascending; the entries of query i are ``offsets[i]:offsets[i+1]`` of
    `doc_codes`, whose values index `doc_vocab` (sorted, unique). Arrays are read-only.
    """

    query_ids: tuple[str, ...]
    doc_vocab: NDArray[np.str_]
    offsets: NDArray[np.int64]
    doc_codes: NDArray[np.int64]
    source: str

    def __len__(self) -> int:
        return len(self.query_ids)

    def __contains__(self, qid: object) -> bool:
        if not isinstance(qid, str):
            return False
        i = bisect_left(self.query_ids, qid)
        return i < len(self.query_ids) and self.query_ids[i] == qid

    def query_index(self, qid: str) -> int:
        """Position of `qid` in `query_ids` (binary search); KeyError when absent."""
        i = bisect_left(self.query_ids, qid)
        if i == len(self.query_ids) or self.query_ids[i] != qid:
            raise KeyError(qid)
        return i

    @property
    def num_entries(self) -> int:
        return int(self.doc_codes.shape[0])

    def _nested(self, values: NDArray[Any]) -> dict[str, dict[str, Any]]:
        docs = self.doc_vocab[self.doc_codes].tolist()
        vals = values.tolist()
        bounds = self.offsets.tolist()
        return {
            qid: dict(zip(docs[bounds[i] : bounds[i + 1]], vals[bounds[i] : bounds[i + 1]], strict=True))
            for i, qid in enumerate(self.query_ids)
        }

    def _values(self) -> NDArray[Any]:
        raise NotImplementedError

    def _entry_ids(self) -> tuple[list[str], list[str]]:
        """Per-entry query id and document id, in stored order (the writers' columns)."""
        counts = np.diff(self.offsets)
        qids = np.repeat(np.array(self.query_ids, dtype=object), counts).tolist()
        return qids, self.doc_vocab[self.doc_codes].tolist()

    def _trec_ids(self, target: str) -> tuple[list[str], list[str]]:
        """Per-entry query and document ids for a TREC writer, refusing ids that would not read back."""
        io_trec.check_writable(self.query_ids, "query id", target, leads_line=True)
        io_trec.check_writable(self.doc_vocab.tolist(), "document id", target, leads_line=False)
        return self._entry_ids()

    def to_dict(self) -> dict[str, dict[str, Any]]:
        raise NotImplementedError

    def to_json(self, path: str | Path) -> None:
        """Write ``{query id: {document id: value}}`` (grades, or scores in ranking order) as one JSON object."""
        io_json.write_json(path, self.to_dict())

    def _write_jsonl(self, path: str | Path, keys: tuple[str, str, str]) -> None:
        """One JSON object per entry in stored order, keyed as the matching `from_jsonl` reads them."""
        qids, docs = self._entry_ids()
        q_key, doc_key, value_key = keys
        rows: list[dict[str, object]] = [
            {q_key: q, doc_key: d, value_key: v}
            for q, d, v in zip(qids, docs, self._values().tolist(), strict=True)
        ]
        io_json.write_jsonl(path, rows)

    def _write_parquet(self, path: str | Path, keys: tuple[str, str, str]) -> None:
        """One row per entry in stored order, columns named as the matching `from_parquet` reads them."""
        from ragmetrics.retrieval.io_parquet import write_parquet

        qids, docs = self._entry_ids()
        q_key, doc_key, value_key = keys
        write_parquet(path, {q_key: list(qids), doc_key: list(docs), value_key: self._values().tolist()})

    def _keep(self, entries: NDArray[np.bool_], queries: NDArray[np.bool_]) -> dict[str, Any]:
        """New CSR arrays holding only the chosen entries of the chosen queries (order preserved)."""
        counts = np.diff(self.offsets)
        entries = entries & np.repeat(queries, counts)
        kept = np.bincount(
            np.repeat(np.arange(len(self.query_ids)), counts)[entries], minlength=len(self.query_ids)
        )[queries]
        offsets = np.zeros(kept.shape[0] + 1, dtype=np.int64)
        np.cumsum(kept, out=offsets[1:])
        chosen = np.flatnonzero(queries).tolist()
        return {
            "query_ids": tuple(self.query_ids[i] for i in chosen),
            "offsets": readonly(offsets),
            "doc_codes": readonly(self.doc_codes[entries]),
            "values": readonly(self._values()[entries]),
        }

    def select(self, query_ids: Iterable[str]) -> Self:
        """The same container restricted to the given queries; ids it does not hold are ignored."""
        wanted = set(query_ids)
        queries = np.fromiter(
            (q in wanted for q in self.query_ids), dtype=np.bool_, count=len(self.query_ids)
        )
        parts = self._keep(np.ones(self.doc_codes.shape[0], dtype=np.bool_), queries)
        return self._rebuild(parts)

    def _rebuild(self, parts: dict[str, Any]) -> Self:
        raise NotImplementedError


def restore_state(self: CsrBase, state: list[Any]) -> None:
    """Unpickling hook: numpy drops the read-only flag when it unpickles, so set it again."""
    for spec, value in zip(fields(self), state, strict=True):
        object.__setattr__(self, spec.name, readonly(value) if isinstance(value, np.ndarray) else value)
