"""`ragmetrics chunk`: documents cut by a chunking configuration, and span qrels carried across chunkings.

    ragmetrics chunk split DOCS --method tokens --size 256 --overlap 32 -o corpus.jsonl
    ragmetrics chunk spans --qrels QRELS --corpus corpus.jsonl -o spans.jsonl      # chunk qrels -> spans
    ragmetrics chunk qrels --spans spans.jsonl --corpus corpus.jsonl -o qrels.trec  # spans -> chunk qrels
    ragmetrics chunk score --spans spans.jsonl --corpus corpus.jsonl RUN [RUN ...] -k 5

Bad input (a span out of range, overlapping another, on a missing document; a chunker returning text that
is not in its document) exits 2 naming the file and line, or the document and chunk.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmetrics.options import ExitCode

if TYPE_CHECKING:
    from ragmetrics.chunking.model import Chunk, ChunkingConfig


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "chunk",
        help="cut documents into chunks by a configuration; carry span qrels across chunkings",
        description="Documents in, chunks with document id and character offsets out; span qrels turned "
        "into chunk qrels for any chunking (and back), and span metrics of runs (docs/chunking.md).",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    split = actions.add_parser("split", help="documents -> chunk corpus JSONL with offsets")
    split.add_argument("documents", type=Path, metavar="DOCS", help="a JSONL file (id, text) or a folder")
    split.add_argument("--config", type=Path, help="a YAML/JSON file holding a `chunking:` block")
    split.add_argument("--method", choices=("tokens", "sentences", "recursive", "custom"))
    split.add_argument("--size", type=int, help="chunk size in the method's unit")
    split.add_argument("--overlap", type=int, default=0, help="units consecutive chunks share (default 0)")
    split.add_argument("--length", choices=("characters", "tokens"), help="recursive: the unit of --size")
    split.add_argument("--language", help="sentences: the documents' ISO 639-1 language")
    split.add_argument("--callable", help="custom: 'package.module:function'")
    split.add_argument("-o", "--output", type=Path, required=True, help="chunk corpus JSONL to write")
    split.set_defaults(handler=_split)

    spans = actions.add_parser("spans", help="chunk qrels -> span qrels, through the chunking that made them")
    spans.add_argument("--qrels", type=Path, required=True, help="chunk qrels (TREC, JSON, JSONL, Parquet)")
    spans.add_argument("--corpus", type=Path, required=True, help="the chunk corpus the qrels judge")
    spans.add_argument("-o", "--output", type=Path, required=True, help="span qrels JSONL to write")
    spans.set_defaults(handler=_spans)

    qrels = actions.add_parser("qrels", help="span qrels -> graded chunk qrels for a chunking")
    _span_inputs(qrels)
    qrels.add_argument("--min-chars", type=int, default=1, help="characters a chunk needs (default 1)")
    qrels.add_argument("-o", "--output", type=Path, required=True, help="qrels (.json, .jsonl, else TREC)")
    qrels.set_defaults(handler=_qrels)

    score = actions.add_parser(
        "score", help="span recall, precision, IoU of runs; the chunking's best precision"
    )
    _span_inputs(score)
    score.add_argument("runs", nargs="+", metavar="RUN", help="runs over the corpus's chunk ids")
    depth = score.add_mutually_exclusive_group()
    depth.add_argument("-k", type=int, help="chunks read per question (default: whole rankings)")
    depth.add_argument(
        "--k-needed",
        action="store_true",
        help="read as many chunks as each question needs (the study's k=-1)",
    )
    score.add_argument("--level", type=int, default=1, help="lowest relevant grade (default 1)")
    score.add_argument(
        "--unit",
        choices=("characters", "tokens"),
        default="characters",
        help="count characters (the study's) or MiniLM tokens (needs --docs)",
    )
    score.add_argument("--json", type=Path, help="also write per-question scores here")
    score.set_defaults(handler=_score)


def _span_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spans", type=Path, required=True, help="span qrels JSONL")
    parser.add_argument("--corpus", type=Path, required=True, help="chunk corpus JSONL with offsets")
    parser.add_argument("--docs", type=Path, help="the documents (checks spans against their full text)")


def _config(args: argparse.Namespace) -> ChunkingConfig:
    from pydantic import ValidationError

    from ragmetrics._yaml import read_yaml_file
    from ragmetrics.chunking.model import ChunkingConfig
    from ragmetrics.errors import InputError

    flags: dict[str, Any] = {
        key: value
        for key in ("method", "size", "length", "language", "callable")
        if (value := getattr(args, key)) is not None
    }
    if args.overlap:
        flags["overlap"] = args.overlap
    source = "command line"
    if args.config is not None:
        data = read_yaml_file(args.config, what="chunking config")
        block = data.get("chunking", data) if isinstance(data, dict) else data
        if not isinstance(block, dict):
            raise InputError("expected a mapping (a `chunking:` block)", source=str(args.config))
        flags = {**block, **flags}
        source = str(args.config)
    if "method" not in flags:
        raise InputError("give --method (or --config with a chunking: block)", field="method")
    try:
        return ChunkingConfig.model_validate(flags)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or None
        raise InputError(
            str(first["msg"]).removeprefix("Value error, "), source=source, field=where
        ) from None


def _split(args: argparse.Namespace) -> int:
    from ragmetrics.chunking.chunkers import chunk_documents
    from ragmetrics.chunking.corpus import write_chunks
    from ragmetrics.chunking.documents import load_documents, scan_folder

    config = _config(args)
    documents = load_documents(args.documents)
    search = [args.config.parent] if args.config is not None else []
    chunks = chunk_documents(documents, config, search=search)
    written = write_chunks(args.output, chunks)
    if args.documents.is_dir():
        skipped = scan_folder(args.documents).skipped
        if skipped:
            names = ", ".join(p.relative_to(args.documents).as_posix() for p in skipped[:5])
            print(f"skipped {len(skipped)} files that are not .txt/.md/.html: {names}", file=sys.stderr)
    print(f"{len(documents)} documents -> {written} chunks ({config.name}) in {args.output}", file=sys.stderr)
    return int(ExitCode.OK)


def _load(args: argparse.Namespace) -> tuple[Any, list[Chunk]]:
    from ragmetrics.chunking.corpus import read_chunks
    from ragmetrics.chunking.documents import load_documents
    from ragmetrics.chunking.spans import read_span_qrels

    texts = {d.id: d.text for d in load_documents(args.docs)} if args.docs is not None else None
    chunks = read_chunks(args.corpus, texts)
    if texts is None:
        extent: dict[str, int] = {}
        for chunk in chunks:
            extent[chunk.doc_id] = max(extent.get(chunk.doc_id, 0), chunk.end)
        return read_span_qrels(args.spans, extent), chunks
    return read_span_qrels(args.spans, texts), chunks


def _spans(args: argparse.Namespace) -> int:
    from ragmetrics.chunking.corpus import read_chunks
    from ragmetrics.chunking.derive import spans_from_chunk_qrels
    from ragmetrics.chunking.spans import write_span_qrels
    from ragmetrics.retrieval.qrels import Qrels

    chunks = read_chunks(args.corpus)
    spans = spans_from_chunk_qrels(Qrels.read(args.qrels), chunks, source=str(args.qrels))
    write_span_qrels(args.output, spans)
    print(f"{len(spans.judgments())} spans for {len(spans)} questions in {args.output}", file=sys.stderr)
    return int(ExitCode.OK)


def _qrels(args: argparse.Namespace) -> int:
    from ragmetrics.chunking.derive import derive_chunk_qrels

    spans, chunks = _load(args)
    qrels = derive_chunk_qrels(spans, chunks, min_chars=args.min_chars)
    suffix = args.output.suffix.lower()
    if suffix == ".json":
        qrels.to_json(args.output)
    elif suffix in (".jsonl", ".ndjson"):
        qrels.to_jsonl(args.output)
    else:
        qrels.to_trec(args.output)
    print(f"{qrels.num_entries} chunk judgments for {len(qrels)} questions in {args.output}", file=sys.stderr)
    return int(ExitCode.OK)


def _score(args: argparse.Namespace) -> int:
    from ragmetrics.chunking.documents import load_documents
    from ragmetrics.chunking.span_metrics import best_precision, ranked_chunk_ids, span_scores
    from ragmetrics.cli._common import load_runs
    from ragmetrics.errors import InputError

    if args.unit == "tokens" and args.docs is None:
        raise InputError("--unit tokens counts the documents' tokens: give --docs", field="docs")
    spans, chunks = _load(args)
    texts = {d.id: d.text for d in load_documents(args.docs)} if args.unit == "tokens" else None
    best = best_precision(spans, chunks, level=args.level, unit=args.unit, documents=texts)
    depth: int | dict[str, int] | None = (
        {q: b.chunks_needed for q, b in best.items()} if args.k_needed else args.k
    )
    by_id = {c.id: c for c in chunks}
    report: dict[str, Any] = {"best_precision": {q: b.value for q, b in best.items()}, "runs": {}}
    omega = sum(b.value for b in best.values()) / len(best) if best else float("nan")
    print(f"best precision of this chunking: {omega:.4f} over {len(best)} questions")
    print(f"{'run':<30} {'recall':>8} {'precision':>10} {'iou':>8}")
    for path, run in zip(args.runs, load_runs(args.runs), strict=True):
        scores = span_scores(
            spans,
            by_id,
            ranked_chunk_ids(run),
            k=depth,
            level=args.level,
            source=path,
            unit=args.unit,
            documents=texts,
        )
        if not scores.per_query:
            print(f"{run.name:<30} no question has a relevant span", file=sys.stderr)
            continue
        print(
            f"{run.name:<30} {scores.mean('recall'):>8.4f} {scores.mean('precision'):>10.4f} "
            f"{scores.mean('iou'):>8.4f}"
        )
        report["runs"][run.name] = {
            q: {"recall": s.recall, "precision": s.precision, "iou": s.iou}
            for q, s in scores.per_query.items()
        }
    if args.json is not None:
        from ragmetrics._textfile import write_atomic

        write_atomic(args.json, json.dumps(report, indent=1) + "\n")
    return int(ExitCode.OK)
