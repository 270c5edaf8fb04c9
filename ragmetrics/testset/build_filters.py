"""Step 4 of a test-set build (`build`'s module doc): the drafts left out, each with its reason: cheap
filters first (a question that copies its chunk, a near-duplicate of a kept one), then the judge's checks (the
source answers the question, the sources support the reference).

Why its own module: every filter records what it dropped and why (`FilterRecord`), and the judge checks are
the build's only judge calls besides the pool."""

from __future__ import annotations

from collections.abc import Mapping

from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.formulas import GRADE_SCALE
from ragmetrics.testset.build_result import FilterRecord
from ragmetrics.testset.corpus import Chunk
from ragmetrics.testset.filters import NearDuplicates, copies_chunk
from ragmetrics.testset.offline import Draft
from ragmetrics.testset.settings import TestsetSettings


def _cheap_filters(
    drafts: list[Draft],
    texts: Mapping[str, Chunk],
    settings: TestsetSettings,
    filtered: list[FilterRecord],
    seen: NearDuplicates,
) -> list[Draft]:
    kept: list[Draft] = []
    for draft in drafts:
        for sid in draft.source_ids:
            run = copies_chunk(draft.question, texts[sid].text, settings.copy_run)
            if run is not None:
                filtered.append(
                    FilterRecord(
                        "copies_chunk",
                        draft.kind,
                        draft.question,
                        draft.source_ids,
                        f"{run} words in a row from chunk {sid!r}",
                    )
                )
                break
        else:
            closest, similarity = seen.closest(draft.question)
            if closest is not None and similarity >= settings.max_similarity:
                filtered.append(
                    FilterRecord(
                        "near_duplicate",
                        draft.kind,
                        draft.question,
                        draft.source_ids,
                        f"similarity {similarity:.2f} to {closest!r}",
                    )
                )
                continue
            seen.add(draft.question, draft.question)
            kept.append(draft)
    return kept


def _judge_filters(
    drafts: list[Draft],
    texts: Mapping[str, Chunk],
    judge: Judge,
    settings: TestsetSettings,
    filtered: list[FilterRecord],
) -> list[Draft]:
    from ragmetrics.judge.evaluate import evaluate_rag

    relevance: list[RagSample] = []
    support: list[RagSample] = []
    for n, draft in enumerate(drafts):
        if not draft.answerable:
            continue
        for m, sid in enumerate(draft.source_ids):
            asked = draft.parts[m] if len(draft.parts) == len(draft.source_ids) else draft.question
            relevance.append(
                RagSample(id=f"{n}:{m}", question=asked, contexts=[texts[sid].text], language=draft.language)
            )
        if draft.generator == "offline":
            continue  # an extractive reference: a sentence of its own source, supported by construction
        support.append(
            RagSample(
                id=str(n),
                question=draft.question,
                contexts=[texts[s].text for s in draft.source_ids],
                answer=draft.reference,
                language=draft.language,
            )
        )
    grades: dict[str, float] = {}
    failures: dict[str, str] = {}
    if relevance:
        result = evaluate_rag(
            relevance, ["passage_relevance"], judge, name="testset-answerable", progress=False
        )
        grades = {
            q: value for q, v in result.per_query.items() if (value := v.get("passage_relevance")) is not None
        }
        failures.update({f.query_id.split(":")[0]: f"{f.cause}: {f.message}" for f in result.failures})
    supported: dict[str, float] = {}
    if support:
        result = evaluate_rag(support, ["faithfulness"], judge, name="testset-supported", progress=False)
        supported = {
            q: value for q, v in result.per_query.items() if (value := v.get("faithfulness")) is not None
        }
        na = {n.query_id for n in result.not_applicable}
        supported.update({q: 1.0 for q in na})
        for f in result.failures:
            failures.setdefault(f.query_id, f"{f.cause}: {f.message}")
    kept: list[Draft] = []
    for n, draft in enumerate(drafts):
        if not draft.answerable:
            kept.append(draft)
            continue
        key = str(n)
        if key in failures:
            filtered.append(
                FilterRecord(
                    "generation_failed",
                    draft.kind,
                    draft.question,
                    draft.source_ids,
                    f"judge check failed: {failures[key]}",
                )
            )
            continue
        own = [grades.get(f"{n}:{m}") for m in range(len(draft.source_ids))]
        scaled = [round(g * GRADE_SCALE) if g is not None else None for g in own]
        if any(g is None or g < settings.min_grade for g in scaled):
            filtered.append(
                FilterRecord(
                    "not_answered",
                    draft.kind,
                    draft.question,
                    draft.source_ids,
                    f"passage_relevance grade(s) {scaled} < {settings.min_grade}",
                )
            )
            continue
        faith = supported.get(key, 1.0 if draft.generator == "offline" else None)
        if faith is None or faith < settings.min_support:
            filtered.append(
                FilterRecord(
                    "unsupported_reference",
                    draft.kind,
                    draft.question,
                    draft.source_ids,
                    f"faithfulness of the reference {faith if faith is None else round(faith, 2)} "
                    f"< {settings.min_support}",
                )
            )
            continue
        kept.append(draft)
    return kept
