"""The watcher's own store (`OUTPUT/live.sqlite`): where it is in its source, which traces it has seen and what
it decided for each, the spans of traces still arriving, every score with its reason, the windows and the
alerts already sent.

Every poll is applied in one transaction (new spans and the source's cursor together; a decision and the calls
it spends together; a trace's scores together), in SQLite's WAL mode with synchronous=FULL: a process killed at
any point (kill -9 included) leaves the store as it was after the last committed step, so the next start
resumes from its cursor, never reads a span twice and never scores a trace twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics.traces.otlp import Span

__all__ = ["Decision", "LiveStore", "StoredScore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cursor (source TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pending (trace_id TEXT NOT NULL, span_id TEXT NOT NULL, arrived REAL NOT NULL,
    span TEXT NOT NULL, PRIMARY KEY (trace_id, span_id));
CREATE TABLE IF NOT EXISTS traces (trace_id TEXT PRIMARY KEY, window TEXT NOT NULL, started REAL NOT NULL,
    sampled INTEGER NOT NULL, reason TEXT NOT NULL, scored INTEGER NOT NULL DEFAULT 0, session TEXT,
    calls INTEGER NOT NULL DEFAULT 0, root_span TEXT, tokens INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS annotations (trace_id TEXT NOT NULL, metric TEXT NOT NULL,
    sent INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (trace_id, metric));
CREATE TABLE IF NOT EXISTS scores (trace_id TEXT NOT NULL, metric TEXT NOT NULL, value REAL, failure TEXT,
    reason TEXT, PRIMARY KEY (trace_id, metric));
CREATE TABLE IF NOT EXISTS windows (window TEXT PRIMARY KEY, closed INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0, summary TEXT, tokens INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS alerts (key TEXT PRIMARY KEY, window TEXT NOT NULL, metric TEXT NOT NULL,
    text TEXT NOT NULL, sent INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL,
    said INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS turns (session TEXT NOT NULL, trace_id TEXT NOT NULL, started REAL NOT NULL,
    arrived REAL NOT NULL, turn TEXT NOT NULL, PRIMARY KEY (session, trace_id));
"""


@dataclass(frozen=True)
class Decision:
    trace_id: str
    window: str
    started: float
    sampled: bool
    reason: str
    session: str | None
    calls: int
    root_span: str | None = None
    tokens: int = 0
    """Judge tokens reserved for it (a conservative estimate, charged to its window's token budget)."""


@dataclass(frozen=True)
class StoredScore:
    trace_id: str
    metric: str
    value: float | None
    failure: str | None
    reason: str | None


def _span_json(span: Span) -> str:
    return json.dumps(
        {
            "trace_id": span.trace_id, "span_id": span.span_id, "parent_id": span.parent_id, "name": span.name,
            "start_ns": span.start_ns, "end_ns": span.end_ns, "attributes": span.attributes, "error": span.error,
        },
        ensure_ascii=False,
        default=str,
    )  # fmt: skip


def _span_of(text: str) -> Span:
    data: dict[str, Any] = json.loads(text)
    return Span(
        trace_id=data["trace_id"], span_id=data["span_id"], parent_id=data["parent_id"], name=data["name"],
        start_ns=int(data["start_ns"]), end_ns=int(data["end_ns"]), attributes=data["attributes"],
        error=bool(data.get("error")),
    )  # fmt: skip


class LiveStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_SCHEMA)
        self._migrate()

    def _migrate(self) -> None:
        """Columns added since a store was first written: an older store gains them, with their defaults."""
        added = {
            "alerts": [("seen", "INTEGER NOT NULL DEFAULT 0")],
            "traces": [("attempts", "INTEGER NOT NULL DEFAULT 0")],
        }
        for table, columns in added.items():
            have = {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}
            for column, kind in columns:
                if column not in have:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- the source ---------------------------------------------------------------------------------------
    def cursor(self, source: str) -> str | None:
        row = self.db.execute("SELECT value FROM cursor WHERE source = ?", (source,)).fetchone()
        return None if row is None else str(row[0])

    def add_spans(self, source: str, cursor: str, spans: Iterable[Span], arrived: float) -> int:
        """New spans and the cursor after them, in one transaction; spans of traces already decided, and spans
        seen before, are not kept (a rotated file read twice adds nothing)."""
        added = 0
        with self.transaction() as db:
            for span in spans:
                if db.execute("SELECT 1 FROM traces WHERE trace_id = ?", (span.trace_id,)).fetchone():
                    continue
                cur = db.execute(
                    "INSERT OR IGNORE INTO pending VALUES (?, ?, ?, ?)",
                    (span.trace_id, span.span_id, arrived, _span_json(span)),
                )
                added += cur.rowcount
            db.execute("INSERT OR REPLACE INTO cursor VALUES (?, ?)", (source, cursor))
        return added

    def pending_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(DISTINCT trace_id) FROM pending").fetchone()[0])

    def settled(self, before: float, limit: int) -> dict[str, list[Span]]:
        """Up to `limit` undecided traces whose last span arrived at or before `before`, oldest first, with
        their spans (a backlog is taken in batches, never loaded whole)."""
        ids = [
            r[0]
            for r in self.db.execute(
                "SELECT trace_id FROM pending WHERE trace_id NOT IN (SELECT trace_id FROM traces) "
                "GROUP BY trace_id HAVING MAX(arrived) <= ? ORDER BY MIN(arrived) LIMIT ?",
                (before, limit),
            )
        ]
        out: dict[str, list[Span]] = {}
        for trace_id in ids:
            rows = self.db.execute("SELECT span FROM pending WHERE trace_id = ?", (trace_id,)).fetchall()
            out[trace_id] = [_span_of(r[0]) for r in rows]
        return out

    # -- decisions ----------------------------------------------------------------------------------------
    def decide(self, decision: Decision, scores: Iterable[StoredScore] = (), note: str | None = None) -> None:
        """Record a trace's sampling decision, the judge calls it reserves in its window, the `scores` known
        without a judge (latency, tokens, cost) and the `note` to say about it, together; a sampled trace's
        pending spans stay until its judged scores are stored (a kill in between scores it on the next start),
        and a note not said before a kill is said on the next start (`unsaid_notes`)."""
        with self.transaction() as db:
            if note is not None:
                db.execute("INSERT INTO notes (text) VALUES (?)", (note,))
            for s in scores:
                db.execute(
                    "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?)",
                    (s.trace_id, s.metric, s.value, s.failure, s.reason),
                )
            db.execute(
                "INSERT OR IGNORE INTO traces (trace_id, window, started, sampled, reason, session, calls, "
                "root_span, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (decision.trace_id, decision.window, decision.started, int(decision.sampled), decision.reason,
                 decision.session, decision.calls, decision.root_span, decision.tokens),
            )  # fmt: skip
            db.execute("INSERT OR IGNORE INTO windows (window) VALUES (?)", (decision.window,))
            db.execute(
                "UPDATE windows SET calls = calls + ?, tokens = tokens + ? WHERE window = ?",
                (decision.calls, decision.tokens, decision.window),
            )
            if not decision.sampled:
                db.execute("DELETE FROM pending WHERE trace_id = ?", (decision.trace_id,))

    def unsaid_notes(self) -> list[tuple[int, str]]:
        return [(int(r[0]), str(r[1])) for r in self.db.execute("SELECT id, text FROM notes WHERE said = 0 ORDER BY id")]

    def mark_said(self, ids: Iterable[int]) -> None:
        with self.transaction() as db:
            db.executemany("UPDATE notes SET said = 1 WHERE id = ?", [(i,) for i in ids])

    def begin_attempt(self, trace_ids: Iterable[str]) -> dict[str, int]:
        """Count an attempt to score each trace, before its judge requests go out; the attempts made before
        this one, by trace (more than 0: a process died with its requests in flight, and they are asked again)."""
        before: dict[str, int] = {}
        with self.transaction() as db:
            for trace_id in trace_ids:
                row = db.execute("SELECT attempts FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
                before[trace_id] = int(row[0]) if row is not None else 0
                db.execute("UPDATE traces SET attempts = attempts + 1 WHERE trace_id = ?", (trace_id,))
        return before

    def end_attempt(self, trace_ids: Iterable[str]) -> None:
        """The attempt on these traces ended without their scores (the judge failed transiently): nothing of it is
        in flight, so the next attempt is not a re-ask after a kill."""
        with self.transaction() as db:
            db.executemany("UPDATE traces SET attempts = 0 WHERE trace_id = ?", [(t,) for t in trace_ids])

    def charge_again(self, trace_id: str, budget_calls: int | None, budget_tokens: int | None) -> bool:
        """Charge a trace's judge calls and tokens to its window once more (its requests are asked again after a
        kill), if the window's budgets have room; False, charging nothing, when they do not."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT t.window, t.calls, t.tokens, w.calls, w.tokens FROM traces t JOIN windows w "
                "ON w.window = t.window WHERE t.trace_id = ?",
                (trace_id,),
            ).fetchone()
            if row is None:
                return False
            window, calls, tokens, used_calls, used_tokens = row
            if (budget_calls is not None and used_calls + calls > budget_calls) or (
                budget_tokens is not None and budget_tokens and used_tokens + tokens > budget_tokens
            ):
                return False
            db.execute(
                "UPDATE windows SET calls = calls + ?, tokens = tokens + ? WHERE window = ?", (calls, tokens, window)
            )
        return True

    def decision(self, trace_id: str) -> Decision | None:
        row = self.db.execute(
            "SELECT trace_id, window, started, sampled, reason, session, calls FROM traces WHERE trace_id = ?",
            (trace_id,),
        ).fetchone()
        if row is None:
            return None
        return Decision(row[0], row[1], row[2], bool(row[3]), row[4], row[5], row[6])

    def calls_used(self, window: str) -> int:
        row = self.db.execute("SELECT calls FROM windows WHERE window = ?", (window,)).fetchone()
        return 0 if row is None else int(row[0])

    def tokens_used(self, window: str) -> int:
        row = self.db.execute("SELECT tokens FROM windows WHERE window = ?", (window,)).fetchone()
        return 0 if row is None else int(row[0])

    def unscored(self) -> dict[str, list[Span]]:
        """Sampled traces whose scores are not stored yet (a kill between decision and scores), with spans."""
        ids = [r[0] for r in self.db.execute("SELECT trace_id FROM traces WHERE sampled = 1 AND scored = 0")]
        out: dict[str, list[Span]] = {}
        for trace_id in ids:
            rows = self.db.execute("SELECT span FROM pending WHERE trace_id = ?", (trace_id,)).fetchall()
            out[trace_id] = [_span_of(r[0]) for r in rows]
        return out

    # -- conversations ------------------------------------------------------------------------------------
    def add_turns(self, turns: Iterable[tuple[str, str, float, dict[str, Any]]], arrived: float) -> None:
        """Readable turns of conversations, (session, trace id, start, the turn's question, answer and contexts):
        kept for the conversation's later turns, whether they were sampled or not."""
        with self.transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO turns VALUES (?, ?, ?, ?, ?)",
                [(s, t, started, arrived, json.dumps(turn, ensure_ascii=False)) for s, t, started, turn in turns],
            )

    def earlier_turns(self, session: str, started: float, limit: int) -> list[dict[str, Any]]:
        """The latest `limit` turns of `session` that started before `started`, in start order."""
        rows = self.db.execute(
            "SELECT turn FROM (SELECT turn, started, trace_id FROM turns WHERE session = ? AND started < ? "
            "ORDER BY started DESC, trace_id DESC LIMIT ?) ORDER BY started, trace_id",
            (session, started, limit),
        ).fetchall()
        return [dict(json.loads(r[0])) for r in rows]

    def forget_turns(self, before: float, keep_per_session: int) -> int:
        """Drop the turns of conversations whose latest turn arrived before `before`, and every turn beyond
        the latest `keep_per_session` of a conversation; how many were dropped."""
        with self.transaction() as db:
            gone = db.execute(
                "DELETE FROM turns WHERE session IN (SELECT session FROM turns GROUP BY session "
                "HAVING MAX(arrived) < ?)",
                (before,),
            ).rowcount
            gone += db.execute(
                "DELETE FROM turns WHERE rowid IN (SELECT rowid FROM (SELECT rowid, ROW_NUMBER() OVER "
                "(PARTITION BY session ORDER BY started DESC, trace_id DESC) AS n FROM turns) WHERE n > ?)",
                (keep_per_session,),
            ).rowcount
        return int(gone)

    # -- scores -------------------------------------------------------------------------------------------
    def add_scores(self, trace_id: str, scores: Iterable[StoredScore], *, annotate: bool = False) -> None:
        """A judged trace's scores, and (with `annotate`) their write-back queued, in one transaction."""
        with self.transaction() as db:
            for s in scores:
                db.execute(
                    "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?, ?)",
                    (s.trace_id, s.metric, s.value, s.failure, s.reason),
                )
                if annotate:
                    db.execute("INSERT OR IGNORE INTO annotations VALUES (?, ?, 0)", (s.trace_id, s.metric))
            db.execute("UPDATE traces SET scored = 1 WHERE trace_id = ?", (trace_id,))
            db.execute("DELETE FROM pending WHERE trace_id = ?", (trace_id,))

    def scores_in(self, window: str) -> list[tuple[StoredScore, str | None]]:
        rows = self.db.execute(
            "SELECT s.trace_id, s.metric, s.value, s.failure, s.reason, t.session FROM scores s "
            "JOIN traces t ON t.trace_id = s.trace_id WHERE t.window = ? ORDER BY t.started, s.trace_id",
            (window,),
        ).fetchall()
        return [(StoredScore(r[0], r[1], r[2], r[3], r[4]), r[5]) for r in rows]

    def window_counts(self, window: str) -> tuple[int, int]:
        """(traces seen, traces sampled) in `window`."""
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(sampled), 0) FROM traces WHERE window = ?", (window,)
        ).fetchone()
        return int(row[0]), int(row[1])

    # -- write-back ---------------------------------------------------------------------------------------
    def unsent(self, limit: int) -> list[tuple[StoredScore, str | None, str]]:
        """Queued annotations not yet written: (score, root span id, window)."""
        rows = self.db.execute(
            "SELECT s.trace_id, s.metric, s.value, s.failure, s.reason, t.root_span, t.window FROM annotations a "
            "JOIN scores s ON s.trace_id = a.trace_id AND s.metric = a.metric JOIN traces t ON t.trace_id = "
            "a.trace_id WHERE a.sent = 0 ORDER BY t.started, a.trace_id, a.metric LIMIT ?",
            (limit,),
        ).fetchall()
        return [(StoredScore(r[0], r[1], r[2], r[3], r[4]), r[5], r[6]) for r in rows]

    def mark_sent(self, keys: Iterable[tuple[str, str]]) -> None:
        with self.transaction() as db:
            db.executemany("UPDATE annotations SET sent = 1 WHERE trace_id = ? AND metric = ?", list(keys))

    def unsent_count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM annotations WHERE sent = 0").fetchone()[0])

    # -- windows and alerts -------------------------------------------------------------------------------
    def windows(self) -> list[tuple[str, bool]]:
        return [
            (r[0], bool(r[1])) for r in self.db.execute("SELECT window, closed FROM windows ORDER BY window")
        ]

    def close_window(self, window: str, summary: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR IGNORE INTO windows (window) VALUES (?)", (window,))
            db.execute(
                "UPDATE windows SET closed = 1, summary = ? WHERE window = ?", (json.dumps(summary), window)
            )

    def summary(self, window: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT summary FROM windows WHERE window = ?", (window,)).fetchone()
        return None if row is None or row[0] is None else dict(json.loads(row[0]))

    def alert_sent(self, key: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM alerts WHERE key = ? AND sent = 1", (key,)).fetchone() is not None
        )

    def record_alert(self, key: str, window: str, metric: str, text: str) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO alerts (key, window, metric, text, sent, seen) VALUES (?, ?, ?, ?, 1, 0)",
                (key, window, metric, text),
            )

    def unseen_alerts(self) -> list[tuple[str, str]]:
        """(key, text) of the alerts sent but not yet reported by a `watch --once` (a long-running watch beside
        cron fires them; the next --once exits 1 with them)."""
        return [(str(r[0]), str(r[1])) for r in
                self.db.execute("SELECT key, text FROM alerts WHERE sent = 1 AND seen = 0 ORDER BY window, key")]  # fmt: skip

    def mark_seen(self, keys: Iterable[str]) -> None:
        with self.transaction() as db:
            db.executemany("UPDATE alerts SET seen = 1 WHERE key = ?", [(k,) for k in keys])

    def alerts(self) -> list[tuple[str, str, str]]:
        return [
            (r[0], r[1], r[2])
            for r in self.db.execute("SELECT window, metric, text FROM alerts ORDER BY window")
        ]
