"""fill-qrels: the runs' unjudged top-k documents graded by a judge (LLM through the loopback server, and the
local judge on the built-in collection with judgments removed), marked apart from human grades."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ragmetrics import Qrels, Run
from ragmetrics.cli import main
from ragmetrics.errors import InputError
from ragmetrics.qrels_fill import fill_qrels

from .conftest import JudgeFactory
from .loopback import LoopbackServer

QUERIES = {"q1": "What is the capital of Australia?", "q2": "Who wrote Hamlet?"}
PASSAGES = {
    "d1": "Canberra is the capital of Australia. [g3]",
    "d2": "Sydney is Australia's largest city. [g1]",
    "d3": "Melbourne hosts the Australian Open.",
    "d4": "Hamlet is a tragedy by William Shakespeare. [g3]",
    "d5": "The Globe Theatre was built in 1599. [g1]",
}
QRELS = Qrels.from_dict({"q1": {"d1": 2, "d2": 0}, "q2": {"d4": 2}})
RUNS = [
    Run.from_dict({"q1": {"d1": 0.9, "d3": 0.8, "d2": 0.1}, "q2": {"d5": 0.9, "d4": 0.5}}, name="a"),
    Run.from_dict({"q1": {"d2": 0.9, "d1": 0.5}, "q2": {"d4": 0.9, "d1": 0.2}}, name="b"),
]


def test_holes_are_graded_marked_and_human_grades_kept(
    make_judge: JudgeFactory, server: LoopbackServer, tmp_path: Path
) -> None:
    judge = make_judge()
    filled = fill_qrels(QRELS, RUNS, QUERIES, PASSAGES, judge, top_k=2)
    # top 2 of each run: q1 -> d1, d3, d2; q2 -> d5, d4, d1. Unjudged: (q1, d3), (q2, d5), (q2, d1).
    assert filled.judge_grades == {"q1": {"d3": 0}, "q2": {"d5": 1, "d1": 3}}
    assert filled.pool_pairs == 6 and filled.human_in_pool == 3
    assert filled.judge_on_human == {("q1", "d1"): 3, ("q1", "d2"): 1, ("q2", "d4"): 3}
    assert filled.agreement is not None and filled.agreement.n_labeled == 3
    combined = filled.combined(scale=2).to_dict()
    assert combined["q1"] == {"d1": 2, "d2": 0, "d3": 0} and combined["q2"] == {"d4": 2, "d5": 1, "d1": 2}
    qrels_path, marks = filled.write(tmp_path / "filled.qrels", scale=2)
    assert Qrels.read(qrels_path).to_dict() == combined
    rows = marks.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "query_id\tdoc_id\tjudge_grade\tqrels_grade\treason"
    assert sorted(r.split("\t")[:4] for r in rows[1:]) == [
        ["q1", "d3", "0", "0"], ["q2", "d1", "3", "2"], ["q2", "d5", "1", "1"]
    ]  # fmt: skip
    calls = server.count()
    again = fill_qrels(QRELS, RUNS, QUERIES, PASSAGES, make_judge(), top_k=2)
    assert server.count() == calls and again.judge_grades == filled.judge_grades  # every grade from the cache


def test_a_missing_text_is_an_error_naming_it(make_judge: JudgeFactory, server: LoopbackServer) -> None:
    with pytest.raises(InputError, match="no text for document 'd5'"):
        fill_qrels(
            QRELS, RUNS, QUERIES, {k: v for k, v in PASSAGES.items() if k != "d5"}, make_judge(), top_k=2
        )


def test_fill_qrels_cli_with_the_local_judge_on_the_builtin_collection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from ragmetrics.collection import load_passages, load_qrels, load_questions
    from ragmetrics.retrievers import build_run

    questions = load_questions()[:12]
    passages = load_passages()
    full = load_qrels().select(q for q, _ in questions).to_dict()
    rng = random.Random(0)
    removed = {(q, d): g for q, docs in full.items() for d, g in docs.items() if rng.random() < 0.3}
    kept = {q: {d: g for d, g in docs.items() if (q, d) not in removed} for q, docs in full.items()}
    Qrels.from_dict(kept).to_trec(tmp_path / "kept.qrels")
    build_run("bm25", {"top_k": 5}, passages, questions, "bm25").to_trec(tmp_path / "bm25.run")
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps({"id": q, "text": t}) for q, t in questions))
    (tmp_path / "p.jsonl").write_text(
        "\n".join(json.dumps({"id": p["id"], "text": p["text"]}) for p in passages)
    )
    Qrels.from_dict(full).to_trec(tmp_path / "full.qrels")
    code = main([
        "fill-qrels", str(tmp_path / "kept.qrels"), str(tmp_path / "bm25.run"), "--queries", str(tmp_path / "q.jsonl"),
        "--passages", str(tmp_path / "p.jsonl"), "--top-k", "5", "--judge", "local", "--scale", "2",
        "--cache", str(tmp_path / "cache.sqlite"), "-o", str(tmp_path / "filled.qrels"),
        "--compare-with", str(tmp_path / "full.qrels"),
    ])  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "graded by the judge" in out and "judge agreement on the human-judged pairs" in out
    assert re.search(r"judge agreement with .*full.qrels on the filled pairs \(\d+ pairs\): accuracy", out)
    marks = (tmp_path / "filled.qrels.judge.tsv").read_text(encoding="utf-8").splitlines()[1:]
    filled_pairs = {(r.split("\t")[0], r.split("\t")[1]) for r in marks}
    pooled_removed = {pair for pair in removed if pair in filled_pairs}
    assert pooled_removed  # removed judgments that the run retrieved are filled, and marked as the judge's
    combined = Qrels.read(tmp_path / "filled.qrels").to_dict()
    assert all(kept[q][d] == combined[q][d] for q in kept for d in kept[q])  # human grades untouched
    # human-only and filled qrels side by side
    assert main(["retrieval", str(tmp_path / "kept.qrels"), str(tmp_path / "bm25.run"), "-m", "judged@5",
                 "--also-qrels", str(tmp_path / "filled.qrels"), "--format", "csv"]) == 0  # fmt: skip
    table = capsys.readouterr().out
    assert "bm25 [filled.qrels]" in table
    rows = {line.split(",")[0]: line.split(",") for line in table.splitlines()[1:] if line}
    assert float(rows["bm25 [filled.qrels]"][-1]) == 1.0  # every pooled document judged now
