"""Every judge metric, defined once: what it reads, how it is judged, its formula, prompt, local variant and source.

This file is where a newcomer finds a judge metric. Each `JudgeMetricSpec` names:

- the sample fields it needs (config validation and `evaluate_rag` check them before any call);
- its `plan`: the kind of verdicts behind it, which both backends dispatch on (one handler per plan);
- the prompt file(s) in `prompts/` and the verdict model a prompt's answer is validated against;
- the formula, as a named function in `judge.formulas`, and in words;
- the local judge's variant and its calibrated threshold;
- a one-line description and a citation.

The metric table in docs/judge.md is generated from here (`metric_table()`); a test fails when it is stale.
Adding a metric: one entry below, one prompt file, one formula in `formulas.py`, and its tests; a new plan
also needs one handler in each backend.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ragmetrics.errors import JudgeError
from ragmetrics.judge import claims, deterministic, formulas
from ragmetrics.judge.verdicts import (
    ChunkVerdicts,
    ClaimVerdicts,
    CorrectnessVerdicts,
    GeneratedQuestions,
    GradedRelevance,
    SentenceVerdicts,
    SingleChunkVerdict,
    StatementVerdicts,
    SufficiencyVerdict,
    SupportVerdicts,
    Verdict,
)
from ragmetrics.options import declare_direction, forget_direction

if TYPE_CHECKING:
    from ragmetrics.schema import JudgeDetail

__all__ = [
    "BUILTIN_METRIC_NAMES",
    "CLAIM_DIAGNOSTIC_NAMES",
    "JUDGE_METRIC_SPECS",
    "JudgeMetricSpec",
    "Plan",
    "claim_table",
    "judge_metric_names",
    "metric_table",
    "registered_metrics",
    "required_fields",
    "resolve_judge_metric",
    "spec",
]

Plan = Literal[
    "chunk_usefulness",
    "statement_attribution",
    "sentence_relevance",
    "question_generation",
    "embedding_similarity",
    "statement_classification",
    "graded_relevance",
    "deterministic",
    "rubric",
    "claim_entailment",
    "context_sufficiency",
]
"""How a metric is judged:

- chunk_usefulness: one verdict per retrieved chunk, "useful for the target text" (a reference or the answer);
- statement_attribution: one verdict per statement of a target text cut in code, "supported by the contexts";
- sentence_relevance: one verdict per context sentence cut in code, "relevant to the question";
- question_generation: N questions generated from the answer, compared with the asked one by embedding;
- embedding_similarity: the cosine of two texts' embeddings, no verdict;
- statement_classification: answer and reference statements, cut in code, classified against each other
  (true positive, false positive, false negative), combined with the embedding similarity;
- context_sufficiency: one verdict on all the contexts together, "enough for a definitive answer?";
- graded_relevance: one 0-3 grade of the (single) context for the question, TREC-style;
- deterministic: no judge at all: `compute` reads the sample (exact match, ROUGE-L, citations, a team's own
  Python function); every backend runs it the same way, and it is never cached (it costs nothing).
- claim_entailment: answer and reference claims, cut in code, each judged against the other text and against
  every retrieved chunk in one call per sample; the claim-level diagnostics (`judge.claims`) all read that one
  verdict, so asking for all eleven costs what asking for one does;
- rubric: a team's own criterion (`judge.rubric`), one verdict on its scale or one per check of its checklist;
  the prompt and the verdict model are generated from the definition. The local judge cannot read a
  criterion: there the metric is not applicable, with that reason.
