"""Answer metrics computed from the text alone: no judge, no call, the same value on every run.

Why they exist beside the judge metrics: they are free, exact and what published QA results are reported in
(SQuAD's exact match and F1, ROUGE-L), and "does the answer cite passages that exist" needs no opinion. Each
formula is a named function here; `judge.registry` defines the metrics on them (one entry each) and every
backend runs them the same way, without a verdict cache.

Edge cases, stated: a sample without the field a metric reads is a missing field (recorded per sample, as for
the judge metrics); exact match and F1 of two texts that normalise to nothing are 1 (SQuAD 2.0's rule: both
say nothing), of one empty text and one not 0; ROUGE-L is 0 when either side has no token (rouge-score's
rule). Citation metrics are not applicable to an answer that cites nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from ragmetrics.errors import NotApplicable
from ragmetrics.judge.text.answer_tokens import normalize_answer, rouge_tokens, squad_tokens
from ragmetrics.judge.tool_calls import (
    ArgumentMatch,
    ToolCall,
    ToolOrder,
    argument_share,
    call_items,
    sort_key,
)
from ragmetrics.schema import JudgeDetail


class RagSample(Protocol):
    """What these metrics read of a sample (`judge.base.RagSample` is one): a protocol, so this module, which
    the registry imports, never imports the sample model that imports the registry."""

    @property
    def answer(self) -> str | None: ...

    @property
    def reference(self) -> str | None: ...

    @property
    def context_ids(self) -> list[str] | None: ...

    @property
    def relevant_ids(self) -> list[str] | None: ...

    @property
    def context_list(self) -> list[str]: ...

    @property
    def tool_calls(self) -> list[ToolCall] | None: ...

    @property
    def reference_tool_calls(self) -> list[ToolCall] | None: ...


__all__ = [
    "answer_length",
    "answer_length_score",
    "citation_precision",
    "citation_recall",
    "citation_share_score",
    "citation_validity",
    "cited_passages",
    "exact_match",
    "exact_match_score",
    "lcs_length",
    "rouge_l",
    "rouge_l_score",
    "token_f1",
    "token_f1_score",
    "tool_call_accuracy_metric",
    "tool_call_accuracy_score",
    "tool_call_f1_metric",
    "tool_call_f1_score",
]

_CITATION = re.compile(r"\[(\s*\d{1,4}(?:\s*(?:[,;]|-|–)\s*\d{1,4})*\s*)\]")
_CITATION_PART = re.compile(r"(\d{1,4})(?:\s*(?:-|–)\s*(\d{1,4}))?")
MAX_RANGE = 100
"""A range citation "[3-7]" expands to its members; a wider range is read as its two ends only."""


def exact_match_score(prediction: str, reference: str) -> float:
    """1.0 when both texts normalise (SQuAD) to the same string, else 0.0."""
    return 1.0 if squad_tokens(prediction) == squad_tokens(reference) else 0.0


def token_f1_score(prediction: str, reference: str) -> float:
    """SQuAD's token F1: 2PR / (P + R) over the multiset of normalised tokens both texts share."""
    predicted, expected = squad_tokens(prediction), squad_tokens(reference)
    if not predicted or not expected:
        return 1.0 if predicted == expected else 0.0
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(expected)
    return 2 * precision * recall / (precision + recall)


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists (O(len(a) x len(b)) time, O(len(b)) memory)."""
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for token in a:
        current = [0]
        for j, other in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if token == other else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l_score(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure (beta 1): LCS / len over each side, combined as 2PR / (P + R); 0 without tokens."""
    predicted, expected = rouge_tokens(prediction), rouge_tokens(reference)
    lcs = lcs_length(expected, predicted)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(predicted), lcs / len(expected)
    return 2 * precision * recall / (precision + recall)


def answer_length_score(tokens: Sequence[str]) -> float:
    """The number of tokens (`rouge_tokens`: words, and each Chinese, Japanese or Korean character)."""
    return float(len(tokens))


