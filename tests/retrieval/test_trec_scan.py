"""The numba TREC reader against a plain-Python reference: fields, numbers and id vocabularies, on random text."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragmetrics.errors import InputError
from ragmetrics.retrieval import io_trec
from ragmetrics.retrieval._build import Origin
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run

SPACES = [" ", "  ", "\t", " \t ", "\x0b", "\x0c", "\r"]

# Ids that stress the sort: long shared prefixes, lengths around the 8-byte word boundaries, prefixes of each
# other, and multi-byte UTF-8 (2-, 3- and 4-byte characters).
id_text = st.builds(
    lambda prefix, body: prefix + body,
    st.sampled_from(["", "d", "doc", "msmarco_passage_", "msmarco_passage_00_", "é", "文書", "\U0001f600x"]),
    st.text(alphabet="ab0Zé文\U0001f600_-.#", min_size=0, max_size=20),
).filter(lambda s: s != "" and not s.isspace())


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def reference_lines(text: str, n_fields: int) -> list[tuple[int, list[str]]]:
    """(line number, fields) of the data lines, the way trec_eval splits them."""
    out = []
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.encode().split()
        if not fields or fields[0].startswith(b"#"):
            continue
        assert len(fields) >= n_fields
        out.append((number, [f.decode() for f in fields]))
    return out


def scan_text(text: str, names: tuple[str, ...], keep: tuple[int, ...]) -> io_trec.Fields:
    return io_trec.scan(text.encode(), "t", names, keep=keep, allow_extra=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.tuples(id_text, id_text), min_size=1, max_size=60),
    separators=st.lists(st.sampled_from(SPACES), min_size=1, max_size=5),
    noise=st.lists(st.sampled_from(["", "   ", "# a comment", "#", "\t# x y z"]), max_size=5),
)
def test_ids_factorise_like_sorted_python_strings(
    rows: list[tuple[str, str]], separators: list[str], noise: list[str]
) -> None:
    lines = []
    for i, (qid, doc) in enumerate(rows):
        sep = separators[i % len(separators)]
        lines.append(sep.join([qid if not qid.startswith("#") else "q" + qid, "0", doc, "1"]))
        if noise:
            lines.append(noise[i % len(noise)])
    text = "\n".join(lines) + ("\n" if len(rows) % 2 else "")
    fields = scan_text(text, io_trec.QRELS_FIELDS, (0, 2, 3))
    expected = reference_lines(text, 4)
    assert fields.lines.tolist() == [number for number, _ in expected]
    for slot, column, grouped in ((0, 0, True), (1, 2, False)):
        vocab, codes = io_trec.factorize_ids(fields, slot, grouped=grouped)
        values = [f[column] for _, f in expected]
        # Python orders str by code point, which is UTF-8 byte order
        assert vocab.tolist() == sorted(set(values))
        assert [vocab[c] for c in codes.tolist()] == values


@pytest.mark.parametrize(
    "ids",
    [
        [
            "a" * 30 + s for s in ["b", "", "ba", "a", "b" * 9, "b" * 8, "b" * 7]
        ],  # one shared prefix, 3 levels
        ["x" * 9, "x" * 8, "x" * 17, "x" * 16, "x" * 9, "x" * 17],  # prefixes of each other, repeated
        ["é" * 5 + "a", "é" * 5, "e" * 12, "é" * 4 + "ê"],  # multi-byte characters across word boundaries
    ],
)
def test_ids_that_need_several_sort_words(ids: list[str]) -> None:
    text = "".join(f"q 0 {d} 1\n" for d in ids)
    vocab, codes = io_trec.factorize_ids(scan_text(text, io_trec.QRELS_FIELDS, (0, 2, 3)), 1, grouped=False)
    assert vocab.tolist() == sorted(set(ids))
    assert [vocab[c] for c in codes.tolist()] == ids


EDGE_SCORES = [
    "0", "-0", "-0.0", "+0e5", "1e22", "1e23", "9007199254740993", "0.1", "1e-22", "123456789012345678",
    "1234567890123456789", "00000000000000000000001.5", "1.000000000000000000000000001", "4.9e-324",
    "2.2250738585072014e-308", "1.7976931348623157e308",
]  # fmt: skip
finite = st.floats(allow_nan=False, allow_infinity=False)
score_token = st.one_of(
    finite.map(repr),
    finite.map(lambda x: f"{x:.3f}"),
    finite.map(lambda x: f"{x:.17e}"),
    finite.map(lambda x: f"{x:E}"),
    st.integers(-(10**25), 10**25).map(str),
    st.integers(0, 10**6).map(lambda n: f"+{n}."),
    st.integers(0, 10**6).map(lambda n: f"-.{n:07d}"),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-(10**18), 10**18), st.integers(-400, 400)),
    st.sampled_from(EDGE_SCORES),
)


@settings(max_examples=200, deadline=None)
@given(tokens=st.lists(score_token, min_size=1, max_size=40))
def test_scores_equal_python_float_bit_for_bit(tokens: list[str]) -> None:
    text = "".join(f"q Q0 d{i} {i} {t} tag\n" for i, t in enumerate(tokens))
    fields = scan_text(text, io_trec.RUN_FIELDS, (0, 2, 4))
    expected = [float(t) for t in tokens]
    if not all(math.isfinite(x) for x in expected):
        with pytest.raises(InputError, match="not a finite number"):
            io_trec.parse_scores(fields, 2, Origin("t", positions=fields.lines), "score")
        return
    values = io_trec.parse_scores(fields, 2, Origin("t", positions=fields.lines), "score")
    assert [bits(v) for v in values.tolist()] == [bits(x) for x in expected]


@settings(max_examples=100, deadline=None)
@given(grades=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=30), plus=st.booleans())
def test_grades_equal_python_int(grades: list[int], plus: bool) -> None:
    tokens = [("+" if plus and g >= 0 else "") + str(g) for g in grades]
    text = "".join(f"q 0 d{i} {t}\n" for i, t in enumerate(tokens))
    fields = scan_text(text, io_trec.QRELS_FIELDS, (0, 2, 3))
    values = io_trec.parse_grades(fields, 2, Origin("t", positions=fields.lines), "grade")
    assert values.tolist() == grades


@pytest.mark.parametrize("grade", ["9223372036854775808", "-9223372036854775809", "+", "-", "1x"])
def test_grades_out_of_range_or_malformed(tmp_path: Path, grade: str) -> None:
    path = tmp_path / "qrels"
    path.write_text(f"q 0 a 1\nq 0 b {grade}\n", encoding="utf-8")
    with pytest.raises(InputError, match="is not an integer") as err:
        Qrels.from_trec(path)
    assert err.value.line == 2


@pytest.mark.parametrize("score", ["1e", "1e+", "e5", ".", "+.", "1.2.3", "0x1p3", "1__0", "١"])
def test_scores_the_fast_path_declines_are_still_judged_by_python(tmp_path: Path, score: str) -> None:
    path = tmp_path / "run"
    path.write_text(f"q Q0 a 1 1 t\nq Q0 b 2 {score} t\n", encoding="utf-8")
    with pytest.raises(InputError, match="is not a number") as err:
        Run.from_trec(path)
    assert err.value.line == 2 and err.value.field == "score"


def test_last_line_without_newline_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "run"
    path.write_bytes(b"q1 Q0 d1 1 0.5 tag\r\nq1 Q0 d2 2 0.25 tag\r\nq2 Q0 d1 1 1 tag")
    run = Run.from_trec(path)
    assert run.name == "tag"
    assert run.to_dict() == {"q1": {"d1": 0.5, "d2": 0.25}, "q2": {"d1": 1.0}}


def test_scan_keeps_only_requested_fields_and_ignores_extras() -> None:
    fields = scan_text("a b c d e f g h\n\n#c\nA B C D E F\n", io_trec.RUN_FIELDS, (0, 2, 4))
    got = [[fields.token(slot, i).decode() for slot in range(3)] for i in range(len(fields.lines))]
    assert got == [["a", "c", "e"], ["A", "C", "E"]]
    assert fields.lines.tolist() == [1, 4]
    assert np.array_equal(fields.starts[0], [0, 20])


def test_grades_with_leading_zeros_beyond_nineteen_characters(tmp_path: Path) -> None:
    path = tmp_path / "qrels"
    path.write_text("q 0 a +000000000000000000000007\nq 0 b -0000000000000000000000009223372036854775808\n")
    assert Qrels.from_trec(path).to_dict() == {"q": {"a": 7, "b": -(2**63)}}
