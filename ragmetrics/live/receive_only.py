"""`ragmetrics watch CONFIG --receive-only`: the OTLP/HTTP receiver alone, for a cron job beside it.

A cron job runs `ragmetrics watch CONFIG --once` every few minutes; between its runs an exporter needs a
server to send to, or its SDK drops the spans after a few retries, quietly. This process holds the port and
spools every accepted export (fsynced before the 200) to the spool `--once` reads from its cursor in the
store. It never judges. Spooled data is never truncated under a reader: once the store's cursor shows the
whole spool read, the spool is renamed aside and a new one started (the reader follows the rename, as it does
a rotated log), and a renamed spool is deleted once the reader has moved on to the new one.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable

from ragmetrics.live.config import WatchConfig
from ragmetrics.live.receiver import OtlpReceiver
from ragmetrics.live.sources import FileCursor
from ragmetrics.live.watch_base import receiver_source_key, spool_path

__all__ = ["ReceiveOnly"]

ROTATED = ".read-"
"""A read spool's name: otlp.jsonl.read-<inode>, kept until the reader has moved past it."""


class ReceiveOnly:
    def __init__(self, config: WatchConfig, *, say: Callable[[str], None]) -> None:
        if config.source.kind != "receiver":
            raise ValueError("--receive-only needs source: {kind: receiver}")
        self.config = config
        self.say = say
        self.spool = spool_path(config)
        self.key = receiver_source_key(config)
        self.receiver = OtlpReceiver(
            config.source.listen, self.spool, max_spool_bytes=int(config.source.max_spool_mb * (1 << 20))
        )
        self.store_path = config.output / "live.sqlite"
        self._said: str | None = None

    def _cursor(self) -> FileCursor | None:
        """The reader's cursor in the spool, read from the store (None: nothing read yet, or no store)."""
        if not self.store_path.exists():
            return None
        try:
            with sqlite3.connect(f"file:{self.store_path}?mode=ro", uri=True, timeout=10.0) as db:
                row = db.execute("SELECT value FROM cursor WHERE source = ?", (self.key,)).fetchone()
        except sqlite3.Error as exc:  # busy, or not written yet: the spool waits for the next look
            message = f"ragmetrics watch: cannot read the watcher's cursor in {self.store_path} ({exc}); the spool is kept whole"
            if message != self._said:
                self.say(message)
                self._said = message
            return None
        self._said = None
        return FileCursor.loads(row[0]) if row else None

    def tidy(self) -> None:
        """Rotate the spool once the reader has read all of it; delete rotated spools it has moved past."""
        cursor = self._cursor()
        if cursor is None:
            return
        for old in self.spool.parent.glob(f"{self.spool.name}{ROTATED}*"):
            try:
                if old.stat().st_ino != cursor.inode:
                    old.unlink()
            except OSError:
                continue
        with self.receiver.writing():
            try:
                stat = self.spool.stat()
            except FileNotFoundError:
                return
            if stat.st_ino == cursor.inode and cursor.offset >= stat.st_size > 0:
                os.replace(self.spool, self.spool.with_name(f"{self.spool.name}{ROTATED}{stat.st_ino}"))

    def run(self, stop: Callable[[], bool], every_s: float = 5.0) -> None:
        self.receiver.start()
        self.say(
            f"ragmetrics watch: receiving OTLP/HTTP traces at {self.receiver.url}/v1/traces into {self.spool} "
            "(receive-only: `ragmetrics watch CONFIG --once` judges them)"
        )
        try:
            while not stop():
                time.sleep(every_s)
                self.tidy()
        finally:
            self.receiver.stop()
            self.say(f"ragmetrics watch: receiver stopped; {self.receiver.accepted_spans} spans accepted")

