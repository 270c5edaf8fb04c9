"""Where the nightly job's work runs: in this process (`LocalEngine`) or on a Ray cluster (`engines.ray`).

An engine does the two expensive steps of a run, scoring runs against qrels and judging samples, and
returns the same `RunResult`s either way; everything else (datasets, comparisons, the gate, artifacts) stays
in the driver. The Ray engine lives in a subpackage imported only when a config asks for it, so the core
never imports ray.
"""

from __future__ import annotations

from ragmetrics.engines.base import Engine, JudgeSession, LocalEngine, make_engine

__all__ = ["Engine", "JudgeSession", "LocalEngine", "make_engine"]
