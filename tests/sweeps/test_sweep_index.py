"""A sweep's indexes come from the persisted store nights use (issue 69, items 3 and 4 together), and its
chunking axis is judged on a test set's own evidence spans when the dataset has them.

"Embeds nothing" is a count (what the store sent to the model), never a time. Each sweep reads the store from
disk: the indexes this process holds open are forgotten between sweeps (`close_all`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragmetrics.chunking import ChunkingConfig, Document, chunk_documents
from ragmetrics.cli.main import main
from ragmetrics.errors import InputError
from ragmetrics.index import close_all
from ragmetrics.nightly.config import load_config
from ragmetrics.sweep.chunked import PASSAGE_QRELS, SPAN_QRELS
from ragmetrics.sweep.report import summary, to_markdown
from ragmetrics.sweep.run import SweepResult, run_sweep
from ragmetrics.sweep.stages import IndexUse

from .data import sweep_section, write_config

DENSE = [{"name": "bm25", "retriever": "bm25"}, {"name": "dense", "retriever": "dense"}]


def _sweep(config_path: Path) -> SweepResult:
    close_all()  # read the store from disk, as a new process would
    return run_sweep(load_config(config_path))


def _embedded(result: SweepResult) -> int:
    uses = [*result.stages.index_use.values(), *result.stages.rerank_use.values()]
    return sum(u.embedded for u in uses)


def test_a_second_sweep_embeds_nothing_and_gives_the_same_results(tmp_path: Path) -> None:
    section = sweep_section(
        retrievers=DENSE,
        fusion={"runs": ["bm25", "dense"], "weights": [0.5], "depth": 4},
        rerankers=[
            {"name": "none", "kind": "none"},
            {"name": "minilm", "kind": "embedding", "candidates": 4},
        ],
    )
    path = write_config(tmp_path, section, questions=12)
    first = _sweep(path)
    dense = first.stages.index_use[("passages", "dense")]
    assert (dense.embedded, dense.reused, dense.built) == (48, 0, True)  # 12 questions x 4 distinct passages
    assert first.stages.index_use[("passages", "bm25")].built
    # the reranker reads the vectors the dense index stored: none of its candidates is embedded again
    assert first.stages.rerank_use and all(
        u.embedded == 0 and u.reused > 0 for u in first.stages.rerank_use.values()
    )
    assert (tmp_path / ".ragmetrics-cache" / "index").is_dir()  # the config's default index_dir, beside it

    second = _sweep(path)
    assert _embedded(second) == 0
    assert {key: (u.built, u.reused) for key, u in second.stages.index_use.items()} == {
        ("passages", "bm25"): (False, 0), ("passages", "dense"): (False, 48)
    }  # fmt: skip
    assert second.stages.rankings == first.stages.rankings
    assert second.scores == first.scores
    assert second.confirmation == first.confirmation
    s = summary(second)
    assert s["stages"]["embedded"] == 0
    dense_row = next(b for b in s["stages"]["index_builds"] if b["retriever"] == "dense")
    assert (dense_row["embedded"], dense_row["reused"], dense_row["index_written"]) == (0, 48, False)
    assert "0 chunks embedded by this sweep" in to_markdown(s)

    # index_dir: null keeps the indexes in memory: nothing counted, the same rankings
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    memory = tmp_path / "memory.yaml"
    memory.write_text(yaml.safe_dump({**config, "index_dir": None}), encoding="utf-8")
    in_memory = _sweep(memory)
    assert in_memory.stages.index_use == {} and in_memory.stages.rerank_use == {}
    assert summary(in_memory)["stages"]["embedded"] is None
    assert in_memory.stages.rankings == first.stages.rankings


def _window_texts(passages: list[dict[str, str]], settings: ChunkingConfig) -> dict[str, set[str]]:
    chunks = chunk_documents([Document(p["id"], p["text"]) for p in passages], settings)
    by_doc: dict[str, set[str]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, set()).add(chunk.text)
    return by_doc


def test_a_changed_document_re_embeds_only_its_own_chunks(tmp_path: Path) -> None:
    chunking = {"method": "tokens", "size": 4, "overlap": 0}
    section = sweep_section(chunking=[chunking], retrievers=DENSE, fusion=None,
                            rerankers=[{"name": "none", "kind": "none"}])  # fmt: skip
    path = write_config(tmp_path, section, questions=12)
    first = _sweep(path)
    settings = ChunkingConfig.model_validate(chunking)
    corpus = tmp_path / "data" / "passages.jsonl"
    passages = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    before = _window_texts(passages, settings)
    distinct = {t for texts in before.values() for t in texts}
    assert first.stages.index_use[(settings.name, "dense")].embedded == len(distinct)  # each text once
    changed = next(p for p in passages if p["id"] == "p005d1")
    changed["text"] = changed["text"].replace("about paint", "about chalk dust")
    corpus.write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    after = _window_texts(passages, settings)
    new_texts = after["p005d1"] - distinct
    assert 0 < len(new_texts) < len(after["p005d1"])  # the edit changes some of the document's windows

    second = _sweep(path)
    dense = second.stages.index_use[(settings.name, "dense")]
    assert dense.embedded == len(new_texts)
    total = len(chunk_documents([Document(p["id"], p["text"]) for p in passages], settings))
    assert dense.reused == total - len(new_texts)  # every other chunk's vector read from the store
    assert dense.built  # a new corpus: a new index file, from vectors mostly stored


def _test_set(folder: Path) -> tuple[Path, Path, Path]:
    """Documents, their sentence chunks (`ragmetrics chunk split`), and a test set built on those chunks
    (`ragmetrics testset`, offline): its spans.jsonl holds each question's source sentence as a span."""
    nouns = [
        "falcon",
        "granite",
        "harbor",
        "lantern",
        "meadow",
        "nickel",
        "orchid",
        "pepper",
        "quartz",
        "raven",
    ]
    docs = folder / "docs.jsonl"
    docs.write_text("".join(
        json.dumps({"id": f"doc{i}", "text": f"Notes about the {n} archive.\n\nThe {n} shelf holds old paint samples "
                    f"and receipts. Visitors rarely open it.\n\nThe {n} key number {i}0{i} opens the north vault "
                    f"door. It was cut in {1900 + i}."}) + "\n"
        for i, n in enumerate(nouns)
    ), encoding="utf-8")  # fmt: skip
    corpus, testset = folder / "corpus.jsonl", folder / "testset"
    assert main(["chunk", "split", str(docs), "--method", "sentences", "--size", "1", "-o", str(corpus)]) == 0
    assert main(["testset", str(corpus), "-o", str(testset), "--size", "10", "--seed", "0",
                 "--generator", "offline", "--no-judge-checks"]) == 0  # fmt: skip
    assert (testset / "spans.jsonl").is_file()
    return docs, corpus, testset