"""

Field = Literal[
    "question",
    "contexts",
    "answer",
    "reference",
    "context_ids",
    "relevant_ids",
    "tool_calls",
    "reference_tool_calls",
]
Compute = Callable[[Any], "tuple[float, JudgeDetail]"]
"""A deterministic metric: the sample in, its value and the detail (reason, verdicts) out; it may raise
NotApplicable with a reason, or JudgeError with a cause."""


@dataclass(frozen=True)
class JudgeMetricSpec:
    """One judge metric. Backends read `plan`, `target` and `prompts`; everything else is documentation that
    config validation, CLI help and docs/judge.md render, so it cannot drift from the code."""

    name: str
    description: str
    formula_in_words: str
    citation: str
    required: tuple[Field, ...]
    plan: Plan
    score: Callable[..., float]
    verdict_models: tuple[type[Verdict], ...]
    prompts: tuple[str, ...]
    local_variant: str
    local_threshold: float | None = None
    target: Field | None = None
    aliases: tuple[str, ...] = ()
    verdict_flag: str = "attributed"
    """statement plans: the verdict field that says yes (`attributed` for recall, `supported` for faithfulness)."""
    refusal_not_applicable: bool = False
    """statement plans: an empty target, or one whose first statement declines to answer, is not applicable."""
    compute: Compute | None = None
    """deterministic plan: the function that scores a sample."""
    value_range: tuple[float, float | None] = (0.0, 1.0)
    """Lowest and highest value (None: unbounded); a value outside is a failure of the metric, never kept."""
    higher_is_better: bool | None = True
    """None for a descriptive metric (answer length): comparisons show a change, never a better or worse."""
    origin: str = "built-in"
    """Where the metric was defined: built-in, or the file or config that declared it (docs, reports)."""
    rubric: Any = None
    """rubric plan: the definition (`judge.rubric.RubricMetric`) its prompt, verdict model and score come from."""
    timeout_s: float | None = None
    """A team's metric: seconds one call may take before that sample fails with cause `timeout` (None: the
    default of `ragmetrics._team_code.TEAM_CODE_TIMEOUT_S`)."""

    def __post_init__(self) -> None:
        if (self.plan == "deterministic") != (self.compute is not None):
            raise ValueError(f"metric {self.name!r}: a deterministic plan needs `compute`, and only it")
        if (self.plan == "rubric") != (self.rubric is not None):
            raise ValueError(f"metric {self.name!r}: a rubric plan needs `rubric`, and only it")
        low, high = self.value_range
        if high is not None and not low < high:
            raise ValueError(f"metric {self.name!r}: value range {self.value_range} is empty")


_SQUAD = "Rajpurkar et al., 'SQuAD: 100,000+ Questions for Machine Comprehension of Text', EMNLP 2016; official v1.1/v2.0 evaluation script"
_RAGAS = (
    "Es et al., 'RAGAS: Automated Evaluation of Retrieval Augmented Generation', EACL 2024 demo; RAGAS docs"
)


def _answer_metric(**fields: Any) -> JudgeMetricSpec:
    """A deterministic answer metric's spec: no prompt, no verdict model, the same under every backend."""
    return JudgeMetricSpec(
        plan="deterministic", verdict_models=(), prompts=(), local_variant="the same (no judge)", **fields
    )


