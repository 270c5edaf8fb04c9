"""PNG plots: files are written, readable images; a missing matplotlib gives a clear error."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from ragmetrics.comparison.pairs import compare_results
from ragmetrics.errors import ConfigError, InputError
from ragmetrics.schema import Report

from .conftest import make_result, random_results

pytest.importorskip("matplotlib", reason="plots need the 'plots' extra (matplotlib)")


@pytest.fixture(scope="module")
def report() -> Report:
    return compare_results(
        random_results(3, 40, ["ndcg@10", "p/5"], [0.0, 0.1, 0.2]), test="t", bootstrap_samples=200
    )


def test_save_plots_writes_one_box_per_metric_and_one_diff_per_pair(report: Report, tmp_path: Path) -> None:
    from matplotlib.image import imread

    from ragmetrics.render.plots import save_plots

    written = save_plots(report, tmp_path / "plots")
    names = sorted(p.name for p in written)
    assert names == sorted(
        ["box_ndcg@10.png", "box_p_5.png"]
        + [
            f"diff_{m}_{b}_vs_{a}.png"
            for m in ("ndcg@10", "p_5")
            for a, b in [("run0", "run1"), ("run0", "run2"), ("run1", "run2")]
        ]
    )
    image = imread(written[0])
    assert image.ndim == 3 and image.shape[0] > 200 and image.shape[1] > 200
    assert float(np.std(image)) > 0.01  # not a blank canvas


def test_names_that_sanitise_alike_do_not_overwrite_each_other(tmp_path: Path) -> None:
    from ragmetrics.render.plots import save_plots

    scores = {"q1": {"m": 0.1}, "q2": {"m": 0.4}}
    runs = [make_result(name, scores, ["m"]) for name in ("x/a", "x_a", "b")]
    written = save_plots(compare_results(runs, test="sign", bootstrap_samples=20), tmp_path)
    assert len(set(written)) == len(written) == 1 + 3
    assert {p.name for p in written} >= {
        "diff_m_x_a_vs_x_a.png",
        "diff_m_b_vs_x_a.png",
        "diff_m_b_vs_x_a-2.png",
    }
    assert all(p.is_file() for p in written)


def test_difference_plot_uses_only_paired_queries(tmp_path: Path) -> None:
    from ragmetrics.render.plots import difference_plot

    a = make_result("a", {"q1": {"m": 0.1}, "q2": {"m": None}, "q3": {"m": 0.5}}, ["m"])
    b = make_result("b", {"q1": {"m": 0.4}, "q2": {"m": 0.2}, "q3": {"m": 0.3}}, ["m"])
    report = compare_results([a, b], test="sign", bootstrap_samples=50)
    figure = difference_plot(report, report.comparisons[0])
    heights = sorted(
        round(patch.get_height(), 6) for patch in figure.axes[0].patches if patch.get_width() < 1
    )
    assert heights == [-0.2, 0.3]


def test_unknown_metric(report: Report) -> None:
    from ragmetrics.render.plots import box_plot

    with pytest.raises(InputError, match="no metric 'mrr'"):
        box_plot(report, "mrr")


def test_missing_matplotlib_is_a_clear_error(report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragmetrics.render.plots import box_plot

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ConfigError, match=r"pip install '\.\[plots\]' in a clone of ragmetrics, or pip install matplotlib"):
        box_plot(report, "ndcg@10")


def test_html_plots_cover_every_pair_and_use_shares_for_binary_metrics() -> None:
    pytest.importorskip("matplotlib")
    from ragmetrics.comparison.pairs import compare_results
    from ragmetrics.render.html import report_plots
    from ragmetrics.render.plots import is_binary

    from .conftest import make_result

    runs = [
        make_result(name, {f"q{i}": {"hit": float((i + k) % 2), "ndcg": 0.1 * ((i * (k + 1)) % 10)} for i in range(12)},
                    ["hit", "ndcg"])
        for k, name in enumerate(["a", "b", "c"])
    ]  # fmt: skip
    report = compare_results(runs, test="sign", bootstrap_samples=50)
    assert is_binary(report, "hit") and not is_binary(report, "ndcg")
    captions = [plot.caption for plot in report_plots(report)[0]]
    assert "hit: share of queries scoring 1 by run" in captions
    assert "ndcg: per-query scores by run" in captions
    pairs = {c.split(",")[0] for c in captions if " minus " in c}
    assert pairs == {
        f"{m}: {y} minus {x}" for m in ("hit", "ndcg") for x, y in (("a", "b"), ("a", "c"), ("b", "c"))
    }


def test_drill_down_shows_verdicts_as_a_table_numbered_from_one() -> None:
    from ragmetrics.render.html.queries import detail_html as _detail_html
    from ragmetrics.schema import JudgeDetail

    detail = JudgeDetail(
        verdicts=[
            {
                "chunk": 0,
                "sentence_index": 2,
                "sentence": "Canberra is the capital.",
                "verdict": True,
                "cosine": 0.71,
                "reason": "names the capital",
            }
        ],
        reason="1 of 1 relevant",
    )
    page = _detail_html("run", "context_relevancy", detail)
    assert "<table class='verdicts'>" in page
    assert "chunk 1, sentence 3" in page and "&#10003;" in page and "names the capital" in page
    assert "{" not in page  # no raw dict text


def test_a_precision_recall_plot_when_the_report_has_interpolated_precision(tmp_path: Path) -> None:
    from matplotlib.image import imread

    from ragmetrics import Qrels, Run, evaluate
    from ragmetrics.render.plots import precision_recall_plot, recall_points, save_plots

    qrels = Qrels.from_dict({"q1": {"a": 1, "b": 1, "c": 0}, "q2": {"a": 1, "d": 2}})
    runs = [Run.from_dict({"q1": {"a": 3.0, "c": 2.0, "b": 1.0}, "q2": {"d": 2.0, "a": 1.0}}, name="x"),
            Run.from_dict({"q1": {"c": 3.0, "a": 2.0, "b": 1.0}, "q2": {"e": 2.0, "a": 1.0}}, name="y")]  # fmt: skip
    metrics = [f"iprec@{i / 10:g}" for i in range(11)]
    report = compare_results([evaluate(qrels, r, metrics) for r in runs], test="t", bootstrap_samples=100)
    assert [p for p, _ in recall_points(report)] == [i / 10 for i in range(11)]
    written = save_plots(report, tmp_path)
    curve = next(p for p in written if p.name == "precision_recall.png")
    assert imread(curve).shape[0] > 100
    assert precision_recall_plot(compare_results([evaluate(qrels, r, ["map"]) for r in runs], test="t",
                                                 bootstrap_samples=100)) is None  # fmt: skip
