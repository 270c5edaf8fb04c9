"""Issue 29's demonstration: on the built-in collection, with the loopback judge reading claims by word
containment, a pipeline that lets noise chunks into its answer raises noise sensitivity, and a generator that
ignores its context raises hallucination and self-knowledge; the paired tests call both significant, the gate
fails the night on them (lower is better), relevance comes from the qrels, and the HTML drill-down shows the
matrix."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import ConfigWriter
from .helpers import report_of, run_cli

# A team's three variants of one pipeline over the built-in collection. Each returns the question's passages
# the qrels grade 2 or 3 (as a good retriever would) with their ids; they differ in what they add and answer.
CLAIMS_TEAM = '''
import re
from ragmetrics.collection import load_passages, load_qa, load_qrels

PASSAGES = {p["id"]: p["text"] for p in load_passages()}
ROWS = {r["id"]: r for r in load_qa()}
GRADES = load_qrels().to_dict()
NOISE = sorted(PASSAGES)


def _first_sentence(text):
    first = re.split(r"(?<=[.!?])\\s+", " ".join(text.split()))[0]
    return first if first.endswith((".", "!", "?")) else first + "."


def _good(qid):
    graded = sorted(GRADES.get(qid, {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return [doc for doc, grade in graded if grade >= 2][:2]


def _answer(qid, ids, sentence_of):
    return {"answer": "\\n\\n".join(sentence_of), "contexts": [PASSAGES[d] for d in ids], "context_ids": ids}


def grounded(sample):
    """Answers with the first sentence of its best passage."""
    ids = _good(sample["id"])
    return _answer(sample["id"], ids, [_first_sentence(PASSAGES[ids[0]])])


def noisy(sample):
    """Also retrieves two passages the qrels do not judge relevant, and repeats one of them."""
    ids = _good(sample["id"])
    judged = GRADES.get(sample["id"], {})
    noise = [d for d in NOISE[int(sample["id"][1:]) * 5:] if judged.get(d, 0) == 0][:2]
    return _answer(sample["id"], ids + noise,
                   [_first_sentence(PASSAGES[ids[0]]), _first_sentence(PASSAGES[noise[0]])])


def closed_book(sample):
    """Retrieves the same passages but answers from the model's memory (here: the reference's first sentence)
    and adds a claim nobody made."""
    ids = _good(sample["id"])
    remembered = _first_sentence(ROWS[sample["id"]]["reference"])
    invented = f"This behaviour was introduced in release {40 + int(sample['id'][1:])} of the zeppelin toolkit."
    return _answer(sample["id"], ids, [remembered, invented])
'''

DIAGNOSTICS = [
    "claim_recall",
    "claim_faithfulness",
    "noise_sensitivity_relevant",
    "noise_sensitivity_irrelevant",
    "hallucination",
    "self_knowledge",
]


def _config(qa_dir: Path, write_config: ConfigWriter, loopback: Any) -> Path:
    (qa_dir / "claims_team.py").write_text(CLAIMS_TEAM, encoding="utf-8")
    runs = [
        {"source": "pipeline", "name": name, "target": f"claims_team:{name}", "python_path": ["."]}
        for name in ("grounded", "noisy", "closed_book")
    ]
    return write_config(
        dataset={"builtin": "pydocs"},
        runs=runs,
        judge={
            "metrics": DIAGNOSTICS,
            "base_url": loopback.url,
            "api_key_env": "RAGMETRICS_CLAIMS_KEY",
            "model": "test-model",
            "cache_path": "cache/verdicts.sqlite",
            "timeout_s": 5,
        },
        compare={"test": "fisher", "permutations": 2000, "seed": 1},
        output={"dir": "out", "plots": False, "formats": ["json", "html"]},
    )


def test_noise_and_a_generator_ignoring_its_context_show_in_the_diagnostics(
    qa_dir: Path,
    write_config: ConfigWriter,
    loopback: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("RAGMETRICS_CLAIMS_KEY", "sk-claims-test")
    config = _config(qa_dir, write_config, loopback)
    code, out, err = run_cli([str(config)], capsys)
    assert code == 0, err
    report = report_of(qa_dir / "out")
    runs = {r.name: r for r in report.runs}
    questions = len(runs["grounded"].per_query)
    assert questions == 64
    # One claim verdict per question and run, whatever the number of diagnostics.
    assert loopback.count(status=200) == 3 * questions
    assert all(not r.failures for r in report.runs)
    assert runs["noisy"].metadata.metric_settings["claim_relevance"] == {"qrels": questions}
    assert f"noisy: claim diagnostics decided which chunks are relevant {questions} by the qrels" in out

    means = {name: run.aggregate for name, run in runs.items()}
    assert means["grounded"]["claim_faithfulness"] >= 0.95
    assert means["grounded"]["noise_sensitivity_irrelevant"] == 0.0
    assert means["noisy"]["noise_sensitivity_irrelevant"] >= 0.3
    assert means["closed_book"]["hallucination"] >= 0.3
    assert means["closed_book"]["self_knowledge"] > means["grounded"]["self_knowledge"] + 0.3

    pairs = {(c.baseline, c.candidate, c.metric): c for c in report.comparisons}
    noise = pairs[("grounded", "noisy", "noise_sensitivity_irrelevant")]
    assert noise.significant and noise.mean_diff > 0
    for metric in ("hallucination", "self_knowledge"):
        moved = pairs[("grounded", "closed_book", metric)]
        assert moved.significant and moved.mean_diff > 0, metric
    assert not pairs[("grounded", "noisy", "hallucination")].significant

    # The drill-down shows the matrix: claims as rows, chunks as columns, relevance by the qrels.
    page = (qa_dir / "out" / "latest" / "report.html").read_text(encoding="utf-8")
    assert page.count("noisy / claim diagnostics") == questions
    assert "Relevant chunks decided by qrels (human judgments)" in page
    block = page.split("noisy / claim diagnostics", 1)[1].split("</table>", 1)[0]
    assert re.search(r"<th[^>]*>C1<br><span class='rel'>relevant</span></th>", block)
    assert re.search(r"<th[^>]*>C3</th>", block)  # the first noise chunk, not relevant by the qrels


def test_the_gate_fails_a_night_whose_hallucination_rose(
    qa_dir: Path,
    write_config: ConfigWriter,
    loopback: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Hallucination is lower-is-better: a rise is the drop the gate fails on (before issue 29 every judge
    metric counted as higher-is-better, so a rise passed the gate)."""
    monkeypatch.setenv("RAGMETRICS_CLAIMS_KEY", "sk-claims-test")
    config = _config(qa_dir, write_config, loopback)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    for night, target in (("last", "grounded"), ("tonight", "closed_book")):
        data["runs"] = [
            {"source": "pipeline", "name": "rag", "target": f"claims_team:{target}", "python_path": ["."]}
        ]
        data["output"]["dir"] = f"out-{night}"
        (qa_dir / f"{night}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    code, _, err = run_cli([str(qa_dir / "last.yaml")], capsys)
    assert code == 0, err
    baseline = qa_dir / "out-last" / "latest" / "report.json"
    code, out, err = run_cli([str(qa_dir / "tonight.yaml"), "--baseline", str(baseline)], capsys)
    assert code == 1, out + err
    report = report_of(qa_dir / "out-tonight")
    gate = report.metadata.nightly.regression if report.metadata.nightly else None
    assert gate is not None
    failed = {c.metric for c in gate.regressions}
    assert {"hallucination", "self_knowledge", "claim_faithfulness"} <= failed
    assert "claim_recall" not in failed  # the remembered reference sentence keeps recall up
