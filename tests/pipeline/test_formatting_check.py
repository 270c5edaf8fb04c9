"""Before the verdict declares runs different on a judge metric, the night checks on its own answers that the
metric does not move with their formatting (issue 66, item 2; rule in judge.text.formatting)."""

from __future__ import annotations

from typing import Any

import pytest

from ragmetrics.comparison import compare_results
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.base import RagSample
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.judge.settings import JudgeSettings
from ragmetrics.judge.text.formatting import FLAG_SHARE, FormattingCheck, perturbations
from ragmetrics.nightly.formatting_check import check_formatting
from ragmetrics.render.verdict import verdict_lines
from ragmetrics.schema import DatasetSummary, JudgeInfo, NightlyRun, Report

MODULES = ["json", "csv", "zipfile", "sqlite3", "argparse", "logging", "pathlib", "decimal", "heapq", "bisect",
           "shelve", "pickle", "difflib", "textwrap", "tarfile", "hashlib"]  # fmt: skip


def _sample(run: str, n: int, module: str, answer: str) -> dict[str, Any]:
    contexts = [f"The {module} module was added to the standard library in version 2.{n}.",
                f"Its functions are described in the {module} reference guide."]  # fmt: skip
    return {"id": f"q{n:02d}", "question": f"Tell me about {module}.", "contexts": contexts, "answer": answer}


def _night(answers: dict[str, list[dict[str, Any]]]) -> tuple[Report, dict[str, list[RagSample]]]:
    judge = LocalJudge()
    results = [evaluate_rag(rows, ["faithfulness"], judge, name=run, progress=False) for run, rows in answers.items()]
    report = compare_results(results, ["faithfulness"])
    report.metadata.nightly = NightlyRun(name="night", dataset=DatasetSummary(source="test", rows_used=len(MODULES)))
    return report, {run: [RagSample.model_validate(r) for r in rows] for run, rows in answers.items()}


def _checked(report: Report, judged: dict[str, list[RagSample]]) -> list[str]:
    notes: list[str] = []
    local = JudgeInfo(backend="local", model="minilm")
    checks = check_formatting(JudgeSettings(backend="local", use_cache=False), report, judged, local, notes)
    assert report.metadata.nightly is not None
    report.metadata.nightly.formatting = checks
    return notes


def test_a_difference_made_by_formatting_alone_is_flagged_not_declared() -> None:
    """Both runs say the same two things in their own words, one chunk each; one writes two sentences, the
    other runs them together without a full stop. The local judge supports each sentence but not the run-on
    one (no part of it is held by one chunk), so the paired test finds a difference the check then shows to
    be formatting."""
    stops = [_sample("stops", n, m, f"{m} was added in version 2.{n}. A reference guide for {m} documents its "
                     "functions.") for n, m in enumerate(MODULES)]  # fmt: skip
    runon = [{**s, "answer": s["answer"].replace(f"2.{n}. A", f"2.{n} a")} for n, s in enumerate(stops)]
    report, judged = _night({"stops": stops, "runon": runon})
    assert report.run("stops").aggregate["faithfulness"] > report.run("runon").aggregate["faithfulness"]
    (pair,) = report.comparisons
    assert pair.significant  # what the night declared before this check
    notes = _checked(report, judged)
    assert report.metadata.nightly is not None
    (check,) = report.metadata.nightly.formatting
    assert check.metric == "faithfulness" and check.depends
    assert check.changed > FLAG_SHARE * check.checked and check.by_perturbation.get("joined", 0) > 0
    assert notes == [check.text]
    assert check.text.startswith(f"faithfulness depends on formatting on this night's data: {check.changed} of "
                                 f"{check.checked} answers changed")  # fmt: skip
    lines = verdict_lines(report)
    assert not any("significantly better" in line for line in lines)
    (line,) = lines
    assert line.startswith("stops has the best mean on faithfulness, but no difference on it is declared")


def test_a_difference_in_content_is_still_declared() -> None:
    """Same formatting, one run invents what it says: formatting moves neither run's scores, so the verdict
    keeps its significant difference."""
    true = [_sample("true", n, m, f"{m} was added in version 2.{n}. It is part of the standard library.")
            for n, m in enumerate(MODULES)]  # fmt: skip
    invented = [{**s, "answer": "It was written by Guido van Rossum in Amsterdam. It ships a C accelerator for "
                 "Windows."} for s in true]  # fmt: skip
    report, judged = _night({"true": true, "invented": invented})
    (pair,) = report.comparisons
    assert pair.significant
    _checked(report, judged)
    assert report.metadata.nightly is not None
    (check,) = report.metadata.nightly.formatting
    assert not check.depends and check.checked > len(MODULES) and check.by_perturbation == {}
    assert "does not depend on formatting" in check.text
    (line,) = verdict_lines(report)
    assert line.startswith("true is best on faithfulness: significantly better than every other run")


def test_an_llm_judged_night_says_it_did_not_check() -> None:
    true = [_sample("a", n, m, f"{m} was added in version 2.{n}.") for n, m in enumerate(MODULES)]
    invented = [{**s, "answer": "It was written by Guido van Rossum in Amsterdam."} for s in true]
    report, judged = _night({"a": true, "b": invented})
    notes: list[str] = []
    llm = JudgeInfo(backend="openai", model="gpt")
    assert check_formatting(JudgeSettings(backend="local"), report, judged, llm, notes) == []
    assert notes and notes[0].startswith("formatting check not run for faithfulness")


@pytest.mark.parametrize(
    ("answer", "contexts", "expected"),
    [
        ("One fact here. Another fact there.", ["x"], {"joined": "One fact here Another fact there."}),
        ("first copied chunk text second copied chunk text", ["first copied chunk text", "second copied chunk text"],
         {"stopped": "first copied chunk text. second copied chunk text"}),
        ("A line\nand  more", ["x"], {"spaced": "A line and more"}),
        ("缓存可以减少延迟。索引需要定期重建。", ["x"], {"joined": "缓存可以减少延迟索引需要定期重建。"}),
        ("Nothing to change.", ["x"], {}),
    ],
)  # fmt: skip
def test_perturbations_change_formatting_only(answer: str, contexts: list[str], expected: dict[str, str]) -> None:
    assert perturbations(answer, contexts) == expected


def test_the_flag_rule() -> None:
    assert not FormattingCheck("faithfulness", 50, 2, {"joined": 2}).depends  # 4 % of the answers
    assert FormattingCheck("faithfulness", 50, 3, {"joined": 3}).depends  # 6 %
    assert not FormattingCheck("faithfulness", 0, 0, {}).depends
