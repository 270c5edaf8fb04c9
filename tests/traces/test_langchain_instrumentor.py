"""Traces written by a real instrumentor: OpenInference's LangChain instrumentor over a LangChain chain (a
retriever, a prompt, a chat model), read back as a sample and a ranking. The instrumentor records a
Document's metadata but not its `id` field, so the ids come from the metadata; a retriever whose documents
carry no id anywhere is named as a problem, never ranked by guess."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the 'traces' extra)")
pytest.importorskip("langchain_core", reason="needs langchain-core (dev extra)")
pytest.importorskip("openinference.instrumentation.langchain", reason="needs its OpenInference instrumentor")

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ragmetrics.traces.sdk import SpanCollector

PASSAGES = {
    "d1": "Paris is the capital of France.",
    "d2": "Lyon is known for its food.",
    "d3": "The Seine flows through Paris.",
}


class KeywordRetriever(BaseRetriever):
    """Ranks the passages by words shared with the query; ids and scores in the metadata, as many stores do."""

    with_ids: bool = True

    def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
        words = set(query.lower().strip("?").split())
        scored = sorted(((len(words & set(t.lower().strip(".").split())), d) for d, t in PASSAGES.items()),
                        key=lambda x: (-x[0], x[1]))  # fmt: skip
        return [Document(page_content=PASSAGES[d], metadata={"id": d, "score": float(s)} if self.with_ids else {})
                for s, d in scored if s > 0]  # fmt: skip


@pytest.fixture
def collector() -> Any:
    collector = SpanCollector()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(collector))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield collector
    instrumentor.uninstrument()


def _chain(retriever: BaseRetriever, answer: str) -> Any:
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    context = retriever | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    return (
        {"context": context, "question": RunnablePassthrough()}
        | prompt
        | FakeListChatModel(responses=[answer])
        | StrOutputParser()
    )


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_langchain_chain_traced_by_openinference_reads_as_a_sample_and_a_ranking(collector: Any) -> None:
    assert _chain(KeywordRetriever(), "Paris.").invoke("What is the capital of France?") == "Paris."
    traces = collector.traces()
    (sample,) = traces.samples
    assert (sample.question, sample.answer) == ("What is the capital of France?", "Paris.")
    assert sample.contexts is not None and sample.contexts[0] == PASSAGES["d1"]
    (run,) = traces.runs.values()
    ranking = run.rankings[sample.id]
    assert list(ranking) == sample.context_ids and next(iter(ranking)) == "d1"
    assert ranking["d1"] > min(ranking.values())  # the metadata's scores, not positions
    assert not traces.problems


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_documents_without_any_id_are_named_not_guessed(collector: Any) -> None:
    _chain(KeywordRetriever(with_ids=False), "Paris.").invoke("What is the capital of France?")
    traces = collector.traces()
    (sample,) = traces.samples
    assert sample.contexts and sample.context_ids is None
    assert {p.field for p in traces.problems} == {"retrieved_ids"}
    assert all("has no document.id" in p.message for p in traces.problems)
