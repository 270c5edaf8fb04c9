"""An attack set on disk (`model` lists the files) and back. Each file is written through a temporary name and
renamed, so a killed build never leaves half an attack set; reading validates every line and names the bad one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragmetrics._jsonl import validated_jsonl
from ragmetrics.attacks.build import FORMAT, AttackSet, manifest_json
from ragmetrics.attacks.model import AttackCheck, AttackRow
from ragmetrics.errors import InputError
from ragmetrics.testset.output import read_format_manifest, write_atomic

__all__ = ["MANIFEST", "is_attack_dir", "read_attack_set", "read_checks", "write_attack_set"]

MANIFEST = "attacks.json"


def _jsonl(items: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in items)


def write_attack_set(attack_set: AttackSet, folder: str | Path) -> dict[str, Path]:
    """Write the four files into `folder` (created); returns them by name."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    paths = {name: root / name for name in ("questions.jsonl", "checks.jsonl", "planted.jsonl", MANIFEST)}
    write_atomic(paths["questions.jsonl"], _jsonl([r.model_dump(exclude_none=True) for r in attack_set.rows]))
    write_atomic(paths["checks.jsonl"], _jsonl([c.model_dump(exclude_none=True) for c in attack_set.checks]))
    planted = [
        {"attack": row.id, **doc.model_dump(exclude_none=True)}
        for row in attack_set.rows
        for doc in row.planted_documents or ()
    ]
    write_atomic(paths["planted.jsonl"], _jsonl(planted))
    write_atomic(paths[MANIFEST], manifest_json(attack_set))
    return paths


def is_attack_dir(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file() and (path / "checks.jsonl").is_file()


def read_manifest(folder: Path) -> dict[str, Any]:
    return read_format_manifest(folder / MANIFEST, FORMAT, "an attack set manifest")


def read_checks(folder: Path) -> dict[str, AttackCheck]:
    """The checks by attack id, each validated; a bad or repeated line is an InputError naming it."""
    path = folder / "checks.jsonl"
    checks: dict[str, AttackCheck] = {}
    for line, check in validated_jsonl(path, AttackCheck, "an attack check"):
        if check.id in checks:
            raise InputError(f"duplicate attack id {check.id!r}", source=str(path), line=line)
        checks[check.id] = check
    return checks


def read_attack_set(folder: str | Path) -> AttackSet:
    """The attack set in `folder`, validated: rows and checks agree (every check's question exists, every
    attack row has a check, every clean twin a check names exists)."""
    root = Path(folder)
    if not is_attack_dir(root):
        raise InputError(
            f"not an attack set folder (no {MANIFEST} and checks.jsonl; build one with `ragmetrics attack`)",
            source=str(root),
        )
    manifest = read_manifest(root)
    rows_path = root / "questions.jsonl"
    rows = [row for _, row in validated_jsonl(rows_path, AttackRow, "an attack-set question")]
    checks = read_checks(root)
    ids = {r.id for r in rows}
    for check in checks.values():
        if check.id not in ids:
            raise InputError(
                f"attack {check.id!r} has no question in questions.jsonl", source=str(root / "checks.jsonl")
            )
        if check.kind != "out_of_scope" and check.twin is not None and check.twin not in ids:
            raise InputError(
                f"attack {check.id!r}: its clean question {check.twin!r} is not in questions.jsonl",
                source=str(root / "checks.jsonl"),
            )
    unchecked = [
        r.id for r in rows if (r.planted_documents or r.system_prompt_addition) and r.id not in checks
    ]
    if unchecked:
        raise InputError(f"attack {unchecked[0]!r} has no line in checks.jsonl", source=str(rows_path))
    return AttackSet(rows=rows, checks=list(checks.values()), manifest=manifest)
