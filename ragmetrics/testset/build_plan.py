"""Steps 1-2 of a test-set build (`build`'s module doc): the corpus profiled and its chunks ordered for
asking (`plan_corpus`), then per drafting round a question kind for each pick and a partner chunk where the
kind needs two (`round_jobs`).

Why its own module: the dry-run estimate (`testset.estimate`) plans the same rounds without drafting."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragmetrics.errors import InputError
from ragmetrics.testset.corpus import Chunk, Corpus, open_corpus
from ragmetrics.testset.select import CorpusProfile, Selection, allocate, profile_corpus, select_chunks
from ragmetrics.testset.settings import KINDS, TestsetSettings

__all__ = ["PAIRED_KINDS", "CorpusPlan", "Job", "plan_corpus", "round_jobs"]


PAIRED_KINDS = ("multi_chunk", "comparison", "unanswerable")


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
