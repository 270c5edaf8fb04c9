"""The quickstart output the README and docs/getting-started.md show is what the quickstart computes, number for
number (it cannot drift)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ragmetrics.nightly.config import load_config
from ragmetrics.nightly.pipeline import run_pipeline

ROOT = Path(__file__).resolve().parents[2]


SHOWN_IN = ("README.md", "docs/getting-started.md")


def _readme_table(name: str) -> dict[str, dict[str, str]]:
    text = (ROOT / name).read_text(encoding="utf-8")
    block = text[text.index("first the means") :]
    block = block[block.index("```") + 3 :]
    block = block[: block.index("```")]
    lines = [line for line in block.splitlines() if line.startswith(("┃", "│"))]
    header = [cell.strip() for cell in lines[0].strip("┃").split("┃")]
    table = {}
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        table[cells[1]] = dict(zip(header[2:], cells[2:], strict=True))
    return table


def test_readme_quickstart_table_equals_the_quickstart(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    config = load_config(tmp_path / "configs" / "quickstart.yaml")
    from ragmetrics.nightly.estimate import estimate_night

    dry = estimate_night(config).estimate  # the quickstart's --dry-run: the local judge asks no server
    report = run_pipeline(config, progress=False, write=False).report
    work = report.metadata.nightly.work  # type: ignore[union-attr]
    assert work is not None and work.actual is not None
    assert dry.calls == work.actual.calls == 0
    assert (
        dry.judge_units == work.estimate.judge_units == 704
    )  # 64 questions x (3 runs x 3 + 1 run x 2) metrics
    from ragmetrics.render.verdict import verdict_lines

    for name in SHOWN_IN:
        text = (ROOT / name).read_text(encoding="utf-8")
        for line in verdict_lines(report):  # the verdict shown is the quickstart's, word for word
            assert f"  {line}\n" in text, (name, line)
        expected = _readme_table(name)
        assert set(expected) == {run.name for run in report.runs}, name
        for run in report.runs:
            for metric, cell in expected[run.name].items():
                value = run.aggregate[metric]
                assert value is not None
                assert re.match(r"[\d.]+", cell)
                assert cell.split()[0] == f"{value:.4f}", (name, run.name, metric)