JUDGE_METRIC_SPECS: tuple[JudgeMetricSpec, ...] = (
    JudgeMetricSpec(
        name="context_precision",
        description="are the chunks useful for the reference ranked high?",
        formula_in_words=(
            "sum over ranks k of precision@k x v_k, divided by the number of useful chunks (0 when none is); "
            "v_k = 1 when chunk k is useful for reaching the reference answer"
        ),
        citation=_RAGAS + " (LLMContextPrecisionWithReference)",
        required=("question", "contexts", "reference"),
        plan="chunk_usefulness",
        target="reference",
        score=formulas.context_precision_score,
        verdict_models=(ChunkVerdicts, SingleChunkVerdict),
        prompts=("context_precision", "context_precision_chunk"),
        local_variant="chunk useful when its best sentence's cosine with a reference sentence (or the whole "
        "reference) reaches the threshold",
        local_threshold=0.54,
    ),
    JudgeMetricSpec(
        name="context_utilization",
        description="are the chunks the answer used ranked high? (context precision without a reference)",
        formula_in_words="context precision with the generated answer in place of the reference",
        citation=_RAGAS + " (LLMContextPrecisionWithoutReference / ContextUtilization)",
        required=("question", "contexts", "answer"),
        plan="chunk_usefulness",
        target="answer",
        score=formulas.context_precision_score,
        verdict_models=(ChunkVerdicts, SingleChunkVerdict),
        prompts=("context_utilization", "context_utilization_chunk"),
        local_variant="as context precision, against the answer's sentences",
        local_threshold=0.49,
    ),
    JudgeMetricSpec(
        name="context_recall",
        description="how much of the reference can be attributed to the retrieved contexts?",
        formula_in_words=(
            "reference statements attributed to the contexts / all reference statements (statements cut in code)"
        ),
        citation=_RAGAS + " (LLMContextRecall)",
        required=("question", "contexts", "reference"),
        plan="statement_attribution",
        target="reference",
        score=formulas.context_recall_score,
        verdict_models=(StatementVerdicts,),
        prompts=("context_recall",),
        local_variant="statement attributed when its best cosine with a context sentence reaches the threshold",
        local_threshold=0.45,
    ),
    JudgeMetricSpec(
        name="faithfulness",
        description="is what the answer says supported by the retrieved contexts?",
        formula_in_words=(
            "answer statements supported by the contexts / all answer statements (statements cut in code, each "
            "verdict names its supporting chunk); not applicable (not 0, not NaN) when the answer is empty or "
            "declines to answer"
        ),
        citation=_RAGAS + " (Faithfulness)",
        required=("question", "contexts", "answer"),
        plan="statement_attribution",
        target="answer",
        score=formulas.faithfulness_score,
        verdict_models=(SupportVerdicts,),
        prompts=("faithfulness",),
        local_variant="statement supported when its best cosine with a context sentence reaches the threshold "
        "(the weaker variant: similarity is not entailment, so a contradicted number still scores as supported)",
        local_threshold=0.45,
        verdict_flag="supported",
        refusal_not_applicable=True,
    ),
    JudgeMetricSpec(
        name="context_relevancy",
        description="what share of the retrieved text is relevant to the question?",
        formula_in_words=(
            "context sentences relevant to the question / all context sentences (sentences cut in code); RAGAS "
            "0.1's definition, not RAGAS >= 0.2's ContextRelevance (two 0/1/2 ratings of the whole context)"
        ),
        citation=_RAGAS + " (0.1 context_relevancy)",
        required=("question", "contexts"),
        plan="sentence_relevance",
        score=formulas.context_relevancy_score,
        verdict_models=(SentenceVerdicts,),
        prompts=("context_relevancy",),
        local_variant="sentence relevant when its cosine with the question reaches the threshold",
        local_threshold=0.42,
    ),
    JudgeMetricSpec(
        name="answer_relevancy",
        description="does the answer address the question asked?",
        formula_in_words=(
            "mean cosine between the question and N questions generated from the answer, clipped to [0, 1]; "
            "0 when the answer is noncommittal under the configured rule ('any' or 'all' generated questions flagged)"
        ),
        citation=_RAGAS + " (ResponseRelevancy)",
        required=("question", "answer"),
        plan="question_generation",
        score=formulas.answer_relevancy_score,
        verdict_models=(GeneratedQuestions,),
        prompts=("answer_relevancy",),
        local_variant="cosine(question, answer) clipped to [0, 1]; no generated questions, no noncommittal check",
        aliases=("response_relevancy",),
    ),
    JudgeMetricSpec(
        name="passage_relevance",
        description="how relevant is the best retrieved passage, graded 0-3? (what fill-qrels asks a judge)",
        formula_in_words=(
            "each context graded 0 = unrelated, 1 = related but does not answer, 2 = partly answers, 3 = answers "
            "the question (one call per context); the value is the best grade / 3"
        ),
        citation="Upadhyay et al., 'UMBRELA: UMbrela is the (Open-Source Reproduction of the) Bing RELevance "
        "Assessor', 2024 (TREC RAG's LLM relevance grades)",
        required=("question", "contexts"),
        plan="graded_relevance",
        score=formulas.passage_relevance_score,
        verdict_models=(GradedRelevance,),
        prompts=("passage_relevance",),
        local_variant="grade from the fitted sentence-relevance probability of the passage's best sentence: "
        "3 from 0.85, 2 from 0.7, 1 from 0.5, else 0",
    ),
    JudgeMetricSpec(
        name="context_sufficiency",
        description="do the contexts, together, hold all a definitive answer needs? (no reference needed)",
        formula_in_words=(
            "1 when the judge rates the contexts jointly sufficient for a definitive answer (several contexts "
            "and a few reasoning steps allowed, no outside knowledge), else 0; a run's mean is its share of "
            "questions with sufficient context. `judge.sufficiency` crosses it with the answers' outcomes"
        ),
        citation="Joren et al., 'Sufficient Context: A New Lens on Retrieval Augmented Generation Systems', "
        "ICLR 2025 (arXiv 2411.06037), the autorater's criteria",
        required=("question", "contexts"),
        plan="context_sufficiency",
        score=formulas.context_sufficiency_score,
        verdict_models=(SufficiencyVerdict,),
        prompts=("context_sufficiency",),
        local_variant="PROXY, not the paper's rater: sufficient when the contexts jointly contain at least the "
        "threshold share of the question's content words (CJK: character bigrams) and every number the "
        "question states; word overlap cannot see whether the fact asked is there",
        local_threshold=0.8,
    ),
)

