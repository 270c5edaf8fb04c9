"""A persistent cache of validated judge verdicts (and embeddings) in SQLite.

Several processes may share one cache file (two nightly jobs, a job and a notebook). Every statement runs
under SQLite's busy timeout and, should the database still report "locked" or "busy", is retried a bounded
number of times with jittered backoff; write transactions are short (one row, or one batch of rows). If a
value truly cannot be written after all that, the run keeps it in memory, reports the failure once (a
warning, and `CacheStats.write_failures`), and goes on: a busy cache never turns into a failed sample.

Why SQLite in WAL mode with one committed transaction per write: a run killed at any moment loses at most the
verdict being written, readers never block the writer, and several processes can share one cache file (a busy
timeout makes them wait for each other instead of failing). Only validated values are ever written, so
whatever a later run reads back can be trusted; a row that no longer validates is treated as a miss.

The key is the SHA-256 of a canonical JSON document of everything that determines a verdict: backend, model,
prompt name and version, sampling parameters and the inputs. Credentials are never part of it and never stored.

Failures are kept apart (table `failures`, same key): a unit whose last attempt failed is recorded with its
cause, message and time, so a rerun knows it failed before and the judge's `retry_failed` policy decides
whether to pay for it again. A failure is never read as a verdict, and a later success removes it. The
`meta` table also remembers small facts about endpoints (the response mode a server accepted).
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ragmetrics.errors import ConfigError
from ragmetrics.schema import CacheStats

logger = logging.getLogger("ragmetrics.judge")

_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 10_000
_LOCK_RETRIES = 8  # after the busy timeout: about a minute and a half in all before a write is given up
_LOCK_BACKOFF_S = 0.05
_SQL_BATCH = 500  # SQLite's host-parameter limit is 32766; 500 keys keep each statement small
_SQLITE_MAGIC = b"SQLite format 3\x00"
T = TypeVar("T")


def _is_lock_error(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _cannot_write(exc: sqlite3.OperationalError) -> bool:
    """A write that cannot happen now (locked by another process) or at all (a read-only file or folder)."""
    text = str(exc).lower()
    return _is_lock_error(exc) or "readonly" in text or "read-only" in text


def _with_lock_retries(op: Callable[[], T], *, rng: random.Random) -> T:
    """`op()`, retried with jittered exponential backoff while SQLite reports the database locked or busy."""
    for attempt in range(_LOCK_RETRIES + 1):
        try:
            return op()
        except sqlite3.OperationalError as exc:
            if not _is_lock_error(exc) or attempt == _LOCK_RETRIES:
                raise
            time.sleep(_LOCK_BACKOFF_S * 2**attempt * rng.uniform(0.5, 1.5))
    raise AssertionError("unreachable")  # pragma: no cover


def _starts_like_sqlite(path: Path) -> bool:
    """True when `path` is empty or begins with SQLite's 16-byte header string (a database being created)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError:
        return False
    return head == b"" or head == _SQLITE_MAGIC


