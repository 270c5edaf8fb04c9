"""`summary --max-chars`: whatever the night's shape and the limit, the summary is cut between table rows, never
inside one, and says how many rows it left out (issue 67, item 5).

Property-style: many report shapes (runs, metrics, regressions, worst questions, long names with escaped
pipes, a huge verdict line) times every limit from the CLI's floor to past the full length, each output
checked for size, for rows with as many cells as their header, and for a count that matches what is missing.
"""

from __future__ import annotations

import random
import re

import pytest

from ragmetrics.comparison.pairs import compare_results
from ragmetrics.render.summary import MARKER, summary_markdown
from ragmetrics.schema import (
    DatasetSummary,
    GateResult,
    MetricCheck,
    NightlyRun,
    QueryDrop,
    Report,
    RunMetadata,
    RunResult,
    SampleText,
)

_CELL_BREAK = re.compile(r"(?<!\\)\|")
_LEFT_OUT = re.compile(r"cut to fit: (\d+) table rows? ")


def _cells(row: str) -> int:
    """Cells of a Markdown table row: the pieces between unescaped pipes (a name's `\\|` is inside a cell)."""
    return len(_CELL_BREAK.split(row.strip())) - 2


def _tables(text: str) -> list[tuple[str, list[str]]]:
    """(header, rows) of every table in `text`: a `|` line followed by a separator line starts one."""
    lines = text.split("\n")
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        if (
            lines[i].startswith("|")
            and i + 1 < len(lines)
            and set(lines[i + 1]) <= set("|-: ")
            and "-" in lines[i + 1]
        ):
            header, i = lines[i], i + 2
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            out.append((header, rows))
        else:
            i += 1
    return out


def _report(
    rng: random.Random, runs: int, metrics: int, regressions: int, worst: int, long_names: bool
) -> Report:
    queries = [f"q{i}" for i in range(12)]
    names = [(f"run {i} " + "x|y " * rng.randint(0, 12) if long_names else f"run{i}") for i in range(runs)]
    metric_names = [f"metric_{j}@10" for j in range(metrics)]
    results = []
    for name in names:
        result = RunResult(
            name=name,
            per_query={q: {m: rng.random() for m in metric_names} for q in queries},
            metadata=RunMetadata(kind="retrieval", metrics=metric_names, num_queries=len(queries)),
        )
        result.recompute_aggregate()
        results.append(result)
    report = compare_results(results, metric_names, test="t", correction="none")
    checks = [
        MetricCheck(
            run=names[k % runs],
            metric=metric_names[k % metrics],
            n=len(queries),
            mean_baseline=0.6,
            mean_current=0.4,
            drop=0.2,
            threshold=0.05,
            p_value=0.001,
            p_corrected=0.002,
            significant=True,
            regressed=True,
            worst_queries=[
                QueryDrop(query_id=q, baseline=0.9, current=0.1, diff=-0.8) for q in queries[:worst]
            ],
        )
        for k in range(regressions)
    ]
    report.metadata.nightly = NightlyRun(
        name="night " + "n" * (rng.randint(0, 300) if long_names else 0),
        dataset=DatasetSummary(source="data.jsonl", rows_used=len(queries)),
        samples={q: SampleText(question=f"what is {q}? " * rng.randint(1, 20)) for q in queries},
        regression=GateResult(
            baseline="base/report.json", test="t", correction="none", alpha=0.05, checks=checks
        )
        if regressions
        else None,
    )
    return report


SHAPES = [
    # runs, metrics, regressions, worst questions, long names
    (2, 1, 0, 0, False),
    (3, 7, 0, 0, False),
    (9, 6, 25, 3, False),
    (14, 3, 40, 3, True),
    (4, 12, 80, 0, True),
    (12, 5, 3, 3, True),
    (2, 2, 150, 2, False),
]


@pytest.mark.parametrize(
    "shape", SHAPES, ids=[f"{r}runs-{m}metrics-{g}regressions" for r, m, g, _, _ in SHAPES]
)
def test_no_width_splits_a_row_and_the_rows_left_out_are_counted(
    shape: tuple[int, int, int, int, bool],
) -> None:
    report = _report(random.Random(sum(shape[:4])), *shape)
    full = summary_markdown(report, fmt="github", max_chars=10**9)
    full_rows = sum(len(rows) for _, rows in _tables(full))
    assert full_rows > 0
    step = max(
        37, (len(full) - 300) // 45
    )  # ~45 limits per shape, odd steps so cuts land everywhere in a line
    widths = sorted({*range(500, len(full) + 200, step), len(full), len(full) - 1})
    for width in widths:
        text = summary_markdown(report, fmt="github", max_chars=width)
        assert len(text) <= width, width
        assert text.startswith(MARKER + "\n## ragmetrics: night"), width
        for header, rows in _tables(text):
            for row in rows:
                assert _cells(row) == _cells(header), f"max_chars={width}: {row!r} under {header!r}"
        said = _LEFT_OUT.search(text)
        if "cut to fit" in text:
            # the hard cut's count is the rows of the shrunk summary it dropped: never more than exist, and
            # never zero when rows are missing from what is shown
            shown = sum(len(rows) for _, rows in _tables(text))
            if said is not None:
                assert 0 < int(said.group(1)) <= full_rows + 1 - shown, width
            assert "see report.html" in text.splitlines()[-1]


def test_the_count_is_the_rows_missing_from_the_shrunk_summary() -> None:
    """Where even the smallest shrink is too long (150 regressions), the rows left out are exactly the drop
    table's rows that are not shown."""
    report = _report(random.Random(1), 2, 2, 150, 0, False)
    for width in (500, 1_000, 3_000, 7_000):
        text = summary_markdown(report, max_chars=width)
        shown = sum(len(rows) for _, rows in _tables(text))
        said = _LEFT_OUT.search(text)
        assert said is not None, text[-300:]
        # the smallest shrink has the 150 drops and the means table's one "... 2 more runs" row
        assert int(said.group(1)) == 150 + 1 - shown, width
