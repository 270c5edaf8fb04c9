"""Support is checked, not similarity: a statement whose number, name or polarity differs from its best-matching
passage is unsupported, in every supported language, and the verdict's reason names the detail."""

from __future__ import annotations

import pytest

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.text.support import conflicts, has_negation, numbers_in


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("It cost 1,000 dollars in 1989.", {"1000", "1989"}),
        ("Es kostete 1.000 Euro, also 2,5 Prozent.", {"1000", "2.5"}),
        ("The ratio was 0.50 and then 3.", {"0.5", "3"}),
        ("人口は1,234万人", {"1234"}),
        ("no digits here", set()),
    ],
)
def test_numbers_are_read_in_one_canonical_form(text: str, numbers: set[str]) -> None:
    assert numbers_in(text) == numbers


@pytest.mark.parametrize(
    ("text", "language", "negated"),
    [
        ("The museum is not open on Mondays.", "en", True),
        ("It isn't open.", "en", True),
        ("The museum is open on Mondays.", "en", False),
        ("Das Museum ist montags nicht geöffnet.", "de", True),
        ("El museo no abre los lunes.", "es", True),
        ("Музей не работает по понедельникам.", "ru", True),
        ("Музей работает по понедельникам.", "ru", False),
        ("博物馆周一不开放。", "zh", True),
        ("博物馆周一开放。", "zh", False),
        ("博物館は月曜日に開いていない。", "ja", True),
        ("Bảo tàng không mở cửa vào thứ Hai.", "vi", True),
    ],
)
def test_negation_words_of_each_language(text: str, language: str, negated: bool) -> None:
    assert has_negation(text, language) is negated


PASSAGE = "The Berlin Wall fell on 9 November 1989. Most Brazilians speak Portuguese."


@pytest.mark.parametrize(
    ("statement", "kind"),
    [
        ("The Berlin Wall fell in 1991.", "number"),
        ("Most Brazilians speak Spanish.", "name"),
        ("The Berlin Wall did not fall in 1989.", "negation"),
    ],
)
def test_a_changed_detail_is_a_conflict(statement: str, kind: str) -> None:
    best = PASSAGE.split(". ")[0 if "Wall" in statement else 1]
    found = conflicts(statement, PASSAGE, best, "en")
    assert [c.kind for c in found] == [kind]


@pytest.mark.parametrize(
    "statement",
    ["The Berlin Wall fell in 1989.", "Portuguese is what most Brazilians speak.", "In 1989 the wall fell."],
)
def test_a_faithful_restatement_has_no_conflict(statement: str) -> None:
    best = PASSAGE.split(". ")[1 if "Portuguese" in statement else 0]
    assert conflicts(statement, PASSAGE, best, "en") == []


def test_a_name_ending_in_s_is_checked_and_a_possessive_matches_its_name() -> None:
    passage = "Marcus Aurelius wrote the Meditations."
    assert [c.kind for c in conflicts("The Meditations were written by Jess.", passage, passage, "en")] == [
        "name"
    ]
    assert conflicts("Aurelius's Meditations were written in Greek.", passage + " He wrote in Greek.",
                     passage, "en") == []  # fmt: skip


def test_names_are_looked_for_in_the_whole_chunk() -> None:
    # German capitalises every noun: a noun from elsewhere in the chunk is no conflict, a new name is.
    chunk = "Die Mauer fiel 1989. Die Grenze zwischen Ost und West war danach offen."
    best = "Die Mauer fiel 1989."
    assert conflicts("Die Grenze fiel 1989.", chunk, best, "de") == []
    found = conflicts("Die Mauer fiel 1989 in Krakau.", chunk, best, "de")
    assert [c.kind for c in found] == ["name"]


def test_a_negation_elsewhere_in_a_long_sentence_is_no_contradiction() -> None:
    best = "Use s.pop(i) to remove and return the item; del s[i] removes it but does not return it."
    assert conflicts("Use s.pop(i) to remove and return the item at index i.", best, best, "en") == []


