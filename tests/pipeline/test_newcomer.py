"""The first hour, end to end, as a newcomer meets it (issue 40): a fresh clone, the README's main job, their
own JSONL without ids from Python and from the CLI, their own pipeline, a night pinned with `bless`, a
regression the gate catches against it, then `history` and `power`, each as the README and docs say. Every
command runs in a subprocess against the clone's code, as a user's shell would run it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .helpers import TOPICS, passages, qa_rows

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

TEAM = """
import json, pathlib

HERE = pathlib.Path(__file__).parent
PASSAGES = [json.loads(line) for line in open(HERE / "passages.jsonl", encoding="utf-8")]
BROKEN = False


def _words(text):
    return {w.strip("?.,").lower() for w in text.split() if len(w) > 3}


def answer(sample):
    q = _words(sample["question"])
    ranked = sorted(PASSAGES, key=lambda p: (-len(q & _words(p["text"])), p["id"]))
    if BROKEN:  # tonight's change: the index lost its best matches
        ranked = ranked[::-1]
    best = ranked[:3]
    return {"answer": best[0]["text"], "contexts": [p["text"] for p in best], "context_ids": [p["id"] for p in best]}
"""


def _sh(argv: list[str], cwd: Path, env: dict[str, str], expect: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == expect, (argv, done.returncode, done.stderr[-3000:], done.stdout[-2000:])
    return done


def test_a_newcomers_first_hour(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs the repository's git history to clone (run from a git checkout)")
    clone = tmp_path / "ragmetrics"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": str(clone), "OPENAI_API_KEY": "", "NO_COLOR": "1"}
    cli = [sys.executable, "-m", "ragmetrics"]

    # 1. The README's main job on the built-in default: no key, no network.
    _sh([*cli, "run", "configs/quickstart.yaml"], clone, env)
    assert (clone / "ragmetrics-out" / "quickstart" / "latest" / "report.html").is_file()

    # 2. Their own JSONL, no ids: from Python (read_qa + evaluate_rag) and from the CLI (score, no config).
    work = tmp_path / "team"
    work.mkdir()
    rows = [{k: v for k, v in row.items() if k != "id"} for row in qa_rows()]
    (work / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    script = textwrap.dedent("""
        from ragmetrics import evaluate_rag, read_qa
        data = read_qa("qa.jsonl")
        result = evaluate_rag(list(data), ["faithfulness", "context_precision"])
        print(sorted(result.per_query)[:2], round(result.aggregate["faithfulness"], 3))
    """)  # fmt: skip
    done = _sh([sys.executable, "-c", script], work, env)
    assert "['row-1', 'row-10']" in done.stdout
    done = _sh([*cli, "score", "qa.jsonl", "-m", "faithfulness", "mrr"], work, env)
    assert "faithfulness" in done.stdout and "mrr" in done.stdout

    # 3. Their own pipeline, a night, and the night pinned as the baseline.
    (work / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages()), encoding="utf-8")
    (work / "team_rag.py").write_text(textwrap.dedent(TEAM), encoding="utf-8")
    (work / "nightly.yaml").write_text(textwrap.dedent("""
        dataset: {path: qa.jsonl}
        runs: [{source: pipeline, name: team, target: "team_rag:answer"}]
        judge: {backend: local, metrics: [context_precision, faithfulness]}
        baseline: {max_drop: 0.02}
        output: {dir: out, plots: false}
    """), encoding="utf-8")  # fmt: skip
    night_env = {**env, "PYTHONPATH": f"{clone}{os.pathsep}{work}"}
    _sh([*cli, "run", "nightly.yaml"], work, night_env)
    _sh([*cli, "bless", "out/latest"], work, night_env)
    assert (work / "out" / "baseline").is_symlink()

    # 4. Tonight's change breaks the index (a code change: the output cache knows the code changed) and the
    #    gate fails against the pinned night (exit 1), naming the metric.
    (work / "team_rag.py").write_text(textwrap.dedent(TEAM).replace("BROKEN = False", "BROKEN = True"))
    done = _sh([*cli, "run", "nightly.yaml"], work, night_env, expect=1)
    assert "regression gate: FAILED" in done.stdout and "context_precision" in done.stdout

    # 5. History and power, as the docs say.
    done = _sh([*cli, "history", "out"], work, night_env)
    assert "2 nights" in done.stdout and "pinned baseline: none" not in done.stdout
    assert (work / "out" / "history.html").is_file()
    done = _sh([*cli, "power", "out/latest/report.json", "--target", "context_precision=0.02"], work, night_env)
    assert "the gate's pairs" in done.stdout and "nothing to plan" not in done.stdout
    assert len(TOPICS) == len(rows)
