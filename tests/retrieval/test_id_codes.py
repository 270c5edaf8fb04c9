"""Id factorisation of in-memory ids (dicts, JSON, frames): code-point order, exact round trip, NUL refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragmetrics.errors import InputError
from ragmetrics.retrieval._build import Origin
from ragmetrics.retrieval.id_codes import factorize_strings
from ragmetrics.retrieval.qrels import Qrels

ORIGIN = Origin("ids")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(st.characters(blacklist_characters="\x00", blacklist_categories=()), max_size=25),
            st.sampled_from(
                ["", "a", "a" * 8, "a" * 9, "a" * 16, "doc_000001", "doc_000010", "\ud800", "\U0010ffff"]
            ),
        ),
        max_size=80,
    )
)
def test_vocabulary_is_sorted_python_strings_and_codes_round_trip(ids: list[str]) -> None:
    vocab, codes = factorize_strings(ids, ORIGIN, "document id")
    assert vocab.tolist() == sorted(set(ids))
    assert [vocab[c] for c in codes.tolist()] == ids


def test_nul_inside_an_id_is_named() -> None:
    with pytest.raises(InputError, match=r"document id 'd\\x00x' contains a NUL character"):
        factorize_strings(["a", "d\x00x", "b"], ORIGIN, "document id")


def test_dict_ids_with_lone_surrogates_and_astral_characters_build() -> None:
    qrels = Qrels.from_dict({"q": {"\ud800": 1, "\U0001f600": 2, "\ue000": 0}})
    assert qrels.doc_vocab.tolist() == ["\ud800", "\ue000", "\U0001f600"]
