"""Test data for the pipeline tests: a small QA set about Python, its passages, and a weaker run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.cli import main
from ragmetrics.schema import Report

TOPICS: list[tuple[str, str, str, str]] = [
    (
        "with",
        "How do I make a class usable in a with statement?",
        "Define __enter__ and __exit__.",
        "The with statement calls __enter__ on entry and __exit__ when the block ends.",
    ),
    (
        "nonlocal",
        "What does nonlocal do?",
        "It rebinds a name of the enclosing function.",
        "nonlocal makes a name refer to the binding in the nearest enclosing function scope.",
    ),
    (
        "assert",
        "When are assert statements removed?",
        "When Python runs with -O.",
        "Assert statements are skipped when optimisation is requested with -O.",
    ),
    (
        "yield",
        "What does yield do in a function?",
        "It makes the function a generator.",
        "Using yield in a function body makes it a generator function.",
    ),
    (
        "global",
        "How do I assign to a module variable inside a function?",
        "Declare it global first.",
        "The global statement lets a function assign to module-level names.",
    ),
    (
        "lambda",
        "What can a lambda contain?",
        "A single expression.",
        "A lambda's body is a single expression; statements are not allowed.",
    ),
    (
        "import",
        "How does import find modules?",
        "It searches sys.path with finders.",
        "The import system asks finders, which search the entries of sys.path.",
    ),
    (
        "slots",
        "What does __slots__ do?",
        "It fixes the attributes and saves memory.",
        "__slots__ declares the instance attributes and removes the per-instance __dict__.",
    ),
    (
        "except",
        "How do I catch several exceptions at once?",
        "Use a tuple in the except clause.",
        "An except clause may name a tuple of exception classes.",
    ),
    (
        "fstring",
        "How do f-strings work?",
        "I don't know.",
        "Formatted string literals evaluate the expressions in braces at run time.",
    ),
    (
        "walrus",
        "What is the walrus operator?",
        "It assigns inside an expression.",
        "The := operator assigns a value to a name as part of an expression.",
    ),
    (
        "dataclass",
        "What does @dataclass generate?",
        "It writes __init__ and __repr__ for you.",
        "The dataclass decorator adds __init__, __repr__ and __eq__ from the annotated fields.",
    ),
    (
        "match",
        "What does a match statement do?",
        "It compares a subject against patterns.",
        "A match statement tries each case pattern against the subject in turn.",
    ),
    (
        "async",
        "What does await do?",
        "It suspends the coroutine until the awaitable finishes.",
        "await suspends the coroutine until the awaited object completes.",
    ),
    (
        "property",
        "How do I make a computed attribute?",
        "Use the property decorator.",
        "property turns a method into a managed attribute with a getter.",
    ),
    (
        "super",
        "What does super() return?",
        "A proxy that delegates to the next class in the MRO.",
        "super returns a proxy object delegating method calls to the next class of the MRO.",
    ),
]


def relevant(topic: str) -> str:
    return f"{topic}#1"


def filler(topic: str) -> str:
    return f"{topic}#2"


def qa_rows(*, degrade: bool = False) -> list[dict[str, Any]]:
    """The pipeline's samples; with `degrade`, most rankings put the relevant passage last."""
    rows = []
    for i, (topic, question, answer, reference) in enumerate(TOPICS):
        other = TOPICS[(i + 1) % len(TOPICS)][0]
        ranked = [relevant(topic), filler(topic), relevant(other)]
        if degrade and i % 4 != 0:
            ranked = [filler(topic), relevant(other), relevant(topic)]
        texts = {relevant(t): ref for t, _, _, ref in TOPICS} | {
            filler(t): f"Notes on the history of {t} and unrelated trivia." for t, *_ in TOPICS
        }
        rows.append(
            {
                "id": f"q{i:02d}",
                "question": question,
                "contexts": [texts[d] for d in ranked[:2]],
                "context_ids": ranked[:2],
                "answer": answer,
                "reference": reference,
                "retrieved_ids": ranked,
                "retrieved_scores": [3.0, 2.0, 1.0],
                "relevant_ids": [relevant(topic), filler(topic)],
                "relevant_grades": [3, 0],
            }
        )
    return rows


def passages() -> list[dict[str, str]]:
    out = []
    for topic, _, _, reference in TOPICS:
        out.append({"id": relevant(topic), "text": reference})
        out.append({"id": filler(topic), "text": f"Notes on the history of {topic} and unrelated trivia."})
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`ragmetrics run ARGV --no-progress`: (exit code, stdout, stderr)."""
    code = main(["run", *argv, "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def latest(out: Path) -> Path:
    """The dated folder `out/latest` points at (a symlink, or a one-line file where symlinks are unavailable)."""
    link = out / "latest"
    assert link.exists(), "no latest pointer"
    folder = link.resolve() if link.is_symlink() else out / link.read_text().strip()
    assert folder.is_dir()
    return folder


def report_of(out: Path) -> Report:
    """The report.json of the newest night under `out`."""
    return Report.model_validate_json((latest(out) / "report.json").read_text(encoding="utf-8"))