JUDGE_METRIC_SPECS = (
    *JUDGE_METRIC_SPECS,
    JudgeMetricSpec(
        name="answer_similarity",
        description="how close is the answer's meaning to the reference's?",
        formula_in_words="cosine of the answer's and the reference's embeddings, clipped to [0, 1]",
        citation=_RAGAS + " (SemanticSimilarity)",
        required=("question", "answer", "reference"),
        plan="embedding_similarity",
        target="reference",
        score=formulas.answer_similarity_score,
        verdict_models=(),
        prompts=(),
        local_variant="the same formula with the local embedding model",
    ),
    JudgeMetricSpec(
        name="answer_correctness",
        description="does the answer say what the reference says, and nothing else?",
        formula_in_words=(
            "weighted mean (default 0.75, 0.25) of the statement F1 = TP / (TP + (FP + FN) / 2) and the answer "
            "similarity; TP = answer statements the reference supports, FP = those it does not, FN = reference "
            "statements the answer lacks (statements cut in code on both sides)"
        ),
        citation=_RAGAS + " (AnswerCorrectness)",
        required=("question", "answer", "reference"),
        plan="statement_classification",
        target="reference",
        score=formulas.answer_correctness_score,
        verdict_models=(CorrectnessVerdicts,),
        prompts=("answer_correctness",),
        local_variant="a statement counts as present on the other side when its best cosine with a statement "
        "there reaches the threshold (context recall's); similarity from the local embedding model",
        local_threshold=0.45,
    ),
    _answer_metric(
        name="exact_match",
        description="is the answer the reference, after SQuAD's normalisation?",
        formula_in_words="1 when answer and reference are equal after lower-casing and removing punctuation, "
        "English articles and extra whitespace, else 0",
        citation=_SQUAD,
        required=("answer", "reference"),
        score=deterministic.exact_match_score,
        compute=deterministic.exact_match,
        aliases=("em",),
    ),
    _answer_metric(
        name="token_f1",
        description="how many of the reference's words does the answer share, and how few others?",
        formula_in_words="2PR / (P + R) over the normalised tokens both share (as a multiset); P = shared / "
        "answer tokens, R = shared / reference tokens",
        citation=_SQUAD,
        required=("answer", "reference"),
        score=deterministic.token_f1_score,
        compute=deterministic.token_f1,
    ),
    _answer_metric(
        name="rouge_l",
        description="how much of the reference does the answer follow in order?",
        formula_in_words="F-measure of the longest common subsequence of tokens: 2PR / (P + R), P = LCS / "
        "answer tokens, R = LCS / reference tokens",
        citation="Lin, 'ROUGE: A Package for Automatic Evaluation of Summaries', 2004; rouge-score (Google)",
        required=("answer", "reference"),
        score=deterministic.rouge_l_score,
        compute=deterministic.rouge_l,
    ),
    _answer_metric(
        name="answer_length",
        description="how long is the answer, in tokens?",
        formula_in_words="number of tokens (words; a Chinese, Japanese or Korean character is one)",
        citation="descriptive",
        required=("answer",),
        score=deterministic.answer_length_score,
        compute=deterministic.answer_length,
        value_range=(0.0, None),
        higher_is_better=None,
    ),
    _answer_metric(
        name="citation_validity",
        description="do the answer's citations [1]..[n] point at passages that were retrieved?",
        formula_in_words="citations naming a passage 1..n of the contexts / all citations; not applicable "
        "when the answer cites nothing",
        citation="ALCE (Gao et al., EMNLP 2023) citation format",
        required=("answer", "contexts"),
        score=deterministic.citation_share_score,
        compute=deterministic.citation_validity,
    ),
    _answer_metric(
        name="citation_precision",
        description="are the passages the answer cites relevant, by the qrels?",
        formula_in_words="distinct cited retrieved passages judged relevant (grade >= 1) / distinct cited "
        "retrieved passages",
        citation="ALCE (Gao et al., EMNLP 2023), with relevance from human judgments instead of an NLI model",
        required=("answer", "contexts", "context_ids", "relevant_ids"),
        score=deterministic.citation_share_score,
        compute=deterministic.citation_precision,
    ),
    _answer_metric(
        name="citation_recall",
        description="does the answer cite the relevant passages it was given?",
        formula_in_words="retrieved passages judged relevant that the answer cites / retrieved passages judged "
        "relevant; not applicable when none is",
        citation="ALCE (Gao et al., EMNLP 2023), with relevance from human judgments instead of an NLI model",
        required=("answer", "contexts", "context_ids", "relevant_ids"),
        score=deterministic.citation_share_score,
        compute=deterministic.citation_recall,
    ),
    _answer_metric(
        name="tool_call_accuracy",
        description="did the agent call the expected tools, in order, with the expected arguments?",
        formula_in_words="0 unless the names of the calls made equal the reference's, in order; else the mean "
        "over reference calls of the share of their arguments the paired call gives equally (string forms)",
        citation=_RAGAS + " (ToolCallAccuracy, strict order, exact arguments)",
        required=("question", "tool_calls", "reference_tool_calls"),
        score=deterministic.tool_call_accuracy_score,
        compute=deterministic.tool_call_accuracy_metric,
    ),
    _answer_metric(
        name="tool_call_f1",
        description="how many of the calls made were expected, and how many expected calls were made?",
        formula_in_words="2PR / (P + R) over calls as (name, arguments) items: P = made and expected / made, "
        "R = made and expected / expected; 1 when none was made and none expected",
        citation=_RAGAS + " (ToolCallF1)",
        required=("question", "tool_calls", "reference_tool_calls"),
        score=deterministic.tool_call_f1_score,
        compute=deterministic.tool_call_f1_metric,
    ),
)

