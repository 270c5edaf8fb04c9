"""Intent-aware metrics over subtopic qrels: hand-computed cases, the TREC diversity format, and equality
with ndeval (pyndeval, what ir_measures runs for alpha_nDCG, ERR_IA, NRBP, P_IA and StRecall) on random data
at cutoffs 2-20 (ndeval computes no deeper; at 1 it leaves ERR-IA unnormalised, see the metric notes)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ragmetrics import Qrels, Run, SubtopicQrels, evaluate
from ragmetrics.errors import InputError
from ragmetrics.retrieval.diversity import evaluate_diversity

pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (dev extra: ndeval) is the reference")


def test_hand_computed_alpha_ndcg_and_friends() -> None:
    # Two subtopics. d1 covers both, d2 only s1, d3 only s2. Ranking d2, d1, d3.
    qrels = SubtopicQrels.from_dict({"q": {"1": {"d1": 1, "d2": 1}, "2": {"d1": 1, "d3": 1}}})
    run = {"q": {"d2": 3.0, "d1": 2.0, "d3": 1.0}}
    got = evaluate(qrels, run, ["alpha_ndcg@3", "strec@1", "strec@2", "p_ia@2", "err_ia@2", "map"]).per_query[
        "q"
    ]
    # gains: d2 1; d1 0.5 (s1 seen once) + 1 = 1.5; d3 0.5. Ideal greedy: d1 2, then d3 / d2 0.5 each.
    dcg = 1 + 1.5 / math.log2(3) + 0.5 / 2
    ideal = 2 + 0.5 / math.log2(3) + 0.5 / 2
    assert got["alpha_ndcg@3"] == pytest.approx(dcg / ideal)
    assert (got["strec@1"], got["strec@2"]) == (0.5, 1.0)
    assert got["p_ia@2"] == pytest.approx(3 / (2 * 2))
    assert got["err_ia@2"] == pytest.approx((1 + 1.5 / 2) / (2 + 2 * 0.5 / 2))
    assert got["map"] == 1.0  # the collapsed qrels: every ranked document is relevant to some subtopic


def test_the_trec_diversity_format_and_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "div.qrels"
    path.write_text(
        "# web track\n51 1 clueweb-a 1\n51 2 clueweb-a 0\n51 2 clueweb-b 2\n\n52 1 x 1\n", encoding="utf-8"
    )
    qrels = SubtopicQrels.from_trec(path)
    assert qrels.query_ids == ("51", "52") and qrels.judgments["51"]["2"] == {"clueweb-a": 0, "clueweb-b": 2}
    assert qrels.collapsed().to_dict()["51"] == {"clueweb-a": 1, "clueweb-b": 2}
    path.write_text("51 1 doc\n", encoding="utf-8")
    with pytest.raises(InputError, match="expected 4 fields") as err:
        SubtopicQrels.from_trec(path)
    assert err.value.line == 1
    with pytest.raises(InputError, match="needs subtopic qrels"):
        evaluate(Qrels.from_dict({"q": {"d": 1}}), {"q": {"d": 1.0}}, ["alpha_ndcg@10"])
    with pytest.raises(InputError, match="shares no query id"):  # wrong files: refused, not scored all 0
        evaluate(qrels, {"99": {"clueweb-a": 1.0}}, ["alpha_ndcg@10"])
    zeros = evaluate(qrels, {"99": {"clueweb-a": 1.0}}, ["alpha_ndcg@10"], allow_disjoint=True)
    assert zeros.aggregate["alpha_ndcg@10"] == 0.0


def _random(seed: int) -> tuple[list[tuple[str, str, str, int]], dict[str, dict[str, float]]]:
    rng = np.random.default_rng(seed)
    rows = []
    run: dict[str, dict[str, float]] = {}
    for q in range(6):
        qid = str(100 + q)
        for s in range(1, int(rng.integers(1, 5)) + 1):
            for d in rng.choice(25, size=int(rng.integers(1, 9)), replace=False):
                rows.append((qid, str(s), f"d{d:02d}", int(rng.integers(0, 3))))
        docs = rng.choice(25, size=int(rng.integers(1, 22)), replace=False)
        # Untied: ndeval orders ties by document id descending as ragmetrics does, but pyndeval's wrapper
        # ranks them itself, ascending.
        run[qid] = {f"d{d:02d}": float(s) for d, s in zip(docs, rng.permutation(len(docs)), strict=True)}
    return rows, run


@pytest.mark.parametrize("seed", range(8))
def test_equals_ndeval(seed: int) -> None:
    rows, run = _random(seed)
    rng = np.random.default_rng(seed)
    cutoffs = sorted({int(k) for k in rng.integers(2, 21, size=3)} | {5, 10, 20})
    ours_names = [f"{m}@{k}" for m in ("alpha_ndcg", "err_ia", "nerr_ia", "p_ia", "strec") for k in cutoffs]
    ours_names += ["nrbp", "nnrbp", "map_ia"]
    theirs_names = {
        f"{m}@{k}": f"{t}@{k}"
        for m, t in (("alpha_ndcg", "alpha-nDCG"), ("err_ia", "ERR-IA"), ("nerr_ia", "nERR-IA"), ("p_ia", "P-IA"),
                     ("strec", "strec"))
        for k in cutoffs
    } | {"nrbp": "NRBP", "nnrbp": "nNRBP", "map_ia": "MAP-IA"}  # fmt: skip
    level = 1 + seed % 2
    ours = evaluate_diversity(
        SubtopicQrels.from_rows(rows),
        Run.from_dict(run),
        [f"{n}-l{level}" for n in ours_names],
        query_set="intersection",
    )
    theirs = pyndeval.RelevanceEvaluator(
        [pyndeval.SubtopicQrel(*r) for r in rows], list(theirs_names.values()), relevance_level=level
    ).evaluate([pyndeval.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()])
    compared = 0
    for qid, values in theirs.items():
        for mine, name in theirs_names.items():
            value = ours.per_query[qid][f"{mine}-l{level}"]
            if math.isnan(values[name]):  # ndeval's nNRBP of a query with no relevant subtopic: 0 / 0
                assert value == 0.0, (qid, mine)
            else:
                assert value == pytest.approx(values[name], abs=1e-9), (qid, mine)
            compared += 1
    assert compared == len(theirs) * len(theirs_names) > 0


def test_compiled_and_python_kernels_agree() -> None:
    """The intent-aware kernels run as Python on small inputs and compiled by numba on large ones."""
    from ragmetrics.retrieval._lazy import force_path

    rows, run = _random(3)
    metrics = ["alpha_ndcg@10", "err_ia@7", "nerr_ia@20", "nrbp", "nnrbp", "p_ia@5", "strec@3", "map_ia"]
    qrels = SubtopicQrels.from_rows(rows)
    with force_path(False):
        python = evaluate_diversity(qrels, run, metrics).per_query
    with force_path(True):
        compiled = evaluate_diversity(qrels, run, metrics).per_query
    assert python == compiled


def test_the_cli_reads_subtopic_qrels_when_an_intent_aware_metric_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmetrics.cli import main

    (tmp_path / "div.qrels").write_text("51 1 a 1\n51 1 b 1\n51 2 a 1\n51 2 c 1\n", encoding="utf-8")
    Run.from_dict({"51": {"b": 3.0, "a": 2.0, "c": 1.0}}, name="r").to_trec(tmp_path / "r.run")
    code = main(["retrieval", str(tmp_path / "div.qrels"), str(tmp_path / "r.run"), "-m", "alpha_ndcg@3",
                 "strec@1", "map", "--format", "json"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert '"strec@1": 0.5' in out and '"map": 1.0' in out
