"""Metrics at a token budget: hand-computed cases for both straddle rules, equality with the count-cutoff
metric at each query's depth on random runs, tokenizers, and errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragmetrics import InputError, Qrels, Run, evaluate
from ragmetrics.retrieval.budget import count_tokens
from ragmetrics.retrieval.metrics import parse_metric

QRELS = Qrels.from_dict({"q": {"a": 1, "b": 1, "c": 1}})
RUN = Run.from_dict({"q": {"a": 0.9, "b": 0.8, "c": 0.7}})
LENGTHS = {"a": 300, "b": 300, "c": 300}


@pytest.mark.parametrize(
    ("straddle", "recall", "precision"),
    [("exclude", 1 / 3, 1.0), ("include", 2 / 3, 1.0)],
)
def test_three_passages_of_300_tokens_at_a_budget_of_512(
    straddle: str, recall: float, precision: float
) -> None:
    # exclude: only passage 1 fits whole (300 <= 512, 600 > 512); include: passage 2 starts inside the budget
    scores = evaluate(QRELS, RUN, ["recall@512tok", "precision@512tok"], lengths=LENGTHS, straddle=straddle)
    assert scores.per_query["q"] == {"recall@512tok": pytest.approx(recall), "precision@512tok": precision}


def test_a_budget_smaller_than_the_first_passage() -> None:
    assert evaluate(QRELS, RUN, ["recall@299tok"], lengths=LENGTHS).per_query["q"]["recall@299tok"] == 0.0
    include = evaluate(QRELS, RUN, ["recall@299tok"], lengths=LENGTHS, straddle="include")
    assert include.per_query["q"]["recall@299tok"] == pytest.approx(1 / 3)


METRICS = [
    "ndcg",
    "map",
    "mrr",
    "precision",
    "recall",
    "hit_rate",
    "f1",
    "dcg",
    "judged",
    "ndcg_burges",
    "err",
    "nerr",
]


def test_equal_to_the_count_cutoff_at_each_querys_depth_on_random_runs() -> None:
    rng = np.random.default_rng(5)
    qrels = {
        f"q{i}": {f"d{j}": int(rng.integers(0, 4)) for j in rng.choice(80, 20, replace=False)}
        for i in range(30)
    }
    run = {
        f"q{i}": {f"d{j}": float(rng.random()) for j in rng.choice(80, 40, replace=False)} for i in range(30)
    }
    lengths = {f"d{j}": int(rng.integers(20, 400)) for j in range(80)}
    q, r = Qrels.from_dict(qrels), Run.from_dict(run)
    for budget in (100, 512, 2000):
        for straddle in ("exclude", "include"):
            spelled = [f"{m}@{budget}tok" for m in METRICS] + [f"ndcg@{budget}tok-l2"]
            got = evaluate(q, r, spelled, lengths=lengths, straddle=straddle).per_query
            for qid, ranking in r.to_dict().items():
                total, depth = 0, 0
                for doc in ranking:
                    before, total = total, total + lengths[doc]
                    if (total <= budget) if straddle == "exclude" else (before < budget):
                        depth += 1
                    else:
                        break
                for metric, spelling in zip([*METRICS, "ndcg"], spelled, strict=True):
                    level = "-l2" if spelling.endswith("-l2") else ""
                    if depth == 0:
                        assert got[qid][spelling] == 0.0
                        continue
                    one = evaluate(q.select([qid]), r.select([qid]), [f"{metric}@{depth}{level}"])
                    assert got[qid][spelling] == pytest.approx(
                        one.per_query[qid][f"{metric}@{depth}{level}"]
                    ), (qid, spelling, depth)


def test_spellings_and_refusals() -> None:
    assert (
        parse_metric("ndcg@2ktok").budget == 2000 and parse_metric("ndcg@2ktok").canonical == "ndcg@2000tok"
    )
    for bad, message in [
        ("bpref@512tok", "takes no cutoff"),
        ("rbp.8@512tok", "no token budget"),
        ("recall@0tok", "token budget"),
    ]:
        with pytest.raises(InputError, match=message):
            parse_metric(bad)
    with pytest.raises(InputError, match=r"recall@512tok.*needs the retrieved passages' token counts"):
        evaluate(QRELS, RUN, ["recall@512tok"])
    with pytest.raises(InputError, match="no token count for retrieved document 'c'"):
        evaluate(QRELS, RUN, ["recall@512tok"], lengths={"a": 1, "b": 2})
    with pytest.raises(InputError, match="straddle"):
        evaluate(QRELS, RUN, ["recall@512tok"], lengths=LENGTHS, straddle="half")


def test_token_counts_by_whitespace_or_a_tokenizers_file() -> None:
    texts = {"a": "The json module parses JSON.", "b": "一二三"}
    assert count_tokens(texts) == {"a": 5, "b": 1}
    tokenizer = Path(__file__).parents[2] / "ragmetrics" / "embeddings" / "assets" / "tokenizer.json"
    counted = count_tokens(texts, tokenizer)
    assert counted["a"] >= 5 and counted["b"] == 3  # WordPiece: every CJK character is a token
    with pytest.raises(InputError, match="tokenizer must be"):
        count_tokens(texts, "no-such-tokenizer.json")


def test_a_config_scores_token_budgets_from_the_dataset_passages(tmp_path: Path) -> None:
    import shutil

    from ragmetrics.nightly.config import load_config
    from ragmetrics.nightly.pipeline import run_pipeline

    root = Path(__file__).parents[2]
    shutil.copytree(root / "configs", tmp_path / "configs")
    shutil.copytree(root / "examples", tmp_path / "examples")
    config = load_config(tmp_path / "configs" / "multilingual.yaml")
    config.retrieval.metrics = ["recall@2", "recall@100tok", "ndcg@1ktok"]
    config.judge = None
    outcome = run_pipeline(config, write=False, progress=False, log=lambda _: None)
    pipeline = outcome.report.run("pipeline")
    assert pipeline.metadata.metric_settings["metrics"]["recall@100tok"]["token_budget"] == 100
    # the same figures from the API with lengths counted here, independently
    import json

    folder = tmp_path / "examples" / "multilingual"
    rows = [json.loads(line) for line in (folder / "qa.jsonl").read_text(encoding="utf-8").splitlines()]
    passages = [
        json.loads(line) for line in (folder / "passages.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    lengths = {p["id"]: len(p["text"].split()) for p in passages}
    qrels = Qrels.from_dict(
        {r["id"]: dict(zip(r["relevant_ids"], r["relevant_grades"], strict=True)) for r in rows}
    )
    run = Run.from_dict(
        {r["id"]: dict(zip(r["retrieved_ids"], r["retrieved_scores"], strict=True)) for r in rows}
    )
    expected = evaluate(qrels, run, ["recall@100tok", "ndcg@1ktok"], lengths=lengths)
    for qid, scores in expected.per_query.items():
        assert pipeline.per_query[qid]["recall@100tok"] == scores["recall@100tok"], qid
        assert pipeline.per_query[qid]["ndcg@1ktok"] == scores["ndcg@1ktok"], qid
    # Russian passages run to 20-40 words: 100 tokens hold at most a few of them; CJK text has few spaces
    assert any(lengths[d] > 20 for d in lengths if "Байкал" in d)
