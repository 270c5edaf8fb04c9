"""A tracker that accepts connections and never answers holds the night at most `timeout_s` + 1 s in all
(docs/mlflow.md), queued nights and loading MLflow's client included (before: 2.0 s against timeout_s 1, and
4.0 s with one night queued: the timeout was paid per request and per night; then 4.6 s in a fresh process,
the client's import outside the budget); every night stays queued and the notes say why."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from ragmetrics.cli.main import main

pytest.importorskip("mlflow.tracking", reason="the [mlflow] extra (mlflow-skinny) is not installed")

from ragmetrics.mlflow.nights import read_backlog, write_backlog


class _Silent:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte (closed at the end)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        deadline = time.monotonic() + 60
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.held.append(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        for conn in self.held:
            conn.close()
        self.sock.close()


def test_a_silent_tracker_costs_the_night_timeout_s_once(tmp_path: Path) -> None:
    config = {
        "name": "silent", "dataset": {"builtin": "pydocs"},
        "retrieval": {"metrics": ["ndcg@10"], "query_set": "qrels"},
        "runs": [{"source": "retriever", "retriever": "bm25", "name": "bm25"}],
        "output": {"dir": str(tmp_path / "nights"), "formats": ["json"], "history": False},
    }  # fmt: skip
    path = tmp_path / "night.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(path), "--no-progress"]) == 0
    root = tmp_path / "nights"
    tonight = next(p for p in root.iterdir() if p.is_dir() and p.name != "latest" and (p / "report.json").is_file())
    queued = [root / f"2020-01-0{i}T000000Z" for i in (1, 2)]
    for folder in queued:
        shutil.copytree(tonight, folder)
    write_backlog(root, [f.name for f in queued])
    assert len(read_backlog(root)) == 2
    silent = _Silent()
    # In a fresh process, as a night's: loading MLflow's client (seconds on a loaded machine) is in the budget.
    code = ("import json, sys, time; from pathlib import Path\n"
            "from ragmetrics.mlflow.nights import MlflowTarget, log_backlog\n"
            "root, tonight, uri = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]\n"
            "started = time.monotonic()\n"
            "notes = log_backlog(root, tonight, MlflowTarget(tracking_uri=uri, timeout_s=1.0))\n"
            "print(json.dumps({'took': time.monotonic() - started, 'mlflow': 'mlflow' in sys.modules, 'notes': notes}))")  # fmt: skip
    try:
        done = subprocess.run([sys.executable, "-c", code, str(root), str(tonight), f"http://127.0.0.1:{silent.port}"],
                              capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    finally:
        silent.close()
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    # the bound, not a speed: timeout_s 1 + 1 s documented, + 1 s of slack for a loaded machine (paid per
    # request and night, this queue held it 6 s or more; with the client's import outside, 4.6 s)
    assert outcome["took"] < 3.0, f"the logging step took {outcome['took']:.2f} s against timeout_s 1"
    assert sorted(read_backlog(root)) == sorted([*(f.name for f in queued), tonight.name])  # nothing lost
    assert any("not logged" in n for n in outcome["notes"])
