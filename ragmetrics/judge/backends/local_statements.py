"""The local judge's verdicts on statements and chunks against a target: claim entailment, answer correctness's
statement classification, chunk usefulness (context precision and utilization), statement attribution
(faithfulness, context recall), and answer-reference embedding similarity.

Why its own module: these verdicts compare statements with the text meant to bear them out, by cosine with
the support checks of `text.support`; relevance to the question is `local_relevance`'s job."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragmetrics.errors import JudgeError
from ragmetrics.judge import formulas
from ragmetrics.judge.backends.local_profile import LocalJudgeBase, _r, _verdict_kind
from ragmetrics.judge.backends.local_similarity import best_match, units
from ragmetrics.judge.base import MetricOutcome, RagSample, target_statements
from ragmetrics.judge.claim_outcome import JudgedClaim, claim_inputs, claim_outcome
from ragmetrics.judge.registry import JudgeMetricSpec
from ragmetrics.judge.text.sentences import split_statements
from ragmetrics.judge.text.signals import content_units, coverage
from ragmetrics.judge.text.support import (
    conflicts,
    covers,
    disagreements,
    grounded_share,
    joint_support,
    resolve_pronoun,
    starts_with_pronoun,
)
from ragmetrics.schema import JudgeDetail

__all__ = ["CONTAINED_SHARE", "REWORDING_COSINE", "SUPPORTED_SHARE", "WEAK_MARGIN", "StatementVerdicts"]


CONTAINED_SHARE = 0.8
"""Context precision / utilization: a chunk holding this share of the target's content words and numbers is
useful whatever its cosine (a bare-entity reference such as '1989' is far from every sentence)."""


SUPPORTED_SHARE = 0.8
"""Faithfulness, context recall and answer correctness: a statement whose words and numbers one passage holds
to this share is supported below the cosine threshold, unless something in it conflicts."""

REWORDING_COSINE = 0.9
"""Answer correctness: statements this close are a rewording, so a word swapped for another ("finished" for
"completed") is not a disagreement; numbers, names and polarity are still checked."""

WEAK_MARGIN = 0.05
"""A verdict within this much of its threshold, not backed by the passage's words, says its evidence is weak."""


