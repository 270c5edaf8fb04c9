"""Calling a target for every question: bounded concurrency, a cache of outputs, a record per question.

Outputs are cached in SQLite (WAL, one commit per output) under a key of the role (pipeline or generator),
the target, its build (`call_identity`: its code as imported, the environment it reads, its settings and
cache_key) and the exact input, so a killed or re-run night calls the team's system only for the questions
it has no output for, and a changed build is called afresh. Failures are never cached: the next night asks again. A cache row that
does not validate is treated as absent and asked again, never trusted.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError
from ragmetrics.nightly.artifacts import REDACTED
from ragmetrics.nightly.targets import Caller, CallFailed, Role, TargetOutput, parse_output

__all__ = ["CallRecord", "OutputCache", "call_all", "output_key", "plan_all"]

_SCHEMA = "ragmetrics-target-outputs-1"
_KEY_SCHEMA = "ragmetrics-target-key-2"
"""Version of how keys are built; key 1 (the target module's source only) served stale builds (issue 66)."""


def output_key(role: Role, label: str, build: str | None, payload: dict[str, Any]) -> str:
    """What determines an output: who was called (role, target, its build) and with exactly what."""
    blob = json.dumps(
        {"schema": _KEY_SCHEMA, "role": role, "target": label, "build": build, "input": payload},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class OutputCache:
    """Validated target outputs by key, in a SQLite file that survives a killed process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.written: set[str] = set()
        """Keys stored by this process: a hit on one is an output of tonight's build (another run asked the
        same), not of an earlier night's."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"pipeline_cache {path}: cannot create its folder: {exc.strerror or exc}"
            ) from None
        try:
            self._db = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS outputs (key TEXT PRIMARY KEY, schema TEXT NOT NULL, "
                "value TEXT NOT NULL, created REAL NOT NULL)"
            )
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"pipeline_cache {path}: not a usable SQLite cache ({exc}); move it away or delete it"
            ) from None

    def get(self, key: str) -> TargetOutput | None:
        with self._lock:
            try:
                row = self._db.execute("SELECT schema, value FROM outputs WHERE key = ?", (key,)).fetchone()
            except sqlite3.DatabaseError:
                return None
        if row is None or row[0] != _SCHEMA:
            return None
        try:
            data = json.loads(row[1])
            return TargetOutput.from_json(data) if isinstance(data, dict) else None
        except (ValueError, RecursionError, CallFailed, TypeError):
            return None

    def put(self, key: str, output: TargetOutput) -> None:
        value = json.dumps(output.to_json(), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO outputs (key, schema, value, created) VALUES (?, ?, ?, ?)",
                (key, _SCHEMA, value, time.time()),
            )
            self.written.add(key)

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass(frozen=True)
class CallRecord:
    """One question's call: its validated output, or the cause it failed with."""

    query_id: str
    payload: dict[str, Any]
    output: TargetOutput | None = None
    cause: str | None = None
    message: str | None = None
    cached: bool = False
    tonight: bool = False
    """A cached output that a call made tonight stored (another run asked the same): tonight's build's output."""
    planned: bool = False
    """A dry run's stand-in: the call would be made; `output` holds placeholder text of the right shape."""

    def to_json(self, role: Role, label: str, version: str | None) -> dict[str, Any]:
        """The line of pipeline_outputs.jsonl for this call."""
        out: dict[str, Any] = {"role": role, "target": label, "version": version, "query_id": self.query_id}
        if self.output is not None:
            out.update(self.output.to_json())
            out["cached"] = self.cached
        else:
            out["failure"] = {"cause": self.cause, "message": self.message}
        return out


def _scrubbed(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, list):
        return [_scrubbed(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _scrubbed(v, secrets) for k, v in value.items()}
    return value


async def _call_one(
    caller: Caller, role: Role, payload: dict[str, Any], secrets: Sequence[str] = ()
) -> TargetOutput:
    """One validated output. A secret the target echoes (a header's token) is replaced before anything else
    sees the output: not the cache, not the judge's endpoint, not the artifacts."""
    start = time.perf_counter()
    raw = await caller.call(payload)
    latency = time.perf_counter() - start
    parsed = parse_output(raw, role=role)
    data = {**parsed.to_json(), "latency_s": round(latency, 6)}
    return TargetOutput(**(_scrubbed(data, [s for s in secrets if s]) if secrets else data))


async def call_all(
    caller: Caller,
    role: Role,
    inputs: Sequence[tuple[str, dict[str, Any]]],
    cache: OutputCache | None,
    *,
    concurrency: int,
    refresh: bool = False,
    advance: Callable[[], None] = lambda: None,
    secrets: Sequence[str] = (),
    build: str | None = None,
) -> list[CallRecord]:
    """Call `caller` once per (query id, input) not already in `cache` under `build` (the key of its build,
    `call_identity`; default its version), at most `concurrency` at a time; `secrets` (and the caller's own,
    such as header tokens) are replaced in every output (`_call_one`)."""
    secrets = [*secrets, *getattr(caller, "secrets", [])]
    records: dict[str, CallRecord] = {}
    todo: list[tuple[str, dict[str, Any], str]] = []
    for qid, payload in inputs:
        key = output_key(role, caller.label, build if build is not None else caller.version, payload)
        hit = None if (cache is None or refresh) else cache.get(key)
        if hit is not None:
            assert cache is not None
            records[qid] = CallRecord(qid, payload, output=hit, cached=True, tonight=key in cache.written)
            advance()
        else:
            todo.append((qid, payload, key))
    queue: asyncio.Queue[tuple[str, dict[str, Any], str]] = asyncio.Queue()
    for item in todo:
        queue.put_nowait(item)

    async def worker() -> None:
        while True:
            try:
                qid, payload, key = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                output = await _call_one(caller, role, payload, secrets)
            except CallFailed as exc:
                records[qid] = CallRecord(qid, payload, cause=exc.cause, message=exc.message)
            else:
                if cache is not None:
                    await asyncio.to_thread(cache.put, key, output)
                records[qid] = CallRecord(qid, payload, output=output)
            advance()

    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, max(1, len(todo))))))
    finally:
        await caller.aclose()
    return [records[qid] for qid, _ in inputs]


def plan_all(
    caller: Caller,
    role: Role,
    inputs: Sequence[tuple[str, dict[str, Any]]],
    cache: OutputCache | None,
    *,
    refresh: bool = False,
    contexts: int = 3,
    build: str | None = None,
) -> list[CallRecord]:
    """What `call_all` would do, without calling: cached outputs as they are, every other question a planned
    call with a placeholder output (an answer, and for a pipeline `contexts` stand-in passages), so the
    judge's cost for it can be planned too."""
    records = []
    for qid, payload in inputs:
        key = output_key(role, caller.label, build if build is not None else caller.version, payload)
        hit = None if (cache is None or refresh) else cache.get(key)
        if hit is not None:
            records.append(CallRecord(qid, payload, output=hit, cached=True))
            continue
        stand_in = [f"(passage {k + 1} the pipeline has not returned yet for {qid})" for k in range(contexts)]
        placeholder = TargetOutput(
            answer=f"(the answer the {role} has not given yet for {qid})",
            contexts=stand_in if role == "pipeline" else None,
            context_ids=None,
            context_scores=None,
            tokens=None,
            cost=None,
            latency_s=0.0,
        )
        records.append(CallRecord(qid, payload, output=placeholder, planned=True))
    return records
