"""A night with `compare.tukey`: every pair of runs under Tukey's HSD in report.json, report.md and the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import ConfigWriter
from .helpers import report_of, run_cli


def test_a_night_reports_tukeys_all_pairs(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(
        runs=[
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "weaker.trec", "name": "weaker"},
        ],
        compare={"test": "fisher", "permutations": 2000, "tukey": "blocked"},
        output={"dir": "out", "plots": False, "formats": ["json", "md", "html"]},
    )
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    report = report_of(qa_dir / "out")
    assert {t.metric for t in report.metadata.tukey} == {"ndcg@10", "map", "mrr"}
    assert all(
        t.baseline == "pipeline" and t.candidate == "weaker" and t.blocked for t in report.metadata.tukey
    )
    latest = qa_dir / "out" / "latest"
    assert "Tukey's HSD: all pairs at once" in (latest / "report.md").read_text(encoding="utf-8")
    assert "id='tukey'" in (latest / "report.html").read_text(encoding="utf-8")
