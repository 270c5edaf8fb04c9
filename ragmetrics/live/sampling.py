"""Which traces are judged: a rate by trace id (the same choice on every restart, on every machine), rules
that always include some traces, and a budget of judge calls per window that is never exceeded.

A trace's draw is the first 8 bytes of SHA-256(seed:trace id) read as a fraction of 2^64: uniform, and
independent of arrival order, so a restart (or two watchers over the same traces) decides exactly as before.
A trace is judged when its draw is below `rate`, or when a rule names it (an ERROR span, a slow root, a named
segment). The window's budget counts judge calls (one trace scored on one judge metric); a share of it
(`ALWAYS_RESERVE`) is kept for rule-picked traces, so a burst of ordinary traffic cannot crowd out the errors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from ragmetrics.live.config import SamplingConfig
from ragmetrics.traces.otlp import Span

__all__ = ["ALWAYS_RESERVE", "Choice", "Sampler", "draw", "root_span"]

ALWAYS_RESERVE = 0.2
"""Share of each window's budget only rule-picked traces (errors, slow, segment) may spend."""


def draw(seed: int, trace_id: str) -> float:
    digest = hashlib.sha256(f"{seed}:{trace_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True)
class Choice:
    sampled: bool
    reason: str
    calls: int
    tokens: int = 0


def root_span(spans: Sequence[Span]) -> Span | None:
    """The trace's root: the earliest span whose parent is not among its spans."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None or s.parent_id not in ids]
    return min(roots, key=lambda s: s.start_ns) if roots else None


class Sampler:
    def __init__(self, config: SamplingConfig, calls_per_trace: int, *, price_per_token: float = 0.0) -> None:
        self.config = config
        self.calls_per_trace = calls_per_trace
        self.price_per_token = price_per_token
        """USD per judge token (the dearer of prompt and completion prices), for the cost budget."""

    def rule(self, spans: Sequence[Span]) -> str | None:
        """The rule that always includes this trace, or None."""
        always = self.config.always
        if always.errors and any(s.error for s in spans):
            return "an ERROR span"
        root = root_span(spans)
        if always.slower_than_s is not None and root is not None and root.seconds > always.slower_than_s:
            return f"slower than {always.slower_than_s:g} s ({root.seconds:.1f} s)"
        segment = always.segment
        if segment is not None and root is not None:
            value = root.attributes.get(segment.attribute)
            if value is not None and str(value) in segment.values:
                return f"segment {segment.attribute}={value}"
        return None

    def choose(
        self,
        trace_id: str,
        spans: Sequence[Span],
        calls_used: int,
        *,
        forced: str | None = None,
        calls: int | None = None,
        tokens: int = 0,
        tokens_used: int = 0,
    ) -> Choice:
        """Judge this trace? `calls_used` is what the window has spent (decisions already recorded); `forced`
        names a reason of the caller's to include it (a golden-set question), `calls` what judging it costs
        when that is not `calls_per_trace`."""
        forced = forced or self.rule(spans)
        picked = draw(self.config.seed, trace_id) < self.config.rate
        if forced is None and not picked:
            return Choice(False, "not drawn at the rate", 0)
        calls = self.calls_per_trace if calls is None else calls
        share = 1.0 if forced is not None else 1 - ALWAYS_RESERVE
        why = f"always ({forced})" if forced else "drawn"
        budget = self.config.max_calls_per_window
        if budget is not None and calls_used + calls > int(budget * share):
            return Choice(False, f"{why}, but the window's budget of {budget} judge calls is spent", 0)
        token_budget = self.token_budget()
        if token_budget is not None and tokens_used + tokens > int(token_budget * share):
            what = (
                f"{self.config.max_cost_per_window:g} USD"
                if self.config.max_cost_per_window is not None and token_budget == self._cost_tokens()
                else f"{token_budget} tokens"
            )
            return Choice(False, f"{why}, but the window's budget of {what} is spent", 0)
        return Choice(True, f"always: {forced}" if forced else "drawn at the rate", calls, tokens)

    def _cost_tokens(self) -> int | None:
        cost = self.config.max_cost_per_window
        if cost is None or not self.price_per_token:
            return None
        return int(cost / self.price_per_token)

    def token_budget(self) -> int | None:
        """The tighter of the token budget and the cost budget in tokens (None: neither is set)."""
        limits = [x for x in (self.config.max_tokens_per_window, self._cost_tokens()) if x is not None]
        return min(limits) if limits else None

    def estimate(self, traces_per_window: float | None) -> str:
        """The budget's meaning, printed when watching starts."""
        budget = self.config.max_calls_per_window
        per = self.calls_per_trace
        parts = [f"sampling {self.config.rate:.1%} of traces by trace id (seed {self.config.seed})"]
        if budget is None:
            parts.append("no budget: every drawn trace is judged")
        else:
            parts.append(
                f"budget {budget} judge calls per window = at most {budget // max(1, per)} traces of {per} metric(s)"
                f" ({int(ALWAYS_RESERVE * 100)} % kept for errors, slow traces and named segments)"
            )
        if traces_per_window is not None:
            expected = traces_per_window * self.config.rate * per
            cap = f", capped at {budget}" if budget is not None and expected > budget else ""
            parts.append(
                f"at the last window's {traces_per_window:.0f} traces: about {expected:.0f} calls{cap}"
            )
        return "; ".join(parts)
