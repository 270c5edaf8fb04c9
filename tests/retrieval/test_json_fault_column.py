"""Issue 66 (7): a JSON error names the column of the fault. A JSON line cut short (its closing brace missing)
was read with its newline, so Python's parser reported "line 2, column 1" of that line and the error said
"column 1" where the fault is right after the line's last character. Every reader of the team's files names
the same column: the test-set corpus, a night's dataset, run and qrels files (JSON Lines and one JSON
document), traces, and the CLI's one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics._jsonl import read_jsonl
from ragmetrics.cli.main import main
from ragmetrics.errors import InputError, json_problem
from ragmetrics.retrieval.run import Run
from ragmetrics.testset.corpus import open_corpus
from ragmetrics.traces._lines import json_lines_or_document

CUT = '{"id": "p1", "text": "Returns the sum of the array elements"'  # 60 characters: the fault is column 61
FAULT = len(CUT) + 1


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_line_cut_short_names_the_column_after_its_end(newline: str) -> None:
    from ragmetrics.errors import json_fault

    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(CUT + newline)
    assert json_fault(caught.value) == (1, FAULT)
    assert json_problem(caught.value).endswith(f"(column {FAULT})")


def test_a_fault_inside_the_text_keeps_its_own_column() -> None:
    from ragmetrics.errors import json_fault

    text = '{"id": "p1", "text": "the sum", "score": 12,5}\n'
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text)
    assert json_fault(caught.value) == (1, text.index("5}") + 1)
    # and in a document of several lines, the line and column of the fault, not where the parser stopped
    document = '{\n  "q1": {"d1": 1.0,\n  "d2": 0.5\n\n\n'
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(document)
    assert json_fault(caught.value) == (3, len('  "d2": 0.5') + 1)


def _file(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_every_reader_names_the_fault_column(tmp_path: Path) -> None:
    good = '{"id": "p0", "text": "alpha beta gamma"}'
    corpus = _file(tmp_path, "corpus.jsonl", [good, CUT, '{"id": "p2", "text": "delta"}'])
    with pytest.raises(InputError, match=rf"line 2: invalid JSON: .*\(column {FAULT}\)"):
        read_jsonl(corpus)
    with pytest.raises(InputError, match=rf"line 2: invalid JSON: .*\(column {FAULT}\)"):
        list(open_corpus(str(corpus)))
    run_line = '{"query_id": "q1", "doc_id": "d1", "score": 1.5, "note": "first try of the run"'
    run = _file(tmp_path, "run.jsonl", ['{"query_id": "q0", "doc_id": "d0", "score": 1}', run_line])
    with pytest.raises(InputError, match=rf"line 2: invalid JSON: .*\(column {len(run_line) + 1}\)"):
        Run.read(run)
    nested = _file(tmp_path, "run.json", ['{"q1": {"d1": 2.0, "d2": 1.0}', "", ""])  # the last brace missing
    with pytest.raises(InputError, match=r"line 1: invalid JSON: .*\(column 30\)"):
        Run.read(nested)
    traces = _file(tmp_path, "traces.jsonl", ['{"resourceSpans": []}', CUT])
    with pytest.raises(InputError, match=rf"line 2: .*column {FAULT}\b"):
        list(json_lines_or_document(traces, "an OTLP export"))


def test_the_cli_says_the_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = _file(tmp_path, "corpus.jsonl", ['{"id": "p0", "text": "alpha beta gamma"}', CUT])
    code = main(["testset", str(corpus), "-o", str(tmp_path / "out"), "--size", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"line 2: invalid JSON: Expecting ',' delimiter (column {FAULT})" in err
