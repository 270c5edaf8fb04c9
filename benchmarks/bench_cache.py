"""The shared verdict cache under several writers: verdicts/s with N processes writing one SQLite file.

    python benchmarks/bench_cache.py [--writers 4] [--verdicts 2000]

Each writer puts its own verdicts one by one (as the LLM judge does, one committed transaction each) and
reads back a share of the others' while they write. Prints total verdicts/s, the failures (0 expected: a
locked database is waited for and retried, never a failed sample) and whether every verdict is stored.
Uses only `VerdictCache(path).put/get`, so it runs against older checkouts too (PYTHONPATH) for a before/after.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path


def _writer(path: str, writer: int, count: int, start: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from ragmetrics.judge.cache import VerdictCache

    cache = VerdictCache(Path(path))
    while time.time() < start:
        time.sleep(0.0005)
    failures = 0
    for i in range(count):
        try:
            cache.put(f"w{writer}-{i}", "bench", {"verdict": True, "reason": "x" * 200, "i": i}, {"calls": 1})
            if i % 10 == 0:
                cache.get(f"w{(writer + 1) % 4}-{i // 2}")
        except Exception as exc:  # the figure this benchmark exists for
            failures += 1
            if failures == 1:
                print(f"writer {writer}: {type(exc).__name__}: {exc}")
    cache.close()
    out.put(failures)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--verdicts", type=int, default=2000, help="per writer")
    args = parser.parse_args()
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "verdicts.sqlite")
        from ragmetrics.judge.cache import VerdictCache

        # No warm-up write: every writer opens the fresh file at once, as two nightly jobs starting
        # together do (setting up WAL mode needs a lock no busy timeout waits for).
        out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        start = time.time() + 2.0
        procs = [
            ctx.Process(target=_writer, args=(path, w, args.verdicts, start, out))
            for w in range(args.writers)
        ]
        for p in procs:
            p.start()
        failures = sum(out.get() for _ in procs)
        for p in procs:
            p.join()
        elapsed = time.time() - start
        stored = len(VerdictCache(Path(path)))
    total = args.writers * args.verdicts
    print(
        f"{args.writers} writers x {args.verdicts} verdicts: {elapsed:.2f} s, {total / elapsed:.0f} verdicts/s, "
        f"{failures} failed writes, {stored}/{total} stored"
    )


if __name__ == "__main__":
    main()
