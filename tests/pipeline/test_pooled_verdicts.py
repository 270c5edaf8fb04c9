"""Issue 66 (3): verdicts on generated qrels say how far they can be trusted.

- Every retrieval run is compared again on source-only qrels (each question's own source chunk, no grader).
  Where that verdict (best run, significant pairs) differs from the pooled one, the verdict line itself says
  so, in the first lines of the terminal, report.md and report.html; where they agree, it says so briefly.
- Runs are matched to the pool by what they are (retriever kind, ranking settings, models), whatever their
  names and however their settings are spelled; a run sharing the pool grader's model is warned about; the
  warnings come with the verdict, before any table.

The test set here is written by hand so the two verdicts provably differ: run `exact` ranks each question's
source chunk first, run `broad` ranks three other chunks the pool's judge graded relevant. On the pooled qrels
`broad` wins every question; on source-only qrels `exact` does (12 of 12 questions: Fisher p = 2/2^12).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli.main import main
from ragmetrics.testset.build import attach_qrels
from ragmetrics.testset.output import write_grades, write_items
from ragmetrics.testset.settings import Grade, TestItem

QUESTIONS = 12
MINILM = "all-MiniLM-L6-v2-onnx-int8"
BM25_MEMBER = {"name": "pool:bm25", "retriever": "bm25", "models": [],
               "settings": {"k1": 1.5, "b": 0.75, "method": "lucene", "stem": False, "stopwords": "en"}}  # fmt: skip
DENSE_MEMBER = {"name": "pool:dense", "retriever": "dense", "settings": {}, "models": [MINILM]}
"""The pool members as testset.json records them (`testset.pooling`: `retrievers.identity.ranking_identity`)."""
TOPICS = ["glaciers carve valleys", "bread dough rises with yeast", "tides follow the moon",
          "pianos strike strings with hammers", "bees dance to show flowers", "compilers translate code",
          "telescopes gather light", "vaccines train immunity", "corals host algae", "castling moves the king",
          "satellites orbit the earth", "volcanoes erupt lava"]  # fmt: skip


def _testset(folder: Path, pool_members: list[dict[str, Any]], judge_model: str = MINILM) -> Path:
    """A pooled test-set folder as `ragmetrics testset` writes it: per question its source chunk (origin
    source) and three more relevant chunks and one non-relevant one graded by the pool's judge."""
    folder.mkdir(parents=True)
    corpus = []
    items, grades = [], []
    for i, topic in enumerate(TOPICS[:QUESTIONS]):
        corpus.append({"id": f"src-{i}", "text": f"{topic}: the source passage {i}."})
        for k in range(3):
            corpus.append({"id": f"alt-{i}-{k}", "text": f"More on how {topic}, view {k}."})
        corpus.append({"id": f"other-{i}", "text": f"Unrelated note {i} on bookkeeping."})
        items.append(TestItem(id=f"q{i}", question=f"Why {topic}?", reference=f"{topic}.", kind="factoid",
                              language="en", source_ids=[f"src-{i}"]))  # fmt: skip
        grades.append(Grade(query_id=f"q{i}", doc_id=f"src-{i}", grade=2, origin="source"))
        grades += [Grade(query_id=f"q{i}", doc_id=f"alt-{i}-{k}", grade=2, origin="judge", reason="answers it")
                   for k in range(3)]  # fmt: skip
        grades.append(
            Grade(query_id=f"q{i}", doc_id=f"other-{i}", grade=0, origin="judge", reason="off topic")
        )
    corpus += [{"id": f"fill-{n}", "text": f"Filler paragraph number {n} about nothing."} for n in range(12)]
    corpus_path = folder.parent / "corpus.jsonl"
    corpus_path.write_text("".join(json.dumps(r) + "\n" for r in corpus), encoding="utf-8")
    attach_qrels(items, grades)
    write_items(folder, items)
    write_grades(folder, grades)
    manifest = {
        "format": 1,
        "corpus_path": str(corpus_path),
        "qrels": {
            "relevant_by_origin": {"source": QUESTIONS, "judge": 3 * QUESTIONS},
            "shared_with_copies": 0,
        },
        "pool": {
            "runs": [m["name"] for m in pool_members],
            "members": pool_members,
            "judge": {"backend": "local", "model": judge_model, "embedding_model": judge_model},
        },
    }
    (folder / "testset.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder


def _trec(path: Path, rankings: dict[str, list[str]]) -> Path:
    lines = [
        f"{q} Q0 {doc} {r + 1} {100 - r} {path.stem}"
        for q, docs in rankings.items()
        for r, doc in enumerate(docs)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _fill(n: int) -> list[str]:
    return [f"fill-{k}" for k in range(n)]


def _night(tmp_path: Path, testset: Path, runs: list[dict[str, Any]]) -> Path:
    config = {
        "name": "pooled verdicts",
        "dataset": {"path": str(testset)},
        "retrieval": {"metrics": ["ndcg@10", "recall@10"]},
        "runs": runs,
        "compare": {"test": "fisher", "correction": "holm", "seed": 1, "permutations": 2000},
        "output": {"dir": str(tmp_path / "out"), "formats": ["json", "md", "html"], "plots": False},
        "progress": False,
    }
    path = tmp_path / "night.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _run(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], str, str]:
    assert main(["run", str(config), "--no-progress"]) == 0
    out = capsys.readouterr().out
    latest = config.parent / "out" / "latest"
    return (
        out.splitlines(),
        (latest / "report.md").read_text(encoding="utf-8"),
        (latest / "report.html").read_text(encoding="utf-8"),
    )


def test_a_verdict_the_source_only_qrels_contradict_says_so_in_its_first_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    testset = _testset(tmp_path / "ts", [BM25_MEMBER])
    exact = _trec(tmp_path / "exact.trec", {f"q{i}": [f"src-{i}", *_fill(9)] for i in range(QUESTIONS)})
    broad = _trec(tmp_path / "broad.trec",
                  {f"q{i}": [*(f"alt-{i}-{k}" for k in range(3)), *_fill(7)] for i in range(QUESTIONS)})  # fmt: skip
    config = _night(
        tmp_path, testset, [{"source": "file", "path": str(exact)}, {"source": "file", "path": str(broad)}]
    )
    lines, md, html = _run(config, capsys)
    assert lines[0] == "Verdict:"
    first = lines[1]
    # the pooled verdict, then in the same line what the source-only qrels find instead
    assert first.strip().startswith(
        "broad is best on ndcg@10, recall@10: significantly better than every other run"
    )
    assert "NOT CONFIRMED on source-only qrels (12 questions" in first
    assert "exact has the best mean" in first
    assert "significantly better: exact > broad (p 0.0015, the reverse of the pooled verdict)" in first
    verdict_md = md[md.index("## Verdict") : md.index("## Summary")]
    assert "NOT CONFIRMED on source-only qrels" in verdict_md.splitlines()[2]  # the section's first item
    verdict_html = html[html.index("<h2>Verdict</h2>") :]
    assert "NOT CONFIRMED on source-only qrels" in verdict_html[: verdict_html.index("</li>")]
    assert html.index("<h2>Verdict</h2>") < html.index("Mean per run") if "Mean per run" in html else True
    # the two runs' rankings were not built by ragmetrics: said, never guessed from their names
    assert "not checked for the pool's bias" in "\n".join(lines) and "exact, broad" in "\n".join(lines)


def test_when_the_two_verdicts_agree_the_line_says_so_briefly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    testset = _testset(tmp_path / "ts", [BM25_MEMBER])
    exact = _trec(
        tmp_path / "exact.trec", {f"q{i}": [f"src-{i}", f"alt-{i}-0", *_fill(8)] for i in range(QUESTIONS)}
    )
    miss = _trec(tmp_path / "miss.trec", {f"q{i}": _fill(10) for i in range(QUESTIONS)})
    config = _night(
        tmp_path, testset, [{"source": "file", "path": str(exact)}, {"source": "file", "path": str(miss)}]
    )
    lines, md, _ = _run(config, capsys)
    assert "exact is best on ndcg@10, recall@10" in lines[1]
    assert lines[1].endswith("— source-only qrels (12 questions, no grader) agree")
    assert "NOT CONFIRMED" not in md


def test_runs_are_matched_to_the_pool_by_what_they_are_and_warned_with_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pool names its members pool:bm25 and pool:dense; the night's runs are `lexical` (BM25 with its
    default k1 spelled out), `my_dense` (dense with a top_k), `tuned` (BM25 with another k1: not pooled) and a
    fusion of two of them. The warnings name the runs by what they are and come before any table."""
    testset = _testset(tmp_path / "ts", [BM25_MEMBER, DENSE_MEMBER])
    runs = [
        {"source": "retriever", "retriever": "bm25", "name": "lexical", "params": {"k1": 1.5, "top_k": 20}},
        {"source": "retriever", "retriever": "dense", "name": "my_dense", "params": {"top_k": 20}},
        {"source": "retriever", "retriever": "bm25", "name": "tuned", "params": {"k1": 0.4, "b": 0.2}},
        {"source": "fusion", "name": "hybrid", "runs": ["tuned", "my_dense"]},
    ]
    lines, md, html = _run(_night(tmp_path, testset, runs), capsys)
    table = next(n for n, line in enumerate(lines) if "Mean per run" in line)
    block = "\n".join(lines[:table])
    assert "! the comparison may favour run 'lexical': it ranks as the pooled run 'pool:bm25' does" in block
    assert "! the comparison may favour run 'my_dense': it ranks as the pooled run 'pool:dense' does" in block
    assert f"it ranks with {MINILM}, the model of the local judge that graded the pool" in block
    assert "may favour run 'hybrid': it fuses 'my_dense'" in block
    assert "run 'tuned'" not in block
    assert "**Warning:** the comparison may favour run 'my\\_dense'" in md[
        md.index("## Verdict") : md.index("## Summary")
    ] or (
        "**Warning:** the comparison may favour run 'my_dense'"
        in md[md.index("## Verdict") : md.index("## Summary")]
    )
    verdict_html = html[
        html.index("<h2>Verdict</h2>") : html.index("<h2>", html.index("<h2>Verdict</h2>") + 5)
    ]
    assert (
        "may favour run &#x27;my_dense&#x27;" in verdict_html or "may favour run 'my_dense'" in verdict_html
    )
