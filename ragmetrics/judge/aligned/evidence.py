"""What the local judge saw, as numbers a head fitted on a team's labels can weigh (`head.EvidenceHead`).

A metric's shipped score throws most of its evidence away: faithfulness counts statements over a cosine
threshold, but keeps each statement's best cosine, the share of its words its chunk holds and the conflicts
found; context relevancy keeps every sentence's lift. On another domain the threshold and the weights are
wrong in ways a few labels can show. The features are:

- `judge_logit`: the shipped score's logit (clipped to [0.02, 0.98]); the head starts from it;
- from the verdicts: the mean, minimum and maximum of each numeric field the judge recorded (`cosine`,
  `held`, `score`, `grade`), the share of verdicts with a conflict, and the fitted answer model's signals;
- from the texts, lexical and language-aware (`judge.text`): how much of the answer (and of its weakest
  statement) the contexts hold, how much of the question the best chunk and the answer cover, what the answer
  adds, its length, and how much of the reference the contexts and the answer hold.

A feature a sample cannot have (no answer, no reference) is left out of its row and filled by the head with
the training mean, so it weighs nothing for that sample.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.judge.base import RagSample
from ragmetrics.judge.text.sentences import split_statements
from ragmetrics.judge.text.signals import content_units, coverage, novelty
from ragmetrics.judge.text.support import grounded_share

__all__ = ["JUDGE_LOGIT", "evidence_features", "logit"]

JUDGE_LOGIT = "judge_logit"
_CLIP = 0.02
_VERDICT_FIELDS = ("cosine", "held", "score", "grade")
_MAX_STATEMENTS = 12


def logit(value: float) -> float:
    p = min(1.0 - _CLIP, max(_CLIP, value))
    return math.log(p / (1.0 - p))


def _numbers(verdicts: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    out = []
    for v in verdicts:
        x = v.get(key)
        if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
            out.append(float(x))
    return out


def _verdict_features(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    found: dict[str, float] = {}
    for key in _VERDICT_FIELDS:
        values = _numbers(verdicts, key)
        if values:
            found[f"{key}_mean"] = sum(values) / len(values)
            found[f"{key}_min"] = min(values)
            found[f"{key}_max"] = max(values)
    if any("statement" in v for v in verdicts):
        found["conflict_share"] = sum(1 for v in verdicts if v.get("conflicts")) / len(verdicts)
    for v in verdicts[:1]:
        signals = v.get("signals")
        if isinstance(signals, Mapping):
            for name, x in signals.items():
                if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x):
                    found[f"signal_{name}"] = float(x)
    return found


def _text_features(sample: RagSample) -> dict[str, float]:
    found: dict[str, float] = {}
    language = sample.language or sample.question_language
    chunks = [c for c in sample.context_list if c.strip()]
    q_units = content_units(sample.question)
    answer = str(sample.answer).strip() if isinstance(sample.answer, str) else ""
    reference = str(sample.reference).strip() if isinstance(sample.reference, str) else ""
    if chunks:
        covered = [coverage(q_units, content_units(c)) for c in chunks]
        found["question_in_best_chunk"] = max(covered)
        found["question_in_chunks_mean"] = sum(covered) / len(covered)
    if answer:
        a_units = content_units(answer)
        found["question_in_answer"] = coverage(q_units, a_units)
        found["answer_novelty"] = novelty(q_units, a_units)
        found["answer_units_log"] = math.log1p(len(a_units))
        if chunks:
            joined = "\n".join(chunks)
            found["answer_in_chunks"] = grounded_share(answer, joined, language)
            statements = (split_statements(answer, language) or [answer])[:_MAX_STATEMENTS]
            found["weakest_statement_in_chunk"] = min(
                max(grounded_share(s, c, language) for c in chunks) for s in statements
            )
    if reference:
        if chunks:
            found["reference_in_chunks"] = grounded_share(reference, "\n".join(chunks), language)
        if answer:
            found["reference_in_answer"] = grounded_share(reference, answer, language)
    return found


def evidence_features(
    sample: RagSample, value: float, verdicts: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """The features (module doc) of one judged sample: its shipped score `value` and the verdicts behind it."""
    return {JUDGE_LOGIT: logit(value), **_verdict_features(verdicts), **_text_features(sample)}