def cache_key(parts: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of `parts` (sorted keys, no whitespace, UTF-8)."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedValue:
    value: Any
    usage: dict[str, int]


@dataclass(frozen=True)
class RecordedFailure:
    """A unit's last failed attempt: why, what the judge said, and when (seconds since the epoch)."""

    cause: str
    message: str
    created: float
    attempts: int


class VerdictCache:
    """Key -> validated JSON value with the token usage it cost. `enabled=False` or `path=None` bypasses it."""

    def __init__(self, path: Path | str | None, *, enabled: bool = True) -> None:
        self.path = Path(path) if path is not None else None
        self.enabled = enabled and self.path is not None
        self._hits = 0
        self._misses = 0
        self._writes = 0
        self._write_failures = 0
        self.failure_hits = 0  # recorded failures reported again without a call (retry_failed)
        self.failure_retries = 0  # recorded failures tried again
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.read_only = False
        self._rng = random.Random()
        # Values that could not be persisted stay usable for the rest of this run.
        self._unpersisted: dict[str, CachedValue] = {}

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            assert self.path is not None
            self._conn = self._open_checked(self.path)
        return self._conn

    def _open_checked(self, path: Path) -> sqlite3.Connection:
        """Open the cache after checking it is one: a regular file of this schema. A file that is not a
        SQLite database (random bytes, a truncated copy) is moved aside with a warning and a new cache
        started; one of another or a newer schema is a ConfigError naming it; a read-only one is used
        read-only (new verdicts then stay in memory for the run)."""
        where = f"judge cache {path}"
        if path.exists() and not path.is_file():
            raise ConfigError(f"{where}: not a regular file; point cache_path at a file")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise ConfigError(f"{where}: its folder {path.parent} is a file, not a folder") from None
        except OSError as exc:
            raise ConfigError(f"{where}: cannot create its folder: {exc.strerror or exc}") from None
        try:
            return self._open(path)
        except sqlite3.DatabaseError as exc:
            message = str(exc).lower()
            if _starts_like_sqlite(path) and "not a database" in message:
                # Another process may be creating this very file: look once more before calling it damaged.
                time.sleep(0.2)
                try:
                    return self._open(path)
                except sqlite3.DatabaseError as again:
                    message = str(again).lower()
            if "not a database" in message or "malformed" in message:
                aside = path.with_name(f"{path.name}.unusable-{int(time.time())}")
                for suffix in ("", "-wal", "-shm"):
                    source = Path(f"{path}{suffix}")
                    if source.exists():
                        source.replace(Path(f"{aside}{suffix}"))
                logger.warning(
                    "%s is not a usable SQLite database (%s); moved to %s, starting a new cache",
                    where,
                    exc,
                    aside,
                )
                return self._open(path)
            if "readonly" in message or "read-only" in message:
                return self._open_read_only(path)
            raise ConfigError(f"{where}: cannot be opened: {exc}") from None

    def _open_read_only(self, path: Path) -> sqlite3.Connection:
        """Read what the file holds. A WAL-mode database opened `mode=ro` still wants to create its shared-memory
        file beside it, which a read-only folder refuses ("attempt to write a readonly database"); then the
        file is opened `immutable=1`: no locks, no side files, which is what a file nobody here can change is."""
        uri = path.resolve().as_uri()
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        try:
            self._check_schema(conn, path)
        except sqlite3.OperationalError:
            conn.close()
            conn = sqlite3.connect(
                f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False
            )
            self._check_schema(conn, path)
        self.read_only = True
        logger.warning(
            "judge cache %s is read-only: its verdicts are used, new ones are kept in memory", path
        )
        return conn

    @staticmethod
    def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
        where = f"judge cache {path}"
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if tables and "verdicts" not in tables:
            raise ConfigError(
                f"{where}: a SQLite file of another program (tables: {', '.join(sorted(tables))})"
            )
        if "verdicts" in tables:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(verdicts)")}
            if not {"key", "kind", "value", "usage", "created"} <= columns:
                raise ConfigError(
                    f"{where}: its verdicts table has another layout ({', '.join(sorted(columns))})"
                )
        if "meta" in tables:
            row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
            version = row[0] if row is not None else None
            if version is not None and (not str(version).isdigit() or int(version) > _SCHEMA_VERSION):
                raise ConfigError(
                    f"{where}: schema version {version!r}, newer than this ragmetrics reads ({_SCHEMA_VERSION}); "
                    "upgrade ragmetrics or use another cache_path"
                )

    def _open(self, path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(
            path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        self._check_schema(conn, path)

        def setup() -> None:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS verdicts ("
                " key TEXT PRIMARY KEY, kind TEXT NOT NULL, value TEXT NOT NULL,"
                " usage TEXT NOT NULL, created REAL NOT NULL)"
            )
            conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS failures ("
                " key TEXT PRIMARY KEY, kind TEXT NOT NULL, cause TEXT NOT NULL, message TEXT NOT NULL,"
                " created REAL NOT NULL, attempts INTEGER NOT NULL)"
            )
            conn.execute(
                "INSERT OR IGNORE INTO meta (name, value) VALUES ('schema_version', ?)",
                (str(_SCHEMA_VERSION),),
            )

        _with_lock_retries(setup, rng=self._rng)
        return conn

    def get(self, key: str) -> CachedValue | None:
        """The stored value, or None (counted as a miss) when absent or the cache is bypassed."""
        return self.get_many([key])[key]

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedValue | None]:
        """Every key's stored value (None: absent), read in a few statements; each key counts as a hit or miss."""
        found: dict[str, CachedValue | None] = dict.fromkeys(keys)
        if not self.enabled or not keys:
            if keys:
                with self._lock:
                    self._misses += len(found)
            return found
        unique = list(found)
        rows: list[tuple[str, str, str]] = []
        with self._lock:
            conn = self._connection()
            for start in range(0, len(unique), _SQL_BATCH):
                chunk = unique[start : start + _SQL_BATCH]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT key, value, usage FROM verdicts WHERE key IN ({marks})"

                def read(sql: str = sql, chunk: list[str] = chunk) -> list[tuple[str, str, str]]:
                    return list(conn.execute(sql, chunk).fetchall())

                rows.extend(_with_lock_retries(read, rng=self._rng))
            for key, value, usage in rows:
                try:  # a row damaged on disk is a miss (asked again), never an internal error
                    found[key] = CachedValue(value=json.loads(value), usage=json.loads(usage))
                except (ValueError, TypeError, RecursionError):
                    continue
            for key in unique:
                if found[key] is None and key in self._unpersisted:
                    found[key] = self._unpersisted[key]
            hits = sum(1 for key in keys if found[key] is not None)
            self._hits += hits
            self._misses += len(keys) - hits
        return found

    def peek_many(self, keys: Sequence[str]) -> set[str]:
        """Which of `keys` hold a stored verdict, without counting hits or misses (for merging caches)."""
        if not self.enabled or not keys:
            return set()
        unique = list(dict.fromkeys(keys))
        present: set[str] = set()
        with self._lock:
            conn = self._connection()
            for start in range(0, len(unique), _SQL_BATCH):
                chunk = unique[start : start + _SQL_BATCH]
                sql = f"SELECT key FROM verdicts WHERE key IN ({','.join('?' * len(chunk))})"

                def read(sql: str = sql, chunk: list[str] = chunk) -> list[tuple[str]]:
                    return list(conn.execute(sql, chunk).fetchall())

                present.update(row[0] for row in _with_lock_retries(read, rng=self._rng))
        return present

    def completion_tokens_by_kind(self) -> dict[str, float]:
        """Mean completion tokens per verdict kind (prompt name) over the verdicts this cache paid for: what
        a planner expects the next verdict of that kind to cost. Rows with no recorded call are left out."""
        if not self.enabled:
            return {}
        with self._lock:
            conn = self._connection()

            def read() -> list[tuple[str, str]]:
                return list(
                    conn.execute("SELECT kind, usage FROM verdicts WHERE kind != 'embedding'").fetchall()
                )

            rows = _with_lock_retries(read, rng=self._rng)
        totals: dict[str, list[float]] = {}
        for kind, usage_text in rows:
            try:
                usage = json.loads(usage_text)
                calls, tokens = int(usage.get("calls", 0)), float(usage.get("completion_tokens", 0))
            except (ValueError, TypeError, AttributeError, RecursionError):
                continue
            if calls > 0 and tokens > 0:
                total = totals.setdefault(kind, [0.0, 0.0])
                total[0] += tokens / calls
                total[1] += 1
        return {kind: tokens / count for kind, (tokens, count) in totals.items()}

    def discard_hit(self) -> None:
        """Re-count the last hit as a miss: the caller found the stored value no longer validates."""
        with self._lock:
            self._hits -= 1
            self._misses += 1

    def put(self, key: str, kind: str, value: Any, usage: dict[str, int]) -> None:
        """Store a validated value in its own committed transaction."""
        self.put_many([(key, kind, value, usage)])

    def put_many(self, items: Iterable[tuple[str, str, Any, dict[str, int]]]) -> None:
        """Store validated values in one short committed transaction (a batch of embeddings, say).

        A write that still fails after the lock retries keeps the values in memory for this run and is
        reported once; it never raises, because a verdict that was had must not become a failed sample.
        """
        if not self.enabled:
            return
        rows = [
            (
                key,
                kind,
                json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")),
                json.dumps(usage, sort_keys=True),
                time.time(),
            )
            for key, kind, value, usage in items
        ]
        if not rows:
            return
        with self._lock:
            conn = self._connection()

            def write() -> None:
                with conn:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.executemany(
                        "INSERT OR REPLACE INTO verdicts (key, kind, value, usage, created) VALUES (?, ?, ?, ?, ?)",
                        rows,
                    )
                    conn.executemany("DELETE FROM failures WHERE key = ?", [(row[0],) for row in rows])

            try:
                if self.read_only:
                    raise sqlite3.OperationalError("attempt to write a readonly database")
                _with_lock_retries(write, rng=self._rng)
            except sqlite3.OperationalError as exc:
                if not _cannot_write(exc):
                    raise
                if not self._write_failures and not self.read_only:
                    logger.warning(
                        "the verdict cache %s could not be written (%s); %d value(s) are kept in memory "
                        "for this run but not stored (a rerun will compute them again)",
                        self.path,
                        exc,
                        len(rows),
                    )
                self._write_failures += len(rows)
                for key, _kind, value, usage, _created in rows:
                    self._unpersisted[key] = CachedValue(value=json.loads(value), usage=json.loads(usage))
                return
            self._writes += len(rows)

    def failure(self, key: str) -> RecordedFailure | None:
        """The recorded failure of `key`'s unit, if its last attempt failed (None when bypassed)."""
        if not self.enabled:
            return None
        with self._lock:
            conn = self._connection()

            def read() -> tuple[str, str, float, int] | None:
                row = conn.execute(
                    "SELECT cause, message, created, attempts FROM failures WHERE key = ?", (key,)
                ).fetchone()
                return None if row is None else (str(row[0]), str(row[1]), float(row[2]), int(row[3]))

            row = _with_lock_retries(read, rng=self._rng)
        return None if row is None else RecordedFailure(*row)

    def put_failure(self, key: str, kind: str, cause: str, message: str) -> None:
        """Record that `key`'s unit failed (again); best effort: a locked cache only loses the record."""
        if not self.enabled:
            return
        with self._lock:
            conn = self._connection()

            def write() -> None:
                with conn:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute(
                        "INSERT INTO failures (key, kind, cause, message, created, attempts)"
                        " VALUES (?, ?, ?, ?, ?, 1) ON CONFLICT(key) DO UPDATE SET cause = excluded.cause,"
                        " message = excluded.message, created = excluded.created, attempts = attempts + 1",
                        (key, kind, cause, message, time.time()),
                    )

            try:
                if self.read_only:
                    return
                _with_lock_retries(write, rng=self._rng)
            except sqlite3.OperationalError as exc:
                if not _cannot_write(exc):
                    raise
                logger.warning(
                    "the verdict cache %s could not be written; a failure was not recorded", self.path
                )

    def meta(self, name: str) -> str | None:
        """A remembered fact (see module doc), or None."""
        if not self.enabled:
            return None
        with self._lock:
            conn = self._connection()

            def read() -> str | None:
                row = conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()
                return None if row is None else str(row[0])

            return _with_lock_retries(read, rng=self._rng)

    def set_meta(self, name: str, value: str) -> None:
        """Remember a fact; best effort (a locked cache only means the next run finds it out again)."""
        if not self.enabled:
            return
        with self._lock:
            conn = self._connection()

            def write() -> None:
                with conn:
                    conn.execute("BEGIN IMMEDIATE")
                    conn.execute("INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)", (name, value))

            try:
                if self.read_only:
                    return
                _with_lock_retries(write, rng=self._rng)
            except sqlite3.OperationalError as exc:
                if not _cannot_write(exc):
                    raise

    def clear(self) -> int:
        """Delete every stored value; returns how many were removed."""
        if self.path is None or not self.path.exists():
            return 0
        with self._lock:
            conn = self._connection()
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                removed = conn.execute("DELETE FROM verdicts").rowcount
                conn.execute("DELETE FROM failures")
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
            write_failures=self._write_failures,
            failure_hits=self.failure_hits,
            failure_retries=self.failure_retries,
            path=str(self.path) if self.path is not None else None,
            enabled=self.enabled,
        )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
