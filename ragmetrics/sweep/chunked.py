"""The chunking axis: each chunking of the dataset's passages, with chunk qrels derived from the same spans.

Each passage is read as a whole document and cut by every chunking of the axis; each chunking gets chunk qrels
derived from one set of span judgments (`chunking.derive_chunk_qrels`, the rule of docs/chunking.md), so every
chunking is judged on the same questions by the same judgments and their configurations are compared with the
same paired tests as any other axis. The spans come from, in this order:

- the test set's own span qrels (`DIR/spans.jsonl`, the evidence each question was written from, which
  `ragmetrics testset` writes when its corpus carries offsets), when the dataset is that test-set folder and its
  passages are the documents those spans are on. They are the finer judgment: a question written from one
  sentence is judged on that sentence, so a chunking that cuts it out of a long passage is not credited with
  the whole passage;
- else the dataset's graded passage qrels, made spans through the chunking that made them, one chunk per
  passage (`chunking.spans_from_chunk_qrels`): a whole judged passage is relevant.

Which one was used, and why a spans file present was not, is said in the sweep's summary (`AxisJudgments.note`).
A spans file whose documents are none of the passages is a test set built on a chunk corpus while the sweep reads
that chunk corpus as its documents: the passage qrels are used then, and the note says to point
`dataset.passages` at the documents. A spans file naming some passages but not others, a span past its
document's end or one quoting other text is bad input, named by file and line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.chunking import (
    Chunk,
    Document,
    SpanQrels,
    chunk_documents,
    derive_chunk_qrels,
    read_span_qrels,
    spans_from_chunk_qrels,
)
from ragmetrics.errors import ConfigError

if TYPE_CHECKING:
    from ragmetrics.nightly.qa_dataset import QADataset
    from ragmetrics.sweep.config import SweepConfig

__all__ = ["PASSAGE_QRELS", "SPAN_QRELS", "AxisJudgments", "axis_judgments", "chunked_inputs", "spans_file"]

SPAN_QRELS = "test set spans"
PASSAGE_QRELS = "passage qrels"


@dataclass(frozen=True)
class AxisJudgments:
    """The span judgments every chunking of the axis is scored against, and where they came from."""

    source: str
    """SPAN_QRELS or PASSAGE_QRELS."""
    note: str
    """One sentence for the summary: the file or qrels used, and why a spans file present was not."""
    spans: SpanQrels | None = None
    """The test set's spans (SPAN_QRELS); None: derived from the passage qrels when the axis is cut."""
    path: Path | None = None

    def relevant(self, qid: str) -> dict[str, int]:
        """The question's judged spans as (span label -> grade), for the check that it can be scored at all."""
        if self.spans is None:
            return {}
        return {f"{s.doc_id}:{s.start}-{s.end}": s.grade for s in self.spans.by_query.get(qid, [])}


def spans_file(dataset: QADataset) -> Path | None:
    """The test set's spans.jsonl, when the dataset is a test-set folder (or its questions.jsonl) that has one."""
    from ragmetrics.testset.evidence import SPANS_FILE
    from ragmetrics.testset.output import MANIFEST

    folder = dataset.testset_folder
    if folder is None:
        source = Path(dataset.source)
        if source.name == "questions.jsonl" and (source.parent / MANIFEST).is_file():
            folder = source.parent
    if folder is None or not (Path(folder) / SPANS_FILE).is_file():
        return None
    return Path(folder) / SPANS_FILE


def axis_judgments(dataset: QADataset, documents: Mapping[str, str]) -> AxisJudgments:
    """The judgments of the chunking axis over `documents` (passage id -> text): module docstring."""
    path = spans_file(dataset)
    if path is None:
        return AxisJudgments(
            PASSAGE_QRELS, "spans derived from the dataset's passage qrels (each passage one document; the "
            "dataset has no test-set spans.jsonl)",
        )  # fmt: skip
    spans = read_span_qrels(path)  # a bad row or two overlapping spans: InputError naming the line
    on = {span.doc_id for span in spans.judgments()}
    if not on & set(documents):
        example = sorted(on)[0]
        return AxisJudgments(
            PASSAGE_QRELS, f"spans derived from the dataset's passage qrels (each passage one document): {path} "
            f"judges documents that are not among the passages (e.g. {example!r}), so the passages are chunks "
            "of them; to judge every chunking on the test set's evidence spans, set dataset.passages to the "
            "documents the corpus was cut from",
            path=path,
        )  # fmt: skip
    # a span on a passage missing while others are there, or past its end: InputError naming the line
    spans.check_documents(documents)
    questions = len(spans.by_query)
    return AxisJudgments(
        SPAN_QRELS, f"the test set's span qrels ({path}: {len(spans.judgments())} spans, {questions} questions), "
        "each passage one document",
        spans=spans,
        path=path,
    )  # fmt: skip


def chunked_inputs(
    sweep: SweepConfig,
    samples: Sequence[Any],
    dataset: QADataset,
    passages: Sequence[Mapping[str, str]],
    judgments: AxisJudgments | None = None,
) -> tuple[dict[str, list[dict[str, str]]], dict[str, dict[str, dict[str, int]]]]:
    """(chunking label -> its chunks as passages, chunking label -> question -> chunk id -> derived grade)."""
    assert sweep.chunking is not None
    documents = [Document(p["id"], p["text"]) for p in passages if p["text"]]
    qids = [s.id for s in samples]
    if judgments is not None and judgments.spans is not None:
        spans = judgments.spans
    else:
        whole = [Chunk(d.id, d.id, 0, len(d.text), d.text) for d in documents]
        known = {d.id for d in documents}
        judged = {
            q: {pid: g for pid, g in dataset.relevance.get(q, {}).items() if pid in known} for q in qids
        }
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
