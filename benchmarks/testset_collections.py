"""Test collections with human judgments, read from local copies for the test-set ordering benchmark.

- the built-in collection (481 passages, 64 questions, graded 0-3), shipped with ragmetrics;
- CISI and CACM in the SMART format (`.I` / `.T` / `.W` records; qrels as `query doc ...` lines), from a
  folder given on the command line. Public copies: CISI.ALL, CISI.QRY and CISI.REL in the GitHub repository
  PsychoProg/tf-idf; cacm.all, query.text and qrels.text in atcherepanov/Stemming-Algorithm
  (../shared/collections.md). Nothing is downloaded here, and their text is never copied into the project.

Each loader returns (passages [{id, title, text}], queries {id: text}, qrels {query: {doc: grade}}), judged
queries only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

Collection = tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]


def _smart(path: Path) -> dict[str, dict[str, str]]:
    records: dict[str, dict[str, str]] = {}
    current: str | None = None
    tag: str | None = None
    for line in path.read_text(encoding="latin-1").splitlines():
        match = re.match(r"^\.([A-Z])(?:\s+(\S+))?\s*$", line)
        if match:
            if match.group(1) == "I":
                current = str(int(match.group(2)))
                records[current] = {}
                tag = None
            elif current is not None:
                tag = match.group(1)
                records[current].setdefault(tag, "")
            continue
        if current is not None and tag is not None:
            records[current][tag] += line + "\n"
    return records


def _smart_collection(docs: Path, queries: Path, rels: Path) -> Collection:
    passages = []
    for doc_id, fields in _smart(docs).items():
        title = " ".join(fields.get("T", "").split())
        body = fields.get("W", "").strip()
        passages.append({"id": doc_id, "title": title, "text": f"{title}\n{body}".strip()})
    texts = {q: " ".join(f.get("W", "").split()) for q, f in _smart(queries).items()}
    qrels: dict[str, dict[str, int]] = {}
    for line in rels.read_text(encoding="latin-1").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            qrels.setdefault(str(int(parts[0])), {})[str(int(parts[1]))] = 1
    judged = {q: t for q, t in texts.items() if q in qrels and t}
    return passages, judged, {q: qrels[q] for q in judged}


def builtin() -> Collection:
    from ragmetrics import collection

    passages = [
        {"id": p["id"], "title": p.get("title", ""), "text": p["text"]} for p in collection.load_passages()
    ]
    return passages, dict(collection.load_questions()), collection.load_qrels().to_dict()


def cisi(folder: Path) -> Collection:
    return _smart_collection(folder / "CISI.ALL", folder / "CISI.QRY", folder / "CISI.REL")


def cacm(folder: Path) -> Collection:
    return _smart_collection(folder / "cacm.all", folder / "query.text", folder / "qrels.text")
