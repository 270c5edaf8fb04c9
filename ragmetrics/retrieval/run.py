"""A system's ranked output (run): a score per (query, document), stored ranked as CSR arrays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import InputError
from ragmetrics.retrieval import io_frames, io_json, io_trec
from ragmetrics.retrieval._base import CsrBase, restore_state
from ragmetrics.retrieval._build import Columns, build, check_scores
from ragmetrics.retrieval.io_dict import columns_from_nested

DEFAULT_NAME = "run"
Q_COL = "query_id"
DOC_COL = "doc_id"
SCORE_COL = "score"


@dataclass(frozen=True, eq=False, slots=True)
class Run(CsrBase):
    """Scored documents per query; build one with a `from_*` class method, never by hand.

    Entries of each query are stored already ranked: score descending, ties broken by document id
    descending (trec_eval's rule), so a ranking never depends on input order. Scores are finite float64.
    """

    scores: NDArray[np.float64]
    name: str = DEFAULT_NAME

    # Keep arrays read-only across pickling (multiprocessing, caches); dataclass(slots) would otherwise
    # install its own hook.
    __setstate__ = restore_state

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {len(self)} queries, {self.num_entries} entries, source={self.source!r})"

    # -- readers -------------------------------------------------------------------------------------

    @classmethod
    def from_dict(
        cls, run: Mapping[str, Mapping[str, float]], name: str | None = None, *, source: str = "run dict"
    ) -> Run:
        """From ``{query id: {document id: score}}``; a query mapped to ``{}`` is kept with no entries."""
        return cls._from_columns(columns_from_nested(run, source, "score"), name)

    @classmethod
    def from_trec(cls, path: str | Path, name: str | None = None, *, strict: bool = False) -> Run:
        """From a TREC run file, ``qid Q0 docid rank score tag`` per line.

        The name defaults to the first line's tag. The rank field is ignored (ranking is by score, as in
        trec_eval). Fields after the tag are ignored like trec_eval does, or rejected with `strict`.
        """
        columns, tag = io_trec.run_columns(path, strict=strict)
        return cls._from_columns(columns, name or tag)

    @classmethod
    def from_json(cls, path: str | Path, name: str | None = None) -> Run:
        """From a JSON file holding ``{query id: {document id: score}}``."""
        return cls._from_columns(io_json.json_columns(path, "score"), name)

    @classmethod
    def from_jsonl(
        cls,
        path: str | Path,
        name: str | None = None,
        *,
        q_key: str = Q_COL,
        doc_key: str = DOC_COL,
        score_key: str = SCORE_COL,
    ) -> Run:
        """From JSON Lines, one ``{"query_id": ..., "doc_id": ..., "score": ...}`` per line."""
        return cls._from_columns(io_json.jsonl_columns(path, (q_key, doc_key, score_key)), name)

    @classmethod
    def from_parquet(
        cls,
        path: str | Path,
        name: str | None = None,
        *,
        q_col: str = Q_COL,
        doc_col: str = DOC_COL,
        score_col: str = SCORE_COL,
    ) -> Run:
        """From a Parquet file with one row per retrieved document (name defaults to the file's stem)."""
        from ragmetrics.retrieval.io_parquet import parquet_columns

        return cls._from_columns(parquet_columns(path, (q_col, doc_col, score_col)), name or Path(path).stem)

    @classmethod
    def read(cls, path: str | Path, name: str | None = None) -> Run:
        """By file name: ``.json`` -> `from_json`, ``.jsonl``/``.ndjson`` -> `from_jsonl`, ``.parquet`` ->
        `from_parquet`, else `from_trec`. JSON and Parquet carry no tag: the name defaults to the file's stem.
        """
        suffix = Path(path).suffix.lower()
        if suffix == ".parquet":
            return cls.from_parquet(path, name)
        if suffix == ".json":
            return cls.from_json(path, name or Path(path).stem)
        if suffix in (".jsonl", ".ndjson"):
            return cls.from_jsonl(path, name or Path(path).stem)
        return cls.from_trec(path, name)

    @classmethod
    def from_df(
        cls,
        df: Any,
        name: str | None = None,
        *,
        q_col: str = Q_COL,
        doc_col: str = DOC_COL,
        score_col: str = SCORE_COL,
        source: str = "DataFrame",
    ) -> Run:
        """From a pandas DataFrame with one row per retrieved document; ids may be str or int columns."""
        return cls._from_columns(io_frames.frame_columns(df, (q_col, doc_col, score_col), source), name)

    @classmethod
    def from_hf(
        cls,
        dataset: Any,
        name: str | None = None,
        *,
        q_col: str = Q_COL,
        doc_col: str = DOC_COL,
        score_col: str = SCORE_COL,
        source: str = "datasets.Dataset",
    ) -> Run:
        """From a `datasets.Dataset` split; only the three named columns are read."""
        return cls._from_columns(
            io_frames.dataset_columns(dataset, (q_col, doc_col, score_col), source), name
        )

    @classmethod
    def _from_columns(cls, columns: Columns, name: str | None) -> Run:
        name = DEFAULT_NAME if name is None else name
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

    # -- views ---------------------------------------------------------------------------------------

    def top_k(self, k: int) -> Run:
        """Each ranking cut after its first `k` documents (queries keep their place, even if emptied)."""
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise InputError(f"k must be an integer >= 1, got {k!r}", source=self.source)
        counts = np.diff(self.offsets)
        position = np.arange(self.doc_codes.shape[0]) - np.repeat(self.offsets[:-1], counts)
        return self._rebuild(self._keep(position < k, np.ones(len(self.query_ids), dtype=np.bool_)))

    def renamed(self, name: str) -> Run:
        """The same run under another name (arrays are shared, not copied)."""
        if not isinstance(name, str) or not name:
            raise InputError(f"run name must be a non-empty string, got {name!r}", source=self.source)
        return Run(
            query_ids=self.query_ids,
            doc_vocab=self.doc_vocab,
            offsets=self.offsets,
            doc_codes=self.doc_codes,
            source=self.source,
            scores=self.scores,
            name=name,
        )

    # -- writers -------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query id: {document id: score}}``; each inner dict iterates in ranking order."""
        return self._nested(self.scores)

    def to_trec(self, path: str | Path) -> None:
        """Write ``qid Q0 docid rank score name`` lines, rank = 1-based position in the stored ranking.

        Scores are written in Python's shortest round-trip form, so reading the file back is exact.
        """
        target = str(path)
        io_trec.check_writable([self.name], "run name", target, leads_line=False)
        qids, docs = self._trec_ids(target)
        counts = np.diff(self.offsets)
        ranks = (np.arange(self.doc_codes.shape[0]) - np.repeat(self.offsets[:-1], counts) + 1).tolist()
        tag = self.name
        lines = [
            f"{q} Q0 {d} {r} {s!r} {tag}"
            for q, d, r, s in zip(qids, docs, ranks, self.scores.tolist(), strict=True)
        ]
        io_trec.write_lines(path, lines)

    def to_jsonl(
        self, path: str | Path, *, q_key: str = Q_COL, doc_key: str = DOC_COL, score_key: str = SCORE_COL
    ) -> None:
        """Write one JSON object per entry in ranking order, the layout `from_jsonl` reads."""
        self._write_jsonl(path, (q_key, doc_key, score_key))

    def to_parquet(
        self, path: str | Path, *, q_col: str = Q_COL, doc_col: str = DOC_COL, score_col: str = SCORE_COL
    ) -> None:
        """Write one row per entry in ranking order, the layout `from_parquet` reads (scores exact)."""
        self._write_parquet(path, (q_col, doc_col, score_col))

    # -- CsrBase hooks ---------------------------------------------------------------------------------

    def _values(self) -> NDArray[Any]:
        return self.scores

    def _rebuild(self, parts: dict[str, Any]) -> Run:
        scores = parts.pop("values")
        return Run(doc_vocab=self.doc_vocab, source=self.source, scores=scores, name=self.name, **parts)
