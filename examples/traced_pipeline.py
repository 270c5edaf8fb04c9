"""The example pipeline (rag_pipeline.py) instrumented the way a team instruments its own: the OpenTelemetry
SDK with the OpenInference conventions, so its traces can be scored instead of calling it again.

Each question is one trace: a CHAIN root span with the question (`input.value`), the answer (`output.value`)
and the question's id (`metadata`); a RETRIEVER span with the passages it found (id, text, BM25 score); an
LLM span with the model, token counts and cost. `python examples/traced_pipeline.py` answers the built-in
collection's questions and writes the traces as the OpenTelemetry Collector's file exporter would (OTLP JSON,
one export per line) to ragmetrics-out/traces.jsonl; `ragmetrics run configs/traces.yaml` scores them.

Needs: pip install '.[traces,examples]' in a clone of ragmetrics (opentelemetry-sdk, openinference-semantic-conventions, bm25s).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Tracer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rag_pipeline  # the pipeline being instrumented, beside this file

MODEL = "extractive-v1"
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "ragmetrics-out" / "traces.jsonl"
"""Where configs/traces.yaml reads the traces from."""
KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


def make_tracer(*exporters: SpanExporter) -> tuple[TracerProvider, Tracer]:
    """A tracer provider exporting every finished span to each exporter, as it ends."""
    provider = TracerProvider()
    for exporter in exporters:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, provider.get_tracer("examples.traced_pipeline")


def answer(sample: dict[str, Any], tracer: Tracer) -> dict[str, Any]:
    """rag_pipeline.answer, with each step recorded as a span."""
    question = sample["question"]
    with tracer.start_as_current_span("rag") as root:
        root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.INPUT_VALUE, question)
        root.set_attribute(SpanAttributes.METADATA, json.dumps({"id": sample["id"]}))
        if sample.get("session_id"):
            root.set_attribute(SpanAttributes.SESSION_ID, sample["session_id"])
        with tracer.start_as_current_span("bm25") as retriever:
            retriever.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
            retriever.set_attribute(SpanAttributes.INPUT_VALUE, question)
            hits = rag_pipeline.retrieve(question)
            for i, (passage, score) in enumerate(hits):
                prefix = f"{SpanAttributes.RETRIEVAL_DOCUMENTS}.{i}"
                retriever.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_ID}", passage["id"])
                retriever.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_CONTENT}", passage["text"])
                retriever.set_attribute(f"{prefix}.{DocumentAttributes.DOCUMENT_SCORE}", score)
        contexts = [p["text"] for p, _ in hits]
        with tracer.start_as_current_span("generate") as llm:
            llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
            llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, MODEL)
            text = rag_pipeline.extract_answer(question, contexts)
            usage = rag_pipeline._usage(question, contexts, text)
            prompt, completion = usage["usage"]["prompt_tokens"], usage["usage"]["completion_tokens"]
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, prompt)
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, completion)
            llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_TOTAL, prompt + completion)
            llm.set_attribute(SpanAttributes.LLM_COST_TOTAL, usage["cost"])
            llm.set_attribute(SpanAttributes.OUTPUT_VALUE, text)
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, text)
    return {"answer": text, "contexts": contexts, "context_ids": [p["id"] for p, _ in hits]}


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ragmetrics.collection import load_qa
    from ragmetrics.traces.sdk import OtlpJsonFileExporter

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"OTLP JSON file to write ({DEFAULT_OUT})")
    parser.add_argument("--limit", type=int, default=None, help="answer only the first N questions")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.unlink(missing_ok=True)
    provider, tracer = make_tracer(OtlpJsonFileExporter(args.out))
    questions = load_qa()[: args.limit]
    for row in questions:
        answer({"id": row["id"], "question": row["question"]}, tracer)
    provider.shutdown()
    print(f"{len(questions)} traces written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
