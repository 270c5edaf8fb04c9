"""Power: the paired t-test's power against published figures and simulation, the smallest p an exact test can
reach, the report's power rows and the CLI, and the small-n case where a CI and a test disagree."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as ss

from ragmetrics.cli import main
from ragmetrics.comparison.pairs import compare_results
from ragmetrics.comparison.power import (
    exact_floor,
    family_alpha,
    minimum_attainable_p,
    minimum_detectable_difference,
    pair_power,
    questions_needed,
    t_test_power,
)
from ragmetrics.comparison.report_power import report_power

from .conftest import make_result


@pytest.mark.parametrize(("effect", "questions"), [(0.2, 199), (0.5, 34), (0.8, 15)])
def test_questions_needed_equal_the_published_sample_sizes(effect: float, questions: int) -> None:
    # One-sample / paired t, two-sided, alpha 0.05, power 0.8 (G*Power; Cohen 1988 table 2.4.1).
    assert questions_needed(effect, 1.0, 0.05) == questions
    assert t_test_power(effect, 1.0, questions, 0.05) >= 0.8 > t_test_power(effect, 1.0, questions - 1, 0.05)


def test_the_mde_is_detected_with_the_stated_power_in_simulation() -> None:
    n, sd, alpha = 30, 0.25, 0.05
    mde = minimum_detectable_difference(sd, n, alpha)
    assert mde is not None
    assert t_test_power(mde, sd, n, alpha) == pytest.approx(0.8, abs=1e-6)
    rng = np.random.default_rng(7)
    draws = rng.normal(mde, sd, size=(4000, n))
    rejected = np.mean(ss.ttest_1samp(draws, 0.0, axis=1).pvalue <= alpha)
    assert rejected == pytest.approx(0.8, abs=0.025)


def test_power_far_in_the_tail_is_one_not_nan() -> None:
    assert t_test_power(0.5, 1e-4, 64, 0.01) == 1.0
    assert minimum_detectable_difference(0.0, 10, 0.05) == 0.0
    assert minimum_detectable_difference(0.3, 1, 0.05) is None
    assert questions_needed(0.0, 0.3, 0.05) is None


def test_a_difference_out_of_reach_is_none() -> None:
    assert questions_needed(1e-6, 1.0, 0.05) is None


@pytest.mark.parametrize("n", [3, 5, 6, 8])
def test_the_smallest_exact_p_equals_scipys_most_extreme_outcome(n: int) -> None:
    all_up = np.arange(1, n + 1, dtype=float)
    assert minimum_attainable_p("wilcoxon", n) == pytest.approx(ss.wilcoxon(all_up).pvalue)
    assert minimum_attainable_p("sign", n) == pytest.approx(ss.binomtest(n, n).pvalue)
    assert minimum_attainable_p("t", n) == 0.0
    assert minimum_attainable_p("fisher", 20, permutations=999) == pytest.approx(1 / 1000)


def test_exact_floor_and_family_alpha() -> None:
    assert exact_floor(0.05) == 6  # 2 / 2^6 = 0.031 <= 0.05 < 2 / 2^5
    assert exact_floor(0.01) == 8
    assert family_alpha(0.05, "holm", 3) == pytest.approx(0.05 / 3)
    assert family_alpha(0.05, "none", 3) == 0.05


def test_five_questions_no_difference_can_be_significant() -> None:
    figures = pair_power([0.3, 0.5, 0.2, 0.8, 0.6], alpha=0.05, test="wilcoxon", target=0.1)
    assert figures.min_p == pytest.approx(0.0625)
    assert figures.mde is None
    assert figures.needed is not None and figures.needed >= 6


def _small_report(test: str) -> object:
    base = {f"q{i}": {"m": 0.1} for i in range(5)}
    up = {"q0": 0.4, "q1": 0.6, "q2": 0.3, "q3": 0.9, "q4": 0.7}
    cand = {q: {"m": v} for q, v in up.items()}
    return compare_results(
        [make_result("a", base, ["m"]), make_result("b", cand, ["m"])],
        test=test,
        permutations=2000,
        bootstrap_samples=2000,
        seed=1,
    )


def test_the_issues_small_n_case_is_explained() -> None:
    report = _small_report("wilcoxon")
    pair = report.comparisons[0]  # type: ignore[attr-defined]
    assert pair.ci_low > 0 and not pair.significant
    assert pair.p_value == pytest.approx(0.0625)
    (row,) = report_power(report)  # type: ignore[arg-type]
    assert row.why is not None
    assert "0.0625" in row.why and "At least 6 questions" in row.why
    assert row.mde is None


def test_agreeing_pairs_carry_no_explanation() -> None:
    rng = np.random.default_rng(3)
    a = {f"q{i}": {"m": float(v)} for i, v in enumerate(rng.uniform(0, 0.5, 60))}
    b = {q: {"m": s["m"] + 0.3} for q, s in a.items()}
    report = compare_results([make_result("a", a, ["m"]), make_result("b", b, ["m"])], test="t")
    (row,) = report_power(report, targets={"m": 0.05})
    assert row.why is None and row.target == 0.05
    assert row.mde == pytest.approx(0.0, abs=1e-9)  # a constant shift: no spread, any shift detectable


def test_report_power_uses_the_tested_differences_and_the_family_level() -> None:
    rng = np.random.default_rng(5)
    runs = []
    for k in range(3):
        scores = {
            f"q{i}": {"m": float(rng.uniform()) + 0.05 * k, "n": float(rng.uniform())} for i in range(40)
        }
        runs.append(make_result(f"r{k}", scores, ["m", "n"]))
    report = compare_results(runs, test="t", correction="holm")
    rows = report_power(report, metrics=["m"])
    assert len(rows) == 3 and {r.metric for r in rows} == {"m"}
    first = rows[0]
    d = np.array([runs[1].per_query[q]["m"] - runs[0].per_query[q]["m"] for q in runs[0].per_query])
    assert first.sd_diff == pytest.approx(float(np.std(d, ddof=1)))
    assert first.alpha == pytest.approx(0.05 / 3)  # three pairs per metric under Holm
    assert first.target == pytest.approx(abs(float(d.mean())))


def test_cli_power(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _small_report("wilcoxon")
    path = tmp_path / "report.json"
    path.write_text(report.model_dump_json())  # type: ignore[attr-defined]
    assert main(["power", str(path), "--target", "m=0.1"]) == 0
    out = capsys.readouterr().out
    assert "b vs a" in out and "none (only 5 differ)" in out and "0.0625" in out
    assert main(["power", str(path), "--target", "x=0.1"]) == 2
    assert "no metric 'x'" in capsys.readouterr().err
    assert main(["power", str(path), "--target", "-1"]) == 2
    assert main(["power", str(tmp_path / "absent.json")]) == 2
    assert "report not found" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text(json.dumps({"runs": 3}))
    assert main(["power", str(tmp_path / "bad.json")]) == 2
