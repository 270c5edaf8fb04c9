"""`ragmetrics summary`: a failing and a passing night as a pull-request comment, checked for what it says and
how long it is."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import yaml

from ragmetrics import collection
from ragmetrics.cli.main import main
from ragmetrics.render.summary import MARKER


def _random_run(path: Path) -> None:
    rng = random.Random(0)
    passages = [json.loads(line)["id"] for line in Path(collection.passages_path()).read_text(encoding="utf-8").splitlines()]
    lines = [f"{qid} Q0 {doc} {rank} {1.0 / rank:.4f} random"
             for qid, _ in collection.load_questions() for rank, doc in enumerate(rng.sample(passages, 10), start=1)]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _night(tmp_path: Path, out: str, bm25_source: dict[str, Any]) -> Path:
    data = {
        "name": "pr-night", "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@10", "recall@10"], "query_set": "qrels"},
        "runs": [bm25_source],
        "judge": {"backend": "local", "metrics": ["context_precision"], "contexts_top_k": 3,
                  "cache_path": str(tmp_path / "v.sqlite")},
        "baseline": {"max_drop": 0.05},
        "output": {"dir": str(tmp_path / out), "formats": ["json", "html", "md"], "history": False},
    }  # fmt: skip
    path = tmp_path / f"{out}.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_the_summary_of_a_failing_and_a_passing_night(tmp_path: Path, capsys: Any) -> None:
    _random_run(tmp_path / "random.txt")
    bm25 = {"source": "retriever", "retriever": "bm25", "name": "bm25"}
    assert main(["run", str(_night(tmp_path, "good", bm25)), "--no-progress"]) == 0
    baseline = str(tmp_path / "good" / "latest" / "report.json")
    assert main(["run", str(_night(tmp_path, "same", bm25)), "--no-progress", "--baseline", baseline]) == 0
    broken = {"source": "file", "path": str(tmp_path / "random.txt"), "name": "bm25"}
    assert main(["run", str(_night(tmp_path, "bad", broken)), "--no-progress", "--baseline", baseline]) == 1
    capsys.readouterr()

    assert main(["summary", str(tmp_path / "bad" / "latest"), "--format", "github",
                 "--artifacts-url", "https://ci.example/artifacts/night"]) == 0  # fmt: skip
    failing = capsys.readouterr().out
    assert failing.startswith(MARKER + "\n## ragmetrics: pr-night: gate FAILED")
    assert "> [!CAUTION]" in failing and "### What dropped" in failing
    assert "| bm25 | ndcg@10 |" in failing and "| bm25 | context_precision |" in failing
    assert "`q" in failing and " -> " in failing  # worst questions, with their text
    assert "### Means (95 % CI)" in failing and " n=64" in failing
    assert "[report.html](https://ci.example/artifacts/night/report.html)" in failing
    assert len(failing) < 6000

    assert main(["summary", str(tmp_path / "same" / "latest" / "report.json"), "--format", "gitlab",
                 "-o", str(tmp_path / "pass.md")]) == 0  # fmt: skip
    passing = (tmp_path / "pass.md").read_text(encoding="utf-8")
    assert "gate passed" in passing and "What dropped" not in passing and "[!CAUTION]" not in passing
    assert "bm25" in passing and "ndcg@10" in passing

    # a tight limit shrinks the long parts first and never loses the verdict
    assert main(["summary", str(tmp_path / "bad" / "latest"), "--max-chars", "700"]) == 0
    short = capsys.readouterr().out
    assert len(short) <= 700 and "gate FAILED" in short
    assert main(["summary", str(tmp_path / "bad" / "latest"), "--max-chars", "10"]) == 2  # a clear error
    assert main(["summary", str(tmp_path / "nowhere")]) == 2


HOSTILE_RUN = "<b>|@octo-org/reviewers"
HOSTILE_QUESTION = "What | is this?\n<script>alert(1)</script> ask @someone [here](https://evil.example) `x`"


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_text_from_the_data_is_inert_in_the_comment(tmp_path: Path, capsys: Any) -> None:
    _random_run(tmp_path / "random.txt")
    good = {"source": "retriever", "retriever": "bm25", "name": HOSTILE_RUN}
    assert main(["run", str(_night(tmp_path, "good", good)), "--no-progress"]) == 0
    baseline = str(tmp_path / "good" / "latest" / "report.json")
    broken = {"source": "file", "path": str(tmp_path / "random.txt"), "name": HOSTILE_RUN}
    assert main(["run", str(_night(tmp_path, "bad", broken)), "--no-progress", "--baseline", baseline]) == 1
    path = tmp_path / "bad" / "latest" / "report.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    for sample in report["metadata"]["nightly"]["samples"].values():
        sample["question"] = HOSTILE_QUESTION
    path.write_text(json.dumps(report), encoding="utf-8")
    capsys.readouterr()
    assert main(["summary", str(tmp_path / "bad" / "latest"), "--format", "github"]) == 0
    comment = capsys.readouterr().out
    assert "What dropped" in comment and "What \\| is this?" in comment  # the question is there, escaped
    assert "<script" not in comment and "<b>" not in comment and "[here](" not in comment  # no HTML, no link
    assert not re.search(r"(?<![A-Za-z0-9])@[A-Za-z0-9]", comment)  # no live mention
    assert "@\u200dsomeone" in comment and "@\u200docto-org/reviewers" in comment  # still readable
    table: list[str] = []
    for line in [*comment.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:  # every row of a table has its header's cell count
            assert {_unescaped_pipes(row) for row in table} == {_unescaped_pipes(table[0])}, table
            table = []
