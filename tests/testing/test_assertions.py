"""ragmetrics.testing: the gate's rule as assertions (significant AND beyond max_drop), the CI's lower bound
for a floor, the correction across the run's gating tests, failure messages naming the worst queries, JUnit
XML properties, and the example suite (examples/pytest_quality) run by pytest, with and without xdist."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ragmetrics.schema import JudgeInfo, RunMetadata, RunResult
from ragmetrics.testing import assert_at_least, assert_no_regression

ROOT = Path(__file__).resolve().parents[2]


def _run(values: list[float], metric: str = "faithfulness", model: str = "m1") -> RunResult:
    judge = JudgeInfo(backend="openai", model=model, prompt_versions={"faithfulness": "v1"})
    return RunResult(
        name="rag",
        per_query={f"q{i:02d}": {metric: v} for i, v in enumerate(values)},
        metadata=RunMetadata(metrics=[metric], judge=judge),
    )


BASE = [0.9, 0.8, 0.85, 0.95, 0.7, 0.9, 0.8, 0.75, 0.9, 0.85, 0.8, 0.9, 0.95, 0.85, 0.8, 0.9]


def test_a_significant_drop_beyond_max_drop_fails_and_names_the_worst_queries() -> None:
    worse = [v - 0.2 for v in BASE]
    worse[3] -= 0.3
    with pytest.raises(AssertionError) as failure:
        assert_no_regression(_run(worse), _run(BASE), ["faithfulness"], max_drop=0.05, family=1)
    text = str(failure.value)
    assert "1 regression" in text and "rag / faithfulness" in text
    assert "worst queries: q03 (0.95 -> 0.45)" in text


def test_noise_and_small_consistent_drops_pass() -> None:
    noisy = [v + (0.05 if i % 2 else -0.05) for i, v in enumerate(BASE)]
    gate = assert_no_regression(_run(noisy), _run(BASE), ["faithfulness"], max_drop=0.0, family=1)
    assert not gate.failed
    small = [v - 0.01 for v in BASE]  # significant, but within the allowed drop
    assert not assert_no_regression(_run(small), _run(BASE), max_drop=0.02, family=1).failed


def test_the_family_of_gating_tests_shares_alpha() -> None:
    """6 of 16 queries dropping alike gives p = 2/64 (randomisation test), between 0.05/20 and 0.05: alone it fails,
    as one of 20 gating tests it passes."""
    worse = [v - (0.3 if i < 6 else 0.0) for i, v in enumerate(BASE)]
    with pytest.raises(AssertionError, match=r"alpha 0.05 / 1 gating test"):
        assert_no_regression(_run(worse), _run(BASE), max_drop=0.0, family=1)
    assert not assert_no_regression(_run(worse), _run(BASE), max_drop=0.0, family=20).failed


def test_a_judge_change_is_not_comparable_unless_asked() -> None:
    with pytest.raises(AssertionError, match="not comparable with the baseline"):
        assert_no_regression(_run(BASE, model="m2"), _run(BASE), family=1)
    assert not assert_no_regression(_run(BASE, model="m2"), _run(BASE), family=1, on_change="compare").failed


def test_a_floor_passes_on_the_lower_bound_not_the_point_estimate() -> None:
    mean, bound = assert_at_least(_run(BASE), "faithfulness", 0.8, family=1)
    assert mean == pytest.approx(sum(BASE) / 16) and 0.8 <= bound < mean
    few = [0.95, 0.6, 0.9]  # mean 0.82 clears 0.8; three queries cannot show it
    with pytest.raises(AssertionError) as failure:
        assert_at_least(_run(few), "faithfulness", 0.8, family=1)
    assert "lower end of its 95.0% CI" in str(failure.value) and "worst queries: q01 (0.60)" in str(
        failure.value
    )
    with pytest.raises(AssertionError, match="upper end"):
        assert_at_least(_run([1.0, 3.0, 2.0, 2.5], "latency_s"), "latency_s", 2.0, family=1)


def test_bad_arguments_are_input_errors() -> None:
    from ragmetrics.errors import InputError

    with pytest.raises(InputError, match="max_drop must be a number >= 0"):
        assert_no_regression(_run(BASE), _run(BASE), max_drop=-1, family=1)
    with pytest.raises(InputError, match="has no metric 'ndcg@10'"):
        assert_at_least(_run(BASE), "ndcg@10", 0.5, family=1)
    with pytest.raises(InputError, match="expected a Report"):
        assert_no_regression(object(), _run(BASE), family=1)


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


FAILING_SUITE = """
import pytest
from ragmetrics.schema import RunMetadata, RunResult
from ragmetrics.testing import assert_no_regression, family_size

