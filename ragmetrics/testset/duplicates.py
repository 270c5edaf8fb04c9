"""A grade holds for every copy of a text: chunks with the same text (up to case and spacing) share grades.

Corpora repeat themselves (aliases documented twice, footers, mirrored pages). When only the chunk a question
was written from is graded, a retriever that returns its byte-identical twin first is penalised for a choice no
reader could tell apart. So after every step that grades (the build, pooling, a person's review), each
question's grades are made equal across each group of copies (`CorpusProfile.duplicate_groups`):

- a person's grade, where a person graded a copy, decides for the group (their highest, if several);
- else the highest grade any copy got (from the question's source or the pooling judge).

A copy that gets a grade this way keeps the origin of the grade it copies (so provenance shares still say
who decided) and a reason naming the copy it came from; `shared_count` counts them for the report.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragmetrics.testset.settings import Grade

__all__ = ["SHARED_PREFIX", "share_duplicate_grades", "shared_count"]

SHARED_PREFIX = "the same text as chunk "


def _decider(grades: Sequence[Grade]) -> Grade:
    people = [g for g in grades if g.origin == "person"]
    pool = people or list(grades)
    return max(pool, key=lambda g: (g.grade, g.origin == "source", g.doc_id))


def share_duplicate_grades(grades: Sequence[Grade], groups: Sequence[Sequence[str]]) -> list[Grade]:
    """`grades` with each question's grades made equal within each group of copies (module docstring); grades
    of chunks outside every group are returned unchanged, in their order, with the copies' grades after."""
    if not groups:
        return list(grades)
    group_of = {doc: n for n, group in enumerate(groups) for doc in group}
    out: list[Grade] = []
    by_group: dict[tuple[str, int], list[Grade]] = {}
    for grade in grades:
        n = group_of.get(grade.doc_id)
        if n is None:
            out.append(grade)
        else:
            by_group.setdefault((grade.query_id, n), []).append(grade)
    for (qid, n), given in by_group.items():
        decider = _decider([g for g in given if not _is_shared(g)] or given)
        own = {g.doc_id: g for g in given}
        for doc in groups[n]:
            had = own.get(doc)
            if (
                had is not None
                and had.grade == decider.grade
                and (had.origin == decider.origin or doc == decider.doc_id)
            ):
                out.append(had)
                continue
            out.append(
                Grade(
                    query_id=qid,
                    doc_id=doc,
                    grade=decider.grade,
                    origin=decider.origin,
                    reason=f"{SHARED_PREFIX}{decider.doc_id!r} ({decider.origin}, grade {decider.grade})"
                    + (f"; was {had.origin} {had.grade}" if had is not None else ""),
                )
            )
    return out


def _is_shared(grade: Grade) -> bool:
    return bool(grade.reason and grade.reason.startswith(SHARED_PREFIX))


def shared_count(grades: Sequence[Grade]) -> int:
    """How many grades came from a copy of their chunk rather than from a grading of it."""
    return sum(1 for g in grades if _is_shared(g))
