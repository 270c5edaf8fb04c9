"""What the watcher's parts share: where a receiver spools and under which name its cursor is kept, the limits
of one poll, what one poll did (`PollResult`), and the watcher's state (`WatcherBase`, set by
`Watcher.__init__`) that reading traces (`watch_traces`) and closing windows (`watch_windows`) work on.

Why its own module: both parts and the receiver run alone (`receive_only`) need these without the watcher."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from ragmetrics.engines.base import Engine, JudgeSession
from ragmetrics.live.config import WatchConfig
from ragmetrics.live.golden import GoldenSet
from ragmetrics.live.phoenix import PhoenixClient
from ragmetrics.live.receiver import OtlpReceiver
from ragmetrics.live.sampling import Sampler
from ragmetrics.live.sources import OtlpFileTail
from ragmetrics.live.store import LiveStore

__all__ = [
    "DECIDE_BATCH",
    "MAX_BACKOFF_S",
    "MAX_READS_PER_POLL",
    "TRANSIENT",
    "WRITE_BATCH",
    "PollResult",
    "Say",
    "WatcherBase",
    "receiver_source_key",
    "spool_path",
]


def spool_path(config: WatchConfig) -> Path:
    """Where a `source: receiver` watch spools what it receives (read by the watcher like an OTLP file)."""
    return config.output / "spool" / "otlp.jsonl"


def receiver_source_key(config: WatchConfig) -> str:
    """The store's name for the receiver's spool as a source (its cursor is kept under it)."""
    return f"receiver:{spool_path(config)}"


Say = Callable[[str], None]
TRANSIENT = frozenset({"rate_limited", "server_error", "timeout", "connection", "embedder_unavailable"})
"""Judge failures a later attempt may not repeat: the trace stays sampled and unscored, never lost."""
MAX_BACKOFF_S = 600.0
WRITE_BATCH = 200
DECIDE_BATCH = 2000
"""Complete traces decided (and their spans loaded) per poll: a burst is worked off in batches."""
MAX_READS_PER_POLL = 16


@dataclass
class PollResult:
    spans: int = 0
    decided: int = 0
    sampled: int = 0
    scored: int = 0
    annotated: int = 0
    waiting: int = 0
    """Sampled traces the judge failed on transiently, kept for the next attempt."""
    closed: list[str] = field(default_factory=list)
    alerts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class WatcherBase:
    """The watcher's state, as `Watcher.__init__` sets it; the parts of the watcher read and update it."""

    config: WatchConfig
    say: Say
    clock: Callable[[], float]
    seconds: int
    store: LiveStore
    metrics: list[str]
    _own: ExitStack
    sampler: Sampler
    golden: GoldenSet | None
    golden_metrics: list[str]
    receiver: OtlpReceiver | None
    tail: OtlpFileTail
    source_key: str
    phoenix: PhoenixClient | None
    annotator: PhoenixClient | None
    _session: JudgeSession | None
    _engine: Engine | None
    _retry_at: float
    _failed_polls: int
