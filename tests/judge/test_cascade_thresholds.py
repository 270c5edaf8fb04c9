"""Fixed-sequence threshold selection (ragmetrics.judge.cascade.thresholds) against hand-computed cases.

The p-values are P(Bin(n, alpha) <= errors) worked out by hand from the binomial sum:
- 22 kept, 0 errors, alpha 0.1: 0.9^22 = 0.098477 <= 0.1 (rejected); 21 kept: 0.9^21 = 0.109419 > 0.1;
- 30 kept, 1 error, alpha 0.1: 0.9^30 + 30 * 0.1 * 0.9^29 = 0.042391 + 0.141304 = 0.183695.
"""

from __future__ import annotations

import math

import pytest

from ragmetrics.judge.cascade.thresholds import (
    binomial_p_value,
    calibrate_cascade,
    fixed_sequence_threshold,
    minimum_labels,
    scan_start,
    stage_delta,
)


def test_binomial_p_value_by_hand() -> None:
    assert binomial_p_value(0, 22, 0.1) == pytest.approx(0.9**22, rel=1e-12)
    assert binomial_p_value(1, 30, 0.1) == pytest.approx(0.9**30 + 30 * 0.1 * 0.9**29, rel=1e-12)
    assert binomial_p_value(0, 0, 0.1) == 1.0
    with pytest.raises(ValueError):
        binomial_p_value(3, 2, 0.1)


@pytest.mark.parametrize(
    ("target", "delta", "needed"),
    [(0.9, 0.1, 22), (0.9, 0.05, 29), (0.8, 0.1, 11), (0.5, 0.25, 2), (0.99, 0.1, 230), (0.9, 0.1 / 3, 33)],
)
def test_minimum_labels_is_the_smallest_perfect_record_that_rejects(
    target: float, delta: float, needed: int
) -> None:
    assert minimum_labels(target, delta) == needed
    assert target**needed <= delta < target ** (needed - 1)  # the definition, checked by hand
    assert binomial_p_value(0, needed, 1 - target) <= delta
    assert binomial_p_value(0, needed - 1, 1 - target) > delta


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5])
def test_levels_outside_zero_one_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="target"):
        minimum_labels(bad, 0.1)
    with pytest.raises(ValueError, match="delta"):
        minimum_labels(0.9, bad)


def test_perfect_record_at_the_minimum_is_certified_one_short_is_not() -> None:
    chosen = fixed_sequence_threshold([0.9] * 22, [True] * 22, target=0.9, delta=0.1, steps=None)
    assert (chosen.threshold, chosen.kept, chosen.agreeing) == (0.9, 22, 22)
    assert chosen.p_value == pytest.approx(0.9**22)
    short = fixed_sequence_threshold([0.9] * 21, [True] * 21, target=0.9, delta=0.1, steps=None)
    assert short.threshold is None and short.kept == 0


def test_scan_stops_at_the_first_non_rejection() -> None:
    # 30 items at 0.99 all agree (p = 0.9^30 = 0.042 <= 0.05); adding the 10 at 0.8 (5 wrong) gives 40 kept,
    # 5 errors: p = P(Bin(40, 0.1) <= 5) = 0.79 > 0.05, so the scan stops; the 10 at 0.7, all right, would
    # bring the record back to 5 errors in 50 (p = 0.62) but are never tested.
    confidences = [0.99] * 30 + [0.8] * 10 + [0.7] * 10
    agrees = [True] * 30 + [False] * 5 + [True] * 5 + [True] * 10
    chosen = fixed_sequence_threshold(confidences, agrees, target=0.9, delta=0.05, steps=None)
    assert (chosen.threshold, chosen.kept, chosen.agreeing, chosen.tested) == (0.99, 30, 30, 2)
    assert chosen.p_value == pytest.approx(0.9**30)


def test_one_error_near_the_top_is_tolerated_when_enough_agree() -> None:
    # 60 at 0.95 with 1 error: p = 0.9^60 + 60 * 0.1 * 0.9^59 = 0.01318 <= 0.05: certified, then 0.6 (all
    # wrong) fails: the threshold is 0.95.
    confidences = [0.95] * 60 + [0.6] * 20
    agrees = [False] + [True] * 59 + [False] * 20
    chosen = fixed_sequence_threshold(confidences, agrees, target=0.9, delta=0.05, steps=None)
    assert chosen.threshold == 0.95 and chosen.kept == 60
    assert chosen.p_value == pytest.approx(0.9**60 + 60 * 0.1 * 0.9**59)


