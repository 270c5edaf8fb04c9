"""Span metrics checked against Chroma's chunking study's own code, on its own corpora and questions.

    python benchmarks/check_span_metrics_reference.py [MIRROR_GIT_DIR] [--write-fixture]

MIRROR_GIT_DIR is a git copy of github.com/brandonstarxel/chunking_evaluation (MIT; default
/work/.mirror/brandonstarxel+chunking_evaluation/repo, or $CHUNKING_EVALUATION_GIT). Its general evaluation
data (five corpora, 472 questions with their reference spans) is read from that copy, and its
`BaseEvaluation._full_precision_score` and `_scores_from_dataset_and_retrievals` are imported from that copy
and run unchanged (chromadb and the OpenAI embedding helper they never touch here are stubbed out, so
neither needs installing). The chunks are ragmetrics' own (several chunkings), given to both sides as the
same (corpus, start, end) metadata; the retrievals are random (seeded): a fixed k, and the study's k=-1
("as many chunks as the question needs", at most 20). Every per-question value is compared; the script
exits 1 if any differs by more than 1e-12, and prints a table.

--write-fixture writes tests/data/chunking_evaluation_reference.json: the offsets (no text) and the
study's values, which tests/chunking/test_span_metrics.py checks without the copy.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import types
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragmetrics.chunking import (  # noqa: E402
    Chunk,
    ChunkingConfig,
    Document,
    SpanJudgment,
    SpanQrels,
    best_precision,
    chunk_documents,
    span_scores,
)

DEFAULT_MIRROR = "/work/.mirror/brandonstarxel+chunking_evaluation/repo"
DATA = "chunking_evaluation/evaluation_framework/general_evaluation_data"
BASE = "chunking_evaluation/evaluation_framework/base_evaluation.py"
FIXTURE = ROOT / "tests" / "data" / "chunking_evaluation_reference.json"
CHUNKINGS = [
    ChunkingConfig(method="tokens", size=200, overlap=0),
    ChunkingConfig(method="tokens", size=250, overlap=125),
    ChunkingConfig(method="sentences", size=5, overlap=1),
    ChunkingConfig(method="recursive", size=800, overlap=200),
    ChunkingConfig(method="recursive", size=300, overlap=0, length="tokens"),
    # a team's chunker: 3 sentences a chunk, whitespace kept, so each chunk ends where the next begins, and
    # chunks touch the references that start a sentence (the study's closed-range rule is then exercised)
    ChunkingConfig(method="custom", callable="benchmark:contiguous_sentences"),
]
# overlap, structure, touching chunks
FIXTURE_CHUNKINGS = ("tokens-250-125", "recursive-800c-200", "custom-benchmark:contiguous_sentences")
FIXTURE_STEP = 2  # every other question: the fixture stays small, the benchmark checks them all
FIXED_K = 5
TOLERANCE = 1e-12


def git_show(git_dir: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True, capture_output=True, text=True
    ).stdout


def reference_class(git_dir: str) -> Any:
    """The study's BaseEvaluation, imported from the copy; the modules it imports but these two methods never
    use (chromadb, its OpenAI helper) are stand-ins."""
    for name in ("chromadb", "chromadb.utils", "chromadb.utils.embedding_functions", "chunking_evaluation",
                 "chunking_evaluation.utils"):  # fmt: skip
        sys.modules.setdefault(name, types.ModuleType(name))
    utils = sys.modules["chunking_evaluation.utils"]
    utils.rigorous_document_search = utils.get_openai_embedding_function = None  # type: ignore[attr-defined]
    sys.modules["chromadb"].utils = sys.modules["chromadb.utils"]  # type: ignore[attr-defined]
    sys.modules["chromadb.utils"].embedding_functions = sys.modules["chromadb.utils.embedding_functions"]  # type: ignore[attr-defined]
    folder = Path(tempfile.mkdtemp(prefix="chunking_evaluation_"))
    path = folder / "base_evaluation.py"
    path.write_text(git_show(git_dir, BASE), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("reference_base_evaluation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BaseEvaluation


def main() -> int:
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    git_dir = arguments[0] if arguments else os.environ.get("CHUNKING_EVALUATION_GIT", DEFAULT_MIRROR)
    if not Path(git_dir).exists():
        print(f"skipped: no copy of brandonstarxel/chunking_evaluation at {git_dir}")
        return 0
    import pandas as pd

    commit = subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    questions = pd.read_csv(StringIO(git_show(git_dir, f"{DATA}/questions_df.csv")))
    questions["references"] = questions["references"].apply(json.loads)
    corpus_ids = sorted(questions["corpus_id"].unique())
    documents = [Document(c, git_show(git_dir, f"{DATA}/corpora/{c}.md")) for c in corpus_ids]
    reference = reference_class(git_dir)
    evaluation = reference.__new__(reference)
    evaluation.questions_df = questions

    qids = [f"q{i}" for i in range(len(questions))]
    spans = SpanQrels.from_judgments(
        SpanJudgment(
            query_id=qid, doc_id=row["corpus_id"], start=int(r["start_index"]), end=int(r["end_index"])
        )
        for qid, (_, row) in zip(qids, questions.iterrows(), strict=True)
        for r in row["references"]
    )
    rng = random.Random(20241207)
    fixture: dict[str, Any] = {
        "attribution": "Values computed by BaseEvaluation._full_precision_score and "
        "_scores_from_dataset_and_retrievals of brandonstarxel/chunking_evaluation (MIT, Brandon Smith and "
        f"Anton Troynikov, Chroma), commit {commit}, on its general evaluation corpora and questions, with "
        "ragmetrics' chunkings and seeded random retrievals (benchmarks/check_span_metrics_reference.py). "
        "Offsets only: no text of the corpora or questions.",
        "questions": list(range(0, len(questions), FIXTURE_STEP)),
        "references": [
            [[row["corpus_id"], int(r["start_index"]), int(r["end_index"])] for r in row["references"]]
            for _, row in questions.iterrows()
        ],
        "chunkings": [],
    }
    references = fixture["references"]
    fixture["references"] = references[::FIXTURE_STEP]
    print(
        f"{len(questions)} questions, {sum(len(d.text) for d in documents):,} characters in {len(documents)} corpora"
    )
    print(
        f"{'chunking':<22} {'chunks':>6} {'mode':>6} {'max |diff|':>11} {'recall':>7} {'prec':>7} {'iou':>7} {'prec_Ω':>7} {'s ours':>7} {'s ref':>7}"
    )
    worst_overall = 0.0
    touching: dict[str, int] = {}
    for config in CHUNKINGS:
        chunks = chunk_documents(documents, config, chunker=contiguous_sentences)
        metadatas = [{"start_index": c.start, "end_index": c.end, "corpus_id": c.doc_id} for c in chunks]
        started = time.perf_counter()
        omega_ref, needed_ref = evaluation._full_precision_score(metadatas)
        ref_seconds = time.perf_counter() - started
        started = time.perf_counter()
        best = best_precision(spans, chunks)
        ours_seconds = time.perf_counter() - started
        worst_omega = max(abs(best[q].value - v) for q, v in zip(qids, omega_ref, strict=True))
        assert [best[q].chunks_needed for q in qids] == list(needed_ref), "chunks needed differ"

        by_corpus: dict[str, list[int]] = {}
        for index, chunk in enumerate(chunks):
            by_corpus.setdefault(chunk.doc_id, []).append(index)
        meeting = _meeting(chunks, references)
        touching[config.name] = sum(
            any(c.doc_id == d and (c.end == s or c.start == e) for c in chunks for d, s, e in refs)
            for refs in references
        )
        entry: dict[str, Any] = {
            "name": config.name,
            "chunks": _flat_offsets(chunks),
            "precision_omega": list(omega_ref),
            "chunks_needed": list(needed_ref),
            "modes": {},
        }
        for mode in ("k5", "needed"):
            depth = min(20, max(needed_ref)) if mode == "needed" else FIXED_K
            retrievals: list[list[int]] = []
            for qi, (_, row) in enumerate(questions.iterrows()):
                own = by_corpus[row["corpus_id"]]
                picks = list(rng.sample(meeting[qi], min(len(meeting[qi]), rng.randint(0, depth))))
                while len(picks) < depth:
                    pool = own if rng.random() < 0.9 else range(len(chunks))
                    candidate = rng.choice(list(pool))
                    if candidate not in picks:
                        picks.append(candidate)
                rng.shuffle(picks)
                retrievals.append(picks)
            counts = list(needed_ref) if mode == "needed" else [FIXED_K] * len(qids)
            question_metadatas = [[metadatas[i] for i in picks] for picks in retrievals]
            iou_ref, recall_ref, precision_ref = evaluation._scores_from_dataset_and_retrievals(
                question_metadatas, counts
            )
            rankings = {q: [chunks[i].id for i in picks] for q, picks in zip(qids, retrievals, strict=True)}
            k: int | dict[str, int] = dict(zip(qids, counts, strict=True)) if mode == "needed" else FIXED_K
            ours = span_scores(spans, chunks, rankings, k=k)
            worst = max(
                max(
                    abs(ours.per_query[q].recall - r),
                    abs(ours.per_query[q].precision - p),
                    abs(ours.per_query[q].iou - i),
                )
                for q, r, p, i in zip(qids, recall_ref, precision_ref, iou_ref, strict=True)
            )
            worst = max(worst, worst_omega)
            worst_overall = max(worst_overall, worst)
            entry["modes"][mode] = {
                "k": counts if mode == "needed" else FIXED_K,
                "retrievals": retrievals,
                "recall": list(recall_ref),
                "precision": list(precision_ref),
                "iou": list(iou_ref),
            }
            print(
                f"{config.name:<22} {len(chunks):>6} {mode:>6} {worst:>11.1e} {ours.mean('recall'):>7.4f} "
                f"{ours.mean('precision'):>7.4f} {ours.mean('iou'):>7.4f} "
                f"{sum(b.value for b in best.values()) / len(best):>7.4f} {ours_seconds:>7.2f} {ref_seconds:>7.2f}"
            )
        if config.name in FIXTURE_CHUNKINGS:
            fixture["chunkings"].append(_thinned(entry))
    print(f"questions whose references a chunk only touches (per chunking): {touching}")
    print(f"largest difference from the study's functions: {worst_overall:.1e} (tolerance {TOLERANCE:.0e})")
    print("(s ours / s ref: seconds for best precision over every question, ragmetrics vs the study's code)")
    if "--write-fixture" in sys.argv:
        FIXTURE.write_text(json.dumps(fixture, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {FIXTURE.relative_to(ROOT)} ({FIXTURE.stat().st_size / 1024:.0f} KB)")
    return 0 if worst_overall <= TOLERANCE else 1


def contiguous_sentences(text: str) -> list[tuple[int, int]]:
    """Windows of 3 sentences, each running up to where the next window starts (the custom chunker)."""
    from ragmetrics.chunking.units import sentence_spans

    sentences = sentence_spans(text)
    starts = [sentences[i][0] for i in range(0, len(sentences), 3)]
    return [(a, b) for a, b in zip(starts, [*starts[1:], sentences[-1][1]], strict=True)]


def _flat_offsets(chunks: list[Chunk]) -> dict[str, list[int]]:
    """{document: [start0, end0, start1, end1, ...]}, documents in the chunks' order (retrievals index the
    chunks in this order)."""
    flat: dict[str, list[int]] = {}
    for chunk in chunks:
        flat.setdefault(chunk.doc_id, []).extend((chunk.start, chunk.end))
    assert [c.doc_id for c in chunks] == [d for d, o in flat.items() for _ in range(len(o) // 2)]
    return flat


def _thinned(entry: dict[str, Any]) -> dict[str, Any]:
    """A chunking's fixture entry for every FIXTURE_STEP-th question (all chunks kept: best precision needs them)."""
    step = FIXTURE_STEP
    needed = entry["modes"]["needed"]
    # the study reads only the first k of a ranking: the rest need not be stored
    needed["retrievals"] = [r[:k] for r, k in zip(needed["retrievals"], needed["k"], strict=True)]
    modes = {
        mode: {key: (value[::step] if isinstance(value, list) else value) for key, value in values.items()}
        for mode, values in entry["modes"].items()
    }
    return {**entry, "precision_omega": entry["precision_omega"][::step],
            "chunks_needed": entry["chunks_needed"][::step], "modes": modes}  # fmt: skip


def _meeting(chunks: list[Chunk], references: list[list[list[Any]]]) -> list[list[int]]:
    """Per question, the chunks that overlap one of its references (so random retrievals also hit)."""
    result = []
    for refs in references:
        result.append(
            [
                i
                for i, c in enumerate(chunks)
                if any(c.doc_id == d and c.start < e and s < c.end for d, s, e in refs)
            ]
        )
    return result


if __name__ == "__main__":
    sys.exit(main())
