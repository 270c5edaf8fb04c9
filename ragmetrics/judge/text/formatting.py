"""The rule that says whether a judge metric depends on how answers are formatted, on a night's own answers.

Why: a faithfulness difference between two runs whose answers are both copied from their chunks was declared
significant (issue 66) because one generator put full stops between the copies and the other did not. A
metric of the answer's content must not move when only the answer's formatting does; where it does on the
night's data, a paired test on it compares formatting, and the verdict must say so instead of declaring a
difference.

The rule, in one place:

- Which metrics: `CHECKED_METRICS`, the judge metrics that are shares of the answer's statements or claims
  (cut in code, so where sentences break decides what is judged).
- Which answers: up to `SAMPLE_ANSWERS` per run, chosen by a hash of their id (the same answers every night),
  among those whose statements all got one verdict (score 0 or 1). A mixed answer's share moves legitimately
  when two of its statements become one, so only the all-or-nothing ones can show a judge that reads
  formatting.
- Which perturbations (`perturbations`), none of which changes a word:
  `joined`: the full stops between sentences removed (one run-on sentence, as an extractive generator writes
  copied docstring paragraphs); `stopped`: a full stop put where copies of different chunks meet
  (`text.copies`); `spaced`: line breaks and runs of spaces turned into single spaces.
- When an answer changed: one of its perturbations moves its score by more than `SCORE_TOLERANCE`.
- When the metric depends on formatting: more than `FLAG_SHARE` of the checked answers changed (and at least
  one did).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ragmetrics.judge.text.copies import copy_pieces
from ragmetrics.judge.text.sentences import split_sentences

__all__ = [
    "CHECKED_METRICS",
    "FLAG_SHARE",
    "PERTURBATIONS",
    "SAMPLE_ANSWERS",
    "SCORE_TOLERANCE",
    "FormattingCheck",
    "answer_changed",
    "checkable",
    "perturbations",
    "sample_ids",
]

CHECKED_METRICS = frozenset(
    {
        "faithfulness",
        "claim_faithfulness",
        "claim_precision",
        "hallucination",
        "self_knowledge",
        "noise_sensitivity_relevant",
        "noise_sensitivity_irrelevant",
    }
)
PERTURBATIONS = ("joined", "stopped", "spaced")
SAMPLE_ANSWERS = 50
SCORE_TOLERANCE = 0.01
FLAG_SHARE = 0.05

_END = re.compile(r"[.!?。！？]+$")
_CJK_END = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]$")
_SPACES = re.compile(r"\s+")


def _join(parts: Sequence[str], stop: bool) -> str:
    """Parts joined with a full stop after each (`stop`) or with none between them; no space after a Chinese or
    Japanese part, which those scripts do not write."""
    out = ""
    for n, part in enumerate(parts):
        text = _END.sub("", part.strip()) if n < len(parts) - 1 else part.strip()
        cjk = _CJK_END.search(text) is not None
        if n < len(parts) - 1:
            text += ("。" if cjk else ". ") if stop else ("" if cjk else " ")
        out += text
    return out.strip()


def perturbations(answer: str, contexts: Sequence[str], language: str | None = None) -> dict[str, str]:
    """The answer re-formatted each way of `PERTURBATIONS` that changes its text (module doc)."""
    out: dict[str, str] = {}
    sentences = split_sentences(answer, language)
    if len(sentences) > 1:
        out["joined"] = _join(sentences, stop=False)
    pieces = copy_pieces(answer, contexts)
    if len(pieces) > 1:
        out["stopped"] = _join(pieces, stop=True)
    spaced = _SPACES.sub(" ", answer).strip()
    if spaced != answer.strip():
        out["spaced"] = spaced
    return {name: text for name, text in out.items() if text.strip() and text != answer}


def checkable(score: float | None) -> bool:
    """Whether an answer's score can show formatting dependence: all its statements got one verdict."""
    return score is not None and (score <= SCORE_TOLERANCE or score >= 1 - SCORE_TOLERANCE)


def sample_ids(scores: Mapping[str, float | None], size: int = SAMPLE_ANSWERS) -> list[str]:
    """Up to `size` checkable ids, the same ones on every night with the same answers' ids."""
    ids = [i for i, s in scores.items() if checkable(s)]
    return sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())[:size]


def answer_changed(original: float, perturbed: Mapping[str, float | None]) -> list[str]:
    """The perturbations that moved the score beyond `SCORE_TOLERANCE` (a score lost counts as moved)."""
    return [name for name, v in perturbed.items() if v is None or abs(v - original) > SCORE_TOLERANCE]


@dataclass(frozen=True)
class FormattingCheck:
    """One metric's check on a night: how many answers were re-scored and how many changed."""

    metric: str
    checked: int
    changed: int
    by_perturbation: dict[str, int]

    @property
    def depends(self) -> bool:
        return self.changed > 0 and self.changed > FLAG_SHARE * self.checked

    def describe(self) -> str:
        ways = ", ".join(f"{n} {name}" for name, n in sorted(self.by_perturbation.items()) if n)
        if self.depends:
            return (f"{self.metric} depends on formatting on this night's data: {self.changed} of {self.checked} "
                    f"answers changed score when only their formatting changed ({ways})")  # fmt: skip
        limit = math.floor(FLAG_SHARE * self.checked)
        return (f"{self.metric} does not depend on formatting on this night's data: {self.changed} of "
                f"{self.checked} answers changed score when only their formatting changed (at most {limit} "
                "allowed)")  # fmt: skip
