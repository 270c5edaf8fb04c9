"""The local judge's verdicts on relevance to the question: context sentences relevant or not, contexts graded
0-3, context sufficiency (a word-coverage proxy) and answer relevancy (cosine or a fitted model).

Why its own module: these verdicts score text against the question on one scale per model (the lift over
background, a fitted probability, or your embedder's cosine), which `RelevanceScale` carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragmetrics.errors import JudgeError, NotApplicable
from ragmetrics.judge.backends.local_model import ANSWER_FEATURES, answer_features, sentence_features
from ragmetrics.judge.backends.local_profile import LocalJudgeBase, _Profile, _r
from ragmetrics.judge.backends.local_similarity import window_cosines
from ragmetrics.judge.base import MetricOutcome, RagSample
from ragmetrics.judge.registry import JudgeMetricSpec
from ragmetrics.judge.text.sentences import split_statements
from ragmetrics.judge.text.signals import content_units, coverage
from ragmetrics.judge.text.support import numbers_in, resolve_pronoun
from ragmetrics.schema import JudgeDetail

__all__ = [
    "ANSWER_RELEVANCY_VARIANT",
    "FITTED_ANSWER_VARIANT",
    "FITTED_GRADE_CUTS",
    "GRADE_CUTS",
    "LIFT_MODELS",
    "RelevanceScale",
    "RelevanceVerdicts",
    "lift",
]


ANSWER_RELEVANCY_VARIANT = "local_cosine"
FITTED_ANSWER_VARIANT = "local_fitted"


GRADE_CUTS: tuple[float, ...] = (0.4, 0.5, 0.65)
"""Passage relevance grades 1, 2 and 3 start at these lifts (`lift`); a context sentence is relevant from grade
2's. Chosen on public labels (benchmarks/bench_judge_agreement.py: TREC DL 2019, MS MARCO, XQuAD, JSQuAD, lifts of
both bundled models): leaving any one set out picks the same cuts from the rest (docs/local_judge.md)."""


FITTED_GRADE_CUTS: tuple[float, ...] = (0.5, 0.7, 0.85)
"""Passage relevance from a fitted sentence model's probability (multilingual e5): grade 1 from 0.5, 2 from 0.7,
3 from 0.85."""

LIFT_MODELS: frozenset[str] = frozenset({"all-MiniLM-L6-v2-onnx-int8"})
"""Bundled models whose relevance verdicts use the lift over background with windows. Chosen per model on public
labels: for MiniLM the lift beats its fitted sentence model on every set (TREC DL 2019 0.683 -> 0.765 passage
relevance, 0.635 -> 0.706 context relevancy; MS MARCO; XQuAD English), while multilingual e5's fitted model
stays ahead on XQuAD and JSQuAD in other languages (context relevancy 0.80-0.96 against 0.74-0.89 by the lift)."""


@dataclass(frozen=True)
class RelevanceScale:
    """Per context sentence, the score relevance is decided on; the grade cuts and the cut for 'relevant' on
    that score's scale, and its name for reasons."""

    scores: list[float]
    grade_cuts: tuple[float, ...]
    relevant_cut: float
    name: str


def lift(cosine: float, background: float) -> float:
    """How far a text's cosine with the question rises above the question's mean cosine with unrelated text,
    as a share of the way to 1. Raw cosines sit in different ranges per model and language (multilingual e5
    puts unrelated German text near 0.7, MiniLM unrelated English near 0); the lift does not."""
    return (cosine - background) / max(1e-6, 1.0 - background)