class StatementVerdicts(LocalJudgeBase):
    """The local judge's handlers for statements and chunks against a target (module doc)."""

    async def _claim_entailment(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """The weaker variant of the claim matrix: a claim counts as entailed by a chunk (or by the other
        answer) when its best cosine with a sentence there reaches faithfulness's threshold and no number
        or name in the claim conflicts with that text. Similarity is not entailment: a claim that changes a
        detail the checks do not catch still counts as entailed, so the LLM judge's matrix is the one to
        act on, and the detail says which judge built it."""
        inputs = claim_inputs(sample)
        profile = self._profile(sample)
        threshold = profile.thresholds.faithfulness
        sentences = self._context_sentences(sample)
        answer_statements = inputs.answer_claims
        a_vecs, r_vecs, s_vecs = await self._embed_groups(
            profile, [answer_statements, inputs.reference_claims, [s for _, _, s in sentences]]
        )
        language = sample.language or sample.question_language
        chunks = sample.context_list

        def judged(claim: str, vec: NDArray[np.float32], others: list[str], other_vecs: NDArray[np.float32],
                   other_text: str, other_name: str) -> JudgedClaim:  # fmt: skip
            match = best_match(vec[None, :], other_vecs)
            in_other = (
                match is not None
                and match.cosine >= threshold
                and not conflicts(claim, other_text, others[match.right], language, sample.question)
            )
            entailing: list[int] = []
            best_by_chunk: dict[int, tuple[float, str]] = {}
            for (k, _, sentence), cosine in zip(sentences, (s_vecs @ vec).tolist() if len(sentences) else [],
                                                strict=True):  # fmt: skip
                if k not in best_by_chunk or cosine > best_by_chunk[k][0]:
                    best_by_chunk[k] = (cosine, sentence)
            for k, (cosine, sentence) in sorted(best_by_chunk.items()):
                if cosine >= threshold and not conflicts(
                    claim, chunks[k], sentence, language, sample.question
                ):
                    entailing.append(k)
            if not entailing:  # the chunks together, each part of the claim from one of them
                entailing = joint_support(claim, chunks, language, sample.question) or []
            cos = "none" if match is None else f"{match.cosine:.2f}"
            reason = (f"best cosine with the {other_name} {cos} ({'>=' if in_other else 'below or conflicting with'} "
                      f"{threshold:.2f}); chunks at or above it: {', '.join(str(k + 1) for k in entailing) or 'none'}")  # fmt: skip
            return JudgedClaim(bool(in_other), entailing, reason)

        answer = [
            judged(c, a_vecs[i], inputs.reference_claims, r_vecs, str(sample.reference), "reference")
            for i, c in enumerate(answer_statements)
        ]
        reference = [
            judged(c, r_vecs[j], answer_statements, a_vecs, str(sample.answer or ""), "answer")
            for j, c in enumerate(inputs.reference_claims)
        ]
        return claim_outcome(spec, sample, inputs, answer, reference, cached=False, judge="local")

    async def _embedding_similarity(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        a_vec, r_vec = await self._embed_groups(
            self._profile(sample), [[str(sample.answer).strip()], [str(sample.reference).strip()]]
        )
        value = formulas.answer_similarity_score(a_vec[0].tolist(), r_vec[0].tolist())
        return MetricOutcome(
            value=value,
            detail=JudgeDetail(
                verdicts=[{"cosine": _r(value), "reason": "cosine of the answer and reference embeddings"}],
                reason=f"embedding similarity of answer and reference = {value:.4f} (local model)",
            ),
        )

    async def _statement_classification(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """Answer statements against the reference's and back: a statement is present on the other side when
        its best cosine there reaches the threshold, or the other side holds nearly all its words and numbers
        (`SUPPORTED_SHARE`), and nothing in it conflicts with the other side (`text.support.conflicts`:
        numbers, names, polarity, words it adds). Faithfulness's checks, so "2 billion" is not "4.6 billion"
        here either."""
        threshold = spec.local_threshold or 0.0
        answer_text, reference_text = str(sample.answer), str(sample.reference)
        # A statement that leans on a pronoun is read with the question's subject in its place (resolve_pronoun).
        answer_statements = [
            resolve_pronoun(st, sample.question) for st in split_statements(answer_text, sample.language)
        ]
        reference_statements = [
            resolve_pronoun(st, sample.question) for st in split_statements(reference_text, sample.language)
        ]
        if not reference_statements:
            raise JudgeError(
                f"sample {sample.id!r}: the reference contains no statements", cause="missing_field"
            )
        a_vecs, r_vecs, whole_a, whole_r = await self._embed_groups(
            self._profile(sample),
            [answer_statements, reference_statements, [answer_text.strip()], [reference_text.strip()]],
        )
        language = sample.language or sample.question_language
        question = sample.question

        def present(statement: str, vec: NDArray[np.float32], other: NDArray[np.float32], other_text: str,
                    other_statements: list[str]) -> tuple[bool, float | None, list[str]]:  # fmt: skip
            match = best_match(vec[None, :], other) if len(other) else None
            similar = match is not None and match.cosine >= threshold
            if not similar and not covers(statement, other_text, language, question):
                return False, None if match is None else match.cosine, []
            # Compared with the other side's closest statement: the rest of it says other things.
            closest = other_statements[match.right] if similar and match is not None else other_text
            rewording = match is not None and match.cosine >= REWORDING_COSINE
            found = disagreements(statement, closest, language, question, rewording=rewording)
            return not found, None if match is None else match.cosine, [str(c) for c in found]

        verdicts: list[dict[str, Any]] = []
        tp = fp = 0
        for n, statement in enumerate(answer_statements):
            hit, cosine, found = present(statement, a_vecs[n], r_vecs, reference_text, reference_statements)
            tp, fp = (tp + 1, fp) if hit else (tp, fp + 1)
            verdicts.append({"side": "answer", "statement": statement, "verdict": hit,
                             "class": "TP" if hit else "FP", "cosine": None if cosine is None else _r(cosine),
                             **({"conflicts": found} if found else {})})  # fmt: skip
        fn = 0
        for n, statement in enumerate(reference_statements):
            hit, cosine, found = present(statement, r_vecs[n], a_vecs, answer_text, answer_statements)
            fn += 0 if hit else 1
            verdicts.append({"side": "reference", "statement": statement, "verdict": hit,
                             "class": None if hit else "FN", "cosine": None if cosine is None else _r(cosine),
                             **({"conflicts": found} if found else {})})  # fmt: skip
        similarity = formulas.answer_similarity_score(whole_a[0].tolist(), whole_r[0].tolist())
        value = spec.score(tp, fp, fn, similarity)
        reason = (f"TP {tp}, FP {fp}, FN {fn} (local judge, threshold {threshold:.2f}, with number, name and "
                  f"polarity checks): F1 {formulas.statement_f1(tp, fp, fn):.4f}; similarity {similarity:.4f}")  # fmt: skip
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _chunk_usefulness(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        kind = _verdict_kind(spec)
        profile = self._profile(sample)
        threshold = profile.thresholds.for_kind(kind)
        against = str(spec.target)
        target = str(getattr(sample, against))
        target_units = units(kind, "b", target, sample.language)
        if not target_units:  # otherwise every chunk would read as "empty chunk" and score 0
            raise JudgeError(
                f"sample {sample.id!r}: the {against} contains no sentences", cause="missing_field"
            )
        chunk_units = [units(kind, "a", chunk, sample.language) for chunk in sample.context_list]
        target_vecs, *chunk_vecs = await self._embed_groups(profile, [target_units, *chunk_units])
        # A short target (a bare name, date or figure) is far from any sentence in embedding space; a chunk
        # that holds nearly all of the target's words and numbers bears it out whatever the cosine says.
        target_words = content_units(target)
        verdicts: list[dict[str, Any]] = []
        for k, vecs in enumerate(chunk_vecs):
            match = best_match(vecs, target_vecs)
            if match is None:
                verdicts.append({"chunk": k, "verdict": False, "cosine": None, "reason": "empty chunk"})
                continue
            contained = coverage(target_words, content_units(sample.context_list[k]))
            useful = match.cosine >= threshold or contained >= CONTAINED_SHARE
            where = (
                f"whole {against}"
                if match.right == len(target_units) - 1 and len(target_units) > 1
                else f"{against} sentence {match.right + 1}"
            )
            verdicts.append({
                "chunk": k,
                "verdict": useful,
                "cosine": _r(match.cosine),
                "sentence_index": match.left,
                "matched": where,
                "contained": _r(contained),
                "reason": f"best cosine {match.cosine:.2f} {'>=' if match.cosine >= threshold else '<'} "
                f"{threshold:.2f} between sentence {match.left + 1} of chunk {k + 1} and {where}; chunk "
                f"holds {contained:.0%} of the {against}'s words",
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        useful_count = sum(1 for v in verdicts if v["verdict"])
        reason = f"{useful_count} of {len(verdicts)} chunks useful for the {against} (local judge, threshold {threshold:.2f})"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))

    async def _statement_attribution(self, spec: JudgeMetricSpec, sample: RagSample) -> MetricOutcome:
        """Each statement is supported when its best cosine with a context sentence reaches the threshold and
        nothing in it conflicts with that sentence's chunk (`text.support.conflicts`: numbers, names,
        polarity, words it adds), or, below the threshold, when one chunk holds nearly all its words and
        numbers (`SUPPORTED_SHARE`) with no conflict: a terse answer is far from every sentence in embedding
        space. A statement that starts with a pronoun is also read after the question ("What does nonlocal
        do? It rebinds ..."), since alone it has lost its subject; the better cosine counts. One that no chunk
        supports alone is supported when the chunks together do, each of its parts by one chunk
        (`text.support.joint_support`); its verdict then lists them as `chunks`. (An answer copied across
        chunk boundaries never gets here as one statement: `target_statements` cuts it where the copies meet.)"""
        profile = self._profile(sample)
        threshold = profile.thresholds.for_kind(_verdict_kind(spec))
        target_field = str(spec.target)
        statements = target_statements(spec, sample)  # as in the LLM judge: never a 0 over no statements
        sentences = self._context_sentences(sample)
        question = sample.question.strip()
        leaning = [n for n, st in enumerate(statements) if starts_with_pronoun(st)]
        stmt_vecs, sent_vecs, read_after_question = await self._embed_groups(
            profile,
            [statements, [s for _, _, s in sentences], [f"{question} {statements[n]}" for n in leaning]],
        )
        chunks = sample.context_list
        language = sample.language or sample.question_language
        # What an answer adds must be in the context (faithfulness); a reference is people's own wording of
        # the fact, so for context recall only its numbers, names and polarity are checked.
        answer_side = target_field == "answer"
        verdicts: list[dict[str, Any]] = []
        for n, statement in enumerate(statements):
            match = best_match(stmt_vecs[n : n + 1], sent_vecs)
            if match is None:
                verdicts.append({"statement": statement, "verdict": False, "cosine": None,
                                 "reason": "the context has no sentences"})  # fmt: skip
                continue
            if n in leaning:
                alt = best_match(read_after_question[leaning.index(n) : leaning.index(n) + 1], sent_vecs)
                if alt is not None and alt.cosine > match.cosine:
                    match = alt
            chunk, index, best = sentences[match.right]
            similar = match.cosine >= threshold
            held, held_chunk = max(
                (grounded_share(statement, text, language), k) for k, text in enumerate(chunks)
            )
            if not similar and held >= SUPPORTED_SHARE:
                chunk, index, best = held_chunk, -1, chunks[held_chunk]
            # Numbers and names are looked for in the whole chunk of the best sentence: in documentation a
            # detail is often stated sentences away from the sentence most like the statement.
            checked = similar or held >= SUPPORTED_SHARE
            found = (
                conflicts(statement, chunks[chunk], best, language, question, additions=answer_side)
                if checked
                else []
            )
            attributed = checked and not found
            together = (
                None
                if attributed
                else joint_support(statement, chunks, language, question, additions=answer_side)
            )
            if together is not None:
                attributed, found, chunk, index = True, [], together[0], -1
                reason = (f"no one chunk holds it, but chunks {', '.join(str(k + 1) for k in together)} "
                          "together do, each part without conflict")  # fmt: skip
            elif similar:
                reason = (f"best cosine {match.cosine:.2f} >= {threshold:.2f} with sentence {index + 1} of "
                          f"chunk {chunk + 1}")  # fmt: skip
            elif checked:
                reason = (f"best cosine {match.cosine:.2f} < {threshold:.2f}, but chunk {chunk + 1} holds "
                          f"{held:.0%} of its words and numbers")  # fmt: skip
            else:
                reason = (f"best cosine {match.cosine:.2f} < {threshold:.2f} with sentence {index + 1} of chunk "
                          f"{chunk + 1}, and no chunk holds most of its words (at most {held:.0%})")  # fmt: skip
            if found:
                reason += "; but " + "; ".join(str(c) for c in found)
            elif attributed and match.cosine < threshold + WEAK_MARGIN and held < SUPPORTED_SHARE:
                reason += "; weak evidence: close to the threshold and few of its words in the chunk"
            verdicts.append({
                "statement": statement,
                "verdict": attributed,
                "cosine": _r(match.cosine),
                "chunk": chunk,
                "sentence_index": index,
                "held": _r(held),
                **({"chunks": together} if together is not None else {}),
                **({"conflicts": [str(c) for c in found]} if found else {}),
                "reason": reason,
            })  # fmt: skip
        value = spec.score([v["verdict"] for v in verdicts])
        hits = sum(1 for v in verdicts if v["verdict"])
        how = "supported by" if spec.verdict_flag == "supported" else "attributed to"
        reason = f"{hits} of {len(verdicts)} {target_field} statements {how} the context (local judge, threshold {threshold:.2f})"
        return MetricOutcome(value=value, detail=JudgeDetail(verdicts=verdicts, reason=reason))
