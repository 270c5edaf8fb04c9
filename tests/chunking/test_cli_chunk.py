"""`ragmetrics chunk`: documents to an offset corpus, spans to chunk qrels and back, span metrics of runs, and
exit 2 naming the file and line (or document and chunk) of bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.chunking import read_chunks, read_span_qrels
from ragmetrics.cli.main import main
from ragmetrics.retrieval.qrels import Qrels

DOCS = [
    {
        "id": "install",
        "text": "Run pip install ragmetrics. It needs Python 3.10 or newer. Wheels exist for Linux.",
    },
    {"id": "usage", "text": "Write a YAML config. Name the retrievers. Then call ragmetrics run with it."},
]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    return path


def _spans(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _split(docs: Path, out: Path, *flags: str) -> int:
    return main(["chunk", "split", str(docs), *flags, "-o", str(out)])


def test_split_writes_a_corpus_with_offsets_and_qrels_round_trip(docs: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    assert _split(docs, corpus, "--method", "sentences", "--size", "1") == 0
    texts = {d["id"]: d["text"] for d in DOCS}
    chunks = read_chunks(corpus, texts)  # every chunk checked against its document
    assert [c.text for c in chunks if c.doc_id == "usage"] == [
        "Write a YAML config.", "Name the retrievers.", "Then call ragmetrics run with it.",
    ]  # fmt: skip
    qrels = tmp_path / "qrels.trec"
    qrels.write_text(
        f"q1 0 {chunks[1].id} 2\nq2 0 {chunks[4].id} 1\nq2 0 {chunks[5].id} 0\n", encoding="utf-8"
    )
    spans = tmp_path / "spans.jsonl"
    assert main(["chunk", "spans", "--qrels", str(qrels), "--corpus", str(corpus), "-o", str(spans)]) == 0
    back = tmp_path / "back.json"
    argv = [
        "chunk",
        "qrels",
        "--spans",
        str(spans),
        "--corpus",
        str(corpus),
        "--docs",
        str(docs),
        "-o",
        str(back),
    ]
    assert main(argv) == 0
    assert Qrels.from_json(back).to_dict() == Qrels.from_trec(qrels).to_dict()

    other = tmp_path / "tokens.jsonl"
    assert _split(docs, other, "--method", "tokens", "--size", "6", "--overlap", "2") == 0
    derived = tmp_path / "derived.json"
    assert main(["chunk", "qrels", "--spans", str(spans), "--corpus", str(other), "-o", str(derived)]) == 0
    assert set(Qrels.from_json(derived).to_dict()) == {"q1", "q2"}


def test_score_prints_span_metrics_of_runs(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    _split(docs, corpus, "--method", "sentences", "--size", "1")
    chunks = read_chunks(corpus)
    spans = _spans(tmp_path, [{"query_id": "q1", "doc_id": "install", "start": 0, "end": 27, "grade": 1}])
    run = tmp_path / "run.trec"
    run.write_text(f"q1 Q0 {chunks[0].id} 1 2.0 bm25\nq1 Q0 {chunks[3].id} 2 1.0 bm25\n", encoding="utf-8")
    out = tmp_path / "scores.json"
    argv = [
        "chunk",
        "score",
        "--spans",
        str(spans),
        "--corpus",
        str(corpus),
        str(run),
        "-k",
        "1",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "best precision of this chunking: 1.0000" in printed
    assert json.loads(out.read_text())["runs"]["bm25"]["q1"] == {"recall": 1.0, "precision": 1.0, "iou": 1.0}
    assert main([*argv, "--unit", "tokens", "--docs", str(docs)]) == 0
    assert json.loads(out.read_text())["runs"]["bm25"]["q1"] == {"recall": 1.0, "precision": 1.0, "iou": 1.0}
    assert main([*argv, "--unit", "tokens"]) == 2


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [
                {"query_id": "q", "doc_id": "install", "start": 0, "end": 5},
                {"query_id": "q", "doc_id": "install", "start": 70, "end": 999},
            ],
            "spans.jsonl, line 2, field 'end': span [70, 999) lies beyond the document's end (82)",
        ),
        (
            [
                {"query_id": "q", "doc_id": "install", "start": 0, "end": 10},
                {"query_id": "q", "doc_id": "install", "start": 5, "end": 12},
            ],
            "spans.jsonl, line 2: span [5, 12) of query 'q' on document 'install' overlaps [0, 10) (line 1)",
        ),
        (
            [
                {"query_id": "q", "doc_id": "install", "start": 0, "end": 3},
                {},
            ],
            "spans.jsonl, line 2: not a span judgment: query_id: Field required",
        ),
        (
            [{"query_id": "q", "doc_id": "missing", "start": 0, "end": 3}],
            "spans.jsonl, line 1, field 'doc_id': document 'missing' is not among the documents",
        ),
        (
            [{"query_id": "q", "doc_id": "usage", "start": 0, "end": 5, "text": "Writs"}],
            "spans.jsonl, line 1, field 'text': text is not the document's text at [0, 5)",
        ),
        (
            [{"query_id": "q", "doc_id": "usage", "start": 9, "end": 5}],
            "spans.jsonl, line 1: not a span judgment: end (5) must be greater than start (9)",
        ),
    ],
    ids=["out-of-range", "overlapping", "bad-row", "missing-document", "wrong-text", "reversed"],
)
def test_bad_spans_exit_2_naming_file_and_line(
    docs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rows: list[dict[str, object]],
    message: str,
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    _split(docs, corpus, "--method", "sentences", "--size", "2")
    spans = _spans(tmp_path, rows)
    argv = [
        "chunk",
        "qrels",
        "--spans",
        str(spans),
        "--corpus",
        str(corpus),
        "--docs",
        str(docs),
        "-o",
        str(tmp_path / "q.trec"),
    ]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_chunker_returning_text_not_in_its_document_exits_2(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad_chunker.py").write_text(
        "def chunks(text):\n    return [{'start': 0, 'end': 5, 'text': text[:5].upper()}]\n", encoding="utf-8"
    )
    config = tmp_path / "chunking.yaml"
    config.write_text("chunking:\n  method: custom\n  callable: bad_chunker:chunks\n", encoding="utf-8")
    assert _split(docs, tmp_path / "c.jsonl", "--config", str(config)) == 2
    err = capsys.readouterr().err
    assert "chunker bad_chunker:chunks, field \"document 'install', chunk 0\"" in err
    assert "'RUN P' is not the document's text at [0, 5)" in err


def test_a_bad_chunking_config_exits_2_naming_the_field(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _split(docs, tmp_path / "c.jsonl", "--method", "tokens", "--size", "4", "--overlap", "4") == 2
    assert "overlap (4) must be smaller than size (4)" in capsys.readouterr().err


def test_spans_from_qrels_name_a_chunk_the_corpus_lacks(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    _split(docs, corpus, "--method", "sentences", "--size", "1")
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 nope 1\n", encoding="utf-8")
    assert (
        main(
            [
                "chunk",
                "spans",
                "--qrels",
                str(qrels),
                "--corpus",
                str(corpus),
                "-o",
                str(tmp_path / "s.jsonl"),
            ]
        )
        == 2
    )
    assert "query 'q1' judges chunk 'nope', which the chunking does not hold" in capsys.readouterr().err


def test_a_folder_of_text_markdown_and_html(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    (folder / "guide").mkdir(parents=True)
    (folder / "a.txt").write_text("Plain text. Two sentences.\n", encoding="utf-8")
    (folder / "guide" / "b.md").write_text("# Title\n\nBody text here.\n", encoding="utf-8")
    (folder / "c.html").write_text(
        "<h2>Head</h2><p>Para <b>one</b>.</p><script>x()</script>", encoding="utf-8"
    )
    (folder / "logo.png").write_bytes(b"\x89PNG")
    corpus = tmp_path / "corpus.jsonl"
    assert _split(folder, corpus, "--method", "recursive", "--size", "200") == 0
    chunks = read_chunks(corpus)
    assert {c.doc_id: c.text for c in chunks} == {
        "a.txt": "Plain text. Two sentences.",
        "c.html": "## Head\n\nPara one.",
        "guide/b.md": "# Title\n\nBody text here.",
    }
    assert read_span_qrels(
        _spans(tmp_path, [{"query_id": "q", "doc_id": "c.html", "start": 9, "end": 18}]), {"c.html": 18}
    )


def test_bad_documents_exit_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"id": "a", "text": "One."}\n\n{"id": "a", "text": "Two."}\n', encoding="utf-8")
    assert _split(docs, tmp_path / "c.jsonl", "--method", "sentences", "--size", "1") == 2
    assert (
        "docs.jsonl, line 3, field 'id': document id 'a' again (first at line 1)" in capsys.readouterr().err
    )
    docs.write_text('{"id": "a", "text": 5}\n', encoding="utf-8")
    assert _split(docs, tmp_path / "c.jsonl", "--method", "sentences", "--size", "1") == 2
    assert "docs.jsonl, line 1: not a document: text:" in capsys.readouterr().err


def test_a_run_retrieving_an_unknown_chunk_exits_2_naming_the_run(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    _split(docs, corpus, "--method", "sentences", "--size", "1")
    spans = _spans(tmp_path, [{"query_id": "q1", "doc_id": "install", "start": 0, "end": 5}])
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 other-corpus-chunk 1 2.0 bm25\n", encoding="utf-8")
    assert main(["chunk", "score", "--spans", str(spans), "--corpus", str(corpus), str(run)]) == 2
    assert (
        f"{run}: question 'q1' retrieved 'other-corpus-chunk', which is not a chunk"
        in capsys.readouterr().err
    )
