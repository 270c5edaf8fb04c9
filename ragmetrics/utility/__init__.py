"""Utility judgments (eRAG, Salemi and Zamani, SIGIR 2024): graded qrels from the answers a generator gives from
each pooled passage alone, with the probability of abstaining that `udcg@k` reads (docs/utilities.md)."""

from ragmetrics.utility.build import (
    ANSWER_METRICS,
    AnswerMetric,
    Budget,
    UtilityQuestion,
    abuild_utility,
    build_utility,
    plan_utility,
    pool_pairs,
)
from ragmetrics.utility.generators import (
    ExtractiveGenerator,
    FunctionGenerator,
    GeneratedAnswer,
    GenerationFailed,
    Generator,
)
from ragmetrics.utility.openai_generator import OpenAIGenerator, abstention_probability, load_rag_prompt
from ragmetrics.utility.result import (
    PairJudgment,
    UtilityFolder,
    UtilityJudgments,
    UtilityPlan,
    read_folder,
    read_manifest,
)

__all__ = [
    "ANSWER_METRICS",
    "AnswerMetric",
    "Budget",
    "ExtractiveGenerator",
    "FunctionGenerator",
    "GeneratedAnswer",
    "GenerationFailed",
    "Generator",
    "OpenAIGenerator",
    "PairJudgment",
    "UtilityFolder",
    "UtilityJudgments",
    "UtilityPlan",
    "UtilityQuestion",
    "abstention_probability",
    "abuild_utility",
    "build_utility",
    "load_rag_prompt",
    "plan_utility",
    "pool_pairs",
    "read_folder",
    "read_manifest",
]
