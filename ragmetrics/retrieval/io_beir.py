"""BEIR's folder layout, read and written: `corpus.jsonl`, `queries.jsonl` and `qrels/<split>.tsv`.

BEIR (Thakur et al., NeurIPS 2021 datasets track) is how most public retrieval test collections are shared:
corpus lines `{"_id", "title", "text"}`, query lines `{"_id", "text"}`, and a qrels TSV per split with the
header `query-id corpus-id score`. Reading checks every line (a missing key, a duplicate id, a grade that is
not an integer, a qrels line naming an unknown query or document) and names the file, line and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ragmetrics._textfile import read_utf8
from ragmetrics.errors import InputError, json_problem
from ragmetrics.retrieval.qrels import Qrels

__all__ = ["BeirCollection", "read_beir", "write_beir"]


@dataclass(frozen=True)
class BeirCollection:
    """A BEIR collection: passages ({id, title, text}, the layout retrievers take), queries and one split's qrels."""

    corpus: list[dict[str, str]]
    queries: dict[str, str]
    qrels: Qrels
    split: str


def _jsonl(path: Path, keys: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    rows: list[tuple[int, dict[str, str]]] = []
    for line_no, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(json_problem(exc), source=str(path), line=line_no) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", source=str(path), line=line_no)
        for key in keys:
            value = obj.get(key)
            if key == "title" and value is None:
                obj[key] = ""
                continue
            if isinstance(value, int) and not isinstance(value, bool) and key == "_id":
                obj[key] = str(value)
                continue
            if not isinstance(value, str) or (key != "title" and not value.strip()):
                raise InputError(f"missing or empty {key!r}", source=str(path), line=line_no, field=key)
        rows.append((line_no, obj))
    return rows


def read_beir(folder: str | Path, split: str = "test") -> BeirCollection:
    """Read a BEIR folder; only the queries judged in `split` are kept (as BEIR's own loader does)."""
    root = Path(folder)
    corpus_path, queries_path, qrels_path = (
        root / "corpus.jsonl",
        root / "queries.jsonl",
        root / "qrels" / f"{split}.tsv",
    )
    corpus: list[dict[str, str]] = []
    seen: dict[str, int] = {}
    for line_no, obj in _jsonl(corpus_path, ("_id", "title", "text")):
        pid = obj["_id"]
        if pid in seen:
            raise InputError(
                f"duplicate document id {pid!r} (first on line {seen[pid]})",
                source=str(corpus_path),
                line=line_no,
                field="_id",
            )
        seen[pid] = line_no
        corpus.append({"id": pid, "title": obj["title"], "text": obj["text"]})
    queries_all: dict[str, str] = {}
    for line_no, obj in _jsonl(queries_path, ("_id", "text")):
        if obj["_id"] in queries_all:
            raise InputError(
                f"duplicate query id {obj['_id']!r}", source=str(queries_path), line=line_no, field="_id"
            )
        queries_all[obj["_id"]] = obj["text"]
    judgments: dict[str, dict[str, int]] = {}
    lines = read_utf8(qrels_path).splitlines()
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        cells = line.rstrip("\n").split("\t")
        if line_no == 1 and cells[:3] == ["query-id", "corpus-id", "score"]:
            continue
        if len(cells) != 3:
            raise InputError(
                f"expected 3 tab-separated cells, got {len(cells)}", source=str(qrels_path), line=line_no
            )
        qid, pid, grade_text = (c.strip() for c in cells)
        try:
            grade = int(grade_text)
        except ValueError:
            raise InputError(
                f"score {grade_text!r} is not an integer", source=str(qrels_path), line=line_no, field="score"
            ) from None
        if qid not in queries_all:
            raise InputError(
                f"query {qid!r} is not in queries.jsonl",
                source=str(qrels_path),
                line=line_no,
                field="query-id",
            )
        if pid not in seen:
            raise InputError(
                f"document {pid!r} is not in corpus.jsonl",
                source=str(qrels_path),
                line=line_no,
                field="corpus-id",
            )
        if pid in judgments.setdefault(qid, {}):
            raise InputError(
                f"duplicate judgment of {pid!r} for query {qid!r}", source=str(qrels_path), line=line_no
            )
        judgments[qid][pid] = grade
    if not judgments:
        raise InputError(f"no judgments in split {split!r}", source=str(qrels_path))
    queries = {q: t for q, t in queries_all.items() if q in judgments}
    return BeirCollection(corpus, queries, Qrels.from_dict(judgments, source=str(qrels_path)), split)


def write_beir(
    folder: str | Path,
    corpus: list[dict[str, str]],
    queries: dict[str, str],
    qrels: Qrels,
    split: str = "test",
) -> None:
    """Write a BEIR folder from passages ({id, title?, text}), queries and qrels."""
    root = Path(folder)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as fh:
        for p in corpus:
            fh.write(
                json.dumps(
                    {"_id": p["id"], "title": p.get("title", ""), "text": p["text"]}, ensure_ascii=False
                )
                + "\n"
            )
    with (root / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, text in queries.items():
            fh.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    with (root / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, docs in qrels.to_dict().items():
            for pid, grade in docs.items():
                fh.write(f"{qid}\t{pid}\t{grade}\n")