def citation_share_score(verdicts: Sequence[object]) -> float:
    """Citation validity, precision and recall: the share of positive verdicts over what each counts (valid
    citations / citations; relevant cited / cited; cited relevant / relevant). Callers refuse empty lists."""
    if not verdicts:
        raise ValueError("a citation share over no verdicts is undefined")
    return sum(1 for v in verdicts if v) / len(verdicts)


def cited_passages(answer: str) -> list[int]:
    """The passage numbers an answer cites as `[1]`, `[2, 3]`, `[1][4]` or `[2-4]`, 1-based, in order of appearance,
    repeats kept (a citation to a missing passage counts each time it is made).

    Raises NotApplicable when the answer cites nothing: a citation metric says nothing about such an answer.
    """
    numbers: list[int] = []
    for match in _CITATION.finditer(answer):
        for part in _CITATION_PART.finditer(match.group(1)):
            first = int(part.group(1))
            last = int(part.group(2)) if part.group(2) else first
            if first <= last and last - first < MAX_RANGE:
                numbers.extend(range(first, last + 1))
            else:
                numbers.extend((first, last))
    if not numbers:
        raise NotApplicable("the answer cites no passage ([1]..[n])")
    return numbers


# The metrics: (value, detail) from a sample; `judge.registry` names them and the backends run them as they are.


def _texts(sample: RagSample) -> tuple[str, str]:
    return str(sample.answer), str(sample.reference)


def exact_match(sample: RagSample) -> tuple[float, JudgeDetail]:
    answer, reference = _texts(sample)
    value = exact_match_score(answer, reference)
    said = "equals" if value else "differs from"
    shown = normalize_answer(answer)[:80]
    return value, JudgeDetail(
        reason=f"the normalised answer {shown!r} {said} the normalised reference (SQuAD)"
    )


def token_f1(sample: RagSample) -> tuple[float, JudgeDetail]:
    answer, reference = _texts(sample)
    predicted, expected = squad_tokens(answer), squad_tokens(reference)
    same = sum((Counter(predicted) & Counter(expected)).values())
    value = token_f1_score(answer, reference)
    reason = (f"{same} shared tokens; {len(predicted)} in the answer, {len(expected)} in the reference "
              f"(SQuAD normalisation): F1 {value:.4f}")  # fmt: skip
    return value, JudgeDetail(reason=reason)


def rouge_l(sample: RagSample) -> tuple[float, JudgeDetail]:
    answer, reference = _texts(sample)
    predicted, expected = rouge_tokens(answer), rouge_tokens(reference)
    lcs = lcs_length(expected, predicted)
    value = rouge_l_score(answer, reference)
    reason = (f"longest common subsequence {lcs} tokens; {len(predicted)} in the answer, {len(expected)} in "
              f"the reference: ROUGE-L F {value:.4f}")  # fmt: skip
    return value, JudgeDetail(reason=reason)


def answer_length(sample: RagSample) -> tuple[float, JudgeDetail]:
    tokens = rouge_tokens(str(sample.answer))
    return answer_length_score(tokens), JudgeDetail(
        reason=f"{len(tokens)} tokens (words; a Chinese, Japanese or Korean character counts as one)"
    )


def citation_validity(sample: RagSample) -> tuple[float, JudgeDetail]:
    cited = cited_passages(str(sample.answer))
    count = len(sample.context_list)
    missing = [n for n in cited if not 1 <= n <= count]
    verdicts = [{"citation": n, "verdict": n not in missing} for n in cited]
    value = citation_share_score([v["verdict"] for v in verdicts])
    reason = f"{len(cited) - len(missing)} of {len(cited)} citations point at one of the {count} passages"
    if missing:
        reason += f"; no passage {', '.join(f'[{n}]' for n in sorted(set(missing)))}"
    return value, JudgeDetail(verdicts=verdicts, reason=reason)


def _cited_and_relevant(sample: RagSample) -> tuple[list[int], set[int]]:
    """Distinct valid cited passage numbers (1-based) and the numbers of the passages judged relevant."""
    ids = list(sample.context_ids or [])
    relevant_ids = set(sample.relevant_ids or [])
    cited = sorted({n for n in cited_passages(str(sample.answer)) if 1 <= n <= len(ids)})
    relevant = {n for n, doc in enumerate(ids, start=1) if doc in relevant_ids}
    return cited, relevant


