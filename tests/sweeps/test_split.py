"""The selection / confirmation split: seeded, stratified by question kind, disjoint and covering."""

from __future__ import annotations

from collections import Counter

import pytest

from ragmetrics.errors import ConfigError
from ragmetrics.sweep.split import relevant_strata, split_questions


def _kinds(n: int) -> dict[str, str]:
    kinds = ["factoid", "factoid", "factoid", "keyword", "keyword", "multi_chunk", "unanswerable"]
    return {f"q{i:03d}": kinds[i % len(kinds)] for i in range(n)}


def test_halves_are_disjoint_and_cover_every_question() -> None:
    strata = _kinds(70)
    split = split_questions(list(strata), strata, seed=1, share=0.5, source="kind")
    assert not set(split.selection) & set(split.confirmation)
    assert sorted([*split.selection, *split.confirmation]) == sorted(strata)


def test_every_kind_is_split_in_proportion() -> None:
    strata = _kinds(70)  # factoid 30, keyword 20, multi_chunk 10, unanswerable 10
    split = split_questions(list(strata), strata, seed=5, share=0.5, source="kind")
    chosen = Counter(strata[q] for q in split.selection)
    held = Counter(strata[q] for q in split.confirmation)
    assert chosen == held == Counter({"factoid": 15, "keyword": 10, "multi_chunk": 5, "unanswerable": 5})
    assert split.counts()["factoid"] == (15, 15)


def test_an_uneven_share_is_kept_within_each_stratum() -> None:
    strata = _kinds(70)
    split = split_questions(list(strata), strata, seed=0, share=0.3, source="kind")
    chosen = Counter(strata[q] for q in split.selection)
    assert chosen == Counter({"factoid": 9, "keyword": 6, "multi_chunk": 3, "unanswerable": 3})


def test_the_seed_decides_the_split_and_repeats_it() -> None:
    strata = _kinds(70)
    one = split_questions(list(strata), strata, seed=7, share=0.5, source="kind")
    again = split_questions(list(reversed(strata)), strata, seed=7, share=0.5, source="kind")
    other = split_questions(list(strata), strata, seed=8, share=0.5, source="kind")
    assert one.selection == again.selection and one.confirmation == again.confirmation
    assert set(one.selection) != set(other.selection)


def test_a_stratum_keeps_its_split_when_another_grows() -> None:
    strata = _kinds(70)
    before = split_questions(list(strata), strata, seed=2, share=0.5, source="kind")
    grown = {**strata, "z-new-1": "keyword", "z-new-2": "keyword"}
    after = split_questions(list(grown), grown, seed=2, share=0.5, source="kind")
    factoids = {q for q in strata if strata[q] == "factoid"}
    assert set(before.selection) & factoids == set(after.selection) & factoids


def test_a_stratum_of_two_gives_one_question_to_each_half() -> None:
    strata = {**{f"a{i}": "big" for i in range(10)}, "b1": "rare", "b2": "rare"}
    split = split_questions(list(strata), strata, seed=0, share=0.9, source="kind")
    assert ("b1" in split.selection) != ("b2" in split.selection)


def test_relevant_strata_bucket_the_number_of_relevant_documents() -> None:
    relevance = {
        "a": {"d1": 1, "d2": 0},
        "b": {"d1": 2, "d2": 1},
        "c": {"d": 1, "e": 1, "f": 3, "g": 1},
        "d": {},
    }
    assert relevant_strata(relevance, ["a", "b", "c", "d"]) == {"a": "1", "b": "2", "c": "3+", "d": "0"}


def test_too_few_or_duplicate_questions_are_refused() -> None:
    with pytest.raises(ConfigError, match="cannot be split"):
        split_questions(["a", "b", "c"], dict.fromkeys("abc", "x"), seed=0, share=0.5, source="kind")
    with pytest.raises(ConfigError, match="unique"):
        split_questions(["a", "a", "b", "c"], dict.fromkeys("abc", "x"), seed=0, share=0.5, source="kind")
