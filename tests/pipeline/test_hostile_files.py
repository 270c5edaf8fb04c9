"""Issue 41: every file the tool reads goes through one bounded regular-file reader (ragmetrics._textfile), and
the history survives records edited by hand or by another tool."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest
import yaml

from ragmetrics._textfile import open_regular, read_bytes, read_utf8
from ragmetrics.cli import main
from ragmetrics.errors import InputError
from ragmetrics.history.store import HISTORY_FILE, load_history
from ragmetrics.nightly.artifacts import pin_baseline, prune
from ragmetrics.nightly.gate import load_baseline

from .conftest import ConfigWriter
from .helpers import latest, run_cli
from .test_history import _record


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    """A device, a link to it, a FIFO, a dangling link and a folder, each where a file is expected."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "folder").mkdir()
    return {
        "device": Path("/dev/zero"),
        "link to a device": tmp_path / "zero",
        "fifo": fifo,
        "dangling link": tmp_path / "dangling",
        "folder": tmp_path / "folder",
    }


REASONS = {
    "device": "not a regular file (a device)",
    "link to a device": "not a regular file (a device)",
    "fifo": "not a regular file (a FIFO)",
    "dangling link": "a symbolic link to a file that does not exist",
    "folder": "is a directory",
}


def _in_time(call: object, seconds: float = 10.0) -> BaseException | None:
    """Run `call` in a thread; fail the test if it does not return (a FIFO read would block forever)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()  # type: ignore[operator]
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"did not return within {seconds} s"
    return outcome[0]


@pytest.mark.parametrize("kind", list(REASONS))
def test_the_reader_refuses_what_is_not_a_regular_file_quickly(hostile: dict[str, Path], kind: str) -> None:
    for read in (read_bytes, read_utf8, lambda p: open_regular(p).close()):
        error = _in_time(lambda read=read: read(hostile[kind]))
        assert isinstance(error, InputError) and REASONS[kind] in str(error), error
        assert str(hostile[kind]) in str(error)


def test_whole_file_reads_stop_at_their_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 3000)
    assert read_bytes(big, limit=3000) == b"x" * 3000
    with pytest.raises(InputError, match="larger than"):
        read_bytes(big, limit=2999)
    monkeypatch.setenv("RAGMETRICS_MAX_FILE_MB", "0.001")  # 1,048 bytes
    with pytest.raises(InputError, match="RAGMETRICS_MAX_FILE_MB"):
        read_bytes(big)


@pytest.mark.parametrize("kind", ["device", "link to a device", "fifo"])
def test_every_reader_of_the_cli_refuses_them_with_exit_2(
    hostile: dict[str, Path], kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(hostile[kind])
    qrels = tmp_path / "q.txt"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    for argv in (
        ["run", path],  # a config
        ["retrieval", str(qrels), path, "-m", "ndcg@10"],  # a run file
        ["score", path, "-m", "exact_match"],  # a QA dataset
    ):
        code = _in_time(lambda argv=argv: _exit(main(argv)))
        assert isinstance(code, SystemExit) and code.code == 2, (argv, code)
        assert REASONS[kind] in capsys.readouterr().err, argv


def _exit(code: int) -> None:
    raise SystemExit(code)


@pytest.mark.parametrize("kind", ["device", "link to a device", "fifo"])
def test_a_baseline_that_is_not_a_file_is_an_input_error(hostile: dict[str, Path], kind: str) -> None:
    error = _in_time(lambda: load_baseline(hostile[kind]))
    assert isinstance(error, InputError) and REASONS[kind] in str(error)


def _write_history(root: Path, lines: list[str]) -> None:
    root.mkdir(exist_ok=True)
    (root / HISTORY_FILE).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda r: r.update(created_at="2026-11-02T02:00:00"), "timezone"),  # no time zone
        (lambda r: r["points"][0].update(mean=float("nan")), "finite"),
        (lambda r: r["points"][0].update(ci_high=float("inf")), "finite"),
        (lambda r: r.update(folder="javascript:alert(1)"), "not a folder name"),
        (lambda r: r.update(folder="../elsewhere"), "not a folder name"),
    ],
)
def test_a_hostile_history_record_is_reported_and_skipped(
    tmp_path: Path, change: object, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _record(0, {"ndcg@10": 0.7})
    bad = json.loads(_record(1, {"ndcg@10": 0.6}).model_dump_json())
    change(bad)  # type: ignore[operator]
    _write_history(tmp_path, [good.model_dump_json(), json.dumps(bad), _record(2, {"ndcg@10": 0.7}).model_dump_json()])
    history = load_history(tmp_path)
    assert [r.folder for r in history.records] == [good.folder, "2026-11-03T020000Z"]
    assert len(history.problems) == 1 and problem in history.problems[0].lower()
    assert main(["history", str(tmp_path)]) == 0  # drawn from the good records, the problem said
    page = (tmp_path / "history.html").read_text(encoding="utf-8")
    links = re.findall(r"href=['\"]([^'\"]*)['\"]", page)
    assert links and all(re.fullmatch(r"2026-11-0\dT020000Z/report\.html", link) for link in links), links


@pytest.mark.parametrize("kind", ["link to a device", "fifo"])
def test_a_history_file_that_is_not_a_file_is_refused(hostile: dict[str, Path], kind: str, tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    os.replace(hostile[kind], root / HISTORY_FILE)
    error = _in_time(lambda: load_history(root))
    assert isinstance(error, InputError) and REASONS[kind] in str(error)


def test_pruning_never_deletes_the_pinned_night_whatever_the_gate_compared_with(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    nights = []
    for day in range(1, 6):
        folder = root / f"2026-11-0{day}T020000Z"
        folder.mkdir()
        (folder / "report.json").write_text("{}", encoding="utf-8")
        nights.append(folder)
    pin_baseline(root, nights[0])
    removed = prune(root, 2, protect=[nights[1]])  # the gate was given night 2, not the pinned night 1
    assert nights[0].exists() and nights[1].exists()
    assert sorted(p.name for p in removed) == [nights[2].name]


def test_a_night_with_keep_and_a_pinned_baseline_keeps_it(
    qa_dir: Path, write_config: ConfigWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(output={"dir": "out", "plots": False, "formats": ["json"], "keep": 1})
    assert run_cli([str(config)], capsys)[0] == 0
    first = latest(qa_dir / "out")
    assert main(["bless", str(first)]) == 0
    data = yaml.safe_load(config.read_text())
    for _ in range(2):
        other = qa_dir / "other.json"
        other.write_text((first / "report.json").read_text(encoding="utf-8"), encoding="utf-8")
        data["baseline"] = {"path": str(other)}  # the gate compares with a copy, not the pin
        config.write_text(yaml.safe_dump(data))
        assert run_cli([str(config)], capsys)[0] == 0
    assert first.exists()


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('{"question": "q?", "answer": "a", "contexts": ["c"], "retrieved_ids": ["d1"], "retrieved_scores": [1e309]}',
         "line 2: field 'retrieved_scores[0]': a number too large for a float"),
        ('{"question": "q?", "answer": "a", "contexts": ["c"], "score": NaN}',
         "line 2: NaN is not a number JSON allows"),
        ('{"question": "q?", "answer": "a", "contexts": ["c", "x\\udc00"]}',
         "line 2: field 'contexts[1]': character 1 is a lone surrogate (U+DC00), not text"),
    ],
)  # fmt: skip
def test_a_number_json_cannot_hold_is_named_by_line_and_field(
    tmp_path: Path, row: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = '{"question": "p?", "answer": "a", "contexts": ["c"]}'
    (tmp_path / "qa.jsonl").write_text(good + "\n" + row + "\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text("dataset: {path: qa.jsonl}\njudge: {backend: local, metrics: [faithfulness]}\n")
    assert main(["run", str(tmp_path / "c.yaml")]) == 2
    assert message in capsys.readouterr().err


def test_an_oversized_subtopic_grade_names_its_file_and_line(tmp_path: Path) -> None:
    from ragmetrics.retrieval.diversity import SubtopicQrels

    path = tmp_path / "sub.txt"
    path.write_text("q1 s1 d1 1\nq1 s2 d2 99999999999999999999\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"sub\.txt, line 2: grade 99999999999999999999 does not fit"):
        SubtopicQrels.from_trec(path)
