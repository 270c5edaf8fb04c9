"""ragmetrics metrics as scorers of `mlflow.genai.evaluate` (docs/mlflow.md).

    from ragmetrics.mlflow import ragmetrics_scorers
    mlflow.genai.evaluate(data=rows, scorers=ragmetrics_scorers(["faithfulness", "context_precision", "ndcg@10"]))

One scorer per metric, each computing the metric exactly as ragmetrics does (`evaluate_rag` for judge metrics
through the given judge, the local judge by default; `retrieval.evaluate` for retrieval metrics), on
MLflow's own data and trace formats:

- `inputs`: a dict holding the question (`question`, `query`, `input`, `request` or `messages`' last user
  message) or the question itself as a string;
- `outputs`: the answer as a string, or a dict with `answer` / `response` / `output`, and optionally
  `contexts` (or `retrieved_context`: strings or {content}) and `retrieved_ids` (a ranking, best first);
- `expectations`: `expected_response` (or `reference`), `expected_retrieved_context` ({doc_uri}) or
  `relevant_ids` (a list, or {id: grade}) for retrieval metrics;
- `trace`: where outputs carry no contexts, those of the trace's RETRIEVER spans, in their order.

Each score is a `Feedback` whose rationale is ragmetrics' reason for it. A metric that does not apply to a
row (a row without the reference answer_correctness reads, without a ranking for ndcg@10, a declined answer
for faithfulness) is a Feedback with no value, no error and the reason as its rationale ("not applicable:
..."): MLflow's harness counts a scorer call as failed only when its Feedback carries an error, and leaves a
value of None out of the scorer's aggregates (mlflow.genai.evaluation.harness `_compute_eval_scores`,
mlflow.genai.scorers.aggregation), so such a row is neither a failure nor a 0 in the mean. A judge failure
is a Feedback carrying the failure as its error. Nothing else differs from ragmetrics' own scores.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.judge.base import Judge, RagSample

__all__ = ["ragmetrics_scorers", "sample_from_mlflow"]


def _question(inputs: Any) -> str:
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, Mapping):
        for key in ("question", "query", "input", "request", "user_input"):
            value = inputs.get(key)
            if isinstance(value, str):
                return value
        messages = inputs.get("messages")
        if isinstance(messages, list):
            users = [m.get("content") for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
            if users and isinstance(users[-1], str):
                return users[-1]
        strings = [v for v in inputs.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    raise ValueError("inputs: no question found (a string, or a dict with 'question', 'query' or 'messages')")


def _texts(items: Any) -> list[str] | None:
    if not isinstance(items, list):
        return None
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            text = item.get("content", item.get("page_content", item.get("text")))
            if isinstance(text, str):
                out.append(text)
    return out


def _trace_contexts(trace: Any) -> tuple[list[str] | None, list[str] | None]:
    """(texts, ids) of the trace's retriever spans' documents, in span and rank order."""
    if trace is None:
        return None, None
    from mlflow.entities import SpanType

    texts: list[str] = []
    ids: list[str] = []
    for span in trace.search_spans(span_type=SpanType.RETRIEVER):
        for doc in span.outputs or []:
            if not isinstance(doc, Mapping):
                continue
            text = doc.get("page_content", doc.get("content"))
            if isinstance(text, str):
                texts.append(text)
            meta = doc.get("metadata") or {}
            ident = doc.get("id") or (meta.get("doc_uri") if isinstance(meta, Mapping) else None)
            if ident is not None:
                ids.append(str(ident))
    return (texts or None), (ids or None)


def sample_from_mlflow(
    inputs: Any, outputs: Any, expectations: Mapping[str, Any] | None, trace: Any, sample_id: str = "q"
) -> tuple[RagSample, list[str] | None, dict[str, int] | None]:
    """The ragmetrics sample of one MLflow row, its ranking (ids, best first) and its relevance judgments."""
    answer: str | None
    contexts = ranking = None
    if isinstance(outputs, Mapping):
        value = next((outputs[k] for k in ("answer", "response", "output") if isinstance(outputs.get(k), str)), None)
        answer = value
        contexts = _texts(outputs.get("contexts", outputs.get("retrieved_context")))
        raw = outputs.get("retrieved_ids")
        ranking = [str(x) for x in raw] if isinstance(raw, list) else None
    else:
        answer = None if outputs is None else str(outputs)
    if contexts is None or ranking is None:
        traced, traced_ids = _trace_contexts(trace)
        contexts = contexts if contexts is not None else traced
        ranking = ranking if ranking is not None else traced_ids
    expected = expectations or {}
    reference = expected.get("expected_response", expected.get("reference"))
    relevant: dict[str, int] | None = None
    if isinstance(expected.get("relevant_ids"), Mapping):
        relevant = {str(k): int(v) for k, v in expected["relevant_ids"].items()}
    elif isinstance(expected.get("relevant_ids"), list):
        relevant = {str(k): 1 for k in expected["relevant_ids"]}
    elif isinstance(expected.get("expected_retrieved_context"), list):
        relevant = {str(d["doc_uri"]): 1 for d in expected["expected_retrieved_context"]
                    if isinstance(d, Mapping) and d.get("doc_uri")}  # fmt: skip
    sample = RagSample(id=sample_id, question=_question(inputs), contexts=contexts, answer=answer,
                       reference=reference if isinstance(reference, str) else None)  # fmt: skip
    return sample, ranking, relevant


def _retrieval_metric(name: str) -> bool:
    from ragmetrics.judge.registry import resolve_judge_metric

    return resolve_judge_metric(name) is None


def ragmetrics_scorers(metrics: Sequence[str], judge: Judge | None = None) -> list[Any]:
    """One MLflow scorer per metric (module docstring); `judge` defaults to the built-in local judge."""
    from mlflow.entities import Feedback
    from mlflow.genai.scorers import scorer

    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.retrieval.evaluate import evaluate

    shared: dict[str, Judge] = {}
    # MLflow runs scorers in a thread pool; one judge serves them one sample at a time (its event loop, its
    # embedder's batching and an LLM judge's connections belong to one caller at a time).
    one_at_a_time = threading.Lock()

    def the_judge() -> Judge:
        if "judge" not in shared:
            from ragmetrics.judge.select import make_judge
            from ragmetrics.judge.settings import JudgeSettings

            shared["judge"] = judge if judge is not None else make_judge(JudgeSettings(backend="local"))
        return shared["judge"]

    def make(metric: str) -> Any:
        retrieval = _retrieval_metric(metric)

        def score(inputs: Any = None, outputs: Any = None, expectations: Any = None, trace: Any = None) -> Any:
            sample, ranking, relevant = sample_from_mlflow(inputs, outputs, expectations, trace)
            if retrieval:
                if ranking is None or relevant is None:
                    return Feedback(value=None, rationale=f"not applicable: {metric} needs a ranking (outputs.retrieved_ids or a "
                                    "retriever span) and relevance judgments (expectations.relevant_ids)")  # fmt: skip
                run = {"q": {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}}
                result = evaluate({"q": relevant}, run, [metric])
                return Feedback(value=result.per_query["q"][metric], rationale=f"{metric} of the ranking against "
                                f"{len(relevant)} relevant documents")  # fmt: skip
            missing = sample.missing_fields(metric)
            if missing:  # before the judge: nothing of this row can be scored by this metric
                return Feedback(value=None, rationale=f"not applicable: {metric} reads the {' and '.join(missing)}, "
                                "which this row does not give (expectations.expected_response for a reference)")  # fmt: skip
            with one_at_a_time:
                result = evaluate_rag([sample], [metric], the_judge(), progress=False)
            failure = next((f for f in result.failures if f.metric == metric), None)
            if failure is not None and failure.cause == "missing_field":  # e.g. a reference without a statement
                return Feedback(value=None, rationale=f"not applicable: {failure.message}")
            if failure is not None:
                return Feedback(error=f"{failure.cause}: {failure.message}")
            skipped = next((n for n in result.not_applicable if n.metric == metric), None)
            if skipped is not None:
                return Feedback(value=None, rationale=f"not applicable: {skipped.reason}")
            detail = result.details.get(sample.id, {}).get(metric)
            return Feedback(value=result.per_query[sample.id][metric],
                            rationale=(detail.reason if detail is not None and detail.reason else f"ragmetrics {metric}"))  # fmt: skip

        return scorer(score, name=metric.replace("@", "_at_"))

    return [make(m) for m in metrics]
