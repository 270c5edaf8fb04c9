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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragmetrics.errors import InputError
from ragmetrics.judge.base import Judge, RagSample
from ragmetrics.judge.formulas import GRADE_SCALE
from ragmetrics.testset.corpus import Chunk, Corpus, open_corpus
from ragmetrics.testset.filters import NearDuplicates, copies_chunk
from ragmetrics.testset.offline import Draft, OfflineGenerator
from ragmetrics.testset.select import CorpusProfile, Selection, allocate, profile_corpus, select_chunks
from ragmetrics.testset.settings import KINDS, Grade, TestItem, TestsetSettings
from ragmetrics.testset.terms import content_terms, is_unspaced, term_stem

__all__ = ["FilterRecord", "TestSet", "build_testset"]

PAIRED_KINDS = ("multi_chunk", "comparison", "unanswerable")
FILTERS = (
    "near_duplicate",
    "copies_chunk",
    "pair_cooccurs",
    "not_answered",
    "unsupported_reference",
    "answered_anyway",
    "generation_failed",
)


@dataclass
class FilterRecord:
    """A draft left out, why, and the evidence (the closer question, the copied run, the judge's grade)."""

    filter: str
    kind: str
    question: str
    source_ids: list[str]
    detail: str


@dataclass
class TestSet:
    """A built test collection: the kept items, graded qrels with origins, and the build's own account."""

    __test__ = False  # not a pytest test class, whatever its name

    items: list[TestItem]
    grades: list[Grade]
    settings: TestsetSettings
    corpus_source: str
    generator: str
    n_chunks: int
    eligible_chunks: int
    skipped_chunks: dict[str, int]
    skipped_examples: list[dict[str, Any]]
    coverage: dict[str, Any]
    groups: list[dict[str, Any]]
    filtered: list[FilterRecord]
    drafts: int
    pool: dict[str, Any] | None = None
    judge: str | None = None
    seconds: float = 0.0
    review: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    corpus: Corpus | None = None
    """The corpus it was built from (not written out): `add_pool` reads pooled texts from it."""
    corpus_path: str | None = None
    """"builtin", or the corpus file's absolute path, so a nightly config finds its passages."""
    duplicate_groups: list[list[str]] = field(default_factory=list)
    """Chunks with the same text, whose grades are shared (`testset.duplicates`)."""

    def share_duplicates(self) -> None:
        """Make each question's grades equal across copies of the same text, and its qrels follow."""
        from ragmetrics.testset.duplicates import share_duplicate_grades

        if self.duplicate_groups:
            self.grades = share_duplicate_grades(self.grades, self.duplicate_groups)
            attach_qrels(self.items, self.grades)

    def qrels(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for g in self.grades:
            out.setdefault(g.query_id, {})[g.doc_id] = g.grade
        return out

    def filter_counts(self) -> dict[str, int]:
        counts = Counter(r.filter for r in self.filtered)
        return {name: counts.get(name, 0) for name in FILTERS}

    def kind_counts(self) -> dict[str, int]:
        counts = Counter(i.kind for i in self.items)
        return {k: counts.get(k, 0) for k in KINDS}

    def language_counts(self) -> dict[str, int]:
        return dict(Counter(i.language for i in self.items).most_common())

    def origin_counts(self) -> dict[str, int]:
        counts = Counter(g.origin for g in self.grades if g.grade > 0)
        return {o: counts.get(o, 0) for o in ("source", "judge", "person")}


def _item_id(draft: Draft, seed: int) -> str:
    digest = hashlib.blake2b(
        f"{seed}\x1f{draft.kind}\x1f{draft.question}\x1f{'|'.join(draft.source_ids)}".encode(),
        digest_size=5,
    ).hexdigest()
    return f"ts-{digest}"


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


def _kind_plan(shares: Mapping[str, float], picks: int, rng: np.random.Generator) -> list[str]:
    names = [k for k in KINDS if shares.get(k, 0) > 0]
    total = sum(shares[k] for k in names)
    counts = allocate([round(shares[k] / total * 1_000_000) for k in names], picks)
    plan = [k for k, c in zip(names, counts, strict=True) for _ in range(c)]
    order = rng.permutation(len(plan))
    return [plan[i] for i in order]


def _partners(
    profile: CorpusProfile,
    selection: Selection,
    picks: Sequence[int],
    plan: Sequence[str],
    rng: np.random.Generator,
) -> list[int | None]:
    """For each pick, the second chunk its kind needs (module docstring), or None."""
    sketches = profile.sketches
    groups = selection.groups
    k = selection.n_groups
    centers = np.zeros((k, sketches.shape[1]), dtype=np.float32)
    for g in range(k):
        members = sketches[groups == g]
        if members.shape[0]:
            mean = np.asarray(members.sum(axis=0)).ravel()
            centers[g] = mean / max(float(np.linalg.norm(mean)), 1e-9)
    out: list[int | None] = []
    for pick, kind in zip(picks, plan, strict=True):
        if kind not in PAIRED_KINDS:
            out.append(None)
            continue
        own = int(groups[pick])
        if kind == "unanswerable":
            far = np.argsort(centers @ centers[own])
            partner = None
            for g in far:
                members = np.flatnonzero(groups == g)
                if len(members) and int(g) != own:
                    partner = int(members[int(rng.integers(len(members)))])
                    break
            out.append(partner)
            continue
        members = np.flatnonzero(groups == own)
        members = members[members != pick]
        if not len(members):
            out.append(None)
            continue
        sims = np.asarray((sketches[members] @ sketches[pick].T).toarray()).ravel()
        # Related but not the same text: the nearest neighbour below near-identity.
        order = np.argsort(-sims)
        chosen = next((int(members[i]) for i in order if sims[i] < 0.95), None)
        out.append(chosen)
    return out


def _cooccurring(
    corpus: Corpus, pairs: Mapping[tuple[int, int], tuple[str, str]], language: str | None
) -> set[tuple[int, int]]:
    """The candidate pairs (by key) whose two terms occur together in some chunk: not unanswerable."""
    found: set[tuple[int, int]] = set()
    spaced = {
        k: (term_stem(a), term_stem(b)) for k, (a, b) in pairs.items() if not (is_unspaced(a) or is_unspaced(b))
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
            present = {s for s in (term_stem(t) for t in content_terms(text, language or "en")) if s in needed}
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


@dataclass
class CorpusPlan:
    """The corpus profiled and its chunks ordered for asking (steps 1-2 of the module docstring)."""

    source: Corpus
    profile: CorpusProfile
    selection: Selection
    representatives: dict[int, list[int]]
    rng: np.random.Generator


def plan_corpus(
    corpus: Any, settings: TestsetSettings, say: Callable[[str], None] = lambda _: None
) -> CorpusPlan:
    """Profile the corpus and order its chunks for asking (module docstring, steps 1-2)."""
    source = open_corpus(corpus)
    say(f"reading {source.source}")
    profile = profile_corpus(
        source,
        min_terms=settings.min_terms,
        boilerplate_repeats=settings.boilerplate_repeats,
        language=settings.language,
        seed=settings.seed,
    )
    if not profile.ids:
        raise InputError(
            f"no chunk is worth a question: {profile.n_chunks} chunk(s), skipped {profile.skipped_counts()}",
            source=source.source,
        )
    first = min(len(profile.ids), math.ceil(settings.size * settings.oversample) + 2)
    selection = select_chunks(profile, first, seed=settings.seed, groups=settings.groups)
    representatives: dict[int, list[int]] = {}
    for index in range(len(profile.ids)):
        members = representatives.setdefault(int(selection.groups[index]), [])
        if len(members) < 3:
            members.append(index)
    sample = (
        f" (a uniform sample of {len(profile.ids)} sketched)"
        if len(profile.ids) < profile.eligible_total
        else ""
    )
    say(f"{profile.eligible_total} of {profile.n_chunks} chunks worth asking about{sample}")
    return CorpusPlan(source, profile, selection, representatives, np.random.default_rng(settings.seed))


Job = tuple[str, list[Chunk], str]


def round_jobs(
    plan: CorpusPlan, picks: Sequence[int], shares: Mapping[str, float], *, with_representatives: bool = False
) -> tuple[list[Job], dict[str, Chunk]]:
    """One drafting round: a kind per pick (in proportion to `shares`), a partner where the kind needs two
    chunks, and the texts of all of them (one pass over the corpus)."""
    profile, selection, rng = plan.profile, plan.selection, plan.rng
    kinds = _kind_plan(shares, len(picks), rng)
    partners = _partners(profile, selection, picks, kinds, rng)
    wanted = {profile.ids[i] for i in picks} | {profile.ids[p] for p in partners if p is not None}
    if with_representatives:
        wanted |= {profile.ids[i] for members in plan.representatives.values() for i in members}
    texts = plan.source.texts_of(wanted)
    jobs: list[Job] = []
    for pick, kind, partner in zip(picks, kinds, partners, strict=True):
        chunks = [texts[profile.ids[pick]]]
        if kind in PAIRED_KINDS:
            if partner is None:
                kind = "factoid"
            else:
                chunks.append(texts[profile.ids[partner]])
        jobs.append((kind, chunks, profile.languages[pick]))
    return jobs, texts


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


def pool_grader(judge: Judge, settings: TestsetSettings) -> Judge:
    """The judge that grades the pool: `judge`, or with `pool_judge: e5` and the local judge, the local judge
    on e5, so the grades do not come from the model the dense retrievers being compared rank with."""
    if settings.pool_judge != "e5" or judge.backend != "local":
        return judge
    from ragmetrics.judge.backends.local import LocalJudge

    if isinstance(judge, LocalJudge) and judge.info().settings.get("local_model") == "e5":
        return judge
    return LocalJudge(model="e5")


def add_pool(
    testset: TestSet, pool: Sequence[Any], judge: Judge, *, corpus: Any = None, index_dir: Path | str | None = None
) -> TestSet:
    """Complete `testset`'s qrels in place from `pool` (runs over its questions, run files, or reference
    retriever kinds), graded by `judge` (`testset.pooling`); `corpus` defaults to the one it was built from.
    Unanswerable questions a pooled chunk answers are dropped and counted (`answered_anyway`)."""
    from ragmetrics.testset.pooling import pool_grades

    if corpus is None and testset.corpus is None:
        raise InputError("the test set does not know its corpus: pass corpus=", field="corpus")
    source = open_corpus(corpus if corpus is not None else testset.corpus)
    grades, info, answered = pool_grades(source, testset.items, testset.grades, pool, judge, testset.settings,
                                         index_dir=index_dir)  # fmt: skip
    for item in testset.items:
        if item.id in answered:
            testset.filtered.append(
                FilterRecord(
                    "answered_anyway",
                    item.kind,
                    item.question,
                    [],
                    f"the judge graded chunk {answered[item.id]!r} as answering it",
                )
            )
    testset.items = [i for i in testset.items if i.id not in answered]
    testset.grades = [g for g in grades if g.query_id not in answered]
    testset.pool = info
    attach_qrels(testset.items, testset.grades)
    testset.share_duplicates()
    return testset


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


def _corpus_path(corpus: Any) -> str | None:
    from pathlib import Path

    from ragmetrics.testset.corpus import BUILTIN_CORPUS

    if isinstance(corpus, str) and corpus in BUILTIN_CORPUS:
        return "builtin"
    if isinstance(corpus, str | Path):
        return str(Path(corpus).expanduser().resolve())
    return None


def attach_qrels(items: Sequence[TestItem], grades: Sequence[Grade]) -> None:
    """Each answerable item's relevant_ids/grades from `grades`, best first (what questions.jsonl carries)."""
    by_query: dict[str, list[Grade]] = {}
    for g in grades:
        by_query.setdefault(g.query_id, []).append(g)
    for item in items:
        if not item.answerable:  # no qrels at all, so retrieval metrics leave it out instead of scoring 0
            item.relevant_ids = item.relevant_grades = None
            continue
        own = sorted(by_query.get(item.id, []), key=lambda g: (-g.grade, g.doc_id))
        item.relevant_ids = [g.doc_id for g in own]
        item.relevant_grades = [g.grade for g in own]


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


def _coverage(selection: Selection, item_picks: Sequence[int]) -> dict[str, Any]:
    groups = selection.groups
    covered = Counter(int(groups[i]) for i in item_picks)
    eligible = sum(selection.group_sizes)
    in_covered = sum(selection.group_sizes[g] for g in covered)
    total = sum(covered.values())
    deviation = 0.0
    if total:
        deviation = max(
            abs(covered.get(g, 0) / total - size / eligible) for g, size in enumerate(selection.group_sizes)
        )
    return {
        "groups": selection.n_groups,
        "groups_with_questions": len(covered),
        "share_of_chunks_in_covered_groups": round(in_covered / eligible, 4) if eligible else 0.0,
        "largest_share_gap": round(deviation, 4),
    }


def _group_table(
    profile: CorpusProfile,
    selection: Selection,
    items: Sequence[TestItem],
    texts: Mapping[str, Chunk],
    representatives: Mapping[int, list[int]],
    language: str | None,
) -> list[dict[str, Any]]:
    """Per topic group: its size, share, questions, and the terms that best describe it (from a few
    members' texts, tf-idf)."""
    index_of = {cid: i for i, cid in enumerate(profile.ids)}
    questions = Counter(
        int(selection.groups[index_of[i.source_ids[0]]])
        for i in items
        if i.source_ids and i.source_ids[0] in index_of
    )
    eligible = sum(selection.group_sizes) or 1
    rows = []
    for g, size in enumerate(selection.group_sizes):
        counts: Counter[str] = Counter()
        for index in representatives.get(g, []):
            chunk = texts.get(profile.ids[index])
            if chunk is not None:
                counts.update(set(content_terms(chunk.text, language or profile.languages[index])))
        scored = sorted(counts, key=lambda t: (-counts[t] * profile.idf(t), t))
        rows.append(
            {
                "group": g,
                "chunks": size,
                "share": round(size / eligible, 4),
                "questions": questions.get(g, 0),
                "terms": scored[:5],
            }
        )
    return rows
