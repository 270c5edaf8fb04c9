"""A persistent cache of validated judge verdicts (and embeddings) in SQLite.

Why SQLite in WAL mode with one committed transaction per write: a run killed at any moment loses at most the
verdict being written, readers never block the writer, and several processes can share one cache file (a busy
timeout makes them wait for each other instead of failing). Only validated values are ever written, so
whatever a later run reads back can be trusted; a row that no longer validates is treated as a miss.

The key is the SHA-256 of a canonical JSON document of everything that determines a verdict: backend, model,
prompt name and version, sampling parameters and the inputs. Credentials are never part of it and never stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics.schema import CacheStats

_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 60_000


def cache_key(parts: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of `parts` (sorted keys, no whitespace, UTF-8)."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedValue:
    value: Any
    usage: dict[str, int]


class VerdictCache:
    """Key -> validated JSON value with the token usage it cost. `enabled=False` or `path=None` bypasses it."""

    def __init__(self, path: Path | str | None, *, enabled: bool = True) -> None:
        self.path = Path(path) if path is not None else None
        self.enabled = enabled and self.path is not None
        self._hits = 0
        self._misses = 0
        self._writes = 0
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS verdicts ("
                " key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL,"
                " usage TEXT NOT NULL, created REAL NOT NULL)"
            )
            conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "INSERT OR IGNORE INTO meta (name, value) VALUES ('schema_version', ?)",
                (str(_SCHEMA_VERSION),),
            )
            self._conn = conn
        return self._conn

    def get(self, key: str) -> CachedValue | None:
        """The stored value, or None (counted as a miss) when absent or the cache is bypassed."""
        if not self.enabled:
            return None
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT value, usage FROM verdicts WHERE key = ?", (key,))
                .fetchone()
            )
            if row is None:
                self._misses += 1
                return None
            self._hits += 1
        return CachedValue(value=json.loads(row[0]), usage=json.loads(row[1]))

    def discard_hit(self) -> None:
        """Re-count the last hit as a miss: the caller found the stored value no longer validates."""
        with self._lock:
            self._hits -= 1
            self._misses += 1

    def put(self, key: str, kind: str, value: Any, usage: dict[str, int]) -> None:
        """Store a validated value in its own committed transaction."""
        if not self.enabled:
            return
        payload = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        usage_json = json.dumps(usage, sort_keys=True)
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT OR REPLACE INTO verdicts (key, kind, value, usage, created) VALUES (?, ?, ?, ?, ?)",
                    (key, kind, payload, usage_json, time.time()),
                )
            self._writes += 1

    def clear(self) -> int:
        """Delete every stored value; returns how many were removed."""
        if self.path is None or not self.path.exists():
            return 0
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                removed = conn.execute("DELETE FROM verdicts").rowcount
            return int(removed)

    def __len__(self) -> int:
        if self.path is None or not self.path.exists():
            return 0
        with self._lock:
            return int(self._connection().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def stats(self) -> CacheStats:
        return CacheStats(
            hits=self._hits,
            misses=self._misses,
            writes=self._writes,
            path=str(self.path) if self.path is not None else None,
            enabled=self.enabled,
        )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