_RAGCHECKER = (
    "Ru et al., 'RAGChecker: A Fine-grained Framework for Diagnosing Retrieval-Augmented Generation', "
    "NeurIPS 2024 D&B; ragchecker/metrics.py"
)
_CLAIM_DIAGNOSTICS: tuple[tuple[str, str, str, bool], ...] = (
    # name, what it asks, formula in words, higher is better
    ("claim_precision", "how many of the answer's claims does the reference make?",
     "answer claims the reference entails / answer claims", True),
    ("claim_recall", "how many of the reference's claims does the answer make?",
     "reference claims the answer entails / reference claims", True),
    ("claim_f1", "claim precision and recall together",
     "2PR / (P + R) of claim precision and claim recall (0 when either is 0)", True),
    ("retrieval_claim_recall", "how many of the reference's claims did retrieval bring?",
     "reference claims some chunk entails / reference claims", True),
    ("retrieval_context_precision", "how many retrieved chunks are relevant?",
     "relevant chunks / chunks; relevant: graded relevant in the qrels where the passages have them, else "
     "entailing at least one reference claim", True),
    ("claim_utilization", "of what retrieval brought, how much did the answer use?",
     "reference claims entailed by a chunk and by the answer / reference claims entailed by a chunk "
     "(RAGChecker's context utilization)", True),
    ("noise_sensitivity_relevant", "does the answer repeat wrong details from relevant chunks?",
     "answer claims the reference does not entail but a relevant chunk does / answer claims", False),
    ("noise_sensitivity_irrelevant", "does the answer take wrong claims from irrelevant chunks (noise)?",
     "answer claims the reference does not entail, entailed by an irrelevant chunk and no relevant one / "
     "answer claims", False),
    ("hallucination", "does the answer make wrong claims no chunk supports?",
     "answer claims entailed by no chunk and not by the reference / answer claims", False),
    ("self_knowledge", "does the answer make right claims from the model's memory instead of the context?",
     "answer claims entailed by no chunk but by the reference / answer claims (lower is better, as in "
     "RAGChecker: the generator should answer from its context)", False),
    ("claim_faithfulness", "how many of the answer's claims does some chunk entail?",
     "answer claims entailed by at least one chunk / answer claims", True),
)  # fmt: skip

