"""Two chunkings of the same documents, one set of span judgments: each chunking's run is scored on its own
derived qrels and by span metrics, and the two are compared per question with the usual paired test."""

from __future__ import annotations

import re

from ragmetrics.chunking import (
    Chunk,
    ChunkingConfig,
    Document,
    SpanJudgment,
    SpanQrels,
    chunk_documents,
    derive_chunk_qrels,
    span_scores,
)
from ragmetrics.comparison.pairs import compare_results
from ragmetrics.retrieval.evaluate import evaluate
from ragmetrics.retrieval.run import Run

FACTS = [
    ("bridges", "The old stone bridge over the river opened in 1901 after six years of work."),
    ("bridges", "Its central arch spans forty metres and carries two lanes of traffic."),
    ("trains", "The first steam train reached the valley in 1850 and carried coal."),
    ("trains", "Electric trains replaced the steam engines on the line in 1962."),
    ("harbour", "The harbour was dredged in 1975 so that container ships could dock."),
    ("harbour", "A lighthouse at the harbour mouth has guided ships since 1888."),
    ("market", "The covered market sells fish on Fridays and flowers on Sundays."),
    ("market", "Its iron roof was restored in 2004 with money from the city."),
]
FILLER = "Visitors often ask about the town's history, and the museum keeps records of it. "
QUESTIONS = {
    "q1": "When did the old stone bridge open?",
    "q2": "How long is the central arch of the bridge?",
    "q3": "When did the first steam train reach the valley?",
    "q4": "When did electric trains replace steam engines?",
    "q5": "When was the harbour dredged for container ships?",
    "q6": "Since when has the lighthouse guided ships?",
    "q7": "What does the covered market sell on Fridays?",
    "q8": "When was the market's iron roof restored?",
}


def _documents() -> tuple[list[Document], SpanQrels]:
    texts: dict[str, str] = {}
    judgments = []
    for number, (doc, fact) in enumerate(FACTS, start=1):
        before = texts.get(doc, "") + FILLER * 2
        judgments.append(
            SpanJudgment(query_id=f"q{number}", doc_id=doc, start=len(before), end=len(before) + len(fact))
        )
        texts[doc] = before + fact + " "
    return [Document(d, t + FILLER) for d, t in texts.items()], SpanQrels.from_judgments(judgments)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}


def _run(chunks: list[Chunk], name: str) -> Run:
    """Word-overlap retrieval: enough to rank, deterministic, no model."""
    ranked = {
        q: {
            c.id: float(len(_words(question) & _words(c.text))) + 1.0 / (1 + i) * 1e-3
            for i, c in enumerate(chunks)
        }
        for q, question in QUESTIONS.items()
    }
    return Run.from_dict(ranked, name=name)


def test_two_chunkings_are_compared_on_the_same_questions() -> None:
    documents, spans = _documents()
    results = []
    span_results = []
    for config in (
        ChunkingConfig(method="sentences", size=1),
        ChunkingConfig(method="tokens", size=64, overlap=16),
    ):
        chunks = chunk_documents(documents, config)
        run = _run(chunks, config.name)
        qrels = derive_chunk_qrels(spans, chunks)
        assert all(qrels.to_dict()[q] for q in QUESTIONS)  # every question judges this chunking
        results.append(evaluate(qrels, run, ["ndcg@3", "recall@3"], name=config.name))
        rankings = {q: list(ranking) for q, ranking in run.to_dict().items()}
        span_results.append(span_scores(spans, chunks, rankings, k=3).to_run_result(config.name, k=3))
    for pair in (results, span_results):
        assert set(pair[0].per_query) == set(pair[1].per_query) == set(QUESTIONS)
        report = compare_results(pair, test="t", correction="holm", bootstrap_samples=500)
        assert {c.metric for c in report.comparisons} == set(pair[0].metrics)
        assert all(c.n == len(QUESTIONS) for c in report.comparisons)  # paired over every question
    # a sentence chunk is the judged fact alone: precision of the span beats a 64-token window's
    sentences, windows = span_results
    assert sentences.aggregate["span_precision@3"] > windows.aggregate["span_precision@3"]
