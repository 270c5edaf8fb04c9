"""Judge throughput against an OpenAI-compatible endpoint with a fixed latency, and calls per sample vs RAGAS.

A loopback server (tests/judge/loopback.py, in its own process so it does not share our GIL) answers every
request after a fixed latency. With C requests in flight and latency L, no client can exceed C / L requests per
second; the judge should come within 90 % of that bound. Run: `python benchmarks/bench_judge.py`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["context_precision", "context_recall", "context_relevancy", "answer_relevancy"]


def ragas_requests(metric: str, chunks: int) -> tuple[int, int]:
    """(LLM calls, embedding requests) RAGAS 0.4.3 makes for one sample, from its metric implementations.

    context_precision (LLMContextPrecisionWithReference): one LLM call per retrieved chunk. context_recall
    (LLMContextRecall): one call. context_relevancy: RAGAS 0.4's ContextRelevance makes two calls (two
    0/1/2 ratings of the whole context; a different quantity from ragmetrics' sentence share, which is RAGAS
    0.1's definition). answer_relevancy (ResponseRelevancy, strictness 3): three question-generation calls
    on a model without `n` completions, then embeddings of the question and of the generated questions.
    faithfulness: statement generation, then one verdict call. answer_correctness: statements of the answer
    and of the reference (two calls), one classification call, and the two embeddings of its similarity part.
    answer_similarity (SemanticSimilarity): two embedding requests, no LLM call.
    """
    return {
        "context_precision": (chunks, 0),
        "context_recall": (1, 0),
        "context_relevancy": (2, 0),
        "answer_relevancy": (3, 2),
        "faithfulness": (2, 0),
        "answer_correctness": (3, 2),
        "answer_similarity": (0, 2),
    }[metric]


def make_samples(n: int, chunks: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"q{i}",
            "question": f"What is fact number {i}?",
            "contexts": [
                f"Fact {i} is stated here [useful]. It matters [rel].",
                *(f"Unrelated passage {k} for {i}." for k in range(1, chunks)),
            ],
            "answer": f"Fact {i} is the answer.",
            "reference": f"Fact {i} is stated [attr]. It has a second part.",
        }
        for i in range(n)
    ]


async def raw_client_throughput(url: str, requests: int, concurrency: int) -> float:
    """Control: bare `openai` POSTs of a typical judge request at the same concurrency, requests per second.

    On a busy machine the loopback server and any client compete for CPU; this run shows what the
    environment allows, so the judge's own overhead is the gap between the two figures.
    """

    import openai
    from openai.types.chat import ChatCompletion

    from ragmetrics.judge.prompts import default_library

    library = default_library()
    prompt = library.get("context_recall")
    values = {
        "question": "Q?",
        "chunks": ["A chunk [useful].", "Another."],
        "reference": "R [attr]. S.",
        "statements": ["R [attr].", "S."],
    }
    body = {"model": "bench-model", "messages": prompt.messages(values, library.shared), "temperature": 0.0}
    api = openai.AsyncOpenAI(api_key="not-needed", base_url=url, max_retries=0, timeout=30)
    semaphore = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with semaphore:
            await api.post("/chat/completions", body=body, cast_to=ChatCompletion)

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(requests)))
    elapsed = time.perf_counter() - start
    await api.close()
    return requests / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--chunks", type=int, default=3, help="retrieved chunks per sample")
    parser.add_argument("--latency", type=float, default=0.2, help="server latency per request, seconds")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--no-control", dest="control", action="store_false", help="skip the bare-client control run"
    )
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    from ragmetrics.judge.backends.llm import LLMJudge
    from ragmetrics.judge.evaluate import evaluate_rag
    from ragmetrics.judge.settings import JudgeSettings

    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "judge" / "loopback.py"), "--latency", str(args.latency)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            settings = JudgeSettings(
                backend="openai",
                model="bench-model",
                embedding_model="bench-embedding",
                base_url=url,
                cache_path=Path(tmp) / "verdicts.sqlite",
                max_concurrency=args.concurrency,
                timeout_s=30,
            )
            judge = LLMJudge(settings)
            samples = make_samples(args.samples, args.chunks)
            start, cpu_start = time.perf_counter(), time.process_time()
            result = evaluate_rag(
                samples, METRICS, judge, max_concurrency=4 * args.concurrency, progress=False
            )
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        control = asyncio.run(raw_client_throughput(url, 1600, args.concurrency)) if args.control else None
    finally:
        server.terminate()
        server.wait(10)
    server_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_cpu_s = server_cpu.ru_utime + server_cpu.ru_stime

    info = result.metadata.judge
    assert info is not None
    requests = info.usage.calls
    bound = args.concurrency / args.latency
    throughput = requests / elapsed
    ratio = throughput / bound
    print(
        f"{args.samples} samples x {len(METRICS)} metrics, {args.chunks} chunks each, latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}"
    )
    print(f"failures: {len(result.failures)}; requests: {requests} in {elapsed:.2f} s")
    print(
        f"throughput: {throughput:.1f} requests/s; bound concurrency/latency = {bound:.1f}/s; ratio {ratio:.1%}"
    )
    if control is not None:
        print(
            f"control, bare openai client at the same concurrency: {control:.1f} requests/s "
            f"({control / bound:.1%} of the bound); judge / control = {throughput / control:.1%}"
        )
    print(
        f"client CPU: {cpu * 1000 / requests:.2f} ms per request (one free core sustains {requests / cpu:.0f}/s); "
        f"server CPU: {server_cpu_s * 1000 / (requests + (1600 if control else 0)):.2f} ms per request"
    )
    print(f"load average before/after: {load_before:.1f}/{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print()
    print(f"{'metric':<20} {'ragmetrics LLM':>14} {'+embeddings':>12} {'RAGAS LLM':>10} {'+embeddings':>12}")
    ours = {
        "context_precision": (1, 0),
        "context_recall": (1, 0),
        "context_relevancy": (1, 0),
        "answer_relevancy": (1, 1),
    }
    totals = [0, 0, 0, 0]
    for metric in METRICS:
        o, r = ours[metric], ragas_requests(metric, args.chunks)
        totals = [totals[0] + o[0], totals[1] + o[1], totals[2] + r[0], totals[3] + r[1]]
        print(f"{metric:<20} {o[0]:>14} {o[1]:>12} {r[0]:>10} {r[1]:>12}")
    print(f"{'per sample':<20} {totals[0]:>14} {totals[1]:>12} {totals[2]:>10} {totals[3]:>12}")
    # Not in the timed run above (its call count is asserted for the four context metrics only).
    for metric, o in (
        ("faithfulness", (1, 0)),
        ("answer_correctness", (1, 1)),
        ("answer_similarity", (0, 1)),
    ):
        r = ragas_requests(metric, args.chunks)
        print(f"{metric:<20} {o[0]:>14} {o[1]:>12} {r[0]:>10} {r[1]:>12}")
    measured = requests / args.samples
    print(f"measured requests per sample (chat + embeddings): {measured:.2f}")
    ok = ratio >= 0.9 and not result.failures and measured == totals[0] + totals[1]
    if ok:
        print("PASS: throughput within 90 % of concurrency / latency")
    else:
        print("FAIL: throughput below 90 % of concurrency / latency (or failures / unexpected call count)")
        if control is not None and control / bound < 0.9:
            print(
                "      the bare-client control misses the bound too: the machine, not the judge, is the limit"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
