"""Fisher randomization: close to the exact permutation p, reproducible for a seed whatever the threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ragmetrics.comparison.fisher import exact_permutation_p, fisher_p_values, fisher_test
from ragmetrics.errors import InputError


@pytest.mark.parametrize("n", [6, 10, 14, 16])
def test_close_to_exact_permutation_p(n: int) -> None:
    rng = np.random.default_rng(n)
    for shift in (0.0, 0.3, 0.8):
        d = np.round(rng.normal(shift, 1.0, n), 2)
        exact = exact_permutation_p(d)
        sampled = fisher_test(d, permutations=20_000, seed=7)
        assert abs(sampled - exact) < 0.01, (d, exact, sampled)


def test_exact_p_by_hand() -> None:
    # d = [1, 2, 3]: sums over the 8 sign flips are +-6, +-4, +-2, +-0: |S| >= 6 for 2 of 8.
    assert exact_permutation_p([1.0, 2.0, 3.0]) == 0.25


def test_p_formula_bounds() -> None:
    # Every flip ties the observed |sum| of all-zero differences: count = permutations, p = 1.
    assert fisher_test(np.zeros(30), permutations=999) == 1.0
    # A large one-sided shift is never reached by a flip: count = 0, p = 1 / (permutations + 1).
    assert fisher_test(np.full(200, 0.5), permutations=999) == pytest.approx(1 / 1000)


def test_same_seed_same_p_other_seed_differs() -> None:
    d = np.random.default_rng(0).normal(0.1, 1, 300)
    assert fisher_test(d, seed=3, permutations=5000) == fisher_test(d, seed=3, permutations=5000)
    assert fisher_test(d, seed=3, permutations=5000) != fisher_test(d, seed=4, permutations=5000)


def test_column_p_does_not_depend_on_other_columns() -> None:
    rng = np.random.default_rng(1)
    matrix = rng.normal(0.05, 1, (257, 5))  # not a multiple of 64 queries
    together = fisher_p_values(matrix, permutations=3000, seed=11)
    alone = [fisher_test(matrix[:, c], permutations=3000, seed=11) for c in range(5)]
    assert together.tolist() == alone


def test_zero_difference_rows_do_not_change_p() -> None:
    # Left-out queries are given a zero difference; that must equal dropping them.
    d = np.random.default_rng(2).normal(0.1, 1, 20)
    exact_dropped = exact_permutation_p(d[:15])
    padded = d.copy()
    padded[15:] = 0.0
    assert exact_permutation_p(padded) == pytest.approx(exact_dropped)


_CHILD = """
import json, sys
import numpy as np
from ragmetrics.comparison.bootstrap import bootstrap_means
from ragmetrics.comparison.fisher import fisher_p_values
rng = np.random.default_rng(5)
d = rng.normal(0.02, 1, (1000, 6))
p = fisher_p_values(d, permutations=4000, seed=9).tolist()
ci = bootstrap_means(d, samples=500, seed=9).ravel().tolist()
print(json.dumps(p + ci))
"""


def _p_values_with_threads(threads: int) -> list[float]:
    env = {**os.environ, "NUMBA_NUM_THREADS": str(threads)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True, timeout=240
    )
    values: list[float] = json.loads(done.stdout)
    return values


def test_identical_across_thread_counts() -> None:
    # Fisher p-values and bootstrap means, each from a fresh process with 1 and with 2 numba threads.
    one, two = _p_values_with_threads(1), _p_values_with_threads(2)
    assert one == two
    assert len(set(one)) > 1


def test_bad_input() -> None:
    with pytest.raises(InputError, match="permutations"):
        fisher_test([0.1, 0.2], permutations=0)
    with pytest.raises(InputError, match="NaN"):
        fisher_test([0.1, float("inf")])
    with pytest.raises(InputError, match="too large"):
        exact_permutation_p(np.ones(30))
    with pytest.raises(InputError, match="NaN"):
        exact_permutation_p([0.1, float("nan")])
