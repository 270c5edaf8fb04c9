"""Step 3 of a test-set build (`build`'s module doc): a draft per job, by the LLM or offline; offline
unanswerable questions finished on a pair of terms no chunk holds together; and the kept drafts chosen by
each kind's quota.

Why its own module: drafting is the step that differs between the offline and the LLM generator; the plan
before it and the filters after it do not."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from ragmetrics.judge.base import Judge
from ragmetrics.testset.build_plan import Job
from ragmetrics.testset.build_result import FilterRecord
from ragmetrics.testset.corpus import Corpus
from ragmetrics.testset.offline import Draft, OfflineGenerator
from ragmetrics.testset.select import allocate
from ragmetrics.testset.settings import KINDS, TestsetSettings
from ragmetrics.testset.terms import content_terms, is_unspaced, term_stem


def _quota(settings: TestsetSettings, size: int) -> dict[str, int]:
    """Questions of each kind in a test set of `size`, by the configured shares (largest remainders)."""
    names = [k for k in KINDS if settings.kinds.get(k, 0) > 0]
    total = sum(settings.kinds[k] for k in names)
    counts = allocate([round(settings.kinds[k] / total * 1_000_000) for k in names], size)
    return dict(zip(names, counts, strict=True))


def _draft(
    jobs: Sequence[Job],
    offline: OfflineGenerator,
    llm_judge: Judge | None,
    rng: np.random.Generator,
    filtered: list[FilterRecord],
) -> list[Draft]:
    """Step 3: a draft per job, by the LLM when given, else offline; failures recorded with their cause."""
    outcomes: list[Draft | str | None]
    if llm_judge is not None:
        from ragmetrics.testset.llm import draft_with_llm

        outcomes = list(draft_with_llm(llm_judge, jobs))
    else:
        outcomes = []
        for kind, chunks, language in jobs:
            draft = offline.draft(kind, chunks, language, rng)
            if draft is None and kind != "factoid":
                draft = offline.draft("factoid", chunks[:1], language, rng)
            outcomes.append(draft)
    drafts: list[Draft] = []
    for (kind, chunks, _), outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, Draft):
            drafts.append(outcome)
        elif isinstance(outcome, str):
            filtered.append(FilterRecord("generation_failed", kind, "", [c.id for c in chunks], outcome))
    return drafts


def _finish_unanswerable(
    drafts: list[Draft],
    source: Corpus,
    offline: OfflineGenerator,
    rng: np.random.Generator,
    settings: TestsetSettings,
    filtered: list[FilterRecord],
) -> list[Draft]:
    """Offline unanswerable drafts: the first pair of terms that no chunk holds together makes the question."""
    candidates = {(n, m): pair for n, d in enumerate(drafts) for m, pair in enumerate(d.pair_candidates)}
    together = _cooccurring(source, candidates, settings.language) if candidates else set()
    out: list[Draft] = []
    for n, draft in enumerate(drafts):
        if draft.pair_candidates:
            free = [p for m, p in enumerate(draft.pair_candidates) if (n, m) not in together]
            if not free:
                a, b = draft.pair_candidates[0]
                filtered.append(
                    FilterRecord(
                        "pair_cooccurs",
                        draft.kind,
                        f"{a} / {b}",
                        draft.source_ids,
                        f"each of {len(draft.pair_candidates)} term pairs occurs together in some chunk",
                    )
                )
                continue
            offline.finish_unanswerable(draft, free[0], rng)
        out.append(draft)
    return out


def _cooccurring(
    corpus: Corpus, pairs: Mapping[tuple[int, int], tuple[str, str]], language: str | None
) -> set[tuple[int, int]]:
    """The candidate pairs (by key) whose two terms occur together in some chunk: not unanswerable."""
    found: set[tuple[int, int]] = set()
    spaced = {
        k: (term_stem(a), term_stem(b))
        for k, (a, b) in pairs.items()
        if not (is_unspaced(a) or is_unspaced(b))
    }
    unspaced = {k: pair for k, pair in pairs.items() if k not in spaced}
    by_stem: dict[str, list[tuple[int, int]]] = {}
    for key, (first, _) in spaced.items():
        by_stem.setdefault(first, []).append(key)
    needed = {stem for pair in spaced.values() for stem in pair}
    for chunk in corpus:
        text = f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text
        if spaced:
            # Only the stems some pair needs are looked up, so a chunk costs one tokenisation whatever the
            # number of pairs.
            present = {
                s for s in (term_stem(t) for t in content_terms(text, language or "en")) if s in needed
            }
            if len(present) >= 2:
                for stem in present:
                    for key in by_stem.get(stem, ()):
                        if key not in found and spaced[key][1] in present:
                            found.add(key)
        if unspaced:
            lowered = text.lower()
            for key, (a, b) in unspaced.items():
                if key not in found and a in lowered and b in lowered:
                    found.add(key)
        if len(found) == len(pairs):
            break
    return found


def _by_kind_quota(drafts: Sequence[Draft], settings: TestsetSettings) -> list[Draft]:
    """`settings.size` drafts, each kind at its configured share where enough survived the filters (the rest
    filled from the other kinds in pick order), in pick order."""
    quota = _quota(settings, min(settings.size, len(drafts)))
    chosen: list[int] = []
    taken: Counter[str] = Counter()
    for n, draft in enumerate(drafts):
        if taken[draft.kind] < quota.get(draft.kind, 0):
            chosen.append(n)
            taken[draft.kind] += 1
    left = settings.size - len(chosen)
    if left > 0:
        rest = [n for n in range(len(drafts)) if n not in set(chosen)]
        chosen.extend(rest[:left])
    return [drafts[n] for n in sorted(chosen)]
