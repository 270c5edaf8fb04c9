"""A system's ranked output (run): a score per (query, document), stored ranked as CSR arrays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval._base import CsrBase
from ragmetrics.retrieval._build import build, check_scores
from ragmetrics.retrieval.io_dict import Columns, columns_from_nested

DEFAULT_NAME = "run"


@dataclass(frozen=True, eq=False, slots=True)
class Run(CsrBase):
    """Scored documents per query; build one with a `from_*` class method, never by hand.

    Entries of each query are stored already ranked: score descending, ties broken by document id
    descending (trec_eval's rule), so a ranking never depends on input order. Scores are finite float64.
    """

    scores: NDArray[np.float64]
    name: str = DEFAULT_NAME

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {len(self)} queries, {self.num_entries} entries, source={self.source!r})"

    @classmethod
    def _from_columns(cls, columns: Columns, name: str) -> Run:
        if not isinstance(name, str) or not name:
            raise InputError(
                f"run name must be a non-empty string, got {name!r}", source=columns.origin.source
            )
        scores = check_scores(columns.values, columns.origin, "score")
        built = build(
            columns.query_vocab,
            columns.query_codes,
            columns.doc_vocab,
            columns.doc_codes,
            scores,
            kind="run",
            origin=columns.origin,
        )
        return cls(
            query_ids=built.query_ids,
            doc_vocab=built.doc_vocab,
            offsets=built.offsets,
            doc_codes=built.doc_codes,
            source=columns.origin.source,
            scores=built.values,  # type: ignore[arg-type]
            name=name,
        )

    @classmethod
    def from_dict(
        cls, run: Mapping[str, Mapping[str, float]], name: str | None = None, *, source: str = "run dict"
    ) -> Run:
        """From ``{query id: {document id: score}}``; a query mapped to ``{}`` is kept with no entries."""
        return cls._from_columns(columns_from_nested(run, source, "score"), name or DEFAULT_NAME)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query id: {document id: score}}``; each inner dict iterates in ranking order."""
        return self._nested(self.scores)
