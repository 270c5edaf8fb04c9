"""An adaptive night on the built-in collection: a retriever that finds the passages against one that returns
random ones, judged in batches until the pair is settled; the questions left are named as not judged, never
zeros; the gate against a full night's report reads the anytime-valid decision and agrees with the full night."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import yaml

from ragmetrics import collection
from ragmetrics.cli.main import main


def _random_run(path: Path) -> None:
    rng = random.Random(0)
    passages = [json.loads(line)["id"] for line in Path(collection.passages_path()).read_text(encoding="utf-8").splitlines()]
    lines = []
    for qid, _ in collection.load_questions():
        for rank, doc in enumerate(rng.sample(passages, 10), start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {1.0 / rank:.4f} random")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _config(tmp_path: Path, out: str, **judge: Any) -> Path:
    data = {
        "name": "adaptive",
        "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@10"], "query_set": "qrels"},
        "runs": [{"source": "file", "path": str(tmp_path / "random.txt"), "name": "random"},
                 {"source": "retriever", "retriever": "bm25", "name": "bm25"}],
        "judge": {"backend": "local", "metrics": ["context_precision"], "contexts_top_k": 3,
                  "cache_path": str(tmp_path / "verdicts.sqlite"), **judge},
        "baseline": {"max_drop": 0.05},
        "output": {"dir": str(tmp_path / out), "formats": ["json"], "history": False},
    }  # fmt: skip
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _report(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "latest" / "report.json").read_text(encoding="utf-8")))


def test_an_adaptive_night_settles_early_and_gates_like_the_full_night(tmp_path: Path) -> None:
    _random_run(tmp_path / "random.txt")
    assert main(["run", str(_config(tmp_path, "full")), "--no-progress"]) == 0
    full = _report(tmp_path / "full")
    # without a baseline the night's one decision is the pair: settled long before the 64th question
    assert main(["run", str(_config(tmp_path, "adaptive", adaptive={"batch_size": 8, "seed": 1})), "--no-progress"]) == 0
    night = _report(tmp_path / "adaptive")
    summary = night["metadata"]["nightly"]["adaptive"]
    assert summary["stopped"] == "settled" and summary["judged"] < summary["questions"] == 64
    (pair,) = summary["decisions"]
    assert pair["run"] == "bm25" and pair["other"] == "random" and pair["verdict"] == "better"
    assert pair["settled_at"] == summary["judged"] and pair["low"] > 0
    assert any("settled after" in n for n in night["metadata"]["notes"])
    bm25 = next(r for r in night["runs"] if r["name"] == "bm25")
    left = set(summary["not_judged"])
    assert len(left) == 64 - summary["judged"]
    assert all(bm25["per_query"][q]["context_precision"] is None for q in left)  # never zeros
    reasons = {(n["query_id"], n["metric"]): n["reason"] for n in bm25["not_applicable"]}
    assert all(reasons[(q, "context_precision")] == "not judged (settled early)" for q in left)
    assert all(bm25["per_query"][q]["ndcg@10"] is not None for q in left)  # retrieval: every question
    full_bm25 = next(r for r in full["runs"] if r["name"] == "bm25")["aggregate"]["context_precision"]
    assert abs(bm25["aggregate"]["context_precision"] - full_bm25) < 0.15  # not diluted by zeros

    # with the full night as baseline, a drop of 0.05 cannot be ruled out on 64 questions: every question is
    # judged, the gate's decisions stay unsettled, and the gate passes as the full night's own check would
    baseline = tmp_path / "full" / "latest" / "report.json"
    config = _config(tmp_path, "gated", adaptive={"batch_size": 8, "seed": 1})
    assert main(["run", str(config), "--no-progress", "--baseline", str(baseline)]) == 0
    gated = _report(tmp_path / "gated")
    summary = gated["metadata"]["nightly"]["adaptive"]
    assert summary["stopped"] == "all_judged" and summary["judged"] == 64
    gates = [d for d in summary["decisions"] if d["kind"] == "gate"]
    assert len(gates) == 2 and all(d["verdict"] == "unsettled" for d in gates)
    gate = gated["metadata"]["nightly"]["regression"]
    assert not any(c["regressed"] for c in gate["checks"])
    assert any("decided by the adaptive night" in n for n in gate["notes"])


def test_a_drop_is_settled_and_fails_the_gate(tmp_path: Path) -> None:
    _random_run(tmp_path / "random.txt")
    good = _config(tmp_path, "good")
    assert main(["run", str(good), "--no-progress"]) == 0
    # tonight "bm25" is the random run: a drop far beyond max_drop, settled early, fails the gate (exit 1)
    data = yaml.safe_load(_config(tmp_path, "bad", adaptive={"batch_size": 8, "seed": 2}).read_text())
    data["runs"] = [{"source": "file", "path": str(tmp_path / "random.txt"), "name": "bm25"}]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    code = main(["run", str(path), "--no-progress", "--baseline", str(tmp_path / "good" / "latest" / "report.json")])
    assert code == 1
    summary = _report(tmp_path / "bad")["metadata"]["nightly"]["adaptive"]
    (gate,) = summary["decisions"]
    assert gate["verdict"] == "dropped" and summary["stopped"] == "settled" and summary["judged"] < 64


def test_an_adaptive_night_through_the_openai_client_makes_fewer_calls(
    tmp_path: Path, loopback: Any, monkeypatch: Any
) -> None:
    """A scripted OpenAI-compatible server judges a chunk useful when it holds [useful]: run `good` retrieves the
    useful passage for every question, run `weak` for 30 % of them (a known difference of 0.7). The adaptive
    night settles the pair after a few batches; the requests counted at the server are a fraction of the full
    night's, which judges every question of both runs."""
    monkeypatch.setenv("RAGMETRICS_ADAPTIVE_KEY", "sk-adaptive")
    n = 120
    rows = [{"id": f"q{i:03d}", "question": f"What does passage {i} say?", "reference": f"Passage {i} says it [attr]."}
            for i in range(n)]  # fmt: skip
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    passages = [p for i in range(n) for p in ({"id": f"u{i}", "text": f"Passage {i} says it [useful]."},
                                              {"id": f"o{i}", "text": f"Another passage, number {i}."})]  # fmt: skip
    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    (tmp_path / "good.trec").write_text("".join(f"q{i:03d} Q0 u{i} 1 1.0 good\n" for i in range(n)), encoding="utf-8")
    (tmp_path / "weak.trec").write_text(
        "".join(f"q{i:03d} Q0 {'u' if i % 10 < 3 else 'o'}{i} 1 1.0 weak\n" for i in range(n)), encoding="utf-8"
    )

    def night(out: str, **judge: Any) -> dict[str, Any]:
        data = {
            "dataset": {"path": str(tmp_path / "qa.jsonl"), "passages": str(tmp_path / "passages.jsonl")},
            "retrieval": {"metrics": ["mrr"]},
            "runs": [{"source": "file", "path": str(tmp_path / "weak.trec"), "name": "weak"},
                     {"source": "file", "path": str(tmp_path / "good.trec"), "name": "good"}],
            "judge": {"metrics": ["context_precision"], "base_url": loopback.url, "model": "test-model",
                      "api_key_env": "RAGMETRICS_ADAPTIVE_KEY", "contexts_top_k": 1, "cache_path": None, **judge},
            "output": {"dir": str(tmp_path / out), "formats": ["json"], "history": False},
        }  # fmt: skip
        path = tmp_path / f"{out}.yaml"
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        before = len(loopback.records)
        assert main(["run", str(path), "--no-progress"]) == 0
        report = _report(tmp_path / out)
        report["calls"] = sum(1 for r in loopback.records[before:] if r.prompt == "context_precision")
        return report

    full = night("full")
    adaptive = night("adaptive", adaptive={"batch_size": 10, "seed": 0})
    summary = adaptive["metadata"]["nightly"]["adaptive"]
    assert full["calls"] == 2 * n
    assert summary["stopped"] == "settled" and adaptive["calls"] == 2 * summary["judged"] < full["calls"] // 2
    (pair,) = summary["decisions"]
    assert pair["run"] == "good" and pair["verdict"] == "better" and 0.4 < pair["estimate"] < 1.0
    good = next(r for r in adaptive["runs"] if r["name"] == "good")
    assert good["aggregate"]["context_precision"] == 1.0  # judged questions only: no zero for the rest


