"""The winner chosen on the selection half, confirmed on the other with paired tests and Holm; its gap."""

from __future__ import annotations

import numpy as np
import pytest

from ragmetrics.comparison.stats import paired_t_test
from ragmetrics.sweep.select import confirm, rank_finalists

SEL = [f"s{i}" for i in range(20)]
CONF = [f"c{i}" for i in range(20)]


def _scores() -> dict[str, dict[str, float | None]]:
    rng = np.random.default_rng(0)
    base = rng.uniform(0.2, 0.6, size=40)
    winner = np.clip(base + 0.3 + rng.normal(0, 0.05, 40), 0, 1)
    close = np.clip(winner - 0.02 + rng.normal(0, 0.05, 40), 0, 1)
    ids = SEL + CONF
    return {
        "baseline": dict(zip(ids, base.tolist(), strict=True)),
        "winner": dict(zip(ids, winner.tolist(), strict=True)),
        "close": dict(zip(ids, close.tolist(), strict=True)),
    }


def test_winner_and_runner_up_are_the_best_two_live_configurations() -> None:
    scores = _scores()
    assert rank_finalists(scores, ["baseline", "winner", "close"], [], SEL) == ("winner", "close")
    # the runner-up of a race that dropped every other configuration is the one dropped last
    assert rank_finalists(scores, ["winner"], ["baseline", "close"], SEL) == ("winner", "close")


def test_ties_go_to_the_earlier_configuration_of_the_grid() -> None:
    flat = {name: dict.fromkeys(SEL, 0.5) for name in ("a", "b", "c")}
    assert rank_finalists(flat, ["b", "a", "c"], [], SEL) == ("b", "a")


def test_confirmation_p_values_are_holm_adjusted_together() -> None:
    scores = _scores()
    result = confirm(
        "winner", [("baseline", "baseline"), ("close", "runner-up")], scores, SEL, CONF,
        test="t", alpha=0.05, seed=0, permutations=1000,
    )  # fmt: skip
    raw = [
        paired_t_test([scores["winner"][q] - scores[o][q] for q in CONF])  # type: ignore[operator]
        for o in ("baseline", "close")
    ]
    low, high = sorted(raw)
    expected = {raw.index(low): min(1.0, 2 * low), raw.index(high): min(1.0, max(2 * low, high))}
    checks = result.checks
    assert [c.p_value for c in checks] == pytest.approx(raw)
    assert [c.p_adjusted for c in checks] == pytest.approx([expected[0], expected[1]])
    assert checks[0].role == "baseline" and checks[0].confirmed
    assert checks[0].questions == len(CONF)


def test_a_winner_not_better_than_its_runner_up_is_not_confirmed_against_it() -> None:
    scores = _scores()
    scores["close"] = dict(scores["winner"])  # identical on every question: p = 1
    result = confirm(
        "winner", [("baseline", "baseline"), ("close", "runner-up")], scores, SEL, CONF,
        test="fisher", alpha=0.05, seed=0, permutations=2000,
    )  # fmt: skip
    assert result.checks[1].p_adjusted == 1.0 and not result.checks[1].confirmed


def test_the_winners_curse_gap_is_selection_less_confirmation() -> None:
    scores = _scores()
    scores["winner"].update(dict.fromkeys(SEL, 0.9))
    scores["winner"].update(dict.fromkeys(CONF, 0.7))
    result = confirm("winner", [("baseline", "baseline")], scores, SEL, CONF, test="t", alpha=0.05, seed=0,
                     permutations=1000)  # fmt: skip
    assert result.selection_mean == pytest.approx(0.9)
    assert result.confirmation_mean == pytest.approx(0.7)
    assert result.gap == pytest.approx(0.2)


def test_failed_scores_leave_only_their_question_out_of_a_pair() -> None:
    scores = _scores()
    scores["baseline"]["c3"] = None
    result = confirm("winner", [("baseline", "baseline")], scores, SEL, CONF, test="t", alpha=0.05, seed=0,
                     permutations=1000)  # fmt: skip
    assert result.checks[0].questions == len(CONF) - 1