def _chunked_config(folder: Path, dataset: dict[str, Any]) -> Path:
    config = {
        "name": "spans sweep",
        "dataset": dataset,
        "retrieval": {"metrics": ["ndcg@10"]},
        "output": {"dir": str(folder / "out")},
        "sweep": {
            "metric": "ndcg@10",
            "chunking": [{"method": "sentences", "size": 1}, {"method": "recursive", "size": 100000}],
            "retrievers": [{"name": "bm25", "retriever": "bm25"}],
            "rerankers": [{"name": "none", "kind": "none"}],
            "k": [2, 4],
            "split": {"seed": 1, "strata": None},
        },
    }
    path = folder / f"sweep-{len(list(folder.glob('sweep-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def test_the_chunking_axis_is_judged_on_the_test_sets_spans_when_present(tmp_path: Path) -> None:
    docs, corpus, testset = _test_set(tmp_path)
    spans = [json.loads(line) for line in (testset / "spans.jsonl").read_text(encoding="utf-8").splitlines()]
    lengths = {
        d["id"]: len(d["text"]) for d in map(json.loads, docs.read_text(encoding="utf-8").splitlines())
    }
    result = _sweep(_chunked_config(tmp_path, {"path": str(testset), "passages": str(docs)}))
    assert result.qrels_source == SPAN_QRELS
    # the test set's own chunking (sentences) gets back each question's source sentence, and only it
    sentences: dict[str, dict[str, int]] = {}
    whole: dict[str, dict[str, int]] = {}
    for s in spans:
        sentences.setdefault(s["query_id"], {})[f"{s['doc_id']}:{s['start']}-{s['end']}"] = s["grade"]
        key = f"{s['doc_id']}:0-{lengths[s['doc_id']]}"
        whole.setdefault(s["query_id"], {})[key] = max(s["grade"], whole.get(s["query_id"], {}).get(key, 0))
    scored = set(result.relevance["sentences-1-0"])
    assert scored == set(
        sentences
    )  # every question with a span, and no other (the unanswerable one is left out)
    assert result.relevance["sentences-1-0"] == sentences
    assert result.relevance["recursive-100000c-0"] == whole
    assert set(result.left_out.values()) == {"no judged relevant span"}
    s = summary(result)
    assert s["qrels"]["source"] == SPAN_QRELS and "spans.jsonl" in s["qrels"]["note"]
    assert "spans.jsonl" in to_markdown(s)

    # the test set's chunk corpus as passages: the spans are on documents the sweep does not have, and it says so
    fallback = _sweep(_chunked_config(tmp_path, {"path": str(testset), "passages": str(corpus)}))
    assert fallback.qrels_source == PASSAGE_QRELS
    assert "set dataset.passages to the documents" in fallback.qrels_note


def test_a_span_on_a_document_the_passages_lack_names_its_line(tmp_path: Path) -> None:
    docs, _, testset = _test_set(tmp_path)
    spans = testset / "spans.jsonl"
    lines = spans.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    lines.append(json.dumps({**first, "doc_id": "doc-gone", "start": 0, "end": 5}))
    spans.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        _sweep(_chunked_config(tmp_path, {"path": str(testset), "passages": str(docs)}))
    message = str(caught.value)
    assert "spans.jsonl" in message and f"line {len(lines)}" in message and "doc-gone" in message


def test_a_sweep_after_a_night_over_the_same_passages_embeds_nothing(tmp_path: Path) -> None:
    from ragmetrics.nightly.load import load_dataset
    from ragmetrics.retrievers import build_timed_run

    path = write_config(tmp_path, sweep_section(retrievers=DENSE, fusion=None), questions=12)
    config = load_config(path)
    dataset = load_dataset(config.dataset, progress=False)
    assert dataset.passages is not None
    passages = [p.as_dict() for p in dataset.passages.values()]
    queries = [(s.id, s.question) for s in dataset.samples]
    # what a night's dense retriever run does (nightly.runs): the default embedder, the config's index_dir
    _, night = build_timed_run("dense", {}, passages, queries, "dense", index_dir=config.index_dir)
    assert night.embedded == 48
    close_all()
    sweep = run_sweep(config)
    assert sweep.stages.index_use[("passages", "dense")] == IndexUse(embedded=0, reused=48, built=False)
