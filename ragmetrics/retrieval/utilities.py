"""Per-passage abstention probabilities: what UDCG (`udcg@k`) reads besides the qrels.

UDCG (Trappolini et al. 2025, arXiv 2510.21440) weighs each retrieved passage by its utility u = 1 - p, where
p is the probability that the generator abstains ("no answer") when it sees that passage alone. Those
probabilities come from the generator, not from assessors, so they travel in their own container rather
than as qrels grades: floats in [0, 1] per (query, document), checked on the way in so that a bad value is an
error naming its file, line and field, never a NaN score later.

Three forms are read: a JSON object ``{query id: {document id: p_abstain}}``, JSON Lines with one
``{"query_id": ..., "doc_id": ..., "p_abstain": ...}`` per line, and a whitespace-separated text form
``query_id doc_id p_abstain`` per line (``#`` starts a comment line), the shape of a TREC qrels line
without its iteration column.

`missing` says what a retrieved passage without a probability means inside the cutoff of `udcg@k`:
``"error"`` (the default: the metric refuses to guess) or ``"skip"``, the reference code's behaviour (a
passage lacking its score adds nothing to the sum but still counts in the denominator).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from ragmetrics._textfile import read_utf8
from ragmetrics.errors import InputError

MissingUtility = Literal["error", "skip"]
MISSING_UTILITY: tuple[str, ...] = get_args(MissingUtility)

JSONL_KEYS = ("query_id", "doc_id", "p_abstain")
"""The keys of one JSON Lines entry."""


def _probability(value: object, *, source: str, line: int | None, where: str) -> float:
    """A probability in [0, 1] as float; bools, strings, NaN and values outside [0, 1] are errors."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(
            f"{where}: p_abstain must be a number from 0 to 1, got {value!r} ({type(value).__name__})",
            source=source,
            line=line,
            field="p_abstain",
        )
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise InputError(
            f"{where}: p_abstain must be a probability from 0 to 1, got {value!r}",
            source=source,
            line=line,
            field="p_abstain",
        )
    return number


def _identifier(value: object, *, source: str, line: int | None, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(
            f"{name} must be a non-empty string, got {value!r}", source=source, line=line, field=name
        )
    return value


@dataclass(frozen=True)
class AbstentionProbabilities:
    """``{query id: {document id: p_abstain}}``: the generator's probability of abstaining on each passage
    alone, validated. `utility(q, d)` is UDCG's u = 1 - p_abstain."""

    by_query: Mapping[str, Mapping[str, float]]
    source: str = "utilities dict"
    missing: MissingUtility = "error"
    _count: int = field(default=0, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.missing not in MISSING_UTILITY:
            raise InputError(
                f"missing must be one of {', '.join(MISSING_UTILITY)}, got {self.missing!r}", field="missing"
            )
        object.__setattr__(self, "_count", sum(len(docs) for docs in self.by_query.values()))

    # -- readers -----------------------------------------------------------------------------------------

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Mapping[str, object]],
        *,
        source: str = "utilities dict",
        missing: MissingUtility = "error",
    ) -> AbstentionProbabilities:
        """From ``{query id: {document id: p_abstain}}``; every value a number in [0, 1]."""
        if not isinstance(data, Mapping):
            raise InputError(
                f"expected an object {{query id: {{document id: p_abstain}}}}, got {type(data).__name__}",
                source=source,
            )
        checked: dict[str, dict[str, float]] = {}
        for qid, docs in data.items():
            _identifier(qid, source=source, line=None, name="query_id")
            if not isinstance(docs, Mapping):
                raise InputError(
                    f"query {qid!r}: expected an object {{document id: p_abstain}}, got {type(docs).__name__}",
                    source=source,
                    field=str(qid),
                )
            row: dict[str, float] = {}
            for doc, value in docs.items():
                _identifier(doc, source=source, line=None, name="doc_id")
                row[doc] = _probability(
                    value, source=source, line=None, where=f"query {qid!r}, document {doc!r}"
                )
            checked[qid] = row
        return cls(checked, source=source, missing=missing)

    @classmethod
    def from_json(cls, path: str | Path, *, missing: MissingUtility = "error") -> AbstentionProbabilities:
        """From a JSON file holding one object ``{query id: {document id: p_abstain}}``."""
        from ragmetrics.retrieval.io_json import _loads

        source = str(path)
        return cls.from_dict(_loads(read_utf8(path), source), source=source, missing=missing)

    @classmethod
    def from_jsonl(cls, path: str | Path, *, missing: MissingUtility = "error") -> AbstentionProbabilities:
        """From JSON Lines, one ``{"query_id": ..., "doc_id": ..., "p_abstain": ...}`` per line (other keys,
        such as the passage's text or the generator's name, are ignored)."""
        from ragmetrics.retrieval.io_json import jsonl_rows

        source = str(path)
        rows: dict[str, dict[str, float]] = {}
        for number, query, document, value in jsonl_rows(path, JSONL_KEYS):
            qid = _identifier(query, source=source, line=number, name="query_id")
            doc = _identifier(document, source=source, line=number, name="doc_id")
            _add(rows, qid, doc, value, source, number)
        return cls(_nonempty(rows, source), source=source, missing=missing)

    @classmethod
    def from_text(cls, path: str | Path, *, missing: MissingUtility = "error") -> AbstentionProbabilities:
        """From text lines ``query_id doc_id p_abstain`` (whitespace-separated; blank and ``#`` lines skipped)."""
        source = str(path)
        rows: dict[str, dict[str, float]] = {}
        for number, line in enumerate(read_utf8(path).split("\n"), start=1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 3:
                raise InputError(
                    f"expected 3 fields (query_id doc_id p_abstain), got {len(parts)}",
                    source=source,
                    line=number,
                )
            try:
                value: object = float(parts[2])
            except ValueError:
                value = parts[2]
            _add(rows, parts[0], parts[1], value, source, number)
        return cls(_nonempty(rows, source), source=source, missing=missing)

    @classmethod
    def read(cls, path: str | Path, *, missing: MissingUtility = "error") -> AbstentionProbabilities:
        """By file name: ``.json`` -> `from_json`, ``.jsonl``/``.ndjson`` -> `from_jsonl`, else `from_text`."""
        suffix = Path(path).suffix.lower()
        if suffix == ".json":
            return cls.from_json(path, missing=missing)
        if suffix in (".jsonl", ".ndjson"):
            return cls.from_jsonl(path, missing=missing)
        return cls.from_text(path, missing=missing)

    # -- reading -----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of (query, document) probabilities held."""
        return self._count

    def p_abstain(self, query_id: str, doc_id: str) -> float | None:
        """The probability of abstaining on this passage alone, or None when it is not held."""
        docs = self.by_query.get(query_id)
        return None if docs is None else docs.get(doc_id)

    def utility(self, query_id: str, doc_id: str) -> float | None:
        """UDCG's utility u = 1 - p_abstain, or None when the probability is not held."""
        p = self.p_abstain(query_id, doc_id)
        return None if p is None else 1.0 - p


def _add(
    rows: dict[str, dict[str, float]], qid: str, doc: str, value: object, source: str, line: int
) -> None:
    row = rows.setdefault(qid, {})
    if doc in row:
        raise InputError(
            f"query {qid!r}, document {doc!r} is listed twice", source=source, line=line, field="doc_id"
        )
    row[doc] = _probability(value, source=source, line=line, where=f"query {qid!r}, document {doc!r}")


def _nonempty(rows: dict[str, dict[str, float]], source: str) -> dict[str, dict[str, float]]:
    if not rows:
        raise InputError("no entries", source=source)
    return rows
