"""Fixtures for pipeline tests: the small QA set on disk, a config writer, the loopback OpenAI server."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from .helpers import TOPICS, filler, passages, qa_rows, relevant, write_jsonl


@pytest.fixture
def qa_dir(tmp_path: Path) -> Path:
    """tmp_path with qa.jsonl, passages.jsonl and weaker.trec (a run that misses every second query)."""
    write_jsonl(tmp_path / "qa.jsonl", qa_rows())
    write_jsonl(tmp_path / "passages.jsonl", passages())
    lines = []
    for i, (topic, *_rest) in enumerate(TOPICS):
        docs = [relevant(topic), filler(topic)] if i % 2 else [filler(topic), relevant(topic)]
        lines += [f"q{i:02d} Q0 {d} {r + 1} {10 - r} weaker" for r, d in enumerate(docs)]
    (tmp_path / "weaker.trec").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


ConfigWriter = Callable[..., Path]


@pytest.fixture
def write_config(qa_dir: Path) -> ConfigWriter:
    """Write a config into qa_dir; keyword arguments replace whole sections."""

    def write(name: str = "config.yaml", **sections: Any) -> Path:
        data: dict[str, Any] = {
            "name": "pipeline test",
            "dataset": {"path": "qa.jsonl", "passages": "passages.jsonl"},
            "retrieval": {"metrics": ["ndcg@10", "map", "mrr"]},
            "runs": [{"source": "dataset", "name": "pipeline"}],
            "compare": {"test": "fisher", "permutations": 2000},
            "output": {"dir": "out", "plots": False},
            "progress": False,
        }
        data.update(sections)
        path = qa_dir / name
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return path

    return write


def _load_loopback() -> ModuleType | None:
    path = Path(__file__).parents[1] / "judge" / "loopback.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("ragmetrics_test_loopback", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def loopback() -> Iterator[Any]:
    """The judge tests' OpenAI-compatible loopback server (tests/judge/loopback.py), on 127.0.0.1."""
    module = _load_loopback()
    if module is None:
        pytest.skip("tests/judge/loopback.py (the loopback OpenAI server) is not in this checkout")
    server = module.LoopbackServer(latency_s=0.0).start()
    yield server
    server.stop()


@pytest.fixture
def servers() -> Iterator[tuple[Any, Any]]:
    """Two loopback servers judging as the personas "small" and "big": a cascade's cheap and strong judge."""
    module = _load_loopback()
    if module is None:
        pytest.skip("tests/judge/loopback.py (the loopback OpenAI server) is not in this checkout")
    small, big = module.LoopbackServer().start(), module.LoopbackServer().start()
    small.state.persona, big.state.persona = "small", "big"
    yield small, big
    small.stop()
    big.stop()
