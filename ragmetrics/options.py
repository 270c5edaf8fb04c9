"""Names shared by every layer: tests, corrections, alignments, query sets, exit codes, and significance.

They live here, below the parts that use them, so the comparison, the renderers, the regression gate and
the command line can never disagree about what a name means or when a difference counts as significant.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal, get_args

__all__ = [
    "ALIGNMENTS",
    "ATTACK_METRICS",
    "CORRECTIONS",
    "CORRECTION_SCOPES",
    "EXPOSURE_METRICS",
    "FUSION_METHODS",
    "FUSION_NORMS",
    "LOWER_IS_BETTER_DIAGNOSTICS",
    "OPERATIONAL_METRICS",
    "QUERY_SETS",
    "TESTS",
    "TRAINED_FUSION_METHODS",
    "Align",
    "Correction",
    "CorrectionScope",
    "ExitCode",
    "FusionMethod",
    "FusionNorm",
    "QuerySet",
    "Test",
    "declare_direction",
    "forget_direction",
    "improvement",
    "is_descriptive",
    "is_significant",
    "lower_is_better",
]

Test = Literal["fisher", "t", "wilcoxon", "sign"]
"""Paired tests: Fisher's randomization test, Student's paired t, Wilcoxon signed-rank, the sign test."""
TESTS: tuple[str, ...] = get_args(Test)

Correction = Literal["holm", "bonferroni", "none"]
"""Multiple-testing corrections of a family of p-values."""
CORRECTIONS: tuple[str, ...] = get_args(Correction)

CorrectionScope = Literal["metric", "all"]
"""A correction family: each metric's pairs apart ("metric"), or every pair and metric together ("all")."""
CORRECTION_SCOPES: tuple[str, ...] = get_args(CorrectionScope)

Align = Literal["union", "intersection"]
"""Which queries a comparison pairs over: all the runs have between them, or only those every run has."""
ALIGNMENTS: tuple[str, ...] = get_args(Align)

QuerySet = Literal["qrels", "intersection"]
"""Which queries a retrieval mean is over: the qrels' (missing ones score 0, trec_eval -c) or the shared ones."""
QUERY_SETS: tuple[str, ...] = get_args(QuerySet)


FusionMethod = Literal[
    "rrf", "combsum", "combmnz", "combmax", "wsum",
    "combmin", "combmed", "combanz", "combgmnz", "wmnz", "mixed",
    "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "weighted_bordafuse", "condorcet", "weighted_condorcet",
    "probfuse", "segfuse", "slidefuse", "posfuse", "mapfuse", "bayesfuse",
]  # fmt: skip
"""Run fusion methods (`ragmetrics.fuse`; each defined in `ragmetrics.retrieval.fusion`): score-based (CombSUM,
CombMNZ, CombMAX, CombMIN, CombMED, CombANZ, CombGMNZ, weighted sum, WMNZ, mixed), rank-based (RRF, ISR, LogISR,
LogNISR, RBC, BordaFuse and its weighted form, Condorcet and its weighted form) and trained on qrels (ProbFuse,
SegFuse, SlideFuse, PosFuse, MAPFuse, BayesFuse; `ragmetrics.retrieval.fusion_trained`): ranx's 25."""
FUSION_METHODS: tuple[str, ...] = get_args(FusionMethod)
TRAINED_FUSION_METHODS: tuple[str, ...] = (
    "probfuse",
    "segfuse",
    "slidefuse",
    "posfuse",
    "mapfuse",
    "bayesfuse",
)
"""Methods whose per-run model (relevance probabilities by rank, or a MAP) is learned from qrels first."""

FusionNorm = Literal["none", "min-max", "zmuv", "max", "sum", "rank"]
"""Score normalisations applied per query and run before fusing."""
FUSION_NORMS: tuple[str, ...] = get_args(FusionNorm)


class ExitCode(IntEnum):
    """What the command line returns; CI jobs read these, so they never change meaning."""

    OK = 0
    REGRESSION = 1
    USAGE = 2
    INCOMPLETE = 3
    NOT_COMPARABLE = 4
    JUDGE_UNTRUSTED = 5
    INTERRUPTED = 130


OPERATIONAL_METRICS: tuple[str, ...] = ("latency_s", "tokens", "cost")
"""What answering a question cost the pipeline (and the generator): seconds, tokens and money per question.
They are recorded, described and compared like any metric, but lower is better."""


ATTACK_METRICS: tuple[str, ...] = (
    "attack_success",
    "injection_success",
    "poisoning_success",
    "leak_success",
    "out_of_scope_success",
    "clean_refusal",
)
"""Shares of attacks that worked, per kind, and of clean questions refused (defined in ragmetrics.attacks.metrics);
a night over an attack set (`dataset: {attacks: DIR}`) records them for every answering run. Lower is better."""

EXPOSURE_METRICS: tuple[str, ...] = (
    "attack_exposure",
    "injection_exposure",
    "poisoning_exposure",
    "leak_exposure",
    "planted_rr",
)
"""Shares of attacks whose planted text reached a run's contexts, per kind, and the reciprocal rank of the first
planted context (defined in ragmetrics.attacks.exposure); recorded for every run with contexts, retriever runs
included. Lower is better."""


LOWER_IS_BETTER_DIAGNOSTICS: tuple[str, ...] = (
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "hallucination",
    "self_knowledge",
)
"""Built-in judge metrics where less is better: wrong claims taken from chunks, wrong claims from nowhere, and
right claims the answer did not take from its context (RAGChecker's directions). The registry's specs say
the same (a test checks), but the direction lives here so that renderers, which never import the judge, read
it too."""

_declared_lower: set[str] = set()
_declared_descriptive: set[str] = set()


def declare_direction(metric: str, higher_is_better: bool | None) -> None:
    """Record the direction of a team's own metric while it is registered (judge.registry calls this)."""
    _declared_lower.discard(metric)
    _declared_descriptive.discard(metric)
    if higher_is_better is False:
        _declared_lower.add(metric)
    elif higher_is_better is None:
        _declared_descriptive.add(metric)


def forget_direction(metric: str) -> None:
    _declared_lower.discard(metric)
    _declared_descriptive.discard(metric)


def lower_is_better(metric: str) -> bool:
    """Whether a smaller value of `metric` is the better one (latency, tokens, cost, hallucination, noise
    sensitivity, a team's metric declared so). Renderers, the ▲/▼ marks and the regression gate read the
    direction here."""
    return (
        metric in OPERATIONAL_METRICS
        or metric in ATTACK_METRICS
        or metric in EXPOSURE_METRICS
        or metric in LOWER_IS_BETTER_DIAGNOSTICS
        or metric in _declared_lower
    )


def is_descriptive(metric: str) -> bool:
    """A metric with no better direction (answer length): a change is shown, never called better or worse."""
    return metric == "answer_length" or metric in _declared_descriptive


def improvement(metric: str, diff: float) -> float:
    """`diff` (candidate minus baseline) signed so that positive always means better (0 for a descriptive
    metric, which is never better or worse)."""
    if is_descriptive(metric):
        return 0.0
    return -diff if lower_is_better(metric) else diff


def is_significant(p_value: float, alpha: float) -> bool:
    """True when a (corrected) p-value rejects the null hypothesis at level `alpha`: ``p <= alpha``.

    The non-strict inequality is the usual definition of a level-alpha test (reject when p <= alpha) and the
    one the report, the plots and the regression gate all use, so a p exactly equal to alpha is significant
    everywhere or nowhere.
    """
    return p_value <= alpha
