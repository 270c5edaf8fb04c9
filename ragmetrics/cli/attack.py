"""`ragmetrics attack CORPUS|TESTSET -o DIR`: an attack set built from the team's own corpus and questions
(ragmetrics.attacks; docs/attacks.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragmetrics.errors import InputError
from ragmetrics.options import ExitCode


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ragmetrics.attacks.model import ATTACK_KINDS, LEAK_STYLES, POSITIONS
    from ragmetrics.attacks.templates import INJECTION_STYLES

    parser = subparsers.add_parser(
        "attack",
        help="build an attack set (injection, poisoning, leaks, out of scope) from your own corpus",
        description="Builds attacks on your RAG system from your own corpus and questions, offline and "
        "deterministic by --seed: injected instructions (styles: "
        f"{', '.join(INJECTION_STYLES)}; at the {'/'.join(POSITIONS)} of a relevant chunk), poisoned chunks "
        f"stating a false answer, secret leaks ({', '.join(LEAK_STYLES)}) and out-of-scope questions. Each "
        "carries a canary, secret or false value so its success is decided exactly, without a judge. Writes "
        "DIR/questions.jsonl, DIR/checks.jsonl, DIR/planted.jsonl and DIR/attacks.json; a night reads DIR with "
        "dataset: {attacks: DIR}. See docs/attacks.md.",
    )
    parser.add_argument(
        "source",
        help="'builtin' (the built-in collection), a test-set folder (ragmetrics testset), or a corpus file "
        "(JSONL/CSV/Parquet with id and text; with --questions and --qrels its own questions, else questions the "
        "offline test-set builder writes)",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write")
    parser.add_argument("--corpus", type=Path, help="a test set's corpus, when its testset.json names none")
    parser.add_argument(
        "--questions", type=Path, help="JSONL of questions (id or _id; question, text or query)"
    )
    parser.add_argument("--qrels", type=Path, help="TREC qrels of --questions: their source chunks")
    parser.add_argument(
        "--kinds",
        default=",".join(ATTACK_KINDS),
        help=f"comma-separated attack kinds (default: all: {','.join(ATTACK_KINDS)})",
    )
    parser.add_argument(
        "--styles", default=",".join(INJECTION_STYLES), help="comma-separated injection styles (default: all)"
    )
    parser.add_argument("--size", type=int, help="attack at most this many questions (drawn by --seed)")
    parser.add_argument(
        "--out-of-scope",
        type=int,
        dest="out_of_scope",
        help="out-of-scope questions (default: half the attacked questions, at least 10)",
    )
    parser.add_argument(
        "--poison-copies", type=int, default=3, help="planted texts per poisoned question (1-3)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the same seed and input give the same attack set"
    )
    parser.add_argument(
        "--behaviours",
        action="store_true",
        help="also injections whose effect no canary shows (a pirate's tone, a competitor recommended), decided at "
        "night by the LLM judge's injection_followed rubric (needs judge.backend: openai)",
    )
    parser.set_defaults(handler=run_command)


def _listed(value: str, option: str) -> list[str]:
    items = [part.strip() for part in value.split(",") if part.strip()]
    if not items:
        raise InputError("expected a comma-separated list", source=option)
    return items


def run_command(args: argparse.Namespace) -> int:
    from ragmetrics.attacks.build import build_attacks
    from ragmetrics.attacks.sources import out_of_scope_targets, targets_from
    from ragmetrics.attacks.store import write_attack_set

    if args.size is not None and args.size < 1:
        raise InputError(f"must be at least 1, got {args.size}", source="--size")
    if args.out_of_scope is not None and args.out_of_scope < 0:
        raise InputError(f"must be 0 or more, got {args.out_of_scope}", source="--out-of-scope")
    if not 1 <= args.poison_copies <= 3:
        raise InputError(f"must be 1, 2 or 3, got {args.poison_copies}", source="--poison-copies")
    from ragmetrics.attacks.model import ATTACK_KINDS
    from ragmetrics.attacks.templates import INJECTION_STYLES

    kinds = _listed(args.kinds, "--kinds")
    styles = _listed(args.styles, "--styles")
    for option, given, known in (("--kinds", kinds, ATTACK_KINDS), ("--styles", styles, INJECTION_STYLES)):
        unknown = [item for item in given if item not in known]
        if unknown:
            raise InputError(f"unknown value {unknown[0]!r}; one of: {', '.join(known)}", source=option)

    def say(message: str) -> None:
        print(f"ragmetrics attack: {message}", file=sys.stderr)

    targets = targets_from(
        args.source,
        corpus=args.corpus,
        questions=args.questions,
        qrels=args.qrels,
        size=args.size or 100,
        seed=args.seed,
        progress=say,
    )
    attacked = min(len(targets.answerable), args.size) if args.size else len(targets.answerable)
    # by default every question the team marked unanswerable is attacked, and at least 10 or half the targets
    count = (
        args.out_of_scope
        if args.out_of_scope is not None
        else max(10, attacked // 2, len(targets.unanswerable))
    )
    outside = (
        out_of_scope_targets(targets, count, args.seed, say) if "out_of_scope" in kinds and count else []
    )
    attack_set = build_attacks(
        targets.answerable,
        targets.corpus,
        kinds=kinds,  # type: ignore[arg-type]  # checked by build_attacks
        out_of_scope=outside,
        seed=args.seed,
        size=args.size,
        poison_copies=args.poison_copies,
        behaviours=args.behaviours,
        styles=styles,
        source=targets.source,
        corpus_path=targets.corpus_path,
        progress=say,
    )
    paths = write_attack_set(attack_set, args.output)
    counts = attack_set.counts()
    summary = "; ".join(
        f"{kind} {sum(styles_.values())} ({', '.join(f'{s} {n}' for s, n in styles_.items())})"
        for kind, styles_ in counts.items()
    )
    print(f"{len(attack_set.checks)} attacks on {attack_set.manifest['targets']} questions: {summary}")
    for reason, ids in attack_set.skipped.items():
        say(f"left out: {reason.replace('_', ' ')}: {len(ids)} questions (e.g. {', '.join(ids[:3])})")
    print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return int(ExitCode.OK)
