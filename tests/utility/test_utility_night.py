"""`utility_qrels:` in a night: the utility judgments are built offline on the built-in collection (extractive
generator), written to the night's folder in the `ragmetrics utility` format, and every run is scored on them
(`utility:<metric>`, udcg with the probabilities of abstaining); the dry run prices them, and after a night
finds every answer cached."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.collection import load_pipeline_run
from ragmetrics.errors import ConfigError
from ragmetrics.nightly.config import load_config
from ragmetrics.nightly.pipeline import run_pipeline
from ragmetrics.retrieval.evaluate import evaluate
from ragmetrics.retrieval.qrels import Qrels
from ragmetrics.retrieval.run import Run
from ragmetrics.retrieval.utilities import AbstentionProbabilities
from ragmetrics.utility import read_folder


def _config(tmp_path: Path, **utility: Any) -> Path:
    pipeline = load_pipeline_run().to_dict()
    # a weaker run: each question's ranking reversed
    weaker = {
        q: {d: float(i) for i, d in enumerate(sorted(docs, key=docs.__getitem__))}
        for q, docs in pipeline.items()
    }
    Run.from_dict(weaker, name="weaker").to_trec(tmp_path / "weaker.trec")
    data = {
        "name": "utility night",
        "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@5", "recall@5"]},
        "runs": [
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        "compare": {"test": "t"},
        "output": {"dir": "out", "plots": False, "formats": ["json"]},
        "progress": False,
        "utility_qrels": {"k": 5, **utility},
    }
    path = tmp_path / "night.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _dry_line(config: Path) -> str:
    from ragmetrics.nightly.estimate import estimate_night

    lines = [a for a in estimate_night(load_config(config)).assumptions if a.startswith("utility qrels:")]
    assert len(lines) == 1
    return lines[0]


def test_a_night_builds_utility_qrels_and_scores_its_runs_on_them(tmp_path: Path) -> None:
    config = _config(tmp_path)
    before = _dry_line(config)
    pairs = int(before.split(": ")[1].split()[0])
    assert (
        f"0 cached, {pairs} generator requests" in before
        and not (tmp_path / "out" / "utility_cache.sqlite").exists()
    )
    outcome = run_pipeline(config)
    assert outcome.folder is not None
    folder = outcome.folder / "utility"
    manifest = json.loads((folder / "utility.json").read_text())
    assert (
        manifest["qrels"]["origin"] == "utility"
        and manifest["provenance"]["generator"]["kind"] == "extractive"
    )
    assert manifest["provenance"]["runs"] == ["pipeline", "weaker"] and manifest["counts"]["failed"] == {}
    qrels = Qrels.read(folder / "utility.qrels")
    probs = AbstentionProbabilities.read(folder / "abstention.jsonl", missing="skip")
    back = read_folder(folder)  # what another step (validity) reads
    assert back.qrels.to_dict() == qrels.to_dict() and back.abstention is not None
    assert back.abstention.by_query == probs.by_query and len(back.judgments) == manifest["counts"]["pairs"]
    by_name = {r.name: r for r in outcome.report.runs}
    for name in ("pipeline", "weaker"):
        result = by_name[name]
        assert {"utility:ndcg@5", "utility:recall@5", "utility:udcg@5", "ndcg@5"} <= set(result.metrics)
        run = Run.from_trec(tmp_path / "weaker.trec") if name == "weaker" else load_pipeline_run()
        expected = evaluate(qrels, run, ["ndcg@5", "udcg@5"], utilities=probs)
        assert result.aggregate["utility:ndcg@5"] == pytest.approx(expected.aggregate["ndcg@5"], abs=1e-12)
        assert result.aggregate["utility:udcg@5"] == pytest.approx(expected.aggregate["udcg@5"], abs=1e-12)
        provenance = result.metadata.extra["utility_qrels"]
        assert (
            provenance["origin"] == "utility" and provenance["metric"] == "token_f1" and provenance["created"]
        )
    assert any(c.metric == "utility:ndcg@5" for c in outcome.report.comparisons)
    assert any("utility qrels (token_f1, generator extractive)" in n for n in outcome.notes)
    assert manifest["counts"]["pairs"] == pairs
    assert f"{pairs} cached, 0 generator requests" in _dry_line(config)


def test_a_bad_utility_section_fails_with_the_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="utility_qrels"):
        load_config(_config(tmp_path, generator="openai"))
    with pytest.raises(ConfigError, match="metrics"):
        load_config(_config(tmp_path, metrics=["ndcg@5", "nope@3"]))
    with pytest.raises(ConfigError, match="no run named 'missing'"):
        run_pipeline(_config(tmp_path, runs=["missing"]), write=False)


def test_the_shipped_utility_config_loads() -> None:
    config = load_config(Path(__file__).resolve().parents[2] / "configs" / "utility.yaml")
    assert config.utility_qrels is not None and config.utility_qrels.generator == "extractive"
    assert "utility:udcg@10" in config.all_metrics()
