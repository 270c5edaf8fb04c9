"""configs/multilingual.yaml end to end, offline: Japanese, Korean and Russian samples judged per sentence by
the local judge's multilingual model, with ids in each script through every artifact; and ids and run names in
any script through the readers, writers and report formats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ragmetrics import Qrels, Run, compare, evaluate, format_report, format_results
from ragmetrics.nightly.config import load_config
from ragmetrics.nightly.pipeline import run_pipeline

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> object:
    tmp = tmp_path_factory.mktemp("ml")
    shutil.copytree(ROOT / "configs", tmp / "configs")
    shutil.copytree(ROOT / "examples", tmp / "examples")
    config = load_config(tmp / "configs" / "multilingual.yaml")
    return run_pipeline(config, progress=False, log=lambda _: None)


def test_every_sample_is_scored_and_languages_are_recorded(outcome: object) -> None:
    report = outcome.report  # type: ignore[attr-defined]
    pipeline = report.run("pipeline")
    assert not pipeline.failures
    judge = report.metadata.nightly.judge
    assert judge.backend == "local"
    assert judge.settings["samples_per_model"].get("multilingual-e5-small-q4", 0) > 0
    assert "all-MiniLM-L6-v2-onnx-int8" not in judge.settings["samples_per_model"]  # no English sample
    assert all(v is not None for v in pipeline.aggregate.values())


def test_hand_counted_sentences_and_statements(outcome: object) -> None:
    details = outcome.report.run("pipeline").details  # type: ignore[attr-defined]
    # 東京タワー: the answering passage has 4 sentences, the neighbouring one 3
    verdicts = details["ja-東京タワー"]["context_relevancy"].verdicts
    assert [v["chunk"] for v in verdicts] == [0, 0, 0, 0, 1, 1, 1]
    assert verdicts[0]["sentence"] == "東京タワーは1958年に完成した電波塔です。"
    # Байкал: "т.е." does not end the sentence, so the answering passage has 3 sentences, the other 3
    assert len(details["ru-Байкал"]["context_relevancy"].verdicts) == 6
    # 한글: the reference is one statement
    assert len(details["ko-한글"]["context_recall"].verdicts) == 1
    # the answering passage is judged more relevant than the neighbouring one, in every language
    for qid in ("ja-東京タワー", "ko-한글", "ru-Байкал"):
        verdicts = details[qid]["context_relevancy"].verdicts
        assert any(v["verdict"] for v in verdicts if v["chunk"] == 0), qid


def test_ids_in_every_script_reach_every_artifact(outcome: object) -> None:
    folder = outcome.folder  # type: ignore[attr-defined]
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    ids = set(report["runs"][0]["per_query"])
    assert {"ja-東京タワー", "ko-한글", "ru-Метро_Москвы"} <= ids
    csv_text = next(folder.glob("*.csv")).read_text(encoding="utf-8")
    assert "ja-東京タワー" in csv_text or "pipeline" in csv_text
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "ja-東京タワー" in html and "ko-한글" in html and "ru-Байкал" in html


QRELS = {"質問-1": {"文書-甲": 2, "문서-을": 0}, "вопрос-2": {"документ-в": 1}}
RUN_A = {"質問-1": {"文書-甲": 0.9, "문서-을": 0.5}, "вопрос-2": {"документ-в": 0.7, "x": 0.1}}
RUN_B = {"質問-1": {"문서-을": 0.9, "文書-甲": 0.5}, "вопрос-2": {"x": 0.7, "документ-в": 0.1}}


def test_ids_in_any_script_round_trip_through_every_reader_and_writer(tmp_path: Path) -> None:
    run = Run.from_dict(RUN_A, name="検索A")
    qrels = Qrels.from_dict(QRELS)
    run.to_trec(tmp_path / "a.trec")
    run.to_json(tmp_path / "a.json")
    run.to_jsonl(tmp_path / "a.jsonl")
    run.to_parquet(tmp_path / "a.parquet")
    qrels.to_trec(tmp_path / "q.trec")
    for path in ("a.trec", "a.json", "a.jsonl", "a.parquet"):
        assert Run.read(tmp_path / path).to_dict() == run.to_dict(), path
    assert Qrels.read(tmp_path / "q.trec").to_dict() == qrels.to_dict()
    frame = pd.DataFrame(
        [(q, d, s) for q, docs in RUN_A.items() for d, s in docs.items()],
        columns=["query_id", "doc_id", "score"],
    )
    frame.to_csv(tmp_path / "a.csv", index=False)
    assert Run.from_df(pd.read_csv(tmp_path / "a.csv"), name="csv").to_dict() == run.to_dict()


def test_names_in_any_script_in_terminal_markdown_latex_and_html_tables() -> None:
    qrels = Qrels.from_dict(QRELS)
    report = compare(
        qrels, [Run.from_dict(RUN_A, name="検索A"), Run.from_dict(RUN_B, name="поиск-Б")], ["ndcg"], seed=1
    )
    table = format_report(report, "table")
    lines = [line for line in table.splitlines() if "検索A" in line and line.startswith("│")]
    from rich.cells import cell_len

    blocks: list[set[int]] = []
    for line in table.splitlines():
        if line.startswith("┏"):
            blocks.append(set())
        if blocks and line.startswith(("│", "┃", "┏", "┡", "└", "├")):
            blocks[-1].add(cell_len(line))
    # wide characters counted as two cells: within each table every row is equally wide (a narrow terminal,
    # such as a test worker's without a tty, splits the wider tables into "(continued)" parts: more blocks)
    assert lines and len(blocks) >= 3 and all(len(widths) == 1 for widths in blocks), blocks
    assert "検索A" in format_report(report, "markdown") and "поиск-Б" in format_report(report, "markdown")
    latex = format_report(report, "latex")
    assert "検索A" in latex and "xeCJK" in latex  # compiles with xelatex; the header says how
    per_query = format_results(
        [evaluate(qrels, Run.from_dict(RUN_A, name="検索A"), ["ndcg"])], ["ndcg"], "markdown", per_query=True
    )
    assert "質問-1" in per_query and "вопрос-2" in per_query
