"""A small report folder (report.json + judged_samples.jsonl) for labelling tests, made without a judge."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.chunking import Chunk, ChunkingConfig, Document, chunk_documents, write_chunks
from ragmetrics.judge.base import RagSample
from ragmetrics.labeling.passages import Passages
from ragmetrics.labeling.session import LabelSession
from ragmetrics.labeling.team import Overlap, TeamQueue
from ragmetrics.nightly.judged_samples import FILENAME, judged_samples_jsonl
from ragmetrics.schema import ComparisonSettings, JudgeDetail, Report, RunMetadata, RunResult

HOSTILE = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'


def make_report(
    folder: Path, count: int = 14, run: str = "pipeline", chunks: Sequence[Chunk] | None = None
) -> dict[str, float]:
    """Write a report of `count` samples with faithfulness scores spread over [0, 1]; returns the scores.
    With `chunks`, sample n's contexts are chunks n and n + 1 (cyclically), with their ids as context_ids."""
    folder.mkdir(parents=True, exist_ok=True)
    scores = {f"s{n:02d}": round(((n * 5) % count) / (count - 1), 4) for n in range(count)}
    samples = [
        RagSample(
            id=sid,
            question=f"Question {sid}: when was the bridge {n} opened?",
            contexts=[f"Bridge {n} opened in {1900 + n}.", HOSTILE if n == 3 else f"It is {n * 10} m long."],
            answer=f"It opened in {1900 + n}.",
            reference=f"{1900 + n}",
        )
        for n, sid in enumerate(scores)
    ]
    if chunks:
        samples = [
            s.model_copy(update={"contexts": [c.text for c in picked], "context_ids": [c.id for c in picked]})
            for n, s in enumerate(samples)
            for picked in [[chunks[n % len(chunks)], chunks[(n + 1) % len(chunks)]]]
        ]
    result = RunResult(
        name=run,
        per_query={sid: {"faithfulness": score} for sid, score in scores.items()},
        details={sid: {"faithfulness": JudgeDetail(reason=f"reason for {sid}")} for sid in scores},
        metadata=RunMetadata(kind="judge", metrics=["faithfulness"], num_queries=count),
    )
    settings = ComparisonSettings(test="fisher", correction="holm")
    report = Report(runs=[result], metrics=["faithfulness"], settings=settings)
    (folder / "report.json").write_text(report.model_dump_json(), encoding="utf-8")
    (folder / FILENAME).write_text(judged_samples_jsonl({run: samples}), encoding="utf-8")
    return scores


def team_queue_over(
    tmp_path: Path,
    documents: Sequence[Document],
    names: list[str],
    overlap: Overlap,
    *,
    sentences: int = 2,
    count: int | None = None,
    queue: type[TeamQueue] = TeamQueue,
    **kw: Any,
) -> TeamQueue:
    """A team queue over a report whose contexts are chunks of `documents` (`sentences` per chunk, written to
    tmp_path/corpus.jsonl with their offsets), so its labellers can mark spans in the documents' characters.
    `count` samples (default: one per chunk)."""
    chunks = chunk_documents(documents, ChunkingConfig(method="sentences", size=sentences, overlap=0))
    write_chunks(tmp_path / "corpus.jsonl", chunks)
    make_report(tmp_path / "report", count=len(chunks) if count is None else count, chunks=chunks)
    session = LabelSession(tmp_path / "report", "faithfulness", tmp_path / "labels.jsonl")
    passages = Passages.of_samples(session.samples, tmp_path / "corpus.jsonl")
    return queue(session, names, overlap=overlap, passages=passages, **kw)


def wait_on_page(condition: Callable[[], object], driver: Any, seconds: float = 15.0) -> None:
    """Poll `condition` until it holds; on timeout, fail with what the page's error line says."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, driver.find_element("id", "error").text
        time.sleep(0.05)
