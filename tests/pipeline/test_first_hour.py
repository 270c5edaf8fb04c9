"""What a newcomer meets first (issue 40): data without ids from Python, broken lines named by their own line
number and skippable, a Python loader for a QA file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ragmetrics
from ragmetrics.errors import InputError

ROWS = [
    {
        "question": "What is called the Red Planet?",
        "contexts": ["Mars is called the Red Planet."],
        "answer": "Mars.",
    },
    {
        "question": "What is the largest planet?",
        "contexts": ["Jupiter is the largest planet."],
        "answer": "Jupiter.",
    },
    {"question": "Which planet has rings?", "contexts": ["Saturn has bright rings."], "answer": "Saturn."},
]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_qa_numbers_rows_without_ids_and_evaluates(tmp_path: Path) -> None:
    path = _write(tmp_path / "qa.jsonl", [json.dumps(r) for r in ROWS])
    dataset = ragmetrics.read_qa(path)
    assert [s.id for s in dataset] == ["row-1", "row-2", "row-3"] and len(dataset) == 3
    judge = ragmetrics.make_judge(ragmetrics.JudgeSettings(backend="local"))
    result = ragmetrics.evaluate_rag(dataset, ["faithfulness"], judge, progress=False)
    assert sorted(result.per_query) == ["row-1", "row-2", "row-3"]
    assert (
        ragmetrics.evaluate_rag(ROWS, ["faithfulness"], judge, progress=False).per_query.keys()
        == result.per_query.keys()
    )


def test_a_broken_line_is_named_by_its_own_line_number(tmp_path: Path) -> None:
    lines = [json.dumps(ROWS[0]), "", json.dumps(ROWS[1]), '{"question": broken', json.dumps(ROWS[2])]
    path = _write(tmp_path / "qa.jsonl", lines)
    with pytest.raises(InputError) as err:
        ragmetrics.read_qa(path)
    assert err.value.line == 4 and "invalid JSON" in str(err.value) and str(path) in str(err.value)


def test_on_bad_row_skip_skips_broken_lines_and_keeps_row_numbers(tmp_path: Path) -> None:
    bad = dict(ROWS[2], question="   ")
    lines = [json.dumps(ROWS[0]), '{"question": broken', json.dumps(ROWS[1]), "[1, 2]", json.dumps(bad)]
    dataset = ragmetrics.read_qa(_write(tmp_path / "qa.jsonl", lines), on_bad_row="skip")
    assert [s.id for s in dataset] == ["row-1", "row-3"]
    described = [b.describe("qa.jsonl") for b in dataset.skipped]
    assert [b.row for b in dataset.skipped] == [2, 4, 5]
    assert "line 2: invalid JSON" in described[0] and "line 4: expected a JSON object" in described[1]
    assert "row 5, field 'question'" in described[2]


def test_report_folders_and_history_page_can_be_published(write_config, qa_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from .helpers import latest, run_cli

    code, _, _ = run_cli([str(write_config())], capsys)
    assert code == 0
    folder = latest(qa_dir / "out")
    assert oct(folder.stat().st_mode & 0o777) == "0o755"
    assert oct((folder / "report.json").stat().st_mode & 0o777) == "0o644"
    assert oct((qa_dir / "out" / "history.html").stat().st_mode & 0o777) == "0o644"


def test_bless_pins_a_night_the_next_one_gates_against_and_history_knows(
    write_config, qa_dir: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    from ragmetrics.cli import main

    from .helpers import latest, qa_rows, run_cli, write_jsonl

    config = write_config(baseline={"max_drop": 0.02}, output={"dir": "out", "plots": False, "keep": 1})
    assert run_cli([str(config)], capsys)[0] == 0
    night = latest(qa_dir / "out")
    assert main(["bless", str(qa_dir / "out" / "latest")]) == 0
    pin = qa_dir / "out" / "baseline"
    assert pin.is_symlink() and pin.resolve() == night.resolve()
    capsys.readouterr()

    write_jsonl(qa_dir / "qa.jsonl", qa_rows(degrade=True))
    code, out, err = run_cli([str(config)], capsys)
    assert code == 1, err
    assert "regression gate: FAILED" in out
    assert night.is_dir(), "keep: 1 must not prune the pinned night"
    history = [json.loads(line) for line in (qa_dir / "out" / "history.jsonl").read_text().splitlines()]
    assert history[-1]["baseline_folder"] == night.name
    assert "pinned baseline: none" not in (qa_dir / "out" / "history.html").read_text(encoding="utf-8")


def test_bless_refuses_what_is_not_a_night(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from ragmetrics.cli import main

    (tmp_path / "somewhere").mkdir()
    assert main(["bless", str(tmp_path / "somewhere")]) == 2
    assert "no report.json" in capsys.readouterr().err


def test_score_a_file_with_no_config(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from ragmetrics.cli import main

    rows = [dict(r, retrieved_ids=["d1", "d2"], relevant_ids=["d2"]) for r in ROWS]
    path = _write(tmp_path / "qa.jsonl", [json.dumps(r) for r in rows])
    assert (
        main(
            [
                "score",
                str(path),
                "-m",
                "faithfulness",
                "mrr",
                "--format",
                "json",
                "--cache",
                str(tmp_path / "c.sqlite"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert '"mrr": 0.5' in out and '"faithfulness"' in out and '"row-3"' in out
    assert main(["score", str(path), "-m", "faithfullness"]) == 2
    assert "did you mean 'faithfulness'" in capsys.readouterr().err


def test_power_plans_the_gates_own_pairs_on_a_one_run_night(write_config, qa_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from ragmetrics.cli import main

    from .helpers import latest, qa_rows, run_cli, write_jsonl

    config = write_config(baseline={"max_drop": 0.02})
    assert run_cli([str(config)], capsys)[0] == 0
    assert main(["bless", str(qa_dir / "out" / "latest")]) == 0
    write_jsonl(qa_dir / "qa.jsonl", qa_rows(degrade=True))
    run_cli([str(config)], capsys)
    capsys.readouterr()
    assert main(["power", str(latest(qa_dir / "out") / "report.json")]) == 0
    out = capsys.readouterr().out
    assert "the gate's pairs" in out and "pipeline (baseline)" in out and "nothing to plan" not in out
    assert "ndcg@10" in out and "0.02" in out


def test_generator_shorthand_and_a_generator_inside_a_run(tmp_path: Path) -> None:
    from ragmetrics.errors import ConfigError
    from ragmetrics.nightly.config import parse_config

    base = {"dataset": {"builtin": "pydocs"}, "retrieval": {"metrics": ["ndcg@10"]}}
    runs = [{"source": "retriever", "retriever": "bm25"}]
    config = parse_config(
        {**base, "runs": runs, "generator": "my_pkg.rag:generate"}, base_dir=tmp_path, source="c.yaml"
    )
    assert config.generator is not None and config.generator.target == "my_pkg.rag:generate"
    with pytest.raises(ConfigError) as err:
        parse_config(
            {**base, "runs": [{**runs[0], "generator": "my_pkg.rag:generate"}]},
            base_dir=tmp_path,
            source="c.yaml",
        )
    assert "runs[0].generator: unknown key; 'generator' is a top-level section" in str(err.value)


def test_history_counts_every_query_worse_not_the_ten_it_lists() -> None:
    from datetime import UTC, datetime, timedelta

    from ragmetrics.history.page import worse_table
    from ragmetrics.history.record import NightRecord

    start = datetime(2026, 11, 1, tzinfo=UTC)
    records = [
        NightRecord(
            folder=f"n{n}", created_at=start + timedelta(days=n), name="x", status="ok",
            per_query={"rag": {f"q{i:02d}": {"mrr": 1.0 if n == 0 else 0.5 - i / 100} for i in range(16)}},
        )
        for n in range(3)
    ]  # fmt: skip
    html = worse_table(records, "rag", "mrr", 0)
    assert "16 queries worse than at the reference (the 10 most hurt below)" in html
    assert html.count("<tr><td class='l'>") == 10


def test_plots_of_no_change_and_of_one_run_read_cleanly() -> None:
    pytest.importorskip("matplotlib")
    from ragmetrics import Qrels, Run, compare
    from ragmetrics.render.plots import box_plot, difference_plot

    qrels = Qrels.from_dict({f"q{i}": {"d": 1} for i in range(5)})
    same = [Run.from_dict({f"q{i}": {"d": 1.0} for i in range(5)}, name=n) for n in ("a", "b")]
    report = compare(qrels, same, ["mrr"])
    figure = difference_plot(report, report.comparisons[0])
    figure.canvas.draw()
    axis = figure.axes[0]
    assert axis.get_ylim() == (-0.05, 0.05) and axis.yaxis.get_offset_text().get_text() == ""
    from ragmetrics import compare_results
    from ragmetrics.schema import RunMetadata, RunResult

    metric = "noise_sensitivity_irrelevant"  # a long name: the title wraps to the figure, not past its edge
    runs = [
        RunResult(
            name=n,
            per_query={f"q{i}": {metric: i / 10} for i in range(64)},
            metadata=RunMetadata(metrics=[metric]),
        )
        for n in ("a", "b")
    ]
    long = compare_results(runs, [metric])
    single = box_plot(long.model_copy(update={"runs": long.runs[:1]}), metric)
    single.canvas.draw()
    title = single.axes[0].title.get_window_extent()
    assert title.x0 >= 0 and title.x1 <= single.bbox.width, "the title must fit the figure"


def test_history_ticks_are_round_numbers() -> None:
    from ragmetrics.history.page import nice_ticks

    assert nice_ticks(-0.08, 1.08) == ([0.0, 0.25, 0.5, 0.75, 1.0], 2)
    ticks, decimals = nice_ticks(0.307, 0.413)
    assert ticks == [0.325, 0.35, 0.375, 0.4] and decimals == 3
    assert nice_ticks(-0.01, 0.01)[0] == [-0.01, -0.005, 0.0, 0.005, 0.01]


def test_a_dead_pipeline_endpoint_trips_the_breaker() -> None:
    import asyncio
    import socket

    from ragmetrics.judge.openai.breaker import Breaker
    from ragmetrics.nightly.config import HttpTarget
    from ragmetrics.nightly.target_calls import call_all
    from ragmetrics.nightly.targets import HttpCaller

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens once closed
    caller = HttpCaller(
        HttpTarget(url=f"http://127.0.0.1:{port}/rag"), concurrency=4, timeout_s=5, retries=3, version="v"
    )
    caller._breaker = Breaker(
        failures=4, min_outage_s=0.0, name=f"the endpoint {caller.label}"
    )  # a short fuse
    inputs = [(f"q{n}", {"id": f"q{n}", "question": "?"}) for n in range(40)]
    records = asyncio.run(call_all(caller, "pipeline", inputs, None, concurrency=4))
    assert all(r.output is None and r.cause == "connection_error" for r in records)
    assert sum("not sent" in (r.message or "") for r in records) >= 30
