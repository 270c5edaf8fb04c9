"""Alignment of the local judge: shuffled labels give no held-out gain and write no aligned metric; bad labels
get errors naming the file, line and field (exit 2 at the CLI); the pieces (cut, isotonic map, head, folds)
checked by hand; an aligned local metric is applied by `judge: {aligned: DIR}`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ragmetrics.alignment import align_judge
from ragmetrics.alignment.folds import stratified_folds
from ragmetrics.cli.main import main
from ragmetrics.errors import ConfigError, InputError
from ragmetrics.judge.aligned.artifact import load_aligned
from ragmetrics.judge.aligned.calibration import fit_cut, fit_isotonic
from ragmetrics.judge.aligned.head import PENALTIES, fit_head
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.trust.labels import labels_from_rows

TOPICS = [
    ("the river", "The river floods every spring when the snow melts in the mountains."),
    ("the bridge", "The bridge was opened in 1932 and carries eight lanes of traffic."),
    ("the library", "The library lends books for three weeks and charges no fees."),
    ("the market", "The market opens at seven on Saturdays and closes at noon."),
    ("the museum", "The museum holds a collection of maps from the sixteenth century."),
    ("the station", "The station has four platforms and a ticket office on the north side."),
]


def _samples(n: int) -> list[dict[str, object]]:
    out = []
    for i in range(n):
        subject, fact = TOPICS[i % len(TOPICS)]
        other = TOPICS[(i + 1) % len(TOPICS)][1]
        answer = fact if i % 3 else other
        out.append({"id": f"q{i:03d}", "question": f"What do we know about {subject} ({i})?",
                    "contexts": [fact], "answer": answer})  # fmt: skip
    return out


def _settings(tmp_path: Path) -> JudgeSettings:
    return JudgeSettings(backend="local", cache_path=tmp_path / "verdicts.sqlite")


def test_shuffled_labels_give_no_gain_and_write_nothing(tmp_path: Path) -> None:
    samples = _samples(60)
    rng = random.Random(3)
    values = [1.0] * 30 + [0.0] * 30
    rng.shuffle(values)
    rows = [
        (i + 1, {"sample_id": s["id"], "metric": "faithfulness", "label": v})
        for i, (s, v) in enumerate(zip(samples, values, strict=True))
    ]
    out = tmp_path / "aligned"
    report = align_judge(samples, labels_from_rows(rows, source="shuffled.csv"), "faithfulness",
                         judge=_settings(tmp_path), out_dir=out, folds=3)  # fmt: skip
    assert report.kept == [] and report.written is None
    assert not (out / "aligned.json").exists() and (out / "faithfulness.alignment.json").exists()
    for row in report.figures:
        if row.statistic in ("balanced_accuracy", "roc_auc") and row.after.low is not None:
            assert row.after.low <= 0.5 <= (row.after.high or 1.0)  # chance is inside the interval
    assert [p.share for p in report.curve] == [0.25, 0.5, 0.75, 1.0]
    assert report.curve_note.startswith("learning curve of head + calibration")
    assert "nothing aligned" in report.verdict
    html = (out / "faithfulness.alignment.html").read_text()
    assert "Held-out agreement" in html and "<script" not in html
    with pytest.raises(ConfigError, match=r"holds no aligned metric.*Label more samples.*if_not_aligned: unaligned"):
        load_aligned(out)
    # where the judge is wrong, worst first: on the other side of the threshold, with its reasons
    wrong = report.disagreements
    assert wrong and len(wrong) == report.confusion_before["people_yes_judge_no"] + report.confusion_before["people_no_judge_yes"]
    assert all((d.judge >= 0.5) != (d.label >= 0.5) and d.question and d.reason for d in wrong)
    distances = [abs(d.judge - d.label) for d in wrong]
    assert distances == sorted(distances, reverse=True)
    assert "Where the judge disagrees with people" in html and wrong[0].sample_id in html


def test_a_night_on_an_alignment_that_kept_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    samples = _samples(12)
    data = tmp_path / "qa.jsonl"
    data.write_text("".join(json.dumps(s) + "\n" for s in samples), encoding="utf-8")
    folder = tmp_path / "aligned"
    folder.mkdir()
    (folder / "faithfulness.alignment.json").write_text(json.dumps(
        {"metric": "faithfulness", "kept": [], "verdict": "nothing aligned: held-out gain covers 0"}), encoding="utf-8")  # fmt: skip
    config = {"dataset": {"path": str(data)}, "output": {"dir": str(tmp_path / "out"), "formats": ["json"]},
              "judge": {"backend": "local", "metrics": ["faithfulness"], "aligned": str(folder), "cache_path": None}}  # fmt: skip
    path = tmp_path / "night.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["run", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("holds no aligned metric") == 1 and "Label more samples" in err  # said once, what to do
    config["judge"]["if_not_aligned"] = "unaligned"
    path.write_text(yaml.safe_dump(config))
    assert main(["run", str(path), "--no-progress"]) == 0
    report = json.loads((tmp_path / "out" / "latest" / "report.json").read_text(encoding="utf-8"))
    assert any(n.startswith("judge not aligned:") for n in report["metadata"]["notes"])


def test_bad_labels_are_named(tmp_path: Path) -> None:
    samples = _samples(12)
    settings = _settings(tmp_path)

    def rows(values: list[float], ids: list[str] | None = None) -> object:
        ids = ids or [str(s["id"]) for s in samples][: len(values)]
        return labels_from_rows(
            [
                (i + 2, {"sample_id": q, "metric": "faithfulness", "label": v})
                for i, (q, v) in enumerate(zip(ids, values, strict=True))
            ],
            source="labels.csv",
        )

    with pytest.raises(InputError, match="unknown sample id 'nope'") as err:
        align_judge(
            samples,
            rows([1, 0, 1, 0], ["q000", "q001", "nope", "q003"]),
            "faithfulness",
            judge=settings,
            folds=2,
        )  # type: ignore[arg-type]
    assert "labels.csv, line 4" in str(err.value)
    with pytest.raises(InputError, match="all on one side"):
        align_judge(samples, rows([1, 1, 1, 1]), "faithfulness", judge=settings, folds=2)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="labels of 'faithfulness' for 5 folds"):
        align_judge(samples, rows([1, 0, 1, 0]), "faithfulness", judge=settings, folds=5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no labels of metric 'context_recall'"):
        align_judge(samples, rows([1, 0, 1, 0]), "context_recall", judge=settings, folds=2)  # type: ignore[arg-type]


def test_cli_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text("".join(json.dumps(s) + "\n" for s in _samples(8)))
    labels = tmp_path / "labels.csv"
    labels.write_text("sample_id,metric,label\nq000,faithfulness,1\nq001,faithfulness,maybe\n")
    code = main(["align", str(labels), "-m", "faithfulness", "--samples", str(qa), "-o", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "labels.csv" in err and "line 3" in err and "label" in err
    labels.write_text(
        "sample_id,metric,label\n" + "".join(f"q{i:03d},faithfulness,{i % 2}\n" for i in range(8))
    )
    assert (
        main(
            [
                "align",
                str(labels),
                "-m",
                "faithfulness",
                "--samples",
                str(qa),
                "-o",
                str(tmp_path / "o"),
                "--dry-run",
                "--folds",
                "2",
            ]
        )
        == 0
    )
    assert "judge as it is" in capsys.readouterr().out


def test_cut_isotonic_head_and_folds_by_hand() -> None:
    cut = fit_cut([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0, 0, 0, 1, 1, 1])
    assert cut.cut == pytest.approx(0.5)
    shifted = fit_cut([0.6, 0.7, 0.75, 0.85, 0.9, 0.95], [0, 0, 0, 1, 1, 1])
    assert shifted.cut == pytest.approx(0.8)
    assert (
        shifted.apply([0.8])[0] == pytest.approx(0.5)
        and shifted.apply([0.7])[0] < 0.5 <= shifted.apply([0.85])[0]
    )
    iso = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0.0, 1.0, 0.0, 1.0])
    assert list(np.diff(iso.knots_y)) == sorted(np.diff(iso.knots_y)) or all(np.diff(iso.knots_y) >= 0)
    assert iso.apply([0.0, 1.0]).tolist() == [0.0, 1.0]
    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.5).astype(float)
    # the judge's own score is noise; a second signal carries the labels: the head finds it, penalty small
    rows = [{"judge_logit": float(rng.normal()), "signal": float(v + rng.normal(scale=0.3))} for v in y]
    head = fit_head(rows, y.tolist())
    p = head.probability(rows)
    assert np.mean((p >= 0.5) == (y >= 0.5)) > 0.85 and head.penalty < PENALTIES[0]
    # a signal that is noise too: the strongest penalty keeps it near 0
    noise = [{"judge_logit": r["judge_logit"], "signal": float(rng.normal())} for r in rows]
    flat = fit_head(noise, y.tolist())
    assert abs(flat.weights()["signal"]) < 0.1
    folds = stratified_folds([1.0] * 10 + [0.0] * 6, 3, seed=1)
    for f in range(3):
        members = [i for i in range(16) if folds[i] == f]
        assert 1 <= sum(1 for i in members if i >= 10) <= 3 and 3 <= sum(1 for i in members if i < 10) <= 4


def test_graded_labels_and_a_run_column(tmp_path: Path) -> None:
    samples = _samples(24)
    rows = [
        (i + 2, {"sample_id": s["id"], "metric": "faithfulness", "label": (i * 7) % 4, "run": "rag"})
        for i, s in enumerate(samples)
    ]
    from ragmetrics.trust.labels import labels_from_rows as from_rows

    labels = from_rows(rows, source="graded.csv", scale=3)
    report = align_judge(
        samples, labels, "faithfulness", judge=_settings(tmp_path), folds=2, steps=["calibration"]
    )
    assert report.labels["kind"] == "graded" and report.labels["run"] == "rag"  # the one run the labels name
    assert "spearman" in {f.statistic for f in report.figures} and "kendall" in {
        f.statistic for f in report.figures
    }
    assert all("isotonic" in c for c in report.steps[0].choices)
    two = from_rows([*rows, (99, {"sample_id": "q000", "metric": "faithfulness", "label": 1, "run": "other"})],
                    source="graded.csv", scale=3)  # fmt: skip
    with pytest.raises(InputError, match="runs other, rag: say which one"):
        align_judge(samples, two, "faithfulness", judge=_settings(tmp_path), folds=2)
    report = align_judge(
        samples, two, "faithfulness", judge=_settings(tmp_path), folds=2, run="rag", steps=["calibration"]
    )
    assert report.n == 24


def test_a_head_is_refused_for_another_backend_or_embedder(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from ragmetrics.judge.aligned.artifact import AlignedMetric, AlignedSet, HeldOutFigure, LabelProvenance
    from ragmetrics.judge.select import make_judge

    head = fit_head([{"judge_logit": float(x)} for x in range(-3, 4)], [0, 0, 0, 1, 1, 1, 1], penalty=10.0)
    entry = AlignedMetric(
        metric="faithfulness", backend="local", model="m", embedder="e5", steps=["head"], head=head,
        labels=LabelProvenance(source="l.csv", sha256="0" * 64, count=7, kind="binary", folds=2, seed=0),
        heldout=HeldOutFigure(statistic="roc_auc", n=7, before=0.5, after=0.9), created_at=datetime.now(UTC),
        ragmetrics_version="test",
    )  # fmt: skip
    (tmp_path / "aligned.json").write_text(AlignedSet(metrics={"faithfulness": entry}).model_dump_json())
    with pytest.raises(ConfigError, match="fitted with local_model 'e5', this judge uses 'minilm'"):
        make_judge(JudgeSettings(backend="local", local_model="minilm", aligned=tmp_path, cache_path=None))
    assert (
        make_judge(
            JudgeSettings(backend="local", local_model="e5", aligned=tmp_path, cache_path=None)
        ).backend
        == "local"
    )
    with pytest.raises(ConfigError, match="aligned for the local judge, but this judge is openai"):
        make_judge(
            JudgeSettings(
                backend="openai", base_url="http://127.0.0.1:9/v1", aligned=tmp_path, cache_path=None
            )
        )
