"""The Python examples of the built-in collection run and reach their conclusion (docs/collection.md quotes them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(name: str, *args: str) -> str:
    script = EXAMPLES / name
    if not script.is_file():
        pytest.skip(f"examples/{name} is not in this checkout")
    pytest.importorskip("bm25s", reason="the examples' retrievers need the `examples` extra")
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_compare_rerankers_finds_the_reranker_better() -> None:
    out = _run("compare_rerankers.py", "--format", "markdown")
    assert (
        "| b | embed_rerank_top50 | **0.7428 [a]** |" in out
    )  # the markdown table, with its significance marker
    assert "embed_rerank_top50 beats bm25 on ndcg@10: +0.0979" in out


@pytest.mark.slow
def test_score_from_python_runs_end_to_end() -> None:
    out = _run("score_from_python.py")
    assert out.startswith("toy run:")
    assert "judge (local):" in out and "context_recall" in out
    assert "bm25_embed_rerank" in out and "ndcg@10" in out
