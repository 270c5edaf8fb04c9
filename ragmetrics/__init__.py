"""ragmetrics: retrieval metrics, judge metrics and significance tests for RAG pipelines.

The public API is re-exported here lazily, so `import ragmetrics` stays cheap (numba, onnxruntime,
datasets and openai load only when first used).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ragmetrics._version import __version__

_EXPORTS: dict[str, str] = {
    # retrieval
    "Qrels": "ragmetrics.retrieval.qrels",
    "Run": "ragmetrics.retrieval.run",
    "evaluate": "ragmetrics.retrieval.evaluate",
    "fuse": "ragmetrics.retrieval.fusion",
    "search_fusion": "ragmetrics.retrieval.fusion_search",
    "train_fusion": "ragmetrics.retrieval.fusion_trained",
    "SubtopicQrels": "ragmetrics.retrieval.diversity",
    "AbstentionProbabilities": "ragmetrics.retrieval.utilities",
    "evaluate_diversity": "ragmetrics.retrieval.diversity",
    "tukey_pairs": "ragmetrics.comparison.tukey",
    "seed_report": "ragmetrics.comparison.seeds",
    # comparison
    "compare": "ragmetrics.api",
    "compare_results": "ragmetrics.comparison.pairs",
    "format_report": "ragmetrics.render.tables",
    "format_results": "ragmetrics.render.tables",
    # judge
    "evaluate_rag": "ragmetrics.judge.evaluate",
    "RagSample": "ragmetrics.judge.base",
    "JudgeSettings": "ragmetrics.judge.settings",
    "make_judge": "ragmetrics.judge.select",
    "python_metric": "ragmetrics.judge.own_metrics",
    "load_metric_file": "ragmetrics.judge.own_metrics",
    # trust
    "judge_agreement": "ragmetrics.trust",
    "ppi_difference": "ragmetrics.trust",
    "judge_noise_stats": "ragmetrics.trust",
    "load_labels": "ragmetrics.trust",
    "align_judge": "ragmetrics.alignment",
    "AlignedJudge": "ragmetrics.judge.aligned.judge",
    "load_aligned": "ragmetrics.judge.aligned.artifact",
    # nightly job
    "load_config": "ragmetrics.nightly.config",
    "run_pipeline": "ragmetrics.nightly.pipeline",
    "read_qa": "ragmetrics.nightly.dataset",
    "read_traces": "ragmetrics.traces",
    # test collections
    "build_testset": "ragmetrics.testset",
    # schema and errors
    "RunResult": "ragmetrics.schema",
    "Report": "ragmetrics.schema",
    "InputError": "ragmetrics.errors",
    "ConfigError": "ragmetrics.errors",
    "JudgeError": "ragmetrics.errors",
}

__all__ = [
    "AbstentionProbabilities",
    "AlignedJudge",
    "ConfigError",
    "InputError",
    "JudgeError",
    "JudgeSettings",
    "Qrels",
    "RagSample",
    "Report",
    "Run",
    "RunResult",
    "SubtopicQrels",
    "__version__",
    "align_judge",
    "build_testset",
    "compare",
    "compare_results",
    "evaluate",
    "evaluate_diversity",
    "evaluate_rag",
    "format_report",
    "format_results",
    "fuse",
    "judge_agreement",
    "judge_noise_stats",
    "load_aligned",
    "load_config",
    "load_labels",
    "load_metric_file",
    "make_judge",
    "ppi_difference",
    "python_metric",
    "read_qa",
    "read_traces",
    "run_pipeline",
    "search_fusion",
    "seed_report",
    "train_fusion",
    "tukey_pairs",
]

if TYPE_CHECKING:
    from ragmetrics.alignment import align_judge
    from ragmetrics.api import compare
    from ragmetrics.comparison.pairs import compare_results
    from ragmetrics.comparison.seeds import seed_report
    from ragmetrics.comparison.tukey import tukey_pairs
    from ragmetrics.errors import ConfigError, InputError, JudgeError
    from ragmetrics.judge.aligned.artifact import load_aligned
    from ragmetrics.judge.aligned.judge import AlignedJudge
    from ragmetrics.judge.base import RagSample
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.own_metrics import load_metric_file, python_metric
    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.nightly.config import load_config
    from ragmetrics.nightly.dataset import read_qa
    from ragmetrics.nightly.pipeline import run_pipeline
    from ragmetrics.render.tables import format_report, format_results
    from ragmetrics.retrieval.diversity import SubtopicQrels, evaluate_diversity
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.fusion import fuse
    from ragmetrics.retrieval.fusion_search import search_fusion
    from ragmetrics.retrieval.fusion_trained import train_fusion
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run
    from ragmetrics.retrieval.utilities import AbstentionProbabilities
    from ragmetrics.schema import Report, RunResult
    from ragmetrics.testset import build_testset
    from ragmetrics.traces import read_traces
    from ragmetrics.trust import judge_agreement, judge_noise_stats, load_labels, ppi_difference


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
