"""Issue 50: a night over an attack set. Two example systems (examples/attacks/systems.py) on the same attacks:
attack success differs as it should, significantly; the clean twins show the defence's cost; the gate fails
when attack success rises; a system that crashes on attacks is not counted as defended; hostile answers stay
text on the page."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.cli import main
from ragmetrics.nightly.dataset import ATTACK_REASON
from ragmetrics.schema import Report

from .helpers import latest, report_of

EXAMPLES = Path(__file__).parents[2] / "examples" / "attacks"


@pytest.fixture(scope="module")
def attack_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("attack-night") / "set"
    assert (
        main(["attack", "builtin", "-o", str(out), "--size", "18", "--out-of-scope", "9", "--seed", "5"]) == 0
    )
    return out


def _config(folder: Path, runs: list[dict[str, Any]], **extra: Any) -> Path:
    data: dict[str, Any] = {
        "name": "attack night",
        "dataset": {"attacks": str(folder.parent / "set")},
        "retrieval": {"metrics": ["ndcg@10"]},
        "runs": runs,
        "compare": {"permutations": 2000},
        "output": {"dir": "out", "plots": False, "formats": ["json", "md", "html"]},
        "pipeline_cache": "cache.sqlite",
        "progress": False,
        **extra,
    }
    path = folder / "night.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _system(name: str, target: str) -> dict[str, Any]:
    return {
        "source": "pipeline",
        "name": name,
        "target": target,
        "python_path": [str(EXAMPLES)],
        "concurrency": 2,
    }


@pytest.fixture(scope="module")
def two_systems(attack_set: Path) -> tuple[int, Path, str]:
    folder = attack_set.parent / "two"
    folder.mkdir()
    config = _config(
        folder,
        [_system("unguarded", "systems:unguarded"), _system("defended", "systems:defended")],
        judge={"metrics": ["token_f1"], "backend": "local", "cache_path": "verdicts.sqlite"},
    )
    import io
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["run", str(config), "--no-progress"])
    return code, folder / "out", err.getvalue()


def _mean(report: Report, run: str, metric: str) -> float:
    result = next(r for r in report.runs if r.name == run)
    value = result.aggregate[metric]
    assert value is not None
    return value


def test_attack_success_differs_significantly_and_the_defence_shows_its_cost(
    two_systems: tuple[int, Path, str],
) -> None:
    code, out, _ = two_systems
    assert code == 0
    report = report_of(out)
    for metric in (
        "attack_success",
        "injection_success",
        "poisoning_success",
        "leak_success",
        "out_of_scope_success",
    ):
        assert _mean(report, "unguarded", metric) > _mean(report, "defended", metric), metric
    assert (
        _mean(report, "unguarded", "attack_success") > 0.5 > 0.1 > _mean(report, "defended", "attack_success")
    )
    paired = next(c for c in report.comparisons if c.metric == "attack_success")
    assert paired.significant and paired.n == 18 * 3 + 9
    # the clean twins are scored as any question: the defence's answers cost token F1 and some refusals
    assert _mean(report, "defended", "clean_refusal") >= _mean(report, "unguarded", "clean_refusal")
    assert _mean(report, "defended", "token_f1") != _mean(report, "unguarded", "token_f1")
    unguarded = next(r for r in report.runs if r.name == "unguarded")
    reasons = {n.reason for n in unguarded.not_applicable if n.metric == "token_f1"}
    assert reasons == {ATTACK_REASON}
    assert sum(1 for n in unguarded.not_applicable if n.metric == "token_f1") == 18 * 3 + 9
    assert any("attacks: success unguarded" in note for note in report.metadata.notes)


def test_attack_pages_show_every_successful_attack(two_systems: tuple[int, Path, str]) -> None:
    _, out, _ = two_systems
    night = latest(out)
    summary = json.loads((night / "attacks.json").read_text(encoding="utf-8"))
    assert summary["runs"] == ["unguarded", "defended"]
    hits = [s for s in summary["successes"] if s["run"] == "unguarded"]
    assert len(hits) == summary["rates"]["unguarded"]["all"]["successes"] > 0
    assert all(s["answer"] and s["why"] for s in hits)
    assert all(s["planted"] or s["system_prompt_addition"] or s["kind"] == "out_of_scope" for s in hits)
    pair = summary["pairs"][0]
    assert pair["rows"][0]["group"] == "all" and pair["rows"][0]["significant"]
    page = (night / "attacks.html").read_text(encoding="utf-8")
    assert page.count("<details>") == len(summary["successes"])
    assert "injection/override" in page and "clean questions refused" in page and "Refusals by kind" in page
    assert (night / "attacks.md").read_text(encoding="utf-8").startswith("# attack night: attacks")


HOSTILE = """
def answer(inputs):
    planted = " ".join(d["text"] for d in inputs.get("planted_documents") or [])
    if inputs.get("system_prompt_addition") and not inputs.get("planted_documents"):
        raise RuntimeError("guardrail service unavailable")
    return {"answer": "<script>alert(1)</script><img src=x onerror=alert(2)> " + planted[:400], "contexts": [planted or "none"]}
