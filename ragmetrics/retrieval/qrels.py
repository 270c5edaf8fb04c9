"""Relevance judgements (qrels): integer grades per (query, document), stored as CSR arrays."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval import io_frames, io_json, io_trec
from ragmetrics.retrieval._base import CsrBase, restore_state
from ragmetrics.retrieval._build import Columns, build, check_grades
from ragmetrics.retrieval.io_dict import columns_from_nested

Q_COL = "query_id"
DOC_COL = "doc_id"
GRADE_COL = "relevance"


@dataclass(frozen=True, eq=False, slots=True)
class Qrels(CsrBase):
    """Graded judgements; build one with a `from_*` class method, never by hand.

    Within each query, entries are ordered by document id. A grade >= 1 is relevant at the default
    level; 0 is judged non-relevant; a negative grade is judged-but-unassessed (unjudged for bpref).
    """

    grades: NDArray[np.int64]

    # Keep arrays read-only across pickling (multiprocessing, caches); dataclass(slots) would otherwise
    # install its own hook.
    __setstate__ = restore_state

    def __repr__(self) -> str:
        return f"Qrels({len(self)} queries, {self.num_entries} judgements, source={self.source!r})"

    # -- readers -------------------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]], *, source: str = "qrels dict") -> Qrels:
        """From ``{query id: {document id: grade}}``; grades must be whole numbers (2 or 2.0, not 2.5).

        A query mapped to an empty dict is kept, with no judgements.
        """
        return cls._from_columns(columns_from_nested(qrels, source, "grade"))

    @classmethod
    def from_trec(cls, path: str | Path) -> Qrels:
        """From a TREC qrels file, ``qid iter docid grade`` per line; the grade must be an integer literal."""
        return cls._from_columns(io_trec.qrels_columns(path))

    @classmethod
    def from_json(cls, path: str | Path) -> Qrels:
        """From a JSON file holding ``{query id: {document id: grade}}``."""
        return cls._from_columns(io_json.json_columns(path, "grade"))

    @classmethod
    def from_jsonl(
        cls, path: str | Path, *, q_key: str = Q_COL, doc_key: str = DOC_COL, grade_key: str = GRADE_COL
    ) -> Qrels:
        """From JSON Lines, one ``{"query_id": ..., "doc_id": ..., "relevance": ...}`` per line."""
        return cls._from_columns(io_json.jsonl_columns(path, (q_key, doc_key, grade_key)))

    @classmethod
    def from_parquet(
        cls, path: str | Path, *, q_col: str = Q_COL, doc_col: str = DOC_COL, score_col: str = GRADE_COL
    ) -> Qrels:
        """From a Parquet file with one row per judgement (integer grades)."""
        from ragmetrics.retrieval.io_parquet import parquet_columns

        return cls._from_columns(parquet_columns(path, (q_col, doc_col, score_col)))

    @classmethod
    def read(cls, path: str | Path) -> Qrels:
        """By file name: ``.json`` -> `from_json`, ``.jsonl``/``.ndjson`` -> `from_jsonl`, ``.parquet`` ->
        `from_parquet`, else `from_trec`."""
        suffix = Path(path).suffix.lower()
        if suffix == ".parquet":
            return cls.from_parquet(path)
        if suffix == ".json":
            return cls.from_json(path)
        if suffix in (".jsonl", ".ndjson"):
            return cls.from_jsonl(path)
        return cls.from_trec(path)

    @classmethod
    def from_df(
        cls,
        df: Any,
        *,
        q_col: str = Q_COL,
        doc_col: str = DOC_COL,
        score_col: str = GRADE_COL,
        source: str = "DataFrame",
    ) -> Qrels:
        """From a pandas DataFrame with one row per judgement; ids may be str or int columns."""
        return cls._from_columns(io_frames.frame_columns(df, (q_col, doc_col, score_col), source))

    @classmethod
    def from_hf(
        cls,
        dataset: Any,
        *,
        q_col: str = Q_COL,
        doc_col: str = DOC_COL,
        score_col: str = GRADE_COL,
        source: str = "datasets.Dataset",
    ) -> Qrels:
        """From a `datasets.Dataset` split (e.g. BEIR qrels: ``q_col="query-id", doc_col="corpus-id",
        score_col="score"``); only the three columns are read."""
        return cls._from_columns(io_frames.dataset_columns(dataset, (q_col, doc_col, score_col), source))

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
        if max_grade is not None and (
            isinstance(max_grade, bool) or not isinstance(max_grade, int) or max_grade < 1
        ):
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
                if not isinstance(doc, str | int | np.integer) or isinstance(doc, bool | np.bool_):
                    raise InputError(
                        f"query {qid!r}, position {position + 1}: document id {doc!r} is not a string "
                        "or integer id",
                        source=source,
                        field="document id",
                    )
                if doc in grades:
                    raise InputError(
                        f"query {qid!r}: document {doc!r} listed twice (positions "
                        f"{list(docs).index(doc) + 1} and {position + 1})",
                        source=source,
                    )
                grades[doc] = max(top - position, 1)
            nested[qid] = grades
        return cls._from_columns(columns_from_nested(nested, source, "grade"))

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

    # -- writers -------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{query id: {document id: grade}}`` with Python ints, documents in id order."""
        return self._nested(self.grades)

    def to_trec(self, path: str | Path) -> None:
        """Write ``qid 0 docid grade`` lines; a query without judgements has no line to carry it."""
        qids, docs = self._trec_ids(str(path))
        lines = [f"{q} 0 {d} {g}" for q, d, g in zip(qids, docs, self.grades.tolist(), strict=True)]
        io_trec.write_lines(path, lines)

    def to_jsonl(
        self, path: str | Path, *, q_key: str = Q_COL, doc_key: str = DOC_COL, grade_key: str = GRADE_COL
    ) -> None:
        """Write one JSON object per judgement, the layout `from_jsonl` reads."""
        self._write_jsonl(path, (q_key, doc_key, grade_key))

    def to_parquet(
        self, path: str | Path, *, q_col: str = Q_COL, doc_col: str = DOC_COL, score_col: str = GRADE_COL
    ) -> None:
        """Write one row per judgement, the layout `from_parquet` reads."""
        self._write_parquet(path, (q_col, doc_col, score_col))

    # -- CsrBase hooks ---------------------------------------------------------------------------------

    def _values(self) -> NDArray[Any]:
        return self.grades

    def _rebuild(self, parts: dict[str, Any]) -> Qrels:
        grades = parts.pop("values")
        return Qrels(doc_vocab=self.doc_vocab, source=self.source, grades=grades, **parts)
