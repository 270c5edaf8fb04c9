"""`ragmetrics testset CORPUS -o DIR`: build a test collection (questions, references, graded qrels) from a
corpus, offline or with the judge's LLM (ragmetrics.testset)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from ragmetrics.errors import ConfigError, InputError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "testset",
        help="build a test collection (questions, references, graded qrels) from your own corpus",
        description="Picks chunks that cover the corpus's topics, writes questions of several kinds about them "
        "(offline by default; with the judge's LLM when the config's judge has an endpoint), filters "
        "near-duplicates, copies and questions the source does not answer, and writes DIR/questions.jsonl, "
        "DIR/qrels.txt, DIR/grades.tsv, DIR/testset.json and DIR/testset.html. A nightly config reads DIR as its "
        "dataset (dataset: {path: DIR}). See docs/testset.md.",
    )
    parser.add_argument(
        "corpus",
        help="JSONL/CSV/Parquet with id and text (title optional; BEIR's corpus.jsonl with _id), a saved "
        "datasets folder, or 'builtin' for the built-in collection",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write")
    parser.add_argument("--size", type=int, help="questions to keep (default 100, or the config's)")
    parser.add_argument("--seed", type=int, help="seed: the same seed and corpus give the same test set")
    parser.add_argument("--config", type=Path, help="a ragmetrics config: its judge and its testset: section")
    parser.add_argument(
        "--kinds",
        metavar="KIND=SHARE,...",
        help="shares of question kinds, e.g. factoid=0.5,keyword=0.3,unanswerable=0.2 (kinds: factoid, "
        "multi_chunk, keyword, comparison, unanswerable)",
    )
    parser.add_argument("--generator", choices=["auto", "offline", "llm"], help="who writes the questions")
    parser.add_argument("--language", help="ISO 639-1 code of every chunk (default: detected per chunk)")
    parser.add_argument(
        "--pool",
        action="append",
        default=[],
        metavar="RUN_OR_KIND",
        help="complete the qrels: a run file over DIR's questions, a reference retriever kind (bm25, dense, "
        "bm25_embedding_rerank) built over the corpus now, or 'config' for the config's retriever runs; "
        "repeat for several. The judge grades each run's top --pool-depth",
    )
    parser.add_argument("--pool-depth", type=int, help="top-k of each pooled run to grade (default 10)")
    parser.add_argument(
        "--index-dir",
        type=Path,
        metavar="DIR",
        help="folder of the pooled retrievers' persisted indexes (default: the config's index_dir, else "
        ".ragmetrics-cache/index, where `ragmetrics run` keeps them: a night then reuses what pooling built)",
    )
    parser.add_argument(
        "--pool-judge",
        choices=["judge", "e5"],
        help="with the local judge: grade the pool with it as configured ('judge') or on e5, a model no reference "
        "retriever ranks with (default: the config's testset.pool_judge, else 'judge'; docs/testset.md)",
    )
    parser.add_argument(
        "--no-judge-checks",
        action="store_true",
        help="skip the judge's answerability and support checks (faster; the report says so)",
    )
    parser.add_argument(
        "--size-from",
        type=Path,
        metavar="REPORT",
        help="size the test set from a pilot: a report.json of `ragmetrics run` or `compare` whose paired "
        "differences give the questions needed to detect --delta",
    )
    parser.add_argument("--delta", type=float, default=0.02, help="difference to detect with --size-from")
    parser.add_argument("--metric", help="metric of the pilot to size on (default: its first)")
    parser.add_argument(
        "--power", type=float, default=0.8, help="power wanted with --size-from (default 0.8)"
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="count what the build would ask an LLM endpoint (requests the cache lacks) and stop",
    )
    parser.set_defaults(handler=run_command)


def _kinds(text: str) -> dict[str, float]:
    shares: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            raise InputError(f"expected KIND=SHARE, got {part!r}", field="--kinds")
        try:
            share = float(value)
        except ValueError:
            raise InputError(
                f"share of {name.strip()!r} is not a number: {value!r}", field="--kinds"
            ) from None
        if not math.isfinite(share) or share < 0:
            raise InputError(f"share of {name.strip()!r} must be a finite number >= 0", field="--kinds")
        shares[name.strip()] = share
    return shares


def _size_from(report: Path, metric: str | None, delta: float, power: float) -> tuple[int, str]:
    from ragmetrics.nightly.gate import load_baseline
    from ragmetrics.testset.sizing import questions_for_delta

    return questions_for_delta(
        load_baseline(report, what="pilot report"), metric=metric, delta=delta, power=power
    )


def _one_judge(judge: Any, source: Path) -> None:
    """The builder drafts and grades with one judge: a panel or a cascade in the config is refused, naming the
    key, rather than built from the judge section's other keys (a judge the config never asked for)."""
    for key in ("panel", "cascade"):
        if getattr(judge, key, None):
            raise ConfigError(
                f"{source}: judge.{key}: the test-set builder drafts and grades with one judge, not a {key}; "
                f"give it a config whose judge section names one judge (model, base_url), without {key}"
            )


