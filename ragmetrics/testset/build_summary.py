"""The build's account of what it covered: where the corpus is (`_corpus_path`), how the questions spread
over the topic groups (`_coverage`) and each group's size, questions and describing terms (`_group_table`).

Why its own module: these figures describe a finished build for its report; they decide nothing in it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.testset.corpus import Chunk
from ragmetrics.testset.select import CorpusProfile, Selection
from ragmetrics.testset.settings import TestItem
from ragmetrics.testset.terms import content_terms


def _corpus_path(corpus: Any) -> str | None:
    from pathlib import Path

    from ragmetrics.testset.corpus import BUILTIN_CORPUS

    if isinstance(corpus, str) and corpus in BUILTIN_CORPUS:
        return "builtin"
    if isinstance(corpus, str | Path):
        return str(Path(corpus).expanduser().resolve())
    return None


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
