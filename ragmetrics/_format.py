"""How numbers that people compare are printed, written once so every output prints them the same way."""

from __future__ import annotations

__all__ = ["format_effect", "format_p"]


def format_p(value: float) -> str:
    """A p-value: four decimals, or scientific notation below 0.0001 (never a bare 0.0000)."""
    return f"{value:.1e}" if value < 1e-4 else f"{value:.4f}"


def format_effect(value: float | None, digits: int = 2) -> str:
    """A paired effect size (Cohen's d); None means every query moved by the same non-zero amount."""
    return "shift" if value is None else f"{value:+.{digits}f}"