JUDGE_METRIC_SPECS = (
    *JUDGE_METRIC_SPECS,
    *(
        JudgeMetricSpec(
            name=name,
            description=asks,
            formula_in_words=words + "; from one claim-by-chunk entailment verdict per sample",
            citation=_RAGCHECKER,
            required=("question", "contexts", "answer", "reference"),
            # An empty answer is an answer that claims nothing: the answer-side diagnostics are then not
            # applicable (claim_outcome) and the reference- and retrieval-side ones still score.
            target="answer",
            refusal_not_applicable=True,
            plan="claim_entailment",
            score=claims.diagnostic_formula(name),
            verdict_models=(ClaimVerdicts,),
            prompts=("claim_entailment",),
            local_variant="the weaker variant: a claim is entailed by a chunk (or by the other answer) when its "
            "best cosine with a sentence there reaches the threshold and no number or name conflicts; "
            "similarity is not entailment",
            local_threshold=0.45,
            higher_is_better=better,
        )
        for name, asks, words, better in _CLAIM_DIAGNOSTICS
    ),
)
CLAIM_DIAGNOSTIC_NAMES: tuple[str, ...] = tuple(name for name, *_ in _CLAIM_DIAGNOSTICS)

BUILTIN_METRIC_NAMES: tuple[str, ...] = tuple(s.name for s in JUDGE_METRIC_SPECS)

_BUILTIN: dict[str, JudgeMetricSpec] = {s.name: s for s in JUDGE_METRIC_SPECS}
_BUILTIN_ALIASES: dict[str, str] = {alias: s.name for s in JUDGE_METRIC_SPECS for alias in s.aliases}
_registered: dict[str, JudgeMetricSpec] = {}
_registry_lock = threading.Lock()


def judge_metric_names() -> tuple[str, ...]:
    """Canonical names, in the registry's order: the built-in metrics, then those registered (a team's own)."""
    return (*_BUILTIN, *_registered)


def resolve_judge_metric(name: str) -> str | None:
    """The canonical name of `name` (a name or an alias), or None when it is not a judge metric."""
    if name in _BUILTIN or name in _registered:
        return name
    return _BUILTIN_ALIASES.get(name)


