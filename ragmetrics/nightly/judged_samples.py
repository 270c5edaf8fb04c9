"""judged_samples.jsonl: every run's samples exactly as the judge saw them, one line per (run, sample).

A report says what the judge decided; this file keeps what it decided on (the question, the run's contexts
in rank order, the answer and the reference), so a person can later label the same texts (`ragmetrics
label`) and a reader of the report can check a verdict against its input. It is written with the other
artifacts, after the same secret scan.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from ragmetrics._jsonl import numbered_jsonl
from ragmetrics.errors import InputError
from ragmetrics.judge.base import RagSample

FILENAME = "judged_samples.jsonl"


def judged_samples_jsonl(judged: Mapping[str, Sequence[RagSample]]) -> str:
    """One JSON object per line: {"run": name, **sample}, runs in order, samples in the dataset's order."""
    lines = []
    for run, samples in judged.items():
        for sample in samples:
            row = {"run": run, **sample.model_dump(exclude_none=True)}
            lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    return "".join(lines)


def read_judged_samples(path: Path) -> dict[str, dict[str, RagSample]]:
    """Run -> sample id -> sample; an InputError names the file, the line and the field of any problem."""
    if not path.exists():
        raise InputError(
            f"no {FILENAME} here: `ragmetrics run` writes it beside report.json when a judge ran (reports "
            "made before ragmetrics 0.3 have none; run the config again)",
            source=str(path),
        )
    out: dict[str, dict[str, RagSample]] = {}
    for number, row in numbered_jsonl(path):
        if not isinstance(row.get("run"), str):
            raise InputError("each line must have a string 'run'", source=str(path), line=number, field="run")
        run = row.pop("run")
        try:
            sample = RagSample.model_validate(row)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise InputError(first["msg"], source=str(path), line=number, field=field) from None
        samples = out.setdefault(run, {})
        if sample.id in samples:
            raise InputError(
                f"sample {sample.id!r} of run {run!r} appears twice",
                source=str(path),
                line=number,
                field="id",
            )
        samples[sample.id] = sample
    return out
