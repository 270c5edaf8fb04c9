"""The OTLP/HTTP receiver's throughput and memory on this machine, against reading the same spans from a file.

    python benchmarks/bench_receiver.py [--requests 400] [--spans 50] [--clients 4]

Receiving: `clients` threads POST `requests` OTLP exports of `spans` spans each (protobuf, as OpenTelemetry's
OTLP HTTP exporter sends them; then JSON) to `ragmetrics watch`'s receiver on 127.0.0.1 over keep-alive
connections; every request is spooled and fsynced before its 200. Reading: the watcher's source reads the spool
into the store (decode, parse, one transaction per read) and, for comparison, the same spans written as the
Collector's file exporter would. Prints spans per second of each stage and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ragmetrics.live.receiver import OtlpReceiver
from ragmetrics.live.sources import OtlpFileTail
from ragmetrics.live.store import LiveStore


def _request(r: int, spans: int) -> dict[str, Any]:
    out = []
    for s in range(spans):
        trace_id = f"{r:016x}{s // 5:016x}"
        out.append({
            "traceId": trace_id, "spanId": f"{r:08x}{s:08x}", "name": "rag",
            "startTimeUnixNano": str(1_790_000_000_000_000_000 + s), "endTimeUnixNano": str(1_790_000_001_000_000_000),
            "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": "CHAIN"}},
                           {"key": "input.value", "value": {"stringValue": f"question {r}-{s} " * 8}},
                           {"key": "output.value", "value": {"stringValue": f"answer {r}-{s} " * 20}}],
        })  # fmt: skip
    return {
        "resourceSpans": [
            {"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "b"}, "spans": out}]}
        ]
    }


def _protobuf(request: dict[str, Any]) -> bytes:
    import base64
    import copy

    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    data = copy.deepcopy(request)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    message: ExportTraceServiceRequest = ParseDict(data, ExportTraceServiceRequest())
    return bytes(message.SerializeToString())


def _send(port: int, bodies: list[bytes], content_type: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for body in bodies:
        conn.request("POST", "/v1/traces", body=body, headers={"Content-Type": content_type})
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"receiver answered {response.status}")
    conn.close()


def _receive(requests: list[dict[str, Any]], clients: int, protobuf: bool, spool: Path) -> float:
    receiver = OtlpReceiver("127.0.0.1:0", spool, max_spool_bytes=1 << 34).start()
    port = int(receiver.server.server_address[1])
    bodies = [_protobuf(r) if protobuf else json.dumps(r).encode() for r in requests]
    kind = "application/x-protobuf" if protobuf else "application/json"
    shares = [bodies[i::clients] for i in range(clients)]
    start = time.perf_counter()
    threads = [threading.Thread(target=_send, args=(port, share, kind)) for share in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    receiver.stop()
    return seconds


def _read(path: Path, store_path: Path) -> tuple[float, int]:
    store = LiveStore(store_path)
    tail = OtlpFileTail(path)
    cursor = None
    count = 0
    start = time.perf_counter()
    while True:
        polled = tail.poll(cursor)
        if polled.cursor is None:
            break
        count += store.add_spans("bench", polled.cursor.dumps(), polled.spans, time.time())
        cursor = polled.cursor
        if not polled.more:
            break
    seconds = time.perf_counter() - start
    store.close()
    return seconds, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--spans", type=int, default=50)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    requests = [_request(r, args.spans) for r in range(args.requests)]
    total = args.requests * args.spans
    tmp = Path(tempfile.mkdtemp())
    file = tmp / "collector.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in requests))
    print(f"{args.requests} requests x {args.spans} spans = {total:,} spans, {args.clients} clients\n")
    print("| stage | seconds | spans/s |")
    print("|---|---:|---:|")
    for protobuf in (True, False):
        spool = tmp / f"spool-{protobuf}.jsonl"
        seconds = _receive(requests, args.clients, protobuf, spool)
        print(
            f"| receive ({'protobuf' if protobuf else 'JSON'}, spooled + fsynced) | {seconds:.2f} | {total / seconds:,.0f} |",
            flush=True,
        )
    seconds, count = _read(tmp / "spool-True.jsonl", tmp / "a.sqlite")
    assert count == total, count
    print(f"| read the receiver's spool into the store | {seconds:.2f} | {total / seconds:,.0f} |")
    seconds, count = _read(file, tmp / "b.sqlite")
    assert count == total, count
    print(
        f"| read the same spans from a Collector file into the store | {seconds:.2f} | {total / seconds:,.0f} |"
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\npeak RSS of this process: {peak:.0f} MiB (the requests themselves are held in memory to send them)"
    )


if __name__ == "__main__":
    main()
