"""Issue 66 (7): empty chunks are skipped in the pool as in drafting. A corpus with several empty chunks made
`testset --pool bm25 --pool dense` exit 2 ("field 'passages': no text for document 'empty0'"): the empty
chunks were taken out of the rankings after their top `pool_depth` was read, so the next chunk (often another
empty one: dense retrieval ties them all) moved into the graded depth without its text. Now they leave every
ranking first, each run pools `pool_depth` chunks with text, and the skip is said and counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.cli.main import main
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.retrieval.run import Run
from ragmetrics.testset import build_testset
from ragmetrics.testset.corpus import open_corpus
from ragmetrics.testset.output import read_manifest
from ragmetrics.testset.pooling import pool_grades

from .conftest import corpus_rows, write_jsonl


def _corpus_with_empties(tmp_path: Path, every: int = 5) -> tuple[Path, list[dict[str, str]]]:
    rows = corpus_rows()
    for k in range(6):  # blank and whitespace texts at several places, as public collections hold them
        rows.insert(k * every, {"id": f"empty{k}", "text": "" if k % 2 else " \n "})
    return write_jsonl(tmp_path / "corpus.jsonl", rows), rows


def test_the_cli_pools_past_empty_chunks_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus, _ = _corpus_with_empties(tmp_path)
    out = tmp_path / "ts"
    code = main(["testset", str(corpus), "-o", str(out), "--size", "10", "--pool", "bm25", "--pool", "dense"])
    err = capsys.readouterr().err
    assert code == 0, err
    pool = read_manifest(out)["pool"]
    assert pool["empty_chunks_skipped"] >= 1
    assert f"pool: {pool['empty_chunks_skipped']} empty chunk(s)" in err and "skipped" in err
    graded = (out / "grades.tsv").read_text(encoding="utf-8")
    assert "\tempty" not in graded  # no empty chunk graded, by the judge or otherwise
    assert "empty chunks skipped" in (out / "testset.html").read_text(encoding="utf-8")


def test_each_run_pools_its_depth_of_chunks_with_text(tmp_path: Path) -> None:
    corpus_path, rows = _corpus_with_empties(tmp_path)
    testset = build_testset(str(corpus_path), size=4, seed=2, judge_checks=False)
    texts = [r["id"] for r in rows if r["text"].strip()]
    item = next(i for i in testset.items if i.answerable)
    depth = testset.settings.pool_depth
    # empty1 ranked first, then depth-1 chunks with text, then empty0 and two more chunks with text
    order = ["empty1", *texts[: depth - 1], "empty0", texts[depth - 1], texts[depth]]
    run = Run.from_dict({item.id: {doc: float(len(order) - n) for n, doc in enumerate(order)}}, name="mine")
    grades, info, _ = pool_grades(
        open_corpus(str(corpus_path)), [item], list(testset.grades), [run], LocalJudge(), testset.settings
    )
    judged = {g.doc_id for g in grades if g.origin == "judge"} | {
        g.doc_id for g in testset.grades if g.query_id == item.id
    }
    assert info["empty_chunks_skipped"] == 1  # empty0 sat below the depth: only empty1 was skipped
    assert info["pairs"] == depth  # the depth filled with chunks that have text: texts[depth - 1] moved up
    assert not {"empty0", "empty1"} & judged
    assert texts[depth] not in {g.doc_id for g in grades if g.origin == "judge"}
