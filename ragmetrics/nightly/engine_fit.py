"""Which judge sections an engine cannot run, said before anything is judged.

A panel's members and a cascade's judges are built and routed in this process (a cascade calibrates on every
item before routing any, a panel combines its members run-wide after the night); the Ray engine shards single
judges over actors and knows neither. Running them on the local engine when the config (or `--engine ray`)
asked for Ray would silently run something other than what was asked, so the night refuses instead, naming
the key.
"""

from __future__ import annotations

from typing import Any

__all__ = ["engine_problem"]


def engine_problem(kind: str, judge: Any) -> str | None:
    """Why engine `kind` cannot run this judge section (a night's JudgeConfig, or None: a message naming
    engine.kind), or None when it can. Typed loosely: the config module calls this, so it cannot import it."""
    if kind == "local" or judge is None or not judge.metrics:
        return None
    what = "a cascade (judge.cascade)" if judge.cascade else "a panel (judge.panel)" if judge.panel else None
    if what is None:
        return None
    return (
        f"engine.kind: {kind!r} cannot run {what}: its judges are built and routed in one process; "
        "set engine.kind: local (or drop --engine) for this night"
    )
