"""Pairwise preferences: the sign test, Bradley-Terry (against a direct maximum-likelihood fit), position bias,
net preferences of several judgements, and the preferences file read strictly."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, stats

from ragmetrics.comparison.preference import (
    Preference,
    bradley_terry,
    compare_preferences,
    net_preferences,
    position_bias,
)
from ragmetrics.errors import InputError
from ragmetrics.trust.preferences import load_preferences


def _games(rng: np.random.Generator, strengths: dict[str, float], n: int) -> list[Preference]:
    names = sorted(strengths)
    out = []
    for q in range(n):
        i, j = rng.choice(len(names), 2, replace=False)
        a, b = names[i], names[j]
        p = strengths[a] / (strengths[a] + strengths[b])
        out.append(Preference(f"q{q}", a, b, "left" if rng.random() < p else "right"))
    return out


def test_bradley_terry_is_the_maximum_likelihood_fit() -> None:
    rng = np.random.default_rng(0)
    games = _games(rng, {"a": 1.0, "b": 2.0, "c": 0.5}, 400)
    fitted = bradley_terry(games)
    names = ["a", "b", "c"]

    def negative_log_likelihood(theta: np.ndarray) -> float:
        logp = dict(zip(names, np.concatenate(([0.0], theta)), strict=True))
        total = 0.0
        for g in games:
            winner, loser = (g.left, g.right) if g.choice == "left" else (g.right, g.left)
            total -= logp[winner] - np.logaddexp(logp[winner], logp[loser])
        return total

    best = optimize.minimize(negative_log_likelihood, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    ratio = {n: v / fitted["a"] for n, v in fitted.items()}
    assert math.log(ratio["b"]) == pytest.approx(best[0], abs=1e-5)
    assert math.log(ratio["c"]) == pytest.approx(best[1], abs=1e-5)
    assert math.prod(fitted.values()) == pytest.approx(1.0)  # geometric mean 1


def test_two_runs_sign_test_and_log_odds() -> None:
    prefs = ([Preference(f"q{i}", "a", "b", "right") for i in range(30)]
             + [Preference(f"r{i}", "b", "a", "right") for i in range(10)]  # b shown left, a preferred
             + [Preference(f"t{i}", "a", "b", "tie") for i in range(5)])  # fmt: skip
    result = compare_preferences(prefs, "a", "b", resamples=500)
    assert (result.wins_b, result.wins_a, result.ties, result.questions) == (30, 10, 5, 45)
    assert result.p_value == pytest.approx(stats.binomtest(30, 40).pvalue)
    assert result.share_b is not None and result.share_b.estimate == 0.75
    assert result.share_b.low < 0.75 < result.share_b.high
    # ties count half a win each way: BT odds (30 + 2.5) / (10 + 2.5)
    assert result.log_odds_b is not None and result.log_odds_b.estimate == pytest.approx(math.log(32.5 / 12.5))
    assert result.verdict == "b preferred"
    # the right side won 40 of 40 untied judgements: a (simulated) position bias
    assert result.position is not None and result.position.estimate == 0.0 and result.position_p is not None
    assert result.position_p < 1e-6


def test_a_position_swapped_disagreement_is_a_tie() -> None:
    both_orders = [Preference("q1", "a", "b", "left"), Preference("q1", "b", "a", "left"),  # follows the position
                   Preference("q2", "a", "b", "right"), Preference("q2", "b", "a", "left")]  # b both ways  # fmt: skip
    assert net_preferences(both_orders, "a", "b") == {"q1": 0, "q2": 1}
    share, p = position_bias(both_orders)
    assert share is not None and share.estimate == 0.75 and p is not None


def test_the_preferences_file_is_read_strictly(tmp_path: Path) -> None:
    good = tmp_path / "prefs.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in [
        {"sample_id": "q1", "left": "a", "right": "b", "choice": "left", "labeller": "ann"},
        {"sample_id": "q1", "left": "b", "right": "a", "choice": "b", "labeller": "bob"},
        {"id": "q2", "left": "a", "right": "b", "choice": "tie"}]), encoding="utf-8")  # fmt: skip
    prefs = load_preferences(good)
    assert [p.choice for p in prefs] == ["left", "left", "tie"] and prefs[1].winner == "b"
    for row, message, field in (
        ({"sample_id": "q1", "left": "a", "right": "a", "choice": "tie"}, "same run", "right"),
        ({"sample_id": "q1", "left": "a", "right": "b", "choice": "c"}, "choice 'c'", "choice"),
        ({"sample_id": "q1", "left": "a", "choice": "left"}, "missing right", "right"),
    ):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps(row) + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=message) as error:
            load_preferences(bad)
        assert error.value.field == field and error.value.line == 1
    twice = tmp_path / "twice.csv"
    twice.write_text("sample_id,left,right,choice\nq1,a,b,left\nq1,b,a,right\n", encoding="utf-8")
    with pytest.raises(InputError, match="judged twice") as error:
        load_preferences(twice)
    assert error.value.line == 3
