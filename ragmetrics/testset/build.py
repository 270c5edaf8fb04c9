"""Build a test collection from a corpus: questions, references and graded qrels with their provenance.

The steps (docs/testset.md walks them with figures):

1. profile the corpus in streaming passes and pick chunks that cover its topics (`testset.select`);
2. give each pick a question kind in the configured proportions, and a partner chunk where the kind needs two
   (its nearest neighbour in the same topic group; for an unanswerable question, a chunk of the most distant
   group);
3. draft a question and reference per pick: offline (`testset.offline`) or by the LLM judge's endpoint
   (`testset.llm`: same client, cache, validation with repair, retries);
4. filter: near-duplicates, questions that copy their chunk, questions whose source does not answer them and
   references their sources do not support (judge checks), unanswerable questions whose two terms occur
   together in some chunk;
5. qrels: each source chunk at `source_grade`; with a pool (runs, or reference retrievers built over the
   corpus), the judge grades the pooled top-k the qrels lack (the fill-qrels path), so a second relevant chunk
   is not a miss; every grade keeps its origin (source, judge, person).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragmetrics.errors import InputError
from ragmetrics.judge.base import Judge
from ragmetrics.testset.build_drafts import _by_kind_quota, _draft, _finish_unanswerable, _quota
from ragmetrics.testset.build_filters import _cheap_filters, _judge_filters
from ragmetrics.testset.build_plan import PAIRED_KINDS, CorpusPlan, Job, plan_corpus, round_jobs
from ragmetrics.testset.build_pool import add_pool, pool_grader
from ragmetrics.testset.build_result import FILTERS, FilterRecord, TestSet, attach_qrels
from ragmetrics.testset.build_summary import _corpus_path, _coverage, _group_table
from ragmetrics.testset.corpus import Chunk
from ragmetrics.testset.filters import NearDuplicates
from ragmetrics.testset.offline import Draft, OfflineGenerator
from ragmetrics.testset.settings import Grade, TestItem, TestsetSettings

__all__ = [  # noqa: RUF022 (in the order they were written, for the API reference)
    "PAIRED_KINDS",
    "FILTERS",
    "FilterRecord",
    "TestSet",
    "CorpusPlan",
    "plan_corpus",
    "Job",
    "round_jobs",
    "MAX_ROUNDS",
    "build_testset",
    "pool_grader",
    "add_pool",
    "attach_qrels",
]


def _item_id(draft: Draft, seed: int) -> str:
    digest = hashlib.blake2b(
        f"{seed}\x1f{draft.kind}\x1f{draft.question}\x1f{'|'.join(draft.source_ids)}".encode(),
        digest_size=5,
    ).hexdigest()
    return f"ts-{digest}"


MAX_ROUNDS = 4
"""Drafting rounds at most: the first drafts `size x oversample`; each further one drafts, for the kinds still
short, what the yield so far says is needed (never more than the corpus has left)."""


def build_testset(
    corpus: Any = "builtin",
    *,
    settings: TestsetSettings | None = None,
    judge: Judge | None = None,
    pool: Sequence[Any] = (),
    progress: Callable[[str], None] | None = None,
    index_dir: Path | str | None = None,
    **overrides: Any,
) -> TestSet:
    """Build a test collection from `corpus` (a path, ``"builtin"``, a `datasets.Dataset`, a list of
    {id, text, title?}); see the module docstring. `settings` or keyword overrides (`size=200, seed=1`) say
    what to build; `judge` runs the judge checks and grades the pool (default: the local judge); `pool` holds
    `Run`s over the generated questions or reference retriever kinds ("bm25", "dense") to build over the
    corpus (persisted in `index_dir` when given: the folder a night's `index_dir` names, so both share one
    index). The generator is the judge's LLM when it has an endpoint (unless `generator="offline"`)."""
    started = time.monotonic()
    settings = (
        (settings or TestsetSettings()).model_copy(update=overrides)
        if overrides
        else (settings or TestsetSettings())
    )
    settings = TestsetSettings.model_validate(settings.model_dump())
    say = progress or (lambda _: None)
    from ragmetrics.retrievers import ALIASES, KINDS, check_available

    for entry in pool:  # a missing package stops the build now, not after every draft was written and checked
        if isinstance(entry, str) and (entry in KINDS or entry in ALIASES):
            check_available(entry)
        elif isinstance(entry, Mapping) and isinstance(entry.get("retriever"), str):
            check_available(entry["retriever"])
    if judge is None:
        from ragmetrics.judge.select import make_judge
        from ragmetrics.judge.settings import JudgeSettings

        judge = make_judge(JudgeSettings(backend="local"))
    use_llm = settings.generator == "llm" or (settings.generator == "auto" and judge.backend != "local")
    if use_llm and judge.backend == "local":
        raise InputError("generator 'llm' needs a judge with an endpoint (judge.base_url)", field="generator")
    plan = plan_corpus(corpus, settings, say)
    source, profile, selection, rng = plan.source, plan.profile, plan.selection, plan.rng
    offline = OfflineGenerator(
        profile.df,
        profile.n_chunks,
        lead_terms=settings.lead_terms,
        variant_rate=settings.variant_rate,
        rare_weight=settings.identifier_weight,
    )
    generator_name = f"llm:{judge.info().model}" if use_llm else "offline"
    filtered: list[FilterRecord] = []
    texts: dict[str, Chunk] = {}
    seen = NearDuplicates(settings.max_similarity)
    survivors: list[Draft] = []
    quota = _quota(settings, settings.size)
    shares: dict[str, float] = {k: v for k, v in settings.kinds.items() if v > 0}
    batch, cursor, drafted = len(selection.picks), 0, 0
    for round_no in range(1, MAX_ROUNDS + 1):
        picks = selection.order[cursor : cursor + batch]
        cursor += len(picks)
        if not picks:
            break
        say(f"round {round_no}: drafting {len(picks)} ({generator_name})")
        jobs, new_texts = round_jobs(plan, picks, shares, with_representatives=round_no == 1)
        texts.update(new_texts)
        drafted += len(jobs)
        drafts = _draft(jobs, offline, judge if use_llm else None, rng, filtered)
        drafts = _finish_unanswerable(drafts, source, offline, rng, settings, filtered)
        drafts = _cheap_filters(drafts, texts, settings, filtered, seen)
        if settings.judge_checks and drafts:
            say(f"judge checks on {len(drafts)} drafts ({judge.backend} judge)")
            drafts = _judge_filters(drafts, texts, judge, settings, filtered)
        survivors.extend(drafts)
        have = Counter(d.kind for d in survivors)
        short = {k: quota[k] - have.get(k, 0) for k in quota if have.get(k, 0) < quota[k]}
        if not short or len(survivors) >= settings.size * 3:
            break
        # Draft again for the kinds still short, as many as their yield so far says they need.
        made = Counter(kind for kind, _, _ in jobs)
        need = 0.0
        for kind, missing in short.items():
            rate = have.get(kind, 0) / made[kind] if made.get(kind) else 0.5
            need += missing / max(rate, 0.1)
        shares = dict(short)
        batch = min(math.ceil(need * 1.2) + 2, len(selection.order) - cursor)
    jobs_total = drafted
    kept = _by_kind_quota(survivors, settings)
    notes = []
    got = Counter(d.kind for d in kept)
    for kind, wanted in _quota(settings, min(settings.size, len(kept))).items():
        if got.get(kind, 0) < wanted:
            notes.append(
                f"{kind}: {got.get(kind, 0)} of the {wanted} its share asks for passed the filters after "
                f"{round_no} drafting round(s); the other kinds filled the rest"
            )
    if not settings.judge_checks:
        notes.append("judge checks were off: no question was checked against its source")
    items = [
        TestItem(
            id=_item_id(d, settings.seed),
            question=d.question,
            reference=d.reference,
            kind=d.kind,
            language=d.language,
            source_ids=list(d.source_ids),
            answerable=d.answerable,
            generator=d.generator if generator_name == "offline" else generator_name,
        )
        for d in kept
    ]
    grades = [
        Grade(query_id=item.id, doc_id=doc, grade=settings.source_grade, origin="source")
        for item in items
        for doc in item.source_ids
    ]
    attach_qrels(items, grades)
    position = {cid: n for n, cid in enumerate(profile.ids)}
    testset = TestSet(
        items=items,
        grades=grades,
        settings=settings,
        corpus_source=source.source,
        generator=generator_name,
        n_chunks=profile.n_chunks,
        eligible_chunks=profile.eligible_total,
        skipped_chunks=profile.skipped_counts(),
        skipped_examples=[
            {"id": s.id, "line": s.line, "reason": s.reason, "detail": s.detail} for s in profile.skipped[:20]
        ],
        coverage=_coverage(selection, [position[i.source_ids[0]] for i in items if i.source_ids]),
        groups=_group_table(profile, selection, items, texts, plan.representatives, settings.language),
        filtered=filtered,
        drafts=jobs_total,
        judge=judge.backend,
        notes=notes,
        corpus=source,
        corpus_path=_corpus_path(corpus),
        duplicate_groups=profile.duplicate_groups,
    )
    testset.share_duplicates()
    if pool:
        grader = pool_grader(judge, settings)
        say(f"pooling {len(pool)} run(s), top {settings.pool_depth}, graded by the {grader.backend} judge"
            + (" on e5" if grader is not judge else ""))  # fmt: skip
        add_pool(testset, pool, grader, corpus=source, index_dir=index_dir)
        skipped = (testset.pool or {}).get("empty_chunks_skipped", 0)
        if skipped:
            say(f"pool: {skipped} empty chunk(s) the pooled runs ranked in their top {settings.pool_depth} skipped "
                "(not judged, not relevant), as drafting skips them")  # fmt: skip
    testset.seconds = round(time.monotonic() - started, 2)
    return testset
