"""Answer relevancy of follow-up turns judged against the turn's own question, and against the previous
question and this one together (the in-context reading docs/conversations.md explains is not shipped).

    python benchmarks/conversation_relevancy.py [--file examples/conversations/conversations.jsonl]

Local judge; prints each follow-up turn's two scores and the means over follow-ups.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ragmetrics.judge.backends.local import LocalJudge
from ragmetrics.judge.evaluate import evaluate_rag
from ragmetrics.nightly.dataset import read_qa

DEFAULT = Path(__file__).resolve().parents[1] / "examples" / "conversations" / "conversations.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT)
    args = parser.parse_args()
    samples = sorted(read_qa(args.file), key=lambda s: (s.conversation_id or "", s.turn or 0))
    previous: dict[str, str] = {}
    alone, in_context, follow_ups = [], [], []
    for sample in samples:
        plain = sample.model_copy(update={"conversation_id": None, "turn": None})
        alone.append(plain)
        before = previous.get(sample.conversation_id or "")
        question = f"{before} {sample.question}" if before else sample.question
        in_context.append(plain.model_copy(update={"question": question}))
        if before:
            follow_ups.append(sample)
        previous[sample.conversation_id or ""] = sample.question
    judge = LocalJudge()
    a = evaluate_rag(alone, ["answer_relevancy"], judge, progress=False).per_query
    c = evaluate_rag(in_context, ["answer_relevancy"], judge, progress=False).per_query
    up = down = 0
    for sample in follow_ups:
        x, y = a[sample.id]["answer_relevancy"] or 0.0, c[sample.id]["answer_relevancy"] or 0.0
        up, down = up + (y > x + 0.01), down + (y < x - 0.01)
        print(f"{sample.id:16} alone {x:.3f}  in context {y:.3f}  {sample.question}")
    n = len(follow_ups)
    mean_alone = sum(a[s.id]["answer_relevancy"] or 0.0 for s in follow_ups) / n
    mean_context = sum(c[s.id]["answer_relevancy"] or 0.0 for s in follow_ups) / n
    print(f"{n} follow-ups: mean {mean_alone:.3f} alone, {mean_context:.3f} in context; {up} up, {down} down")


if __name__ == "__main__":
    main()
