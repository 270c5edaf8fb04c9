"""configs/quickstart.yaml and configs/rerankers.yaml are valid, and the reranker comparison finds its effect."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragmetrics.nightly.config import load_config
from ragmetrics.nightly.pipeline import run_pipeline

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_quickstart_config() -> None:
    config = load_config(CONFIGS / "quickstart.yaml")
    assert config.dataset.builtin == "pydocs"
    assert [spec.source for spec in config.runs] == ["dataset", "retriever", "retriever"]
    assert {getattr(spec, "retriever", None) for spec in config.runs} >= {"bm25", "bm25_embedding_rerank"}
    assert config.judge is not None and config.judge.backend == "local"
    assert set(config.judge.metrics) == {
        "context_precision",
        "context_recall",
        "context_relevancy",
        "answer_relevancy",
        "faithfulness",
    }
    assert config.compare.correction == "holm" and "html" in config.output.formats


def test_rerankers_config_finds_a_significant_gain(tmp_path: Path) -> None:
    config = load_config(CONFIGS / "rerankers.yaml")
    config.runs = [
        spec for spec in config.runs if getattr(spec, "name", None) in ("bm25", "embed_rerank_top50")
    ]
    config.retrieval.metrics = ["ndcg@10", "recall@10"]
    config.compare.permutations = 2000
    config.output.formats = ["json"]
    config.output.plots = False
    outcome = run_pipeline(config, output_dir=tmp_path, progress=False, log=lambda _: None)
    (pair,) = [c for c in outcome.report.comparisons if c.metric == "ndcg@10"]
    assert (pair.baseline, pair.candidate) == ("bm25", "embed_rerank_top50")
    assert pair.mean_diff > 0.05 and pair.significant
    assert pair.p_corrected < 0.05
    assert outcome.exit_code == 0


@pytest.mark.parametrize("name", ["quickstart.yaml", "rerankers.yaml", "nightly.yaml"])
def test_outputs_stay_out_of_the_source_tree(name: str) -> None:
    # Artifacts and the verdict cache land in folders git ignores, never among the sources.
    config = load_config(CONFIGS / name)
    root = CONFIGS.parent
    ignored = (root / ".gitignore").read_text(encoding="utf-8").split()
    written = [config.output.dir]
    if config.judge is not None and config.judge.cache_path is not None:
        written.append(config.judge.cache_path)
    for path in written:
        top = path.relative_to(root).parts[0]
        assert f"{top}/" in ignored, f"{name} writes to {path}, which .gitignore does not cover"


def test_own_pipeline_config_runs_the_example_pipeline_and_its_generator(tmp_path: Path) -> None:
    """configs/own_pipeline.yaml: examples/rag_pipeline.py called per question, its generator answering the two
    retriever runs; answer metrics and latency/tokens/cost for every run; a rerun calls nothing again."""
    pytest.importorskip("bm25s")
    config = load_config(CONFIGS / "own_pipeline.yaml")
    assert config.judge is not None
    config.judge.cache_path = tmp_path / "verdicts.sqlite"
    config.pipeline_cache = tmp_path / "pipeline.sqlite"
    config.output.formats = ["json"]
    config.output.plots = False
    config.compare.permutations = 1000
    outcome = run_pipeline(config, output_dir=tmp_path / "out", progress=False, log=lambda _: None)
    assert outcome.exit_code == 0 and not outcome.incomplete
    report = outcome.report
    assert [r.name for r in report.runs] == ["my_rag", "bm25", "bm25_embed_rerank"]
    for run in report.runs:
        assert {"faithfulness", "answer_relevancy", "latency_s", "tokens", "cost", "ndcg@10"} <= set(
            run.metrics
        )
    assert any(c.metric == "answer_relevancy" and c.baseline == "bm25" for c in report.comparisons)
    again = run_pipeline(config, output_dir=tmp_path / "out", progress=False, log=lambda _: None)
    lines = (again.folder / "pipeline_outputs.jsonl").read_text().splitlines()  # type: ignore[operator]
    assert len(lines) == 3 * 64 and '"cached": false' not in "".join(lines)
    assert again.report.run("my_rag").aggregate == report.run("my_rag").aggregate
