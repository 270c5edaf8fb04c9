"""Faults found by trying bad input and concurrent use as a new user would: each is an exit-2 input error
naming the file and line, or a run that stays correct next to other runs."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.nightly.artifacts import write_artifacts
from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult

from .conftest import ConfigWriter


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def test_invalid_utf8_in_a_results_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "a.json"
    good.write_text(
        RunResult(name="a", metadata=RunMetadata(metrics=["m"])).model_dump_json(), encoding="utf-8"
    )
    bad = tmp_path / "b.json"
    bad.write_bytes(b'{"name": "b",\n "per_query": {"q\xff": {}}}')
    code, err = _run(["compare", "--results", str(good), str(bad), "-m", "m"], capsys)
    assert code == 2
    assert f"{bad}, line 2: not UTF-8 text" in err


def test_invalid_utf8_in_a_dataset_row_is_exit_2(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (qa_dir / "qa.jsonl").read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"?", b"?\xc3\x28", 1)
    (qa_dir / "qa.jsonl").write_bytes(b"".join(lines))
    code, err = _run(["run", str(write_config()), "--no-progress"], capsys)
    assert code == 2
    assert "qa.jsonl, line 3: not UTF-8 text" in err


@pytest.mark.parametrize("content", [b"", b"\n  \n"])
def test_an_empty_dataset_file_says_so(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    (qa_dir / "qa.jsonl").write_bytes(content)
    code, err = _run(["run", str(write_config()), "--no-progress"], capsys)
    assert code == 2
    assert "qa.jsonl: empty file" in err and "StopIteration" not in err


def _report(name: str) -> Report:
    run = RunResult(name=name, per_query={"q": {"m": 0.5}}, metadata=RunMetadata(metrics=["m"]))
    run.recompute_aggregate()
    return Report(runs=[run], metrics=["m"], settings=ComparisonSettings(test="t", correction="none"))


def test_concurrent_runs_get_their_own_complete_folders(tmp_path: Path) -> None:
    """Same root, same second: every run gets its own folder with every file, and latest is one of them."""
    from datetime import UTC, datetime

    now = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)

    def write(i: int) -> Path:
        folder, _ = write_artifacts(
            _report(f"r{i}"), tmp_path, formats=("json", "csv", "md"), plots=False, now=now
        )
        return folder

    with ThreadPoolExecutor(max_workers=6) as pool:
        folders = list(pool.map(write, range(12)))
    assert len(set(folders)) == 12
    for folder in folders:
        assert sorted(p.name for p in folder.iterdir()) == ["per_query.csv", "report.json", "report.md"]
    names = {json.loads((f / "report.json").read_text())["runs"][0]["name"] for f in folders}
    assert names == {f"r{i}" for i in range(12)}
    latest = (tmp_path / "latest").resolve()
    assert latest in {f.resolve() for f in folders}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_three_processes_running_one_config_at_once(qa_dir: Path, write_config: ConfigWriter) -> None:
    config = write_config()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ragmetrics", "run", str(config), "--no-progress"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()
    folders = [p for p in (qa_dir / "out").iterdir() if p.is_dir() and not p.is_symlink()]
    assert len(folders) == 3
    for folder in folders:
        assert {"report.json", "per_query.csv", "report.md"} <= {p.name for p in folder.iterdir()}
    assert (qa_dir / "out" / "latest").resolve() in {f.resolve() for f in folders}


def test_url_secrets_never_reach_artifacts(tmp_path: Path) -> None:
    report = _report("r")
    report.metadata.notes.append("server said: bad token SECRET-TOKEN-42 for user bob-the-user")
    folder, _ = write_artifacts(
        report,
        tmp_path,
        formats=("json", "csv", "md", "html"),
        plots=False,
        base_url="http://bob-the-user:pw-123456@127.0.0.1:9/v1?token=SECRET-TOKEN-42",
    )
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8")
        assert "SECRET-TOKEN-42" not in text and "bob-the-user" not in text, path.name


def test_output_keep_prunes_the_oldest_complete_folders(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
    (tmp_path / "notes").mkdir()  # not a dated folder: never touched
    folders = [
        write_artifacts(
            _report("r"), tmp_path, formats=("json",), plots=False, now=start + timedelta(days=d), keep=2
        )[0]
        for d in range(4)
    ]
    left = sorted(p.name for p in tmp_path.iterdir() if p.is_dir() and not p.is_symlink())
    assert left == sorted([folders[2].name, folders[3].name, "notes"])
    assert (tmp_path / "latest").resolve() == folders[3].resolve()


def test_a_fusion_run_is_built_from_earlier_runs(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragmetrics.nightly.config import load_config
    from ragmetrics.nightly.pipeline import run_pipeline

    runs = [
        {"source": "dataset", "name": "pipeline"},
        {"source": "file", "path": "weaker.trec", "name": "weaker"},
        {"source": "fusion", "name": "hybrid", "runs": ["pipeline", "weaker"], "method": "rrf"},
    ]
    report = run_pipeline(load_config(write_config(runs=runs)), progress=False, write=False).report
    assert [r.name for r in report.runs] == ["pipeline", "weaker", "hybrid"]
    assert report.run("hybrid").aggregate["ndcg@10"] is not None
    bad = [*runs[:2], {"source": "fusion", "name": "h", "runs": ["pipeline", "later"]}]
    code, err = _run(["run", str(write_config(runs=bad)), "--no-progress"], capsys)
    assert code == 2 and "'later' must be runs listed before it" in err