def run_command(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ragmetrics.judge.select import make_judge
    from ragmetrics.judge.settings import JudgeSettings
    from ragmetrics.testset import TestsetSettings, build_testset
    from ragmetrics.testset.output import write_testset

    config = None
    base: dict[str, Any] = {}
    judge_settings = JudgeSettings(backend="local")
    if args.config is not None:
        from ragmetrics.nightly.config_load import load_config

        config = load_config(args.config)
        if config.testset is not None:
            base = config.testset.model_dump(exclude_unset=True)
        if config.judge is not None:
            _one_judge(config.judge, args.config)
            judge_settings = config.judge.settings()
    overrides = {
        key: value
        for key, value in {
            "size": args.size,
            "seed": args.seed,
            "generator": args.generator,
            "language": args.language,
            "pool_depth": args.pool_depth,
            "pool_judge": args.pool_judge,
        }.items()
        if value is not None
    }
    if args.kinds:
        overrides["kinds"] = _kinds(args.kinds)
    if args.no_judge_checks:
        overrides["judge_checks"] = False
    if args.size_from is not None:
        size, why = _size_from(args.size_from, args.metric, args.delta, args.power)
        overrides["size"] = size
        print(f"ragmetrics testset: {why}", file=sys.stderr)
    try:
        settings = TestsetSettings.model_validate({**base, **overrides})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"testset.{where}: {first['msg']}") from None
    pool: list[Any] = []
    for entry in args.pool:
        if entry == "config":
            pool.extend(_config_retrievers(config))
        else:
            pool.append(entry)
    judge = make_judge(judge_settings)
    if args.dry_run:
        from ragmetrics.testset.estimate import estimate_testset

        print(estimate_testset(args.corpus, settings, judge_settings, pooled=len(pool)))
        return int(ExitCode.OK)
    testset = build_testset(
        args.corpus,
        settings=settings,
        judge=judge,
        pool=pool,
        progress=lambda message: print(f"ragmetrics testset: {message}", file=sys.stderr),
        index_dir=_index_dir(args.index_dir, config),
    )
    paths = write_testset(testset, args.output)
    filters = ", ".join(f"{k} {v}" for k, v in testset.filter_counts().items() if v)
    print(
        f"{len(testset.items)} questions ({', '.join(f'{k} {v}' for k, v in testset.kind_counts().items() if v)}) "
        f"from {testset.eligible_chunks} of {testset.n_chunks} chunks, {testset.coverage['groups_with_questions']} "
        f"of {testset.coverage['groups']} topic groups; generator {testset.generator}; left out: "
        f"{filters or 'none'}"
    )
    for note in testset.notes:
        print(f"ragmetrics testset: note: {note}", file=sys.stderr)
    if len(testset.items) < settings.size:
        print(
            f"ragmetrics testset: only {len(testset.items)} of the {settings.size} questions asked for passed the "
            "filters (a small corpus, or strict filters: testset.html lists what each left out; a larger "
            "testset.oversample drafts more)",
            file=sys.stderr,
        )
    print(
        f"wrote {paths['questions']}, {paths['qrels']}, {paths['grades']}, {paths['manifest']}, {paths['html']}"
    )
    failed = sum(1 for f in testset.filtered if f.filter == "generation_failed")
    if failed and not testset.items:
        return int(ExitCode.INCOMPLETE)
    return int(ExitCode.OK)


def _index_dir(given: Path | None, config: Any) -> Path:
    """--index-dir, else the config's index_dir (the night's), else the default both share."""
    if given is not None:
        return given
    if config is not None and config.index_dir is not None:
        return Path(config.index_dir)
    from ragmetrics.index.store import DEFAULT_INDEX_DIR

    return DEFAULT_INDEX_DIR


def _config_retrievers(config: Any) -> list[Any]:
    if config is None:
        raise InputError("--pool config needs --config", field="--pool")
    from ragmetrics.nightly.config_runs import RetrieverRunSpec

    specs = [
        {"retriever": spec.retriever, "params": dict(spec.params), "name": spec.name or spec.retriever}
        for spec in config.runs
        if isinstance(spec, RetrieverRunSpec)
    ]
    if not specs:
        raise InputError("the config has no retriever runs to pool", field="runs")
    return specs