def test_ties_enter_together_and_levels_below_the_minimum_are_skipped() -> None:
    # one item at 1.0 alone could never reject (p = 0.9 > 0.1): the first test is at 0.9 with 25 kept
    confidences = [1.0] + [0.9] * 24
    chosen = fixed_sequence_threshold(confidences, [True] * 25, target=0.9, delta=0.1, steps=None)
    assert chosen.threshold == 0.9 and chosen.kept == 25 and chosen.tested == 1


def test_steps_test_every_twentieth_of_the_items() -> None:
    # 100 distinct confidences, the top 50 right, the rest wrong. 100 >= 2 x scan_start (38), so the scan starts
    # at 38 kept; candidates every 5 kept from there: 38 (p = 0.9^38 = 0.018), 40, 45, 50 certified; 55 kept
    # with 5 errors: p = P(Bin(55, 0.1) <= 5) = 0.52 fails
    confidences = [1 - i / 100 for i in range(100)]
    agrees = [i < 50 for i in range(100)]
    chosen = fixed_sequence_threshold(confidences, agrees, target=0.9, delta=0.1, steps=20)
    assert chosen.kept == 50 and chosen.threshold == pytest.approx(0.51)
    assert chosen.tested == 5  # 38, 40, 45, 50 rejected, 55 not


def test_scan_start_by_hand() -> None:
    # the fewest n with P(Bin(n, 0.1) <= floor(n * 0.1 / 2)) <= 0.1: n = 38 tolerates 1 error,
    # p = 0.9^38 + 38 * 0.1 * 0.9^37 = 0.0953; n = 37: 0.9^37 + 37 * 0.1 * 0.9^36 = 0.1036 > 0.1
    assert scan_start(0.9, 0.1) == 38
    assert binomial_p_value(1, 38, 0.1) == pytest.approx(0.9**38 + 38 * 0.1 * 0.9**37)
    assert binomial_p_value(1, 37, 0.1) == pytest.approx(0.9**37 + 37 * 0.1 * 0.9**36)
    assert binomial_p_value(1, 37, 0.1) > 0.1


def test_one_early_disagreement_does_not_end_the_scan_on_a_large_set() -> None:
    # 200 items, only the 4th most confident disagrees. Started at the minimum (22 kept, 1 error:
    # p = P(Bin(22, 0.1) <= 1) = 0.339 > 0.1) the scan would certify nothing; started at 38 kept (p = 0.0953)
    # it goes on to keep all 200 (1 error in 200).
    confidences = [1 - i / 1000 for i in range(200)]
    agrees = [i != 3 for i in range(200)]
    assert binomial_p_value(1, 22, 0.1) > 0.1
    chosen = fixed_sequence_threshold(confidences, agrees, target=0.9, delta=0.1, steps=None)
    assert chosen.kept == 200 and chosen.agreeing == 199
    # a tie at the top larger than the start is tested whole: 40 right at 0.999, then 260 with a third wrong
    tied = fixed_sequence_threshold([0.999] * 40 + [0.9] * 260, [True] * 40 + [i % 3 != 0 for i in range(260)],
                                    target=0.9, delta=0.1, steps=None)  # fmt: skip
    assert (tied.threshold, tied.kept, tied.tested) == (0.999, 40, 2)
    assert tied.p_value == pytest.approx(0.9**40)


def test_a_cascade_calibrates_each_judge_on_what_reaches_it() -> None:
    asked: list[list[int]] = []
    first = ([0.99] * 40 + [0.5] * 60, [True] * 40 + [False] * 60)
    second = ([0.97] * 60, [True] * 60)

    def stage(k: int, reaching: list[int]) -> tuple[list[float], list[bool]]:
        asked.append(list(reaching))
        conf, agree = (first, second)[k]
        if k == 0:
            return [conf[i] for i in reaching], [agree[i] for i in reaching]
        return [second[0][i - 40] for i in reaching], [second[1][i - 40] for i in reaching]

    choices = calibrate_cascade(target=0.9, delta=0.1, judges=2, judge_stage=stage, items=100)
    assert asked == [list(range(100)), list(range(40, 100))]
    assert [c.threshold for c in choices] == [0.99, 0.97]
    assert stage_delta(0.1, 2) == 0.05
    assert math.isclose(choices[0].p_value or 1, 0.9**40)
