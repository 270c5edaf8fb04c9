"""Nights over time: history.jsonl grows by a line a night, history.html shows the series with the gate's
outcomes and every change of data or judge, the trend test flags a slow drift (and only a drift), and
`ragmetrics history DIR` prints the same."""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from ragmetrics.cli import main
from ragmetrics.history.analysis import analyse, pinned_baseline, worse_since
from ragmetrics.history.changes import changes_between
from ragmetrics.history.record import JudgeStamp, NightRecord, SeriesPoint
from ragmetrics.history.store import HISTORY_FILE, load_history
from ragmetrics.history.trend import mann_kendall

from .conftest import ConfigWriter
from .helpers import TOPICS, filler, latest, relevant, run_cli


def _nightly_config(write_config: ConfigWriter, qa_dir: Path, local_model: str) -> Path:
    return write_config(
        runs=[
            {"source": "dataset", "name": "pipeline"},
            {"source": "file", "path": "tonight.trec", "name": "retriever"},
        ],
        judge={
            "metrics": ["context_relevancy"],
            "backend": "local",
            "local_model": local_model,
            "cache_path": str(qa_dir / "cache.sqlite"),
        },
        baseline={"max_drop": 0.0},
        output={"dir": "out", "plots": False, "formats": ["json", "html"]},
    )