def spec(name: str) -> JudgeMetricSpec:
    """The spec of a judge metric (name or alias); JudgeError(unsupported_metric) with a suggestion otherwise."""
    canonical = resolve_judge_metric(name)
    if canonical is None:
        known = [*judge_metric_names(), *_BUILTIN_ALIASES]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise JudgeError(
            f"{name!r} is not a judge metric{hint} known: {', '.join(judge_metric_names())}",
            cause="unsupported_metric",
        )
    return _registered.get(canonical) or _BUILTIN[canonical]


@contextmanager
def registered_metrics(specs: Iterable[JudgeMetricSpec]) -> Iterator[None]:
    """Metrics of a team's own (from a config or a metric file) in the registry while the block runs.

    The same registry as the built-in ones, so config validation, CLI help, did-you-mean, the cache, trust,
    comparisons and the gate treat them alike. Scoped rather than global for good: two configs in one process
    (tests, a notebook) may define different metrics under one name. A name that is a built-in metric or alias,
    or that is already registered with a different definition, is refused.
    """
    added: list[str] = []
    with _registry_lock:
        for item in specs:
            if item.name in _BUILTIN or item.name in _BUILTIN_ALIASES:
                raise ValueError(f"metric {item.name!r} ({item.origin}) has the name of a built-in metric")
            present = _registered.get(item.name)
            if present is not None and present != item:
                raise ValueError(
                    f"metric {item.name!r} ({item.origin}) is already defined differently ({present.origin})"
                )
            if present is None:
                _registered[item.name] = item
                declare_direction(item.name, item.higher_is_better)
                added.append(item.name)
    try:
        yield
    finally:
        with _registry_lock:
            for name in added:
                _registered.pop(name, None)
                forget_direction(name)


def required_fields(name: str) -> tuple[Field, ...]:
    return spec(name).required


def metric_table() -> str:
    """The Markdown table of judge metrics in docs/judge.md (regenerate it with this function)."""
    lines = [
        "| metric | what it asks | formula | needs | LLM prompt(s) | local judge | source |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in JUDGE_METRIC_SPECS:
        if s.plan in ("deterministic", "claim_entailment"):
            continue  # their own tables: deterministic_table(), claim_table()
        name = f"`{s.name}`" + (f" (alias {', '.join(f'`{a}`' for a in s.aliases)})" if s.aliases else "")
        prompts = ", ".join(f"`prompts/{p}.yaml`" for p in s.prompts) or "none (embeddings only)"
        local = s.local_variant + (
            f" (threshold {s.local_threshold:.2f})" if s.local_threshold is not None else ""
        )
        lines.append(
            f"| {name} | {s.description} | {s.formula_in_words} | {', '.join(s.required)} | {prompts} | "
            f"{local} | {s.citation} |"
        )
    return "\n".join(lines) + "\n"


def deterministic_table() -> str:
    """The Markdown table of the deterministic answer metrics in docs/judge.md."""
    lines = ["| metric | what it asks | formula | needs | range | source |", "|---|---|---|---|---|---|"]
    for s in JUDGE_METRIC_SPECS:
        if s.plan != "deterministic":
            continue
        name = f"`{s.name}`" + (f" (alias {', '.join(f'`{a}`' for a in s.aliases)})" if s.aliases else "")
        low, high = s.value_range
        span = f"[{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        lines.append(
            f"| {name} | {s.description} | {s.formula_in_words} | {', '.join(s.required)} | {span} | {s.citation} |"
        )
    return "\n".join(lines) + "\n"


def claim_table() -> str:
    """The Markdown table of the claim-level diagnostics in docs/judge.md."""
    lines = ["| metric | what it asks | formula | better |", "|---|---|---|---|"]
    for s in JUDGE_METRIC_SPECS:
        if s.plan == "claim_entailment":
            words = s.formula_in_words.split("; from one claim-by-chunk")[0]
            better = "higher" if s.higher_is_better else "lower"
            lines.append(f"| `{s.name}` | {s.description} | {words} | {better} |")
    return "\n".join(lines) + "\n"
