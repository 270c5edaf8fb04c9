"""Fixtures for utility judgments: the loopback OpenAI-compatible server (tests/judge/loopback.py) and a small
question/passage set whose passages carry the server's markers (``[ans:X]``, ``[pabs:p]``)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.retrieval.run import Run
from ragmetrics.utility import UtilityQuestion


def _load_loopback() -> Any:
    path = Path(__file__).resolve().parent.parent / "judge" / "loopback.py"
    spec = importlib.util.spec_from_file_location("ragmetrics_utility_loopback", path)
    assert spec is not None and spec.loader is not None
    if spec.name in sys.modules:
        return sys.modules[spec.name]
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def server() -> Iterator[Any]:
    srv = _load_loopback().LoopbackServer(latency_s=0.0, stall_s=1.0).start()
    yield srv
    srv.stop()


# Six questions; passage "qN-a" answers question N, "qN-b" does not; "shared" answers nothing.
QUESTIONS = {
    f"q{n}": UtilityQuestion(f"q{n}", f"What is thing number {n}?", f"answer {n}") for n in range(1, 7)
}
PASSAGES = {
    **{f"q{n}-a": f"Thing number {n} is answer {n}. [ans:answer {n}] [pabs:0.{n}]" for n in range(1, 7)},
    **{f"q{n}-b": f"Nothing about thing {n} here." for n in range(1, 7)},
    "shared": "A passage both runs retrieve for every question.",
}


def runs() -> list[Run]:
    """Two runs whose top 3 overlap: each ranks its question's two passages and the shared one."""
    first = {f"q{n}": {f"q{n}-a": 3.0, f"q{n}-b": 2.0, "shared": 1.0} for n in range(1, 7)}
    second = {f"q{n}": {"shared": 3.0, f"q{n}-a": 2.0, f"q{n}-b": 1.0, "unpooled": 0.5} for n in range(1, 7)}
    return [Run.from_dict(first, name="first"), Run.from_dict(second, name="second")]


DISTINCT_PAIRS = 6 * 3
"""(question, passage) pairs in the two runs' top 3: each run's three, the same three in both."""


def write_inputs(folder: Path) -> dict[str, Path]:
    """The fixture as files, for the CLI: questions.jsonl, passages.jsonl, first.trec, second.trec."""
    folder.mkdir(parents=True, exist_ok=True)
    q = folder / "questions.jsonl"
    q.write_text("".join(json.dumps({"id": v.id, "question": v.question, "reference": v.reference}) + "\n"
                         for v in QUESTIONS.values()))  # fmt: skip
    p = folder / "passages.jsonl"
    p.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in PASSAGES.items()))
    paths = {"questions": q, "passages": p}
    for run in runs():
        path = folder / f"{run.name}.trec"
        run.to_trec(path)
        paths[run.name] = path
    return paths
