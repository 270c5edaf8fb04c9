"""Validation of the passages and queries every retriever takes, so each retriever sees clean input."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ragmetrics.errors import InputError


@dataclass(frozen=True)
class Corpus:
    """Passage ids and their texts, in input order.

    Only `text` is indexed (a `title` key is accepted and ignored), so a run built from Python and one built
    by `ragmetrics run` from the same passages JSONL are identical.
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]


def corpus_from(passages: Sequence[Mapping[str, object]], source: str = "passages") -> Corpus:
    if not passages:
        raise InputError("no passages to index", source=source)
    ids: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    for i, passage in enumerate(passages, start=1):
        pid = passage.get("id")
        text = passage.get("text")
        if not isinstance(pid, str) or not pid.strip():
            raise InputError(
                "missing or empty passage id (expected a non-empty string)", source=source, line=i, field="id"
            )
        if not isinstance(text, str):  # an empty text is indexed as such: it matches nothing, ranks last
            raise InputError(f"passage {pid!r} has no text", source=source, line=i, field="text")
        if pid in seen:
            raise InputError(f"duplicate passage id {pid!r}", source=source, line=i, field="id")
        seen.add(pid)
        ids.append(pid)
        texts.append(text)
    return Corpus(tuple(ids), tuple(texts))


def queries_from(
    queries: Mapping[str, str] | Iterable[tuple[str, str]], source: str = "queries"
) -> dict[str, str]:
    """Query id -> text; accepts a mapping or (id, text) pairs (as `load_questions()` returns)."""
    pairs = list(queries.items()) if isinstance(queries, Mapping) else list(queries)
    if not pairs:
        raise InputError("no queries", source=source)
    out: dict[str, str] = {}
    for i, pair in enumerate(pairs, start=1):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InputError(f"expected an (id, text) pair, got {pair!r}", source=source, line=i)
        qid, text = pair
        if not isinstance(qid, str) or not qid.strip():
            raise InputError("missing or empty query id", source=source, line=i, field="id")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"query {qid!r} has no text", source=source, line=i, field="text")
        if qid in out:
            raise InputError(f"duplicate query id {qid!r}", source=source, line=i, field="id")
        out[qid] = text
    return out
