from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragmetrics.judge.text.sentences import split_sentences, split_statements


def test_basic_sentence_boundaries() -> None:
    text = 'Python 3.11 is fast. Is it stable? Yes! "Quoted." Next one.'
    assert split_sentences(text) == [
        "Python 3.11 is fast.",
        "Is it stable?",
        "Yes!",
        '"Quoted."',
        "Next one.",
    ]


def test_no_split_inside_numbers_dotted_names_and_abbreviations() -> None:
    text = "Call os.path.join(), e.g. For paths. Dr. Smith and J. Doe use v3.14 daily. Done."
    assert split_sentences(text) == [
        "Call os.path.join(), e.g. For paths.",
        "Dr. Smith and J. Doe use v3.14 daily.",
        "Done.",
    ]


def test_lowercase_after_period_does_not_split() -> None:
    assert split_sentences("It returns a str. it never returns bytes.") == [
        "It returns a str. it never returns bytes."
    ]


def test_paragraphs_and_list_items_always_split() -> None:
    text = "Intro line\ncontinues here\n\nSecond paragraph\n- first item\n* second item\n2) third item"
    assert split_sentences(text) == [
        "Intro line continues here",
        "Second paragraph",
        "first item",
        "second item",
        "third item",
    ]


def test_blank_text_gives_nothing() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\t ") == []
    assert split_statements("") == []


def test_statements_cut_at_semicolons_between_clauses() -> None:
    text = "The json module parses JSON text; it also writes JSON files. Options: a; b."
    assert split_statements(text) == [
        "The json module parses JSON text",
        "it also writes JSON files.",
        "Options: a; b.",
    ]


def _squash(parts: list[str]) -> str:
    return "".join("".join(p.split()) for p in parts)


@given(st.text(alphabet=st.sampled_from(list('abc XYZ.!?;\n\t"(')), max_size=200))
def test_splitting_is_deterministic_and_loses_no_text(text: str) -> None:
    sentences = split_sentences(text)
    assert sentences == split_sentences(text)
    assert all(s and s == s.strip() for s in sentences)
    assert _squash(sentences) == _squash([text])
    assert _squash(split_statements(text)).replace(";", "") == _squash(sentences).replace(";", "")
