"""ragmetrics: retrieval metrics, judge metrics and significance tests for RAG pipelines.

The public API is re-exported here lazily, so `import ragmetrics` stays cheap (numba, onnxruntime,
datasets and openai load only when first used).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragmetrics._version import __version__

_EXPORTS: dict[str, str] = {
    "Qrels": "ragmetrics.retrieval.qrels",
    "Run": "ragmetrics.retrieval.run",
    "evaluate": "ragmetrics.retrieval.evaluate",
    "compare": "ragmetrics.comparison.api",
    "evaluate_rag": "ragmetrics.judge.evaluate",
    "RagSample": "ragmetrics.judge.base",
    "RunResult": "ragmetrics.schema",
    "Report": "ragmetrics.schema",
    "InputError": "ragmetrics.errors",
    "ConfigError": "ragmetrics.errors",
    "JudgeError": "ragmetrics.errors",
}

__all__ = [
    "ConfigError",
    "InputError",
    "JudgeError",
    "Qrels",
    "RagSample",
    "Report",
    "Run",
    "RunResult",
    "__version__",
    "compare",
    "evaluate",
    "evaluate_rag",
]

if TYPE_CHECKING:
    from ragmetrics.comparison.api import compare
    from ragmetrics.errors import ConfigError, InputError, JudgeError
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run
    from ragmetrics.schema import Report, RunResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
