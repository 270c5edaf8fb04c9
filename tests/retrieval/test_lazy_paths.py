"""Kernels run as plain Python on small inputs and compiled on large ones: both give identical results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragmetrics import Qrels, Run, evaluate
from ragmetrics.errors import InputError
from ragmetrics.retrieval._lazy import force_path

IDS = ["d1", "doc-é", "D10", "d9", "文書7", "x" * 20, "a.b", "Z", "d01"]


def _random_trec(tmp_path: Path, seed: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    qrels_lines, run_lines = [], []
    for q in range(12):
        qid = f"q{q}" if q % 3 else f"クエリ{q}"
        for d in rng.choice(len(IDS), 5, replace=False):
            qrels_lines.append(f"{qid} 0 {IDS[d]} {int(rng.integers(-1, 4))}")
        for rank, d in enumerate(rng.choice(len(IDS), 7, replace=False)):
            score = ["1.5", "2", "-0.25", "3e-2", "1E+2", "0.1000000000000000055511151231257827", "7"][rank]
            run_lines.append(f"{qid} Q0 {IDS[d]} {rank + 1} {score} tag")
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    run_path.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    return qrels_path, run_path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_readers_and_metrics_agree_between_python_and_compiled(tmp_path: Path, seed: int) -> None:
    qrels_path, run_path = _random_trec(tmp_path, seed)
    metrics = ["ndcg@5", "map", "mrr", "bpref", "rbp.80", "ndcg_burges", "recall@3-l2", "f1", "r-precision"]
    results = []
    for compiled in (False, True):
        with force_path(compiled):
            q, r = Qrels.from_trec(qrels_path), Run.from_trec(run_path)
            as_dict = Run.from_dict(r.to_dict(), name="d")
            results.append((q, r, as_dict, evaluate(q, r, metrics), evaluate(q, as_dict, metrics)))
    (q0, r0, d0, e0, f0), (q1, r1, d1, e1, f1) = results
    for a, b in ((q0, q1), (r0, r1), (d0, d1)):
        assert a.query_ids == b.query_ids
        np.testing.assert_array_equal(a.doc_vocab, b.doc_vocab)
        np.testing.assert_array_equal(a.offsets, b.offsets)
        np.testing.assert_array_equal(a.doc_codes, b.doc_codes)
    np.testing.assert_array_equal(q0.grades, q1.grades)
    np.testing.assert_array_equal(r0.scores, r1.scores)
    assert e0.per_query == e1.per_query and f0.per_query == f1.per_query


def test_a_small_cli_call_never_imports_numba(tmp_path: Path) -> None:
    qrels_path, run_path = _random_trec(tmp_path, 4)
    code = (
        "import sys; from ragmetrics.cli import main; "
        f"rc = main(['retrieval', {str(qrels_path)!r}, {str(run_path)!r}, '-m', 'ndcg@10', 'map']); "
        "assert 'numba' not in sys.modules, 'numba was imported'; sys.exit(rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ndcg@10" in done.stdout


def test_numba_imported_by_another_library_does_not_lower_the_threshold() -> None:
    # bm25s imports numba; that pays numba's import, not the compilation of our kernels (seconds, cold)
    code = (
        "import numba, sys; from ragmetrics.retrieval._lazy import numba_for, NUMBA_MIN_SIZE; "
        "a = numba_for(5000).__enter__(); "
        "b = numba_for(NUMBA_MIN_SIZE).__enter__(); "
        "sys.exit(0 if (a, b) == (False, True) else 1)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("compiled", [False, True])
def test_burges_gains_beyond_float64(compiled: bool) -> None:
    """2^1024 - 1 overflows float64: ndcg_burges is computed scaled (exactly, a power of two cancels) and
    stays right; dcg_burges, the raw sum, is an input error naming the grade."""
    qrels = Qrels.from_dict({"q": {"a": 1500, "b": 3, "c": 0}})
    run = Run.from_dict({"q": {"a": 0.9, "b": 0.5, "c": 0.1}})
    swapped = Run.from_dict({"q": {"a": 0.1, "b": 0.9, "c": 0.5}})
    with force_path(compiled):
        assert evaluate(qrels, run, ["ndcg_burges"]).aggregate["ndcg_burges"] == 1.0
        value = evaluate(qrels, swapped, ["ndcg_burges"]).aggregate["ndcg_burges"]
        # a at rank 3: its gain over log2(4) dominates; the grade-3 gain is negligible next to 2^1500.
        assert value == pytest.approx(0.5)
        with pytest.raises(InputError, match=r"grade 1500.*beyond float64"):
            evaluate(qrels, run, ["dcg_burges"])
        small = Qrels.from_dict({"q": {"a": 1000, "b": 3}})
        assert evaluate(small, run, ["dcg_burges@1"]).aggregate["dcg_burges@1"] == 2.0**1000 - 1.0
