"""What a support check found: one detail of a statement its passage does not bear out, with the reason a
verdict shows. Its own module because the checks (`support`) and the polarity comparison (`support_polarity`)
both return it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Conflict"]


@dataclass(frozen=True)
class Conflict:
    """One detail of the statement the passage does not bear out."""

    kind: Literal["number", "name", "negation", "antonym", "unsupported", "addition"]
    detail: str

    def __str__(self) -> str:
        if self.kind in ("negation", "antonym", "unsupported", "addition"):
            return self.detail
        return f"{self.kind} {self.detail!r} is not in the passage"