def test_six_nights_show_an_injected_drop_and_a_judge_change(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's demo: the built-in shape of a night six times; the retriever's output degraded from night 3
    on (the gate fails it against the pinned first night), the judge's model changed on night 5."""
    good, bad = qa_dir / "good.trec", qa_dir / "bad.trec"
    for path, first, second in ((good, relevant, filler), (bad, filler, relevant)):
        path.write_text(
            "".join(
                f"q{i:02d} Q0 {first(t)} 1 10 r\nq{i:02d} Q0 {second(t)} 2 9 r\n"
                for i, (t, *_rest) in enumerate(TOPICS)
            ),
            encoding="utf-8",
        )  # the relevant passage first on every query; in bad.trec second
    out = qa_dir / "out"
    codes = []
    first_report: Path | None = None
    for night in range(6):
        shutil.copy(good if night < 2 else bad, qa_dir / "tonight.trec")
        config = _nightly_config(write_config, qa_dir, "minilm" if night < 4 else "e5")
        argv = [str(config)] + (["--baseline", str(first_report)] if first_report else [])
        code, _out, _err = run_cli(argv, capsys)
        codes.append(code)
        if first_report is None:
            first_report = latest(out) / "report.json"
    assert codes[0] == 0 and codes[1] == 0  # same outputs as the baseline
    assert codes[2] == 1  # the injected drop: a regression against the pinned first night
    assert codes[4] in (
        1,
        4,
    )  # judge changed: context_relevancy not comparable (the drop still fails retrieval)

    lines = (out / HISTORY_FILE).read_text().splitlines()
    assert len(lines) == 6
    history = load_history(out)
    assert not history.problems and [r.status for r in history.records][:3] == [
        "no_baseline",
        "ok",
        "regression",
    ]
    assert pinned_baseline(history.records) == 0
    notes = changes_between(history.records)
    judge_notes = [a for a in notes if a.kind == "judge"]
    assert judge_notes and all(a.night == 4 for a in judge_notes)
    assert any("embedding model" in a.text for a in judge_notes)

    page = (out / "history.html").read_text()
    assert "http://" not in page and "https://" not in page and "<script" not in page  # self-contained
    assert page.count("class='series") == len(history.records[-1].points)
    assert "data-status='regression'" in page and "data-kind='config judge'" in page
    assert "judge embedding model" in page
    # the retriever's drop: its queries listed as worse than at the pinned baseline, since night 3
    worse = worse_since(history.records, "retriever", "ndcg@10", 0)
    assert worse and all(q.since == 2 for q in worse)
    assert "worse than at the reference" in page

    assert main(["history", str(out), "--no-page"]) == 0
    printed = capsys.readouterr().out
    assert "6 nights" in printed and "pinned baseline" in printed and "What changed" in printed


def _record(night: int, means: dict[str, float], *, model: str = "m1", truth: str = "t1") -> NightRecord:
    start = datetime(2026, 11, 1, 2, 0, tzinfo=UTC)
    return NightRecord(
        folder=f"2026-11-{night + 1:02d}T020000Z",
        created_at=start + timedelta(days=night),
        name="drift",
        status="ok",
        truth_fingerprint=truth,
        judges={"rag": JudgeStamp(backend="openai", model=model)},
        points=[
            SeriesPoint(
                run="rag",
                metric=m,
                mean=v,
                ci_low=v - 0.02,
                ci_high=v + 0.02,
                n=50,
                judged=m == "faithfulness",
            )
            for m, v in means.items()
        ],
        per_query={"rag": {f"q{i}": {m: v + (i - 2) * 0.01 for m, v in means.items()} for i in range(5)}},
    )


def test_a_slow_decline_is_flagged_and_noise_is_not() -> None:
    """Faithfulness loses ~0.01 a night (no night-over-night step is large); ndcg wanders around 0.7."""
    rng = random.Random(7)
    records = [
        _record(n, {"faithfulness": 0.80 - 0.01 * n, "ndcg@10": 0.70 + rng.uniform(-0.01, 0.01)})
        for n in range(8)
    ]
    drifts = {
        d.metric: d
        for d in analyse(
            records, changes_between(records), nights=7, alpha=0.05, correction="holm", baseline=0
        )
    }
    assert drifts["faithfulness"].flagged and drifts["faithfulness"].test is not None
    assert drifts["faithfulness"].test.slope == pytest.approx(-0.01)
    assert drifts["faithfulness"].reference_is_baseline and drifts["faithfulness"].delta == pytest.approx(
        -0.07
    )
    assert not drifts["ndcg@10"].flagged
    # rising is not drift
    up = [_record(n, {"faithfulness": 0.60 + 0.01 * n}) for n in range(8)]
    (rise,) = analyse(up, changes_between(up), nights=7, alpha=0.05, correction="holm", baseline=0)
    assert rise.p_corrected is not None and rise.p_corrected < 0.05 and not rise.flagged


def test_a_judge_change_starts_a_new_series_for_judged_metrics_only() -> None:
    records = [
        _record(
            n, {"faithfulness": 0.80 - 0.01 * n, "ndcg@10": 0.80 - 0.01 * n}, model="m1" if n < 5 else "m2"
        )
        for n in range(8)
    ]
    notes = changes_between(records)
    assert [(a.night, a.kind) for a in notes] == [(5, "judge")]
    drifts = {
        d.metric: d for d in analyse(records, notes, nights=7, alpha=0.05, correction="holm", baseline=0)
    }
    faith, ndcg = drifts["faithfulness"], drifts["ndcg@10"]
    assert faith.segment_start == 5 and faith.test is None and "needs 5" in faith.note
    assert not faith.reference_is_baseline  # the baseline was judged by another model
    assert ndcg.segment_start == 0 and ndcg.flagged and ndcg.reference_is_baseline


def test_a_data_change_breaks_every_series() -> None:
    records = [_record(n, {"ndcg@10": 0.8 - 0.01 * n}, truth="t1" if n < 3 else "t2") for n in range(8)]
    (drift,) = analyse(records, changes_between(records), nights=7, alpha=0.05, correction="holm", baseline=0)
    assert drift.segment_start == 3 and len(drift.window) == 5 and not drift.reference_is_baseline


@pytest.mark.parametrize("n", [5, 6, 8, 11])
def test_mann_kendall_p_is_kendalls_exact_tau_test(n: int) -> None:
    """Without ties, Mann-Kendall is Kendall's tau of the values against time: scipy's exact p."""
    from scipy.stats import kendalltau

    rng = random.Random(n)
    for _ in range(5):
        values = [rng.random() for _ in range(n)]
        expected = kendalltau(list(range(n)), values, method="exact").pvalue
        assert mann_kendall(values).p_value == pytest.approx(expected, rel=1e-9)
    assert mann_kendall(list(range(5))).p_value == pytest.approx(2 / 120)


def test_mann_kendall_with_ties_uses_the_corrected_variance() -> None:
    from scipy.stats import kendalltau

    values = [0.5, 0.5, 0.4, 0.4, 0.3, 0.35, 0.3, 0.2]
    test = mann_kendall(values)
    assert not test.exact and test.s < 0
    # scipy's asymptotic tau-b p without continuity correction is close; ours adds the correction (larger p)
    loose = kendalltau(list(range(len(values))), values, method="asymptotic").pvalue
    assert loose < test.p_value < loose * 1.6


def test_a_damaged_history_line_is_reported_and_the_rest_read(tmp_path: Path) -> None:
    good = _record(0, {"ndcg@10": 0.7})
    (tmp_path / HISTORY_FILE).write_text(good.model_dump_json() + "\n{not json\n", encoding="utf-8")
    history = load_history(tmp_path)
    assert len(history.records) == 1
    assert len(history.problems) == 1 and f"{HISTORY_FILE}:2: not a night record" in history.problems[0]


def test_history_reads_an_old_output_root_without_history_jsonl(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(output={"dir": "out", "plots": False, "formats": ["json"], "history": False})
    for _ in range(2):
        assert run_cli([str(config)], capsys)[0] == 0
    out = qa_dir / "out"
    assert not (out / HISTORY_FILE).exists() and not (out / "history.html").exists()
    assert main(["history", str(out)]) == 0
    assert "2 nights" in capsys.readouterr().out and (out / "history.html").exists()
    assert main(["history", str(qa_dir / "missing")]) == 2


def test_keep_never_deletes_the_pinned_baseline(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(output={"dir": "out", "plots": False, "formats": ["json"], "keep": 1})
    assert run_cli([str(config)], capsys)[0] == 0
    base = latest(qa_dir / "out") / "report.json"
    data = yaml.safe_load(config.read_text())
    data["baseline"] = {"path": str(base)}
    config.write_text(yaml.safe_dump(data))
    for _ in range(2):
        assert run_cli([str(config)], capsys)[0] == 0
    assert base.exists()
    assert len(load_history(qa_dir / "out").records) == 3  # the pruned night's line stays


def test_a_baseline_through_latest_is_pinned_to_the_folder_it_was_read_from(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    """baseline.path: out/latest/report.json is last night's report when read; by the time the history is drawn
    `latest` points at tonight. The record keeps the folder it was read from."""
    config = write_config(output={"dir": "out", "plots": False, "formats": ["json"]})
    data = yaml.safe_load(config.read_text())
    for night in range(3):
        if night == 1:
            data["baseline"] = {"path": "out/latest/report.json"}
            config.write_text(yaml.safe_dump(data))
        assert run_cli([str(config)], capsys)[0] == 0
    records = load_history(qa_dir / "out").records
    assert [r.baseline_folder for r in records] == [None, records[0].folder, records[1].folder]
    assert pinned_baseline(records) == 1