def test_a_stratified_order_holds_each_stratum_at_its_share() -> None:
    import pytest

    from ragmetrics.errors import ConfigError
    from ragmetrics.judge.base import RagSample
    from ragmetrics.nightly.adaptive_night import judging_order
    from ragmetrics.nightly.config import AdaptiveConfig
    from ragmetrics.nightly.dataset import QADataset

    ids = [f"q{i}" for i in range(40)]
    dataset = QADataset(source="t", samples=[RagSample(id=q, question="?") for q in ids], relevance={}, retrieved={},
                        fingerprint="", extras={q: {"domain": "a" if i < 30 else "b"} for i, q in enumerate(ids)})  # fmt: skip
    order = judging_order(ids, dataset, AdaptiveConfig(strata="domain", seed=3))
    assert sorted(order) == sorted(ids)
    for prefix in (4, 8, 20):  # every prefix holds the strata at about 3:1
        assert abs(sum(1 for q in order[:prefix] if int(q[1:]) >= 30) - prefix / 4) <= 1
    assert order == judging_order(ids, dataset, AdaptiveConfig(strata="domain", seed=3))  # seeded
    with pytest.raises(ConfigError, match="topic"):
        judging_order(ids, dataset, AdaptiveConfig(strata="topic"))


def test_a_free_signal_is_a_control_variate_of_the_night(tmp_path: Path) -> None:
    """With `signal` (a retrieval metric of the night here, the local judge below) every pair decision is
    prediction-powered: its weight and correlation are reported, its interval holds the full night's mean."""
    _random_run(tmp_path / "random.txt")
    assert main(["run", str(_config(tmp_path, "full")), "--no-progress"]) == 0
    full = {r["name"]: r["aggregate"]["context_precision"] for r in _report(tmp_path / "full")["runs"]}
    for signal, target in (("ndcg@10", "population"), ("local", "questions")):
        out = f"signal-{signal}-{target}".replace("@", "")
        config = _config(tmp_path, out, adaptive={"batch_size": 16, "seed": 2, "signal": signal, "target": target})
        assert main(["run", str(config), "--no-progress"]) == 0
        summary = _report(tmp_path / out)["metadata"]["nightly"]["adaptive"]
        assert summary["signal"] == signal and summary["target"] == target
        (pair,) = summary["decisions"]
        assert pair["signal_weight"] is not None and 0.0 <= pair["signal_weight"] <= 1.0
        assert pair["signal_correlation"] is not None and "free signal weight" in pair["text"]
        assert pair["verdict"] == "better" and pair["low"] > 0
        assert pair["low"] <= full["bm25"] - full["random"] <= pair["high"]


def test_an_unknown_signal_is_a_config_error_naming_the_field(tmp_path: Path, capsys: Any) -> None:
    _random_run(tmp_path / "random.txt")
    config = _config(tmp_path, "bad", adaptive={"signal": "map@1000"})
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "judge.adaptive.signal" in err and "'map@1000'" in err and "ndcg@10" in err
