"""A night against a judge that is not there: how long until `ragmetrics run` exits 3.

    .venv/bin/python benchmarks/bench_dead_judge.py [--questions 1000]

The dataset is the built-in collection's 64 QA rows repeated to `--questions` (fresh ids), judged on
faithfulness and context_recall by an OpenAI-compatible judge whose base_url is a closed port on 127.0.0.1,
with the default settings (5 retries, exponential backoff, the circuit breaker's defaults). Goal (issue 40):
1,000 questions exit 3 in under 30 s; before the breaker, 150 questions took 225-231 s (1,740 requests).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=int, default=1000)
    args = parser.parse_args()
    from ragmetrics import collection

    rows = collection.load_qa()
    with tempfile.TemporaryDirectory(prefix="ragmetrics-dead-") as tmp:
        folder = Path(tmp)
        with (folder / "qa.jsonl").open("w", encoding="utf-8") as fh:
            for n in range(args.questions):
                row = dict(rows[n % len(rows)])
                row["id"] = f"q{n}"
                fh.write(json.dumps(row) + "\n")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        config = {
            "name": "dead judge",
            "dataset": {"path": "qa.jsonl"},
            "runs": [{"source": "dataset", "name": "pipeline"}],
            "judge": {
                "backend": "openai",
                "model": "m",
                "base_url": f"http://127.0.0.1:{port}/v1",
                "api_key_env": "RAGMETRICS_BENCH_KEY",
                "metrics": ["faithfulness", "context_recall"],
                "cache_path": str(folder / "v.sqlite"),
            },
            "output": {"dir": str(folder / "out"), "formats": ["json"], "plots": False},
            "progress": False,
        }
        (folder / "night.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {**os.environ, "RAGMETRICS_BENCH_KEY": "sk-bench-not-a-key"}
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "ragmetrics", "run", str(folder / "night.yaml")],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        seconds = time.monotonic() - started
    incomplete = sum(1 for line in done.stderr.splitlines() if "INCOMPLETE" in line)
    print("| questions | exit code | seconds | INCOMPLETE lines on stderr |")
    print("|---:|---:|---:|---:|")
    print(f"| {args.questions:,} | {done.returncode} | {seconds:.1f} | {incomplete} |")
    print(f"goal: exit 3 in < 30 s: {'met' if done.returncode == 3 and seconds < 30 else 'NOT met'}")
    if done.returncode != 3:
        print(done.stderr[-3000:], file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
