"""Holm and Bonferroni against hand-computed adjusted p-values."""

from __future__ import annotations

import pytest

from ragmetrics.comparison.corrections import adjust, bonferroni, holm
from ragmetrics.errors import InputError


def test_bonferroni_by_hand() -> None:
    assert bonferroni([0.01, 0.04, 0.3]) == pytest.approx([0.03, 0.12, 0.9])
    assert bonferroni([0.5, 0.2]) == pytest.approx([1.0, 0.4])


def test_holm_by_hand() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> monotone max -> 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # step-down stops mattering once capped at 1
    assert holm([0.2, 0.6, 0.01]) == pytest.approx([0.4, 0.6, 0.03])
    assert holm([0.7, 0.9]) == pytest.approx([1.0, 1.0])


def test_holm_with_ties_keeps_order() -> None:
    assert holm([0.02, 0.02, 0.5]) == pytest.approx([0.06, 0.06, 0.5])


def test_holm_never_exceeds_bonferroni_and_never_below_raw() -> None:
    p = [0.001, 0.2, 0.04, 0.013, 0.5, 0.049]
    for raw, h, b in zip(p, holm(p), bonferroni(p), strict=True):
        assert raw <= h <= b


def test_adjust_dispatch_and_errors() -> None:
    assert adjust([0.01, 0.02], "none") == [0.01, 0.02]
    assert adjust([], "holm") == []
    with pytest.raises(InputError, match="holm, bonferroni, none"):
        adjust([0.1], "fdr")
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        adjust([1.5], "holm")
