"""Faithfulness of verbatim extractive answers: how many score below 1 with the local judge.

    python benchmarks/bench_copied_faithfulness.py [--answers 200] [--seed 0] [--formatting]

Every answer copies 1, 2 or 3 chunks of the built-in collection word for word, joined as an extractive
generator joins them: with a space and no full stop (the chunk's own final stop dropped, as docstring
paragraphs often lack one), with ". ", or with a line break. The contexts are those chunks, in retrieval order
(shuffled against the answer's order for a third of the samples), plus one unrelated chunk. A judge whose
faithfulness does not depend on where sentences break scores every one of them 1. Also printed: the same
answers with an invented clause appended, which must not score 1 (the check stays a check).

With --formatting, the night's formatting check (judge.text.formatting) also runs on every answer scored 0 or
1: each re-scored with its full stops removed, a full stop at each copy boundary, and its whitespace collapsed.

Chunks are the collection's paragraphs (blank-line separated) of 8 to 60 words that are prose, not code.
Run it against another checkout (PYTHONPATH) for a before/after figure.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections import Counter
from typing import Any

from ragmetrics.collection import load_passages
from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag

INVENTED = (
    "and it was removed in Python 2.1 because the garbage collector could not free it",
    "which requires a licence key from the Apache Foundation",
    "and it runs only on Windows NT 4.0 with 64 MB of memory",
)


def paragraphs() -> list[str]:
    out = []
    for passage in load_passages():
        for block in re.split(r"\n\s*\n", passage["text"]):
            text = " ".join(block.split())
            words = text.split()
            if 8 <= len(words) <= 60 and not block.startswith(" ") and not re.search(r"[*=#>]{2}|::=", text):
                out.append(text)
    return sorted(set(out))


def samples(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    pool = paragraphs()
    out = []
    for i in range(n):
        k = 1 + i % 3
        joint = ("space", "stop", "newline")[(i // 3) % 3]
        picked = rng.sample(pool, k + 1)
        copied, distractor = picked[:k], picked[k]
        if joint == "space":
            parts = [c.rstrip(".") for c in copied[:-1]] + [copied[-1]]
            answer = " ".join(parts)
        elif joint == "stop":
            answer = " ".join(c if c.endswith((".", "!", "?", ":")) else c + "." for c in copied)
        else:
            answer = "\n".join(copied)
        contexts = [*copied, distractor]
        if i % 3 == 2:
            rng.shuffle(contexts)
        out.append({"id": f"c{i:03d}-{k}-{joint}", "question": "What does the documentation say?",
                    "contexts": contexts, "answer": answer})  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--formatting", action="store_true", help="also run the formatting check on every answer"
    )
    args = parser.parse_args()
    copied = samples(args.answers, args.seed)
    invented = [
        {
            **s,
            "id": s["id"] + "-inv",
            "answer": s["answer"].rstrip(".") + " " + INVENTED[n % len(INVENTED)] + ".",
        }
        for n, s in enumerate(copied)
    ]
    start = time.perf_counter()
    res = evaluate_rag(copied + invented, ["faithfulness"], LocalJudge(), progress=False)
    seconds = time.perf_counter() - start
    by_kind: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for s in copied:
        _, k, joint = s["id"].split("-")
        totals[f"{k} chunks, {joint}"] += 1
        if (res.per_query[s["id"]]["faithfulness"] or 0.0) < 1.0:
            by_kind[f"{k} chunks, {joint}"] += 1
    below = sum(by_kind.values())
    zero = sum(1 for s in copied if res.per_query[s["id"]]["faithfulness"] == 0.0)
    print(f"copied answers below 1: {below} of {len(copied)} (scored 0: {zero})")
    for kind in sorted(totals):
        print(f"  {kind:20s} {by_kind[kind]:3d} of {totals[kind]}")
    full = sum(1 for s in invented if res.per_query[s["id"]]["faithfulness"] == 1.0)
    print(f"answers with an invented clause scored 1: {full} of {len(invented)}")
    print(f"failures: {len(res.failures)}; {seconds:.1f} s")
    if args.formatting:
        formatting_check(copied + invented, res.per_query)


def formatting_check(samples: list[dict[str, Any]], scores: dict[str, dict[str, float | None]]) -> None:
    """The night's formatting check (judge.text.formatting) on these answers, all of them rather than a sample."""
    from ragmetrics.judge.text.formatting import FormattingCheck, answer_changed, checkable, perturbations

    variants = []
    originals = {}
    for s in samples:
        score = scores[s["id"]]["faithfulness"]
        if not checkable(score):
            continue
        originals[s["id"]] = float(score or 0.0)
        for name, text in perturbations(s["answer"], s["contexts"]).items():
            variants.append({**s, "id": f"{s['id']}|{name}", "answer": text})
    res = evaluate_rag(variants, ["faithfulness"], LocalJudge(), progress=False)
    moved: Counter[str] = Counter()
    changed = 0
    for sid, original in originals.items():
        perturbed = {v["id"].split("|")[1]: res.per_query[v["id"]]["faithfulness"] for v in variants
                     if v["id"].split("|")[0] == sid}  # fmt: skip
        names = answer_changed(original, perturbed)
        moved.update(names)
        changed += bool(names)
    print(FormattingCheck("faithfulness", len(originals), changed, dict(moved)).describe())


if __name__ == "__main__":
    main()
