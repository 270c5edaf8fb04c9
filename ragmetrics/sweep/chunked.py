"""The chunking axis: each chunking of the dataset's passages, with chunk qrels derived from the same spans.

Each passage is read as a whole document. Its graded passage qrels become span qrels through the chunking
that made them, one chunk per passage (`chunking.spans_from_chunk_qrels`), and each chunking of the axis gets
chunk qrels derived from those spans (`chunking.derive_chunk_qrels`, the rule of docs/chunking.md). Every
chunking is thus judged on the same questions by the same judgments, so their configurations are compared
with the same paired tests as any other axis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragmetrics.chunking import Chunk, Document, chunk_documents, derive_chunk_qrels, spans_from_chunk_qrels
from ragmetrics.errors import ConfigError

if TYPE_CHECKING:
    from ragmetrics.nightly.dataset import QADataset
    from ragmetrics.sweep.config import SweepConfig

__all__ = ["chunked_inputs"]


def chunked_inputs(
    sweep: SweepConfig, samples: Sequence[Any], dataset: QADataset, passages: Sequence[Mapping[str, str]]
) -> tuple[dict[str, list[dict[str, str]]], dict[str, dict[str, dict[str, int]]]]:
    """(chunking label -> its chunks as passages, chunking label -> question -> chunk id -> derived grade)."""
    assert sweep.chunking is not None
    documents = [Document(p["id"], p["text"]) for p in passages if p["text"]]
    whole = [Chunk(d.id, d.id, 0, len(d.text), d.text) for d in documents]
    qids = [s.id for s in samples]
    known = {d.id for d in documents}
    judged = {q: {pid: g for pid, g in dataset.relevance.get(q, {}).items() if pid in known} for q in qids}
    spans = spans_from_chunk_qrels(judged, whole, source="the dataset's passage qrels")
    corpora: dict[str, list[dict[str, str]]] = {}
    relevance: dict[str, dict[str, dict[str, int]]] = {}
    for i, settings in enumerate(sweep.chunking):
        chunks = chunk_documents(documents, settings)
        if not chunks:
            raise ConfigError(f"sweep.chunking[{i}]: {settings.name} made no chunk of the passages")
        corpora[settings.name] = [{"id": c.id, "text": c.text} for c in chunks]
        derived = derive_chunk_qrels(spans, chunks).to_dict()
        relevance[settings.name] = {q: dict(derived.get(q, {})) for q in qids}
    return corpora, relevance