def citation_precision(sample: RagSample) -> tuple[float, JudgeDetail]:
    cited, relevant = _cited_and_relevant(sample)
    if not cited:
        raise NotApplicable("the answer cites no passage that was retrieved")
    hits = [n for n in cited if n in relevant]
    verdicts = [{"citation": n, "passage_id": (sample.context_ids or [])[n - 1], "verdict": n in relevant}
                for n in cited]  # fmt: skip
    reason = (f"{len(hits)} of {len(cited)} cited passages are judged relevant in the qrels "
              "(an unjudged passage counts as not relevant)")  # fmt: skip
    return citation_share_score([v["verdict"] for v in verdicts]), JudgeDetail(
        verdicts=verdicts, reason=reason
    )


def citation_recall(sample: RagSample) -> tuple[float, JudgeDetail]:
    cited, relevant = _cited_and_relevant(sample)
    if not relevant:
        raise NotApplicable("no retrieved passage is judged relevant in the qrels: nothing to cite")
    hits = sorted(relevant & set(cited))
    verdicts = [{"passage": n, "passage_id": (sample.context_ids or [])[n - 1], "verdict": n in hits}
                for n in sorted(relevant)]  # fmt: skip
    reason = f"{len(hits)} of the {len(relevant)} retrieved passages judged relevant are cited"
    return citation_share_score([v["verdict"] for v in verdicts]), JudgeDetail(
        verdicts=verdicts, reason=reason
    )


def _calls_reason(made: int, expected: int, value: float, what: str) -> str:
    return f"{what} {value:.4f}: {made} call(s) made, {expected} expected"


def tool_call_accuracy_metric(sample: RagSample) -> tuple[float, JudgeDetail]:
    """RAGAS's tool call accuracy, strict order and exact arguments (`judge.tool_calls`)."""
    made, expected = sample.tool_calls or [], sample.reference_tool_calls or []
    value = tool_call_accuracy_score(made, expected)
    names = ", ".join(c.name for c in made) or "none"
    return value, JudgeDetail(reason=_calls_reason(len(made), len(expected), value, "tool call accuracy")
                              + f" (made: {names})"[:200])  # fmt: skip


def tool_call_f1_metric(sample: RagSample) -> tuple[float, JudgeDetail]:
    """RAGAS's tool call F1, exact arguments (`judge.tool_calls`)."""
    made, expected = sample.tool_calls or [], sample.reference_tool_calls or []
    value = tool_call_f1_score(made, expected)
    return value, JudgeDetail(reason=_calls_reason(len(made), len(expected), value, "tool call F1"))


def tool_call_accuracy_score(
    made: Sequence[ToolCall],
    expected: Sequence[ToolCall],
    *,
    order: ToolOrder = "strict",
    arguments: ArgumentMatch = "exact",
) -> float:
    """RAGAS's tool call accuracy (`judge.tool_calls` has the definition in words and the options)."""
    if not made and not expected:
        return 1.0
    if not made or not expected:
        return 0.0
    made_list, expected_list = list(made), list(expected)
    if order == "any":
        made_list, expected_list = sorted(made_list, key=sort_key), sorted(expected_list, key=sort_key)
    names_made, names_expected = [c.name for c in made_list], [c.name for c in expected_list]
    if names_made != names_expected:
        return 0.0
    total = sum(
        argument_share(m.args, e.args, arguments) for m, e in zip(made_list, expected_list, strict=True)
    )
    return total / len(expected_list)


def tool_call_f1_score(
    made: Sequence[ToolCall], expected: Sequence[ToolCall], *, arguments: ArgumentMatch = "exact"
) -> float:
    """RAGAS's tool call F1 over (name, arguments) items (`judge.tool_calls`)."""
    made_items, expected_items = call_items(made, arguments), call_items(expected, arguments)
    if not made_items and not expected_items:
        return 1.0
    tp = len(made_items & expected_items)
    fp, fn = len(made_items - expected_items), len(expected_items - made_items)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0