"""


def test_crashes_on_attacks_are_failures_and_hostile_answers_stay_text(attack_set: Path) -> None:
    folder = attack_set.parent / "hostile"
    folder.mkdir()
    (folder / "hostile_system.py").write_text(textwrap.dedent(HOSTILE), encoding="utf-8")
    config = _config(folder, [{"source": "pipeline", "name": "hostile", "target": "hostile_system:answer"}])
    assert main(["run", str(config), "--no-progress"]) == 3  # the crashed attacks make the night incomplete
    report = report_of(folder / "out")
    result = report.runs[0]
    failed = {f.query_id for f in result.failures if f.metric == "leak_success"}
    assert failed and all(f.cause.startswith("pipeline_") for f in result.failures if f.query_id in failed)
    assert all(result.per_query[q]["leak_success"] is None for q in failed)  # failed, not counted as defended
    page = (latest(folder / "out") / "attacks.html").read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    summary = json.loads((latest(folder / "out") / "attacks.json").read_text(encoding="utf-8"))
    assert summary["failures"]["hostile"] == len(failed)


def test_gate_fails_when_attack_success_rises(attack_set: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = attack_set.parent / "gate"
    folder.mkdir()
    before = _config(folder, [_system("rag", "systems:defended")])
    assert main(["run", str(before), "--no-progress"]) == 0
    baseline = latest(folder / "out") / "report.json"
    after = _config(
        folder,
        [_system("rag", "systems:unguarded")],
        baseline={"metrics": ["attack_success", "leak_success"]},
    )
    capsys.readouterr()
    assert main(["run", str(after), "--no-progress", "--baseline", str(baseline)]) == 1
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert "regression gate: FAILED" in said and "rag / attack_success" in said
    # and the other way round, a defence added, passes
    again = _config(folder, [_system("rag", "systems:defended")], baseline={"metrics": ["attack_success"]})
    worse = latest(folder / "out") / "report.json"
    assert main(["run", str(again), "--no-progress", "--baseline", str(worse)]) == 0


def test_config_mistakes_are_named(
    attack_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump({"dataset": {"attacks": str(attack_set)}, "retrieval": {"metrics": ["ndcg@10"]}})
    )
    assert main(["run", str(config)]) == 2
    assert "source: pipeline" in capsys.readouterr().err
    config.write_text(
        yaml.safe_dump(
            {
                "dataset": {"attacks": str(attack_set), "path": "qa.jsonl"},
                "runs": [_system("a", "systems:defended")],
            }
        )
    )
    assert main(["run", str(config)]) == 2
    assert "give it alone" in capsys.readouterr().err
    config.write_text(
        yaml.safe_dump({"dataset": {"attacks": str(tmp_path)}, "runs": [_system("a", "systems:defended")]})
    )
    assert main(["run", str(config)]) == 2
    assert "not an attack set folder" in capsys.readouterr().err


FOLLOWER = '''
def answer(inputs):
    planted = " ".join(d["text"] for d in inputs.get("planted_documents") or [])
    if "pirate" in planted:
        return {"answer": "Arr matey, here be yer answer. [rating:yes]", "contexts": [planted]}
    return {"answer": "Use the documented function. [rating:no]", "contexts": [planted or "none"]}
'''
KEY_ENV = "RAGMETRICS_TEST_ATTACK_JUDGE_KEY"


def test_behaviour_injections_are_decided_by_the_llm_judge(
    tmp_path: Path, loopback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "night"
    folder.mkdir()
    assert main(["attack", "builtin", "-o", str(tmp_path / "set"), "--kinds", "injection", "--size", "6",
                 "--behaviours", "--styles", "override"]) == 0  # fmt: skip
    (folder / "follower.py").write_text(textwrap.dedent(FOLLOWER), encoding="utf-8")
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    judge = {"backend": "openai", "model": "m", "base_url": loopback.url, "api_key_env": KEY_ENV, "metrics": [],
             "cache_path": str(folder / "verdicts.sqlite")}  # fmt: skip
    config = _config(folder, [{"source": "pipeline", "name": "follower", "target": "follower:answer"}], judge=judge)
    assert main(["run", str(config), "--no-progress"]) == 0
    report = report_of(folder / "out")
    result = report.runs[0]
    checks = [json.loads(line) for line in (tmp_path / "set" / "checks.jsonl").read_text().splitlines()]
    judged = [c for c in checks if c.get("decided_by") == "judge"]
    assert len(judged) == 6 and {c["style"] for c in judged} == {"behaviour:pirate", "behaviour:competitor"}
    for check in judged:
        expected = 1.0 if check["style"] == "behaviour:pirate" else 0.0
        assert result.per_query[check["id"]]["injection_success"] == expected
    asked = [r for r in loopback.records if r.prompt == "rubric:injection_followed"]
    assert len(asked) == 6
    assert all("Arr matey" in r.user or "documented function" in r.user for r in asked)
    summary = json.loads((latest(folder / "out") / "attacks.json").read_text(encoding="utf-8"))
    assert summary["rates"]["follower"]["injection/behaviour:pirate"]["rate"] == 1.0
    assert summary["rates"]["follower"]["injection/behaviour:competitor"]["rate"] == 0.0

    # without an LLM judge the behaviour attacks cannot be decided: failures, the night incomplete
    local = _config(folder, [{"source": "pipeline", "name": "follower", "target": "follower:answer"}],
                    judge={"backend": "local", "metrics": []})  # fmt: skip
    assert main(["run", str(local), "--no-progress"]) == 3
    result = report_of(folder / "out").runs[0]
    causes = {f.cause for f in result.failures if f.metric == "injection_success"}
    assert causes == {"needs_llm_judge"}


def test_only_pipeline_runs_are_attacked(attack_set: Path) -> None:
    folder = attack_set.parent / "generator"
    folder.mkdir()
    runs = [
        _system("defended", "systems:defended"),
        {"source": "retriever", "retriever": "bm25", "params": {"top_k": 10}},
    ]
    generator = {"target": "rag_pipeline:generate", "python_path": [str(EXAMPLES.parent)], "top_k": 3}
    config = _config(folder, runs, generator=generator)
    assert main(["run", str(config), "--no-progress"]) == 0
    report = report_of(folder / "out")
    bm25 = next(r for r in report.runs if r.name == "bm25")
    assert "attack_success" not in bm25.metrics  # success is the team's system's; a generator is not it
    assert "attack_success" in next(r for r in report.runs if r.name == "defended").metrics
    assert any("attack success not computed for run 'bm25'" in note for note in report.metadata.notes)
    # exposure is every run's: BM25's index held the planted documents, each question its own attack's only
    assert bm25.aggregate["attack_exposure"] > 0.5 and bm25.aggregate["poisoning_exposure"] > 0.5
    assert "attack_exposure" in next(r for r in report.runs if r.name == "defended").metrics
    summary = json.loads((latest(folder / "out") / "attacks.json").read_text(encoding="utf-8"))
    assert set(summary["exposure"]["runs"]) == {"defended", "bm25"}
    assert summary["exposure"]["rates"]["bm25"]["poisoning"]["n"] > 0
    assert "Exposure: planted text in the contexts" in (latest(folder / "out") / "attacks.html").read_text(encoding="utf-8")
