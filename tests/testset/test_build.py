"""Building a test set offline: kinds, languages, filters on planted cases, qrels with origins, determinism."""

from __future__ import annotations

from itertools import combinations

import pytest

from ragmetrics.errors import InputError
from ragmetrics.judge.select import make_judge
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.testset import TestSet, TestsetSettings, build_testset
from ragmetrics.testset.build_drafts import _cooccurring
from ragmetrics.testset.build_filters import _cheap_filters
from ragmetrics.testset.corpus import Chunk, open_corpus
from ragmetrics.testset.filters import NearDuplicates, copies_chunk
from ragmetrics.testset.offline import Draft
from ragmetrics.testset.terms import content_terms

from .conftest import corpus_rows


def test_items_have_every_field_and_answerable_ones_have_their_sources_as_qrels(
    builtin_testset: TestSet,
) -> None:
    ts = builtin_testset
    assert len(ts.items) == 40
    for item in ts.items:
        assert item.id.startswith("ts-") and item.question and item.reference and item.language == "en"
        if item.answerable:
            assert item.source_ids and set(item.source_ids) <= set(item.relevant_ids or [])
            assert all(
                g == ts.settings.source_grade
                for d, g in zip(item.relevant_ids or [], item.relevant_grades or [], strict=True)
                if d in item.source_ids
            )
        else:
            assert item.kind == "unanswerable" and item.source_ids == [] and item.relevant_ids is None
        if item.kind in ("multi_chunk", "comparison"):
            assert len(item.source_ids) == 2
    assert {g.origin for g in ts.grades} == {"source"}
    assert len({i.id for i in ts.items}) == len(ts.items)


def test_kinds_follow_the_configured_shares(builtin_testset: TestSet) -> None:
    counts = builtin_testset.kind_counts()
    # 40 questions at 40/15/25/10/10 %: 16, 6, 10, 4, 4 where the filters left enough drafts of each kind.
    assert counts["factoid"] >= 14 and counts["keyword"] >= 9 and counts["unanswerable"] == 4
    assert sum(counts.values()) == 40


def test_no_two_kept_questions_exceed_the_similarity_threshold(builtin_testset: TestSet) -> None:
    limit = builtin_testset.settings.max_similarity
    for a, b in combinations(builtin_testset.items, 2):
        assert NearDuplicates.similarity(a.question, b.question) < limit, (a.question, b.question)


def test_unanswerable_questions_name_terms_no_chunk_holds_together(builtin_testset: TestSet) -> None:
    corpus = open_corpus("builtin")
    stems = [{t[:6] for t in content_terms(f"{c.title}\n{c.text}" if c.title else c.text)} for c in corpus]
    for item in builtin_testset.items:
        if item.kind != "unanswerable":
            continue
        words = [w for w in content_terms(item.question) if w[:6] not in {"relate", "togeth"}]
        assert len(words) >= 2
        assert not any(all(w[:6] in s for w in words) for s in stems), item.question


def test_same_seed_same_test_set_other_seed_other_questions() -> None:
    a = build_testset("builtin", size=12, seed=5, judge_checks=False)
    b = build_testset("builtin", size=12, seed=5, judge_checks=False)
    c = build_testset("builtin", size=12, seed=6, judge_checks=False)
    assert [i.model_dump() for i in a.items] == [i.model_dump() for i in b.items]
    assert {i.question for i in a.items} != {i.question for i in c.items}


def test_planted_near_duplicates_and_copies_are_filtered_and_counted() -> None:
    chunk = Chunk(
        "c1", "The with statement calls the enter method and the exit method of a context manager.", None, 1
    )
    texts = {"c1": chunk}
    drafts = [
        Draft("factoid", "How does the with statement work?", "r", "en", ["c1"]),
        Draft("factoid", "How does the with statement work ?", "r", "en", ["c1"]),  # near-duplicate
        Draft(
            "factoid", "the enter method and the exit method of a context manager", "r", "en", ["c1"]
        ),  # copy
        Draft("keyword", "context manager exit", "r", "en", ["c1"]),
    ]
    filtered: list = []
    kept = _cheap_filters(drafts, texts, TestsetSettings(), filtered, NearDuplicates(0.85))
    assert [d.question for d in kept] == ["How does the with statement work?", "context manager exit"]
    assert [f.filter for f in filtered] == ["near_duplicate", "copies_chunk"]
    assert "similarity" in filtered[0].detail and "words in a row" in filtered[1].detail
    assert copies_chunk("What is a context manager?", chunk.text, 6) is None


def test_questions_the_source_does_not_answer_are_left_out_by_the_judge_check() -> None:
    from ragmetrics.testset.build_filters import _judge_filters

    judge = make_judge(JudgeSettings(backend="local"))

    texts = {c.id: c for c in open_corpus(corpus_rows())}
    drafts = [
        Draft("factoid", "How do volcanoes erupt lava and ash?", "r", "en", ["volcano-2"]),
        Draft("factoid", "What is the price of a sourdough loaf in Paris?", "r", "en", ["orbit-1"]),
    ]
    filtered: list = []
    kept = _judge_filters(drafts, texts, judge, TestsetSettings(min_grade=1), filtered)
    assert [d.source_ids for d in kept] == [["volcano-2"]]
    assert filtered[0].filter == "not_answered" and "passage_relevance" in filtered[0].detail


def test_cooccurrence_check_uses_word_forms() -> None:
    corpus = open_corpus([{"id": "a", "text": "Metaclasses and class decorators both customise classes."}])
    found = _cooccurring(corpus, {(0, 0): ("metaclass", "decorator"), (1, 0): ("metaclass", "volcano")}, "en")
    assert found == {(0, 0)}


def test_languages_of_the_chunks_are_kept() -> None:
    rows = [
        {
            "id": "de-1",
            "text": "Der Vulkan ist ein Berg, aus dem bei einem Ausbruch heiße Lava und Asche austreten.",
        },
        {
            "id": "de-2",
            "text": "Die Gletscher der Alpen schmelzen, weil die Sommer wärmer und länger werden als früher.",
        },
        {
            "id": "ja-1",
            "text": "富士山は日本で最も高い山であり、活火山として知られています。山頂からの眺めは素晴らしいです。",
        },
        {
            "id": "ja-2",
            "text": "東京タワーは電波塔であり、観光名所としても多くの人が訪れます。夜景がとても美しいです。",
        },
    ]
    ts = build_testset(rows, size=4, seed=0, judge_checks=False, kinds={"factoid": 1.0}, min_terms=2)
    by_source = {i.source_ids[0]: i for i in ts.items}
    assert {i.language for i in ts.items} == {"de", "ja"}
    for cid, item in by_source.items():
        assert item.language == cid[:2]
        if item.language == "ja":
            assert item.question.endswith(("？", "。")), item.question
        else:
            assert item.question.startswith(("Was ", "Wie ")), item.question


def test_a_corpus_with_nothing_to_ask_is_an_error() -> None:
    with pytest.raises(InputError, match="no chunk is worth a question"):
        build_testset([{"id": "a", "text": "Hi."}, {"id": "b", "text": "Ok."}], size=2)


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown question kind"):
        TestsetSettings(kinds={"trivia": 1.0})
