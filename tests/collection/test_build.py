"""tools/build_collection.py reproduces the shipped collection byte for byte (docs/collection.md says it does)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ragmetrics import collection

TOOL = Path(__file__).resolve().parents[2] / "tools" / "build_collection.py"
SHIPPED = Path(collection.passages_path()).parent


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    if not TOOL.is_file():
        pytest.skip("tools/build_collection.py is not in this checkout")
    spec = importlib.util.spec_from_file_location("ragmetrics_build_collection", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(
    sys.version_info[:3] != (3, 11, 7), reason="the passages were cut from CPython 3.11.7's help texts"
)
def test_passages_rebuild_identically(tool: ModuleType) -> None:
    assert tool.build_passages() == collection.load_passages()


def test_assembly_rebuilds_questions_qrels_and_qa(
    tool: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("bm25s", reason="assembly pools with BM25 (the `examples` extra)")
    shutil.copy(SHIPPED / "passages.jsonl", tmp_path / "passages.jsonl")
    monkeypatch.setattr(tool, "DATA", tmp_path)
    tool.assemble(15)
    assert "64 questions, 1691 judgments" in capsys.readouterr().out
    for name in ("questions.jsonl", "qa.jsonl", "qrels.txt"):
        assert (tmp_path / name).read_bytes() == (SHIPPED / name).read_bytes(), name
