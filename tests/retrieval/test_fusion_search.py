"""The fusion weight and k search: the grid, the choice on validation queries, the held-out score."""

from __future__ import annotations

import pytest

from ragmetrics import InputError, Qrels, Run, evaluate, fuse, search_fusion
from ragmetrics.retrieval.fusion_search import weight_grid


def test_weight_grid_is_the_simplex_at_the_step() -> None:
    assert weight_grid(2, 0.5) == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    assert len(weight_grid(2, 0.1)) == 11 and len(weight_grid(3, 0.1)) == 66
    assert all(abs(sum(w) - 1) < 1e-12 for w in weight_grid(3, 0.25))
    with pytest.raises(InputError, match="divide 1 evenly"):
        weight_grid(2, 0.3)


def _runs() -> tuple[Qrels, Run, Run]:
    # Run a finds the relevant document of the even queries, run b of the odd ones; a is slightly better.
    qrels = Qrels.from_dict({f"q{i}": {"rel": 1} for i in range(20)})
    a = Run.from_dict(
        {f"q{i}": {"rel": 0.9, "x": 0.1} if i % 2 == 0 or i == 1 else {"x": 0.9} for i in range(20)}, name="a"
    )
    b = Run.from_dict(
        {f"q{i}": {"rel": 0.8, "y": 0.2} if i % 2 == 1 else {"y": 0.9} for i in range(20)}, name="b"
    )
    return qrels, a, b


def test_the_chosen_weights_maximise_the_validation_metric_and_are_scored_on_held_out_queries() -> None:
    qrels, a, b = _runs()
    search = search_fusion(qrels, [a, b], metric="ndcg@10", held_out=0.5, seed=3)
    assert search.validation_queries == 10 and search.held_out_queries == 10
    scores = [score for _, score in search.tried]
    assert search.validation_score == max(scores) and len(search.tried) == 11
    # the held-out figure is the chosen fusion scored on the other queries only
    fused = search.fused([a, b])
    assert search.held_out_score is not None
    whole = evaluate(qrels, fused, ["ndcg@10"]).aggregate["ndcg@10"]
    assert whole == pytest.approx((search.validation_score * 10 + search.held_out_score * 10) / 20)


def test_rrf_k_search_and_a_separate_held_out_qrels() -> None:
    qrels, a, b = _runs()
    validation = qrels.select([f"q{i}" for i in range(10)])
    test = qrels.select([f"q{i}" for i in range(10, 20)])
    search = search_fusion(validation, [a, b], method="rrf", ks=[1, 60], held_out=test)
    assert search.best["k"] in (1.0, 60.0)
    expected = evaluate(
        test, fuse([a, b], "rrf", k=float(search.best["k"])), ["ndcg@10"], allow_disjoint=True
    )
    assert search.held_out_score == pytest.approx(expected.aggregate["ndcg@10"])
    with pytest.raises(InputError, match="in both the validation and the held-out"):
        search_fusion(qrels, [a, b], held_out=test)
    with pytest.raises(InputError, match="'combsum' has nothing to search"):
        search_fusion(qrels, [a, b], method="combsum")


def test_trained_methods_learn_on_validation_queries_only() -> None:
    """The held-out score of a trained method is that of a model that never saw the held-out queries."""
    from ragmetrics.retrieval.fusion_trained import train_fusion

    qrels, a, b = _runs()
    validation = qrels.select([f"q{i}" for i in range(10)])
    test = qrels.select([f"q{i}" for i in range(10, 20)])
    for method in ("posfuse", "probfuse", "bayesfuse"):
        search = search_fusion(validation, [a, b], method=method, held_out=test)
        assert search.model is not None and search.model.training_queries == 10
        segments = int(search.best.get("segments", 10))  # type: ignore[arg-type]
        model = train_fusion(validation, [a, b], method, segments=segments)
        expected = evaluate(test, fuse([a, b], method, model=model), ["ndcg@10"], allow_disjoint=True)
        assert search.held_out_score == pytest.approx(expected.aggregate["ndcg@10"]), method
        leaked = train_fusion(qrels, [a, b], method, segments=segments)
        assert leaked.training_queries == 20  # what a search must not do
    rbc = search_fusion(validation, [a, b], method="rbc", values=[0.5, 0.9], held_out=test)
    assert [s for s, _ in rbc.tried] == [{"phi": 0.5}, {"phi": 0.9}]
