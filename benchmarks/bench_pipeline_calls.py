"""How close pipeline calls come to the concurrency/latency bound: an HTTP target answering in 200 ms.

    python benchmarks/bench_pipeline_calls.py [--questions 320] [--latency 0.2] [--concurrency 16]

With c calls in flight against a target that takes L seconds, no client can do better than c / L calls per
second. The benchmark serves the target on 127.0.0.1 (a threaded server that sleeps L per request, so the
server is not the bottleneck), calls it through ragmetrics' HTTP caller (no cache) for every question, and
prints calls per second against the bound. For comparison it also times a plain `httpx` client with an
asyncio semaphore, what a hand-written script in front of an evaluation tool would do.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragmetrics.judge.openai.transport import http_library
from ragmetrics.nightly.config import HttpTarget
from ragmetrics.nightly.target_calls import call_all
from ragmetrics.nightly.targets import HttpCaller


def serve(latency_s: float) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm holds the body
            # for the client's delayed ACK (~40 ms), which would be measured as the client's overhead.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
            time.sleep(latency_s)
            body = json.dumps({"answer": f"answer to {payload['id']}", "contexts": ["a", "b"]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}/answer"


async def ours(url: str, n: int, concurrency: int) -> float:
    caller = HttpCaller(
        HttpTarget(url=url), concurrency=concurrency, timeout_s=30, retries=0, version="bench"
    )
    inputs = [(f"q{i}", {"id": f"q{i}", "question": f"question {i}"}) for i in range(n)]
    start = time.perf_counter()
    records = await call_all(caller, "pipeline", inputs, None, concurrency=concurrency)
    elapsed = time.perf_counter() - start
    failed = [r for r in records if r.output is None]
    if failed:
        raise SystemExit(f"{len(failed)} calls failed, first: {failed[0].message}")
    return elapsed


async def plain(url: str, n: int, concurrency: int) -> float:
    httpx = http_library()
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency), timeout=30) as client:

        async def one(i: int) -> None:
            async with gate:
                response = await client.post(url, json={"id": f"q{i}", "question": f"question {i}"})
                response.raise_for_status()
                response.json()

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=320)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    server, url = serve(args.latency)
    try:
        asyncio.run(ours(url, args.concurrency, args.concurrency))  # warm-up: connections, imports
        bound = args.concurrency / args.latency
        ours_s = asyncio.run(ours(url, args.questions, args.concurrency))
        plain_s = asyncio.run(plain(url, args.questions, args.concurrency))
    finally:
        server.shutdown()
    print(
        f"target: {args.latency * 1000:.0f} ms per call, {args.concurrency} in flight, {args.questions} questions"
    )
    print(f"bound (concurrency / latency): {bound:.1f} calls/s")
    for name, seconds in (("ragmetrics HTTP target", ours_s), ("plain httpx + semaphore", plain_s)):
        rate = args.questions / seconds
        print(f"{name:26s} {seconds:6.2f} s  {rate:6.1f} calls/s  {rate / bound:6.1%} of the bound")
    print(f"ratio ragmetrics / plain httpx: {plain_s / ours_s:.2f}x the throughput")


if __name__ == "__main__":
    main()
