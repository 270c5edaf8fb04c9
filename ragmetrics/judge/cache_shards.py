"""One verdict cache shared by many workers: each writes its own shard file, the driver merges shards back.

Why shards: SQLite allows one writer at a time, and workers on other machines may not share a file system
with a lock manager that SQLite trusts. So a worker reads the main cache (read-only, any number at once) and
writes every new verdict, committed one by one, to a shard file of its own. The driver merges shards into the
main cache at checkpoints and at the end; a shard left behind by a killed worker or a killed driver is merged
at the start of the next run (`merge_leftovers`). A killed process therefore loses only the verdicts that were
in flight, and a rerun asks for none of the verdicts any worker had stored.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragmetrics.judge.cache import CachedValue, RecordedFailure, VerdictCache

__all__ = ["ShardMerger", "ShardedCache", "merge_leftovers", "merge_shard", "shard_dir", "shard_path"]

logger = logging.getLogger("ragmetrics.judge")
_SHARD_SUFFIX = ".shard.sqlite"


def shard_dir(main: Path) -> Path:
    """Where the shards of the cache at `main` live: a folder beside it."""
    return main.with_name(main.name + ".shards")


class ShardedCache(VerdictCache):
    """A worker's cache: reads its own shard first, then the main cache; writes only to its shard."""

    def __init__(self, main: Path, shard: Path) -> None:
        super().__init__(shard)
        self.main_path = main
        self._main: VerdictCache | None = VerdictCache(main) if main.exists() else None

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedValue | None]:
        found = super().get_many(keys)
        if self._main is None:
            return found
        missing = [k for k, v in found.items() if v is None]
        if not missing:
            return found
        from_main = self._main.get_many(missing)
        recovered = 0
        for key, value in from_main.items():
            if value is not None:
                found[key] = value
                recovered += 1
        with self._lock:  # what the main cache had was a hit, not a miss
            self._hits += recovered
            self._misses -= recovered
        return found

    def failure(self, key: str) -> RecordedFailure | None:
        own = super().failure(key)
        if own is not None or self._main is None:
            return own
        return self._main.failure(key)

    def meta(self, name: str) -> str | None:
        own = super().meta(name)
        if own is not None or self._main is None:
            return own
        return self._main.meta(name)

    def close(self) -> None:
        super().close()
        if self._main is not None:
            self._main.close()


class ShardMerger:
    """Merges shards into the main cache incrementally: each call copies only the rows added since the last.

    A verdict already in `main` is kept (both are valid answers to the same key); a failure record is taken
    only where `main` has no verdict for the key (`put_many` removes the record of every key it stores).
    """

    def __init__(self, main: VerdictCache) -> None:
        self.main = main
        self._done: dict[Path, int] = {}  # shard -> last verdict rowid merged

    def merge(self, shard: Path, *, remove: bool = False) -> int:
        """Copy what `shard` gained since the last merge into the main cache; returns the verdicts added."""
        if not shard.exists():
            return 0
        since = self._done.get(shard, 0)
        source = sqlite3.connect(shard, timeout=10.0)
        try:
            tables = {r[0] for r in source.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            verdicts: list[tuple[Any, ...]] = (
                source.execute(
                    "SELECT rowid, key, kind, value, usage FROM verdicts WHERE rowid > ? ORDER BY rowid",
                    (since,),
                ).fetchall()
                if "verdicts" in tables
                else []
            )
            failures: list[tuple[Any, ...]] = (
                source.execute("SELECT key, kind, cause, message FROM failures").fetchall()
                if "failures" in tables
                else []
            )
            facts: list[tuple[Any, ...]] = (
                source.execute("SELECT name, value FROM meta WHERE name != 'schema_version'").fetchall()
                if "meta" in tables
                else []
            )
        finally:
            source.close()
        added = 0
        if verdicts:
            self._done[shard] = int(verdicts[-1][0])
            existing = self.main.peek_many([row[1] for row in verdicts])
            new = [
                (k, kind, json.loads(v), json.loads(u)) for _, k, kind, v, u in verdicts if k not in existing
            ]
            self.main.put_many(new)
            added = len(new)
        if failures:
            known = self.main.peek_many([row[0] for row in failures])
            for key, kind, cause, message in failures:
                if key not in known:
                    self.main.put_failure(key, kind, cause, message)
        for name, value in facts:
            self.main.set_meta(name, value)
        if remove:
            for suffix in ("", "-wal", "-shm"):
                Path(str(shard) + suffix).unlink(missing_ok=True)
            self._done.pop(shard, None)
        return added


def merge_shard(main: VerdictCache, shard: Path, *, remove: bool = False) -> int:
    """Copy every verdict, failure record and fact of `shard` into `main`; returns the verdicts added."""
    return ShardMerger(main).merge(shard, remove=remove)


def merge_leftovers(main: VerdictCache) -> int:
    """Merge (and remove) the shards a killed run left beside the main cache; returns the verdicts added."""
    if main.path is None:
        return 0
    folder = shard_dir(main.path)
    if not folder.is_dir():
        return 0
    added = 0
    for shard in sorted(folder.glob(f"*{_SHARD_SUFFIX}")):
        added += merge_shard(main, shard, remove=True)
    if added:
        logger.info("merged %d verdicts left in shards of an interrupted run into %s", added, main.path)
    return added


def shard_path(main: Path, worker: str) -> Path:
    """The shard file of one worker."""
    return shard_dir(main) / f"{worker}{_SHARD_SUFFIX}"
