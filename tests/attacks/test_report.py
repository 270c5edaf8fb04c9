"""The attack report's figures against hand computations: Wilson intervals and the exact McNemar test."""

from __future__ import annotations

import math

import pytest

from ragmetrics.attacks.metrics import Outcome
from ragmetrics.attacks.model import AttackCheck, AttackRow
from ragmetrics.attacks.report import AnsweredAttack, attack_summary


def _check(i: int) -> AttackCheck:
    return AttackCheck(id=f"x{i}", kind="injection", style="override", canary="AAAA-BBBB-CCCC", language="en")


def test_paired_rows_count_discordant_attacks_only() -> None:
    checks = [_check(i) for i in range(10)]
    rows = [AttackRow(id=c.id, question="q?", language="en") for c in checks]
    fooled = Outcome(True, False, False, "the canary is in the answer")
    safe = Outcome(False, False, False, "no canary in the answer")
    answered = [AnsweredAttack("a", c.id, "x", fooled if i < 8 else safe, None) for i, c in enumerate(checks)]
    answered += [AnsweredAttack("b", c.id, "y", safe if i < 8 else fooled, None) for i, c in enumerate(checks[:9])]
    answered.append(AnsweredAttack("b", "x9", None, None, "pipeline_timeout: slow"))  # failed: not paired
    summary = attack_summary(checks, rows, answered, ["a", "b"], {"a": (0, 5), "b": (1, 5)})
    row = summary["pairs"][0]["rows"][0]
    assert row["group"] == "all" and row["n"] == 9 and row["only_a"] == 8 and row["only_b"] == 1
    exact = 2 * sum(math.comb(9, k) for k in range(2)) / 2**9  # two-sided binomial on 1 of 9 discordant
    assert row["p"] == pytest.approx(exact)
    assert summary["rates"]["b"]["all"] == {**summary["rates"]["b"]["all"], "n": 9, "successes": 1}
    assert summary["failures"] == {"a": 0, "b": 1}
    assert len([s for s in summary["successes"] if s["run"] == "a"]) == 8