def run(values):
    return RunResult(name="rag", per_query={f"q{i:02d}": {"mrr": v} for i, v in enumerate(values)},
                     metadata=RunMetadata(metrics=["mrr"]))

BASE = [1.0] * 12

@pytest.mark.ragmetrics
def test_family():
    assert family_size() == 2

@pytest.mark.ragmetrics
def test_drop():
    assert_no_regression(run([0.5] * 10 + [1.0, 0.2]), run(BASE), ["mrr"], max_drop=0.1)

def test_unmarked_counts_as_one_more():
    assert family_size() == 3
"""


def test_a_failing_gate_in_a_real_pytest_run(tmp_path: Path) -> None:
    (tmp_path / "test_gate.py").write_text(FAILING_SUITE, encoding="utf-8")
    done = _pytest("-q", "--junitxml=junit.xml", cwd=tmp_path)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 passed" in done.stdout and "1 failed" in done.stdout
    assert (
        "alpha 0.05 / 2 gating tests = 0.025" in done.stdout
        and "worst queries: q11 (1.00 -> 0.20)" in done.stdout
    )
    # The failure shows the test's own line and the message, not ragmetrics' source (__tracebackhide__).
    failure = done.stdout[done.stdout.index("test_drop") :]
    assert "def assert_no_regression" not in failure and "check_regressions" not in failure
    assert failure.count("\n") < 60, failure
    tree = ET.parse(tmp_path / "junit.xml")
    props = {p.get("name"): p.get("value") for p in tree.iter("property")}
    assert (
        props["ragmetrics.rag.mrr.verdict"] == "regression" and float(props["ragmetrics.rag.mrr.drop"]) > 0.4
    )


@pytest.mark.slow
@pytest.mark.parametrize("workers", [None, "2"])
def test_the_example_suite_passes(tmp_path: Path, workers: str | None) -> None:
    """examples/pytest_quality, as a team would run it (with -n 2: two xdist workers share the verdict cache)."""
    if workers is not None:
        pytest.importorskip("xdist", reason="pytest-xdist is not installed (the dev extra has it)")
    args = ["examples/pytest_quality", "-q", f"--junitxml={tmp_path / 'junit.xml'}",
            "-o", f"ragmetrics_cache={tmp_path / 'cache.sqlite'}"]  # fmt: skip
    done = _pytest(*args, *(["-n", workers] if workers else []), cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
    props = {p.get("name") for p in ET.parse(tmp_path / "junit.xml").iter("property")}
    assert {"ragmetrics.system.ndcg@10.p_corrected", "ragmetrics.pipeline.faithfulness.bound"} <= props


def _mostly_failed(kept: int = 1, total: int = 12) -> RunResult:
    """A run whose judge failed all but `kept` of `total` scores (the night itself would exit 3)."""
    from ragmetrics.schema import SampleFailure

    result = _run([0.95] * kept + [None] * (total - kept))  # type: ignore[list-item]
    result.failures = [
        SampleFailure(query_id=f"q{i:02d}", metric="faithfulness", cause="connection_error", message="refused")
        for i in range(kept, total)
    ]
    return result


def test_a_broken_night_is_never_a_pass_in_pytest() -> None:
    with pytest.raises(AssertionError, match=r"11 of 12 scores failed \(connection_error\)"):
        assert_at_least(_mostly_failed(), "faithfulness", 0.5)
    with pytest.raises(AssertionError, match="too many failed scores"):
        assert_no_regression(_mostly_failed(), _run(BASE[:12]), ["faithfulness"])
    # within the allowed share it decides on the scores, as the night does
    assert_at_least(_mostly_failed(kept=12), "faithfulness", 0.5)
    assert_at_least(_mostly_failed(kept=11), "faithfulness", 0.5, max_failure_rate=0.1)
