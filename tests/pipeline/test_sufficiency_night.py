"""The sufficient-context breakdown in the night's report (issue 68, item 3): a night on the built-in collection
with the local judge's proxy, two runs with answers, every format showing the runs' cells and the pair's
sentences saying whether retrieval or generation lost answers."""

from __future__ import annotations

import html
import sys
from pathlib import Path

import pytest
import yaml

from ragmetrics.render.summary import summary_markdown

from .helpers import latest, report_of, run_cli

TEAM = '''
def generate(inputs):
    """Extractive: the first sentence of the top context, or a refusal without one."""
    contexts = inputs["contexts"]
    if not contexts:
        return {"answer": "I don't know."}
    return {"answer": contexts[0].split(". ")[0]}
'''


def test_a_night_with_context_sufficiency_shows_the_breakdown_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "team_extract.py").write_text(TEAM, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "team_extract", raising=False)
    config = tmp_path / "night.yaml"
    config.write_text(yaml.safe_dump({
        "name": "sufficiency night",
        "dataset": {"builtin": "pydocs"},
        "runs": [{"source": "dataset", "name": "pipeline"},
                 {"source": "retriever", "retriever": "bm25", "name": "bm25-top1", "params": {"top_k": 10}}],
        "generator": {"target": "team_extract:generate", "top_k": 1, "runs": ["bm25-top1"]},
        "judge": {"backend": "local", "metrics": ["context_sufficiency", "token_f1"], "use_cache": False},
        "compare": {"test": "t"},
        "output": {"dir": "out", "plots": False},
        "progress": False,
    }), encoding="utf-8")  # fmt: skip
    code, out, err = run_cli([str(config)], capsys)
    assert code in (0, 3), err
    report = report_of(tmp_path / "out")
    assert report.metadata.nightly is not None
    section = report.metadata.nightly.sufficiency
    assert section is not None and "PROXY" in section.judge
    assert [r.run for r in section.runs] == ["pipeline", "bm25-top1"]
    for figures in section.runs:
        run = report.run(figures.run)
        values = run.per_query
        rated = [q for q, v in values.items() if v.get("context_sufficiency") is not None
                 and v.get("token_f1") is not None]  # fmt: skip
        assert figures.rated == len(rated) > 50
        assert sum(c.count for c in figures.cells) == figures.rated
        assert figures.sufficient == sum(values[q]["context_sufficiency"] >= 0.5 for q in rated)
        correct = sum(c.count for c in figures.cells if c.outcome == "correct")
        assert correct <= sum(values[q]["token_f1"] >= 0.5 for q in rated)
        assert set(figures.unrated) == set(values) - set(rated)
    (pair,) = section.pairs
    assert (pair.run_a, pair.run_b) == ("pipeline", "bm25-top1")
    assert pair.sufficient_a - pair.sufficient_b == pair.lost - pair.gained
    assert [line.split(":", 1)[0] for line in pair.lines] == ["answers", "retrieval", "generation", "generation"]
    assert pair.lines[1].startswith("retrieval: ") and "exact McNemar p = " in pair.lines[1]

    folder = latest(tmp_path / "out")
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    page = html.unescape((folder / "report.html").read_text(encoding="utf-8"))
    summary = summary_markdown(report)
    assert "## Sufficient context: retrieval or generation" in markdown
    assert "Sufficient context: retrieval or generation" in page and "Sufficient context" in out
    for line in pair.lines:
        assert line in markdown and line in page and line in out and line in summary
    assert "| sufficient | " in markdown and "bm25-top1: " in markdown