class RelevanceVerdicts(LocalJudgeBase):
    """The local judge's handlers for relevance to the question (module doc)."""

    async def _relevance_scores(
        self, profile: _Profile, sample: RagSample
    ) -> tuple[list[tuple[int, int, str]], list[float], RelevanceScale]:
        """Every context sentence with its cosine to the question, and the scale relevance is decided on.

        With MiniLM (`LIFT_MODELS`) the score is the lift (`lift`) of the sentence or of a two-sentence window
        holding it (`window_cosines`; windows never span two chunks), whichever is higher: a window lets a
        sentence that continues the answering one count with it, and the lift is on one scale whatever the
        question. With multilingual e5 it is the probability of
        its fitted sentence model. With an embedder of your own, whose scale nobody has calibrated, it is the
        sentence's cosine, relevant from your `context_relevancy` threshold, which is also where grade 2
        starts.
        """
        sentences = self._context_sentences(sample)
        if not sentences:
            raise JudgeError(
                f"sample {sample.id!r}: the contexts contain no sentences", cause="missing_field"
            )
        question = sample.question.strip()
        texts = [s for _, _, s in sentences]
        if profile.models is None or profile.name not in LIFT_MODELS:
            q_vec, sent_vecs = await self._embed_groups(profile, [[question], texts])
            cosines = (sent_vecs @ q_vec[0]).tolist()
            if profile.models is None:
                threshold = profile.thresholds.context_relevancy
                cuts = tuple(c - GRADE_CUTS[1] + threshold for c in GRADE_CUTS)
                return sentences, cosines, RelevanceScale(cosines, cuts, threshold, "cosine")
            model = profile.models["context_relevancy"]
            background = float((await self._background(profile) @ q_vec[0]).mean())
            features = sentence_features(
                question, q_vec[0], background, texts, sent_vecs, [k for k, _, _ in sentences],
                list(sample.context_list),
            )  # fmt: skip
            scale = RelevanceScale(
                model.probability(features).tolist(), FITTED_GRADE_CUTS, model.threshold, "P(relevant)"
            )
            return sentences, cosines, scale
        q_vec, sent_vecs = await self._embed_groups(profile, [[question], texts])
        background = float((await self._background(profile) @ q_vec[0]).mean())
        cosines = (sent_vecs @ q_vec[0]).tolist()
        best = list(cosines)
        pairs = [(n, n + 1) for n in range(len(sentences) - 1) if sentences[n][0] == sentences[n + 1][0]]
        for (a, b), cos in zip(pairs, window_cosines(sent_vecs, pairs, q_vec[0]), strict=True):
            best[a], best[b] = max(best[a], cos), max(best[b], cos)
        lifts = [lift(c, background) for c in best]
        return sentences, cosines, RelevanceScale(lifts, GRADE_CUTS, GRADE_CUTS[1], "lift over background")

    async def _sentence_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """A sentence is relevant when its score reaches the scale's cut (`_relevance_scores`); with the lift,
        grade 2 of passage relevance: it answers the question at least in part."""
        profile = self._profile(sample)
        sentences, cosines, scale = await self._relevance_scores(profile, sample)
        cut, how = scale.relevant_cut, scale.name
        verdicts: list[dict[str, Any]] = []
        for (chunk, index, sentence), cos, score in zip(sentences, cosines, scale.scores, strict=True):
            relevant = score >= cut
            verdicts.append({
                "chunk": chunk,
                "sentence_index": index,
                "sentence": sentence,
                "verdict": relevant,
                "cosine": _r(cos),
                "score": _r(score),
                "reason": f"sentence {index + 1} of chunk {chunk + 1}: {how} {score:.2f} "
                f"{'>=' if relevant else '<'} {cut:.2f}",
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        hits = sum(1 for v in verdicts if v["verdict"])
        reason = (f"{hits} of {len(verdicts)} context sentences relevant to the question (local judge, "
                  f"{profile.name}, {how} >= {cut:.2f})")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _graded_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """Each context graded 0-3 by its best sentence or window (`_relevance_scores`), so a long passage is
        judged by the part that answers, not by the share of such parts; the value is the best grade / 3, as
        for the LLM judge."""
        profile = self._profile(sample)
        sentences, _, scale = await self._relevance_scores(profile, sample)
        cuts, how = scale.grade_cuts, scale.name
        best_of: dict[int, tuple[float, int]] = {}
        for (chunk, index, _), score in zip(sentences, scale.scores, strict=True):
            if chunk not in best_of or score > best_of[chunk][0]:
                best_of[chunk] = (score, index)
        verdicts: list[dict[str, Any]] = []
        for chunk in range(len(sample.context_list)):
            best, index = best_of.get(chunk, (-1.0, -1))
            grade = sum(best >= cut for cut in cuts)
            verdicts.append({
                "chunk": chunk,
                "grade": grade,
                "score": _r(best),
                "reason": f"best at sentence {index + 1}: {how} {best:.2f}, grade {grade} of 3 (cuts "
                f"{', '.join(f'{c:.2f}' for c in cuts)}; local judge)",
            })  # fmt: skip
        top = max(verdicts, key=lambda v: v["grade"])
        reason = f"best grade {top['grade']} of 3 (chunk {top['chunk'] + 1}; local judge)"
        return MetricOutcome(
            value=spec.score(top["grade"]), detail=JudgeDetail(verdicts=verdicts, reason=reason)
        )

    async def _context_sufficiency(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """A PROXY for the paper's rater, labelled so in every verdict: the contexts are pooled (a multi-hop
        answer joins several) and called sufficient when they contain the threshold share of the question's
        content words and every number the question states. Overlap cannot tell whether the asked fact is
        there ("How tall is X?" over a passage about X's history passes), so it errs towards sufficient on
        on-topic contexts; the LLM judge is the one to act on, and reports say which judge rated."""
        question = sample.question.strip()
        asked = content_units(question)
        if not asked:
            raise NotApplicable(
                f"sample {sample.id!r}: the question has no content words for the local sufficiency proxy"
            )
        pooled = "\n".join(sample.context_list)
        covered = coverage(asked, content_units(pooled))
        missing_numbers = sorted(numbers_in(question) - numbers_in(pooled))
        cut = spec.local_threshold if spec.local_threshold is not None else 1.0
        sufficient = covered >= cut and not missing_numbers
        said = "sufficient" if sufficient else "insufficient"
        why = f"{covered:.2f} of the question's content words in the contexts (cut {cut:.2f})"
        if missing_numbers:
            why += f"; number(s) {', '.join(missing_numbers)} of the question missing"
        verdicts = [{"sufficient": sufficient, "coverage": _r(covered), "missing_numbers": missing_numbers,
                     "variant": "proxy", "reason": f"local proxy: {why}"}]  # fmt: skip
        return MetricOutcome(
            value=spec.score(sufficient),
            detail=JudgeDetail(
                verdicts=verdicts,
                reason=f"context {said} by the local PROXY (word coverage, not the paper's rater): {why}",
            ),
        )

    async def _answer_relevance(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        profile = self._profile(sample)
        question = sample.question.strip()
        # "It rebinds a variable ..." answers "What does nonlocal do?" about nonlocal: the pronoun stands for
        # the question's subject, so the signals are read with the question's content words in its place.
        answer = resolve_pronoun(str(sample.answer).strip(), question)
        statements = split_statements(answer, sample.language) or [answer]
        q_vec, a_vec, st_vecs = await self._embed_groups(profile, [[question], [answer], statements])
        cos = float(q_vec[0] @ a_vec[0])
        model = profile.models["answer_relevancy"] if profile.models is not None else None
        if model is None:
            value = min(1.0, max(0.0, cos))
            verdicts = [{"variant": ANSWER_RELEVANCY_VARIANT, "cosine": _r(cos), "value": _r(value),
                         "reason": f"cosine(question, answer) = {cos:.2f}, clipped to [0, 1]"}]  # fmt: skip
            reason = (f"local variant of answer relevancy: cosine of question and answer = {value:.2f} "
                      "(no generated questions, no noncommittal check)")  # fmt: skip
            return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))
        bg_vecs = await self._background(profile)
        background, answer_background = float((bg_vecs @ q_vec[0]).mean()), float((bg_vecs @ a_vec[0]).mean())
        features = answer_features(
            question, answer, statements, q_vec[0], a_vec[0], st_vecs, background, answer_background
        )
        value = float(model.probability(features)[0])
        named = dict(zip(ANSWER_FEATURES, features[0].tolist(), strict=True))
        verdicts = [{
            "variant": FITTED_ANSWER_VARIANT,
            "value": _r(value),
            "cosine": _r(cos),
            "signals": {k: _r(v) for k, v in named.items()},
            "reason": f"P(the answer addresses the question) = {value:.2f} from cosine {cos:.2f}, "
            f"question words covered {named['question_coverage']:.2f}, new words {named['novelty']:.2f}"
            + (", a refusal" if named["refusal"] else "")
            + (f", {named['hedges']:.1f} hedges per statement" if named["hedges"] else ""),
        }]  # fmt: skip
        reason = (f"local variant of answer relevancy ({profile.name}): probability from a fitted model = "
                  f"{value:.2f} (no generated questions)")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))
