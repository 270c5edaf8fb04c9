"""Relevance judgements (qrels): integer grades per (query, document), stored as CSR arrays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval._base import CsrBase
from ragmetrics.retrieval._build import build, check_grades
from ragmetrics.retrieval.io_dict import Columns, columns_from_nested


@dataclass(frozen=True, eq=False, slots=True)
class Qrels(CsrBase):
    """Graded judgements; build one with a `from_*` class method, never by hand.

    Within each query, entries are ordered by document id. A grade >= 1 is relevant at the default
    level; 0 is judged non-relevant; a negative grade is judged-but-unassessed (unjudged for bpref).
    """

    grades: NDArray[np.int64]

    def __repr__(self) -> str:
        return f"Qrels({len(self)} queries, {self.num_entries} judgements, source={self.source!r})"

    @classmethod
    def _from_columns(cls, columns: Columns) -> Qrels:
        grades = check_grades(columns.values, columns.origin, "grade")
        built = build(
            columns.query_vocab,
            columns.query_codes,
            columns.doc_vocab,
            columns.doc_codes,
            grades,
            kind="qrels",
            origin=columns.origin,
        )
        if not built.query_ids:
            raise columns.origin.error("no queries: qrels must judge at least one query")
        return cls(
            query_ids=built.query_ids,
            doc_vocab=built.doc_vocab,
            offsets=built.offsets,
            doc_codes=built.doc_codes,
            source=columns.origin.source,
            grades=built.values,  # type: ignore[arg-type]
        )

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]], *, source: str = "qrels dict") -> Qrels:
        """From ``{query id: {document id: grade}}``; grades must be whole numbers (2 or 2.0, not 2.5).

        A query mapped to an empty dict is kept, with no judgements.
        """
        return cls._from_columns(columns_from_nested(qrels, source, "grade"))

    @classmethod
    def from_ranked_lists(
        cls,
        ranked: Mapping[str, Sequence[str]],
        *,
        max_grade: int | None = None,
        source: str = "ranked lists",
    ) -> Qrels:
        """Graded qrels from relevant documents listed most relevant first.

        By default the first of n documents gets grade n, the next n-1, down to 1 for the last. With
        `max_grade` G the first gets G, the next G-1, and every document from position G on gets 1:
        all listed documents are relevant, so none falls to 0.
        """
        if max_grade is not None and (isinstance(max_grade, bool) or max_grade < 1):
            raise InputError(f"max_grade must be an integer >= 1, got {max_grade!r}", source=source)
        if not isinstance(ranked, Mapping):
            raise InputError(
                f"expected a mapping of query id -> list of document ids, got {type(ranked).__name__}",
                source=source,
            )
        nested: dict[object, dict[object, int]] = {}
        for qid, docs in ranked.items():
            if isinstance(docs, str | bytes) or not isinstance(docs, Sequence):
                raise InputError(
                    f"query {qid!r}: expected a list of document ids, got {type(docs).__name__}",
                    source=source,
                )
            top = len(docs) if max_grade is None else max_grade
            grades: dict[object, int] = {}
            for position, doc in enumerate(docs):
                if doc in grades:
                    raise InputError(
                        f"query {qid!r}: document {doc!r} listed twice (positions {list(docs).index(doc) + 1} "
                        f"and {position + 1})",
                        source=source,
                    )
                grades[doc] = max(top - position, 1)
            nested[qid] = grades
        return cls._from_columns(columns_from_nested(nested, source, "grade"))

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{query id: {document id: grade}}`` with Python ints, documents in id order."""
        return self._nested(self.grades)
