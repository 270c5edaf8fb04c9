"""Where the passages a labelling item shows lie in their documents, so a selection in one is a span of a
document (labeling.spans).

A report's samples show their retrieved contexts; `context_ids` names the chunk each came from. Given the
chunk corpus with offsets (`ragmetrics chunk split` wrote it: id, doc_id, start, end, text), each context
whose chunk is there, with exactly the text shown, gets its place (document id, start, end). A context that
is not there, or whose text differs from the chunk's (a pipeline that trimmed or rewrote it), gets none: the
page offers no selection in it, since offsets into a text other than the chunk's would land on the wrong
characters. The corpus is streamed; only the places of the chunks the samples name are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample
from ragmetrics.labeling.spans import Place

__all__ = ["Passage", "Passages"]


@dataclass(frozen=True)
class Passage:
    """One shown text with its place in its document."""

    place: Place
    text: str


@dataclass(frozen=True)
class Passages:
    """Sample id -> its question's id and, per context shown (in order), its `Passage` or None."""

    by_sample: Mapping[str, tuple[str, list[Passage | None]]]

    def of(self, sample_id: str) -> tuple[str, list[Passage | None]] | None:
        return self.by_sample.get(sample_id)

    def locate(self, sample_id: str, doc_id: str, start: int, end: int) -> tuple[str, Passage]:
        """The question id of `sample_id` and the shown passage holding [start, end) of document `doc_id`
        (document characters); an InputError naming the field that is wrong otherwise: a document none of
        the item's passages come from (doc_id), end not after start (end), or a span not inside one passage
        shown (start or end: the person can only have selected text they were shown)."""
        query_id, shown = self.by_sample.get(sample_id, (sample_id, []))
        placed = [p for p in shown if p is not None]
        if not placed:
            raise InputError("this item shows no passage with a place in a document", field="position")
        same_doc = [p for p in placed if p.place[0] == doc_id]
        if not same_doc:
            known = ", ".join(sorted({p.place[0] for p in placed}))
            raise InputError(f"document {doc_id!r} is not one this item's passages come from ({known})",
                             field="doc_id")  # fmt: skip
        if not 0 <= start < end:  # the field at fault: a negative start is the start's, else the end's
            raise InputError(
                f"a span needs 0 <= start < end, got [{start}, {end})", field="start" if start < 0 else "end"
            )
        for passage in same_doc:
            if passage.place[1] <= start and end <= passage.place[2]:
                return query_id, passage
        holds_start = any(p.place[1] <= start < p.place[2] for p in same_doc)
        ranges = ", ".join(f"[{p.place[1]}, {p.place[2]})" for p in same_doc)
        raise InputError(
            f"span [{start}, {end}) of {doc_id!r} is not inside a passage shown for this item ({ranges})",
            field="end" if holds_start else "start",
        )

    @property
    def selectable(self) -> int:
        """How many shown contexts can take a selection."""
        return sum(1 for _, shown in self.by_sample.values() for p in shown if p is not None)

    @classmethod
    def of_samples(cls, samples: Mapping[str, RagSample], corpus: Path) -> Passages:
        """The places of `samples`' contexts in the chunk corpus at `corpus` (module docstring). An
        InputError (field --corpus) when no context of any sample can be placed: the corpus is not the one
        the samples were retrieved from, or it has no offsets."""
        from ragmetrics.testset.corpus import open_corpus

        wanted = {cid for s in samples.values() for cid in (s.context_ids or [])}
        places: dict[str, Passage] = {}
        for chunk_id, doc_id, start, end, text in open_corpus(str(corpus)).offset_rows():
            if chunk_id in wanted and 0 <= start < end and len(text) == end - start:
                places[chunk_id] = Passage((doc_id, start, end), text)
        by_sample: dict[str, tuple[str, list[Passage | None]]] = {}
        for sample_id, sample in samples.items():
            contexts, ids = sample.contexts or [], sample.context_ids or []
            shown: list[Passage | None] = []
            for index, text in enumerate(contexts):
                found = places.get(ids[index]) if index < len(ids) else None
                shown.append(found if found is not None and found.text == text else None)
            by_sample[sample_id] = (sample_id, shown)
        passages = cls(by_sample)
        if passages.selectable == 0:
            raise InputError(
                "no sample's context is a chunk of this corpus with doc_id/start/end and the same text: "
                "give the chunk corpus (`ragmetrics chunk split`) the samples' context_ids come from",
                source=str(corpus),
                field="--corpus",
            )
        return passages
