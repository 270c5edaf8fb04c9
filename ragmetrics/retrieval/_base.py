"""What Qrels and Run share: the CSR layout over sorted query ids and a sorted document vocabulary."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True, eq=False, slots=True)
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
