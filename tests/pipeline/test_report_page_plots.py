"""report.html of a night with many runs and metrics (issue 66, item 7): light, every plot reachable, the
quality-against-cost panel across the page's width.

Before: every plot inline as base64 PNG (7.5 MB for 71 plots) and only the first 40 shown.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from ragmetrics.comparison.pairs import compare_results
from ragmetrics.nightly.artifacts import write_artifacts
from ragmetrics.schema import Report, RunMetadata, RunResult

pytest.importorskip("matplotlib")

QUALITY = ["ndcg@10", "recall@10", "faithfulness", "answer_relevancy"]


def _night(runs: int, queries: int) -> Report:
    rng = random.Random(7)
    results = []
    for k in range(runs):
        per_query = {
            f"q{i}": {
                **{m: min(1.0, max(0.0, rng.gauss(0.5 + 0.05 * k, 0.2))) for m in QUALITY},
                "latency_s": 0.2 + 0.1 * k + rng.random() * 0.05,
                "cost": 0.001 * (k + 1) + rng.random() * 1e-4,
            }
            for i in range(queries)
        }
        metrics = [*QUALITY, "latency_s", "cost"]
        result = RunResult(name=f"run {k}", per_query=per_query,
                           metadata=RunMetadata(kind="mixed", metrics=metrics, num_queries=queries))  # fmt: skip
        result.recompute_aggregate()
        results.append(result)
    return compare_results(results, [*QUALITY, "latency_s", "cost"], test="t", bootstrap_samples=50)


def test_every_plot_is_a_file_the_light_page_reaches(tmp_path: Path) -> None:
    report = _night(runs=4, queries=12)
    expected = len(report.metrics) + len(report.comparisons) + 1  # a plot per metric, per pair, the cost panel
    assert expected > 40  # more than the old page showed
    folder, written = write_artifacts(report, tmp_path / "out", formats=["json", "html"], plots=True)
    page = (folder / "report.html").read_text(encoding="utf-8")
    files = sorted((folder / "plots").glob("*.png"))
    shown = re.findall(r'<img class="plot" alt="[^"]*" src="(plots/\d{3}\.png)" loading="lazy">', page)
    assert len(shown) == len(set(shown)) == len(files) == expected  # none capped, none twice
    assert sorted(folder / s for s in shown) == files
    assert "first 40" not in page and "data:image" not in page
    # the page is kilobytes whatever the plots weigh, and the plots are compressed PNGs
    plots_bytes = sum(f.stat().st_size for f in files)
    assert len(page.encode()) < 250_000 and all(f.read_bytes().startswith(b"\x89PNG") for f in files)
    assert plots_bytes / len(files) < 60_000
    # the per-pair differences fold under their metric, each count said
    for metric in report.metrics:
        pairs = sum(c.metric == metric for c in report.comparisons)
        assert f"<summary>{metric}: per-query differences of {pairs} pairs</summary>" in page
    # the quality-against-cost panels span the page's width
    assert re.search(r"<figure class='wide'><img class=\"plot\" alt=\"quality against cost", page)
    assert ".plots figure.wide{grid-column:1/-1" in page
    assert "report.html" in written
