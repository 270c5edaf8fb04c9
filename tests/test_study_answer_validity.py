"""benchmarks/study_answer_validity.py (docs/study_answer_validity.md): its generator on hand-made passages, its
SQuAD reader, its skip without data, and the utility judgments it builds through `ragmetrics.utility`, so the
study cannot silently rot when the APIs it stands on change."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import study_answer_validity as study

PASSAGE = "Tesla was born in 1856 in Smiljan. He moved to New York in 1884 to work for Edison."


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("In what year was Tesla born?", "1856"),  # a number for a 'what year' question
        ("Who did Tesla work for in New York?", "Edison"),  # capitalised words for 'who'
        ("Where was Tesla born?", "Smiljan"),
    ],
)
def test_the_extractor_answers_with_the_span_nearest_the_question(question: str, answer: str) -> None:
    text, p_abstain = study.extract(question, [PASSAGE])
    assert text == answer
    assert 0.0 <= p_abstain < 1.0 - study.ABSTAIN_BELOW


def test_the_extractor_abstains_when_no_sentence_holds_the_question() -> None:
    text, p_abstain = study.extract("What colour is the sky on Mars?", [PASSAGE])
    assert (text, p_abstain) == (study.ABSTENTION, 1.0)


def _squad(tmp_path: Path) -> Path:
    data = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": PASSAGE, "qas": [
        {"id": "q1", "question": "In what year was Tesla born?", "answers": [{"text": "1856", "answer_start": 18}]},
        {"id": "q2", "question": "Unanswerable?", "answers": []}]}]}]}  # fmt: skip
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_reader_cuts_passages_and_skips_questions_without_a_reference(tmp_path: Path) -> None:
    paragraphs, chunks, questions = study.load_squad(_squad(tmp_path))
    assert list(paragraphs) == ["a00p00"]
    assert chunks["a00p00"] == [PASSAGE]  # two sentences: one passage
    assert [(q.id, q.references, q.paragraph) for q in questions] == [("q1", ("1856",), "a00p00")]


def test_a_file_that_is_not_squad_exits_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [{"no_paragraphs": 1}]}', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"bad\.json: not SQuAD v1\.1-format JSON \(KeyError"):
        study.load_squad(bad)


def test_without_data_the_study_says_it_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert study.main(["--data", str(tmp_path / "absent.json")]) == 0
    assert capsys.readouterr().out.startswith("skipped: no SQuAD-format JSON at ")


def test_utility_judgments_through_ragmetrics_utility_use_the_extractor(tmp_path: Path) -> None:
    _, chunks, questions = study.load_squad(_squad(tmp_path))
    run = study.Run.from_dict({"q1": {"a00p00c0": 1.0, "other": 0.5}}, name="r")
    judged = study.build_utility(
        {q.id: study.UtilityQuestion(q.id, q.question, q.references[0]) for q in questions},
        {"a00p00c0": chunks["a00p00"][0], "other": "Paris is in France."},
        [run],
        study.SpanExtractor(),
        k=2,
        metric="token_f1",
    )
    by_doc = {j.doc_id: j for j in judged.judgments}
    assert by_doc["a00p00c0"].answer == "1856" and by_doc["a00p00c0"].grade == 3
    assert by_doc["other"].answer == study.ABSTENTION and by_doc["other"].grade == 0
    assert by_doc["other"].p_abstain == 1.0


def test_the_llm_path_exports_a_night_that_loads_and_reads_the_same_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--export` runs nothing and writes the study's dataset and a night config for an LLM generator; the config
    loads, its dataset reads with the drawn questions, their qrels and the passages, and its runs, generator,
    answer metrics and utility judgments are the study's (docs/study_answer_validity.md, "With an LLM
    generator"). No LLM is called here."""
    from ragmetrics.nightly.config import load_config
    from ragmetrics.nightly.dataset import load_dataset

    folder = tmp_path / "llm"
    assert study.main(["--data", str(_squad(tmp_path)), "--questions", "5", "--export", str(folder)]) == 0
    assert "ragmetrics validity" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == ["night.yaml", "passages.jsonl", "qa.jsonl"]
    config = load_config(folder / "night.yaml")
    dataset = load_dataset(config.dataset, progress=False)
    assert [s.id for s in dataset.samples] == ["q1"] and dataset.samples[0].reference == "1856"
    assert dataset.relevance == {"q1": {"a00p00c0": 1}}
    assert dataset.passages is not None and dataset.passages["a00p00c0"].text == PASSAGE
    assert [r.name for r in config.runs] == ["bm25", "bm25+rerank", "dense", "rrf"]
    assert config.generator is not None and config.generator.top_k == study.GENERATOR_DEPTH
    assert config.judge is not None and config.judge.metrics == ["token_f1", "exact_match"]
    assert config.utility_qrels is not None and config.utility_qrels.generator == "night"
    assert config.utility_qrels.k == study.POOL_DEPTH and config.output.dir == folder / "out"
