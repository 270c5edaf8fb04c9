"""Cron beside a receiver, for minutes: does any span an OpenTelemetry exporter sends get lost?

    .venv/bin/python benchmarks/bench_cron_receiver.py [--minutes 10] [--every 60] [--rate 5]

Starts `ragmetrics watch CONFIG --receive-only` as a process, sends traces through OpenTelemetry's own OTLP
HTTP exporter (BatchSpanProcessor, protobuf) at `rate` traces per second for `minutes`, and runs
`ragmetrics watch CONFIG --once` every `every` seconds as cron would (a fresh process each time), then once more
after the last span. Prints the traces sent, the traces the store decided (each once?), the spools left behind,
every --once exit code, and the spans the exporter reported as failed (none expected). Sampling is 10 % with the
local judge, so the run measures transport, not judging. Everything runs on 127.0.0.1 in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=5.0)
    args = parser.parse_args()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    failed = [0]

    class Counting(OTLPSpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            result = super().export(spans)
            if result != SpanExportResult.SUCCESS:
                failed[0] += len(spans)
            return result

    with tempfile.TemporaryDirectory(prefix="ragmetrics-cron-") as tmp:
        folder = Path(tmp)
        port = _port()
        config = folder / "watch.yaml"
        config.write_text(yaml.safe_dump({
            "source": {"kind": "receiver", "listen": f"127.0.0.1:{port}", "settle_s": 5},
            "sampling": {"rate": 0.1}, "window": "1h", "output": str(folder / "live"),
            "judge": {"backend": "local", "metrics": ["faithfulness"], "cache_path": str(folder / "v.sqlite")},
        }))  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        receiver = subprocess.Popen([sys.executable, "-m", "ragmetrics", "watch", str(config), "--receive-only"],
                                    env=env, stderr=subprocess.PIPE, text=True)  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        provider = TracerProvider(resource=Resource({"service.name": "cron-bench"}))
        provider.add_span_processor(BatchSpanProcessor(Counting(endpoint=f"http://127.0.0.1:{port}/v1/traces")))
        tracer = provider.get_tracer("bench")
        sent: list[str] = []
        stop = threading.Event()

        def traffic() -> None:
            n = 0
            while not stop.is_set():
                with tracer.start_as_current_span("rag") as root:
                    root.set_attribute("openinference.span.kind", "CHAIN")
                    root.set_attribute("input.value", json.dumps({"question": f"question {n}?"}))
                    with tracer.start_as_current_span("retrieve") as span:
                        span.set_attribute("openinference.span.kind", "RETRIEVER")
                        span.set_attribute("retrieval.documents.0.document.id", f"d{n}")
                        span.set_attribute("retrieval.documents.0.document.content", f"Passage {n} answers it.")
                    root.set_attribute("output.value", f"Passage {n} answers it.")
                    sent.append(format(root.get_span_context().trace_id, "032x"))
                n += 1
                time.sleep(1.0 / args.rate)

        sender = threading.Thread(target=traffic, daemon=True)
        sender.start()
        codes: list[int] = []
        started = time.monotonic()
        once = [sys.executable, "-m", "ragmetrics", "watch", str(config), "--once"]
        while time.monotonic() - started < args.minutes * 60:
            time.sleep(args.every)
            codes.append(subprocess.run(once, env=env, capture_output=True, timeout=600).returncode)
        stop.set()
        sender.join()
        provider.shutdown()  # flushes the exporter's batch
        time.sleep(6)  # past settle_s
        for _ in range(3):
            codes.append(subprocess.run(once, env=env, capture_output=True, timeout=600).returncode)
            time.sleep(6)
        receiver.send_signal(signal.SIGTERM)
        receiver.wait(timeout=30)
        with sqlite3.connect(folder / "live" / "live.sqlite") as db:
            decided, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT trace_id) FROM traces").fetchone()
            stored = {r[0] for r in db.execute("SELECT trace_id FROM traces")}
        spools = sorted(p.name for p in (folder / "live" / "spool").iterdir())
        lost = [t for t in sent if t not in stored]
        print(f"{args.minutes:g} min at {args.rate:g} traces/s, --once every {args.every:g} s")
        print(f"traces sent {len(sent)}; decided {decided} ({distinct} distinct); lost {len(lost)}; "
              f"exporter failures {failed[0]} spans")  # fmt: skip
        print(f"--once exit codes: {codes}")
        print(f"spool files left: {spools}")


if __name__ == "__main__":
    main()
