"""A second night over an unchanged corpus embeds nothing (issue 69, item 3): counted in the report, said in the
work table (a changed passage costing only its own embedding is tests/index's). Structural checks only, never a
time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragmetrics.index import close_all

from .conftest import ConfigWriter
from .helpers import latest, report_of, run_cli


def _night(
    config: Path, qa_dir: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[dict[str, int | None], int | None]:
    close_all()  # as a new process would: the index is read from disk, not from this one's memory
    code, _, err = run_cli([str(config)], capsys)
    assert code == 0, err
    nightly = report_of(qa_dir / "out").metadata.nightly
    assert nightly is not None and nightly.work is not None and nightly.work.actual is not None
    return {n: t.embedded for n, t in nightly.retrievers.items()}, nightly.work.actual.chunks_embedded


def test_the_second_night_embeds_no_chunk(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(runs=[
        {"source": "retriever", "retriever": "bm25", "name": "bm25"},
        {"source": "retriever", "retriever": "dense", "name": "dense"},
        {"source": "retriever", "retriever": "bm25_embedding_rerank", "name": "rerank", "params": {"candidates": 3}},
    ], output={"dir": "out", "plots": False, "formats": ["json", "md"]})  # fmt: skip
    passages = [
        json.loads(line) for line in (qa_dir / "passages.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    first, total = _night(config, qa_dir, capsys)
    assert first["dense"] == len(passages) and first["bm25"] == 0  # BM25 embeds nothing, ever
    assert total == sum(v for v in first.values() if v is not None)
    assert (
        qa_dir / ".ragmetrics-cache" / "index" / "dense"
    ).is_dir()  # the default folder, beside the config
    second, total = _night(config, qa_dir, capsys)
    assert second == {"bm25": 0, "dense": 0, "rerank": 0} and total == 0
    markdown = (latest(qa_dir / "out") / "report.md").read_text(encoding="utf-8")
    assert "| chunks embedded (retriever indexes) |" in markdown
    # a dry run foretells it: the dense index lacks no passage now (a changed one would be counted)
    passages[0]["text"] += " Revised."
    (qa_dir / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    code, out, err = run_cli([str(config), "--dry-run"], capsys)
    assert code == 0, err
    assert "chunks to embed             1" in out
    assert f"1 of {len(passages)} passages lack a vector in the persisted index" in out
