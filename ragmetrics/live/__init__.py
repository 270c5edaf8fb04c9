"""Live traffic: sampled production traces judged on a budget as they arrive, in windows kept like nights,
with alerts once per episode of a significant drop (`ragmetrics watch`, docs/online.md)."""

from ragmetrics.live.config import WatchConfig, load_watch_config
from ragmetrics.live.watch import PollResult, Watcher

__all__ = ["PollResult", "WatchConfig", "Watcher", "load_watch_config"]