@pytest.mark.parametrize(
    ("language", "context", "true", "planted"),
    [
        (
            "en",
            "The Berlin Wall fell on 9 November 1989, after weeks of protests in East Germany.",
            "The Berlin Wall fell in 1989.",
            "The Berlin Wall fell in 1991.",
        ),
        (
            "en",
            "Brazil's official language is Portuguese, which nearly all Brazilians speak.",
            "Brazilians speak Portuguese.",
            "Brazilians speak Spanish.",
        ),
        (
            "de",
            "Der Eiffelturm ist 330 Meter hoch und steht in Paris.",
            "Der Eiffelturm ist 330 Meter hoch.",
            "Der Eiffelturm ist 280 Meter hoch.",
        ),
        (
            "es",
            "El agua hierve a 100 grados Celsius al nivel del mar.",
            "El agua hierve a 100 grados al nivel del mar.",
            "El agua no hierve a 100 grados al nivel del mar.",
        ),
        (
            "ja",
            "東京タワーの高さは333メートルで、1958年に完成した。",
            "東京タワーは1958年に完成した。",
            "東京タワーは1965年に完成した。",
        ),
        (
            "ru",
            "Москва является столицей России с 1918 года.",
            "Москва является столицей России с 1918 года.",
            "Москва не является столицей России.",
        ),
    ],
)
def test_the_local_judge_flags_planted_contradictions(
    language: str, context: str, true: str, planted: str
) -> None:
    samples = [
        {"id": "true", "question": "?", "contexts": [context], "answer": true, "language": language},
        {"id": "planted", "question": "?", "contexts": [context], "answer": planted, "language": language},
    ]
    result = evaluate_rag(samples, ["faithfulness"], LocalJudge(), progress=False)
    assert result.per_query["true"]["faithfulness"] == 1.0
    assert result.per_query["planted"]["faithfulness"] == 0.0
    reasons = " ".join(v["reason"] for v in result.details["planted"]["faithfulness"].verdicts)
    assert "but" in reasons


@pytest.mark.parametrize(
    ("statement", "passage", "kinds"),
    [
        ("Venus is known as the Red Planet.", "Mars is often called the Red Planet.", ["name"]),
        ("Use json.loads() to parse it.", "The json.loads() function parses a JSON document.", []),
        ("The Earth is roughly 4.5 billion years old.", "The Earth is about 4.54 billion years old.", []),
        ("It is about 8,850 metres high.", "Everest is 8,849 metres high.", []),
        ("It is 8,850 metres high.", "Everest is 8,849 metres high.", ["number"]),  # rounded, but not said so
        ("The Wall fell around 1990.", "The Wall fell in 1989.", []),
        ("The Wall fell in 1990.", "The Wall fell in 1989.", ["number"]),
        ("It takes three to five days.", "Delivery takes 3 to 5 days.", []),
        ("Indexes make inserts faster.", "Indexes make inserts slower.", ["antonym"]),
        ("Free accounts have no limit.", "Free accounts have a limit.", ["negation"]),
        ("Adults may take no more than 4 grams.", "Adults may take up to 4 grams.", []),
        (
            "The tower was completed in 1889 and is powered by burning coal.",
            "The tower was completed in 1889.",
            ["unsupported"],
        ),
        (
            "The tower, completed in 1889, is made of iron and runs on burning coal.",
            "The tower was completed in 1889 and is made of iron.",
            ["addition"],
        ),
    ],
)
def test_plain_support_rules(statement: str, passage: str, kinds: list[str]) -> None:
    assert [c.kind for c in conflicts(statement, passage, passage, "en", "")] == kinds


def test_question_words_may_be_restated_without_the_passage() -> None:
    passage = "Insulin is a hormone made by beta cells in the pancreas."
    found = conflicts(
        "Insulin is produced by the liver.", passage, passage, "en", "Which organ produces insulin?"
    )
    assert [c.kind for c in found] == ["unsupported"]
    assert conflicts("The organ that produces insulin is the pancreas.", passage, passage, "en",
                     "Which organ produces insulin?") == []  # fmt: skip
