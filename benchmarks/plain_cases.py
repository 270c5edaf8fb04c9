"""Score the local judge on the plain labelled cases (tests/data/local_judge_plain.jsonl).

    python benchmarks/plain_cases.py [--json out.json]

Each topic has a question, its context, a reference, two right answers (a paraphrase, a terse or approximate
answer, one leaning on a pronoun) and two wrong ones (a swapped name, a changed number, a contradiction, an
invented addition). Prints, for faithfulness and answer_correctness, the ROC AUC of the score against the
label, how often a right answer outscores each wrong answer of its topic, and the share of each wrong kind
scored below 0.5. The same figures are a test floor (tests/local/test_plain_cases.py). With --builtin, also
the built-in collection's 64 answers: mean score per `answer_quality` and the ROC AUC of good above wrong.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "local_judge_plain.jsonl"
METRICS = ("faithfulness", "answer_correctness")


@dataclass(frozen=True)
class PlainItem:
    topic: str
    kind: str
    label: int
    row: dict[str, Any]


def plain_items(path: Path = DATA) -> list[PlainItem]:
    items: list[PlainItem] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        topic = json.loads(line)
        for label, key in ((1, "right"), (0, "wrong")):
            for n, (answer, kind) in enumerate(topic[key]):
                row = {
                    "id": f"{topic['topic']}-{key}-{n}",
                    "question": topic["question"],
                    "contexts": topic["contexts"],
                    "reference": topic["reference"],
                    "answer": answer,
                }
                items.append(PlainItem(topic["topic"], kind, label, row))
    return items


def score_plain(items: list[PlainItem]) -> dict[str, dict[str, float | None]]:
    """Per metric and item id, the local judge's score (None where it failed)."""
    from ragmetrics import evaluate_rag
    from ragmetrics.judge.backends.local import LocalJudge

    result = evaluate_rag([i.row for i in items], list(METRICS), LocalJudge(model="minilm"))
    return {
        metric: {i.row["id"]: result.per_query[i.row["id"]].get(metric) for i in items} for metric in METRICS
    }


def summary(items: list[PlainItem], scores: dict[str, dict[str, float | None]]) -> dict[str, Any]:
    from ragmetrics.trust.agreement import roc_auc

    out: dict[str, Any] = {}
    for metric in METRICS:
        values = [scores[metric][i.row["id"]] for i in items]
        pairs = [(v if v is not None else 0.0, i.label) for v, i in zip(values, items, strict=True)]
        auc = roc_auc([p[0] for p in pairs], [p[1] for p in pairs])
        by_topic: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for (value, label), item in zip(pairs, items, strict=True):
            by_topic[item.topic].append((value, label))
        wins = total = 0
        for scored in by_topic.values():
            for right in (v for v, lab in scored if lab):
                for wrong in (v for v, lab in scored if not lab):
                    total += 1
                    wins += right > wrong
        flagged: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for (value, label), item in zip(pairs, items, strict=True):
            flagged[item.kind][0] += (value < 0.5) if not label else (value >= 0.5)
            flagged[item.kind][1] += 1
        out[metric] = {
            "roc_auc": round(auc, 3),
            "right_beats_wrong": f"{wins}/{total}",
            "correct_call_by_kind": {k: f"{a}/{b}" for k, (a, b) in sorted(flagged.items())},
            "failed": sum(v is None for v in values),
        }
    return out


def builtin_figures() -> dict[str, Any]:
    """Faithfulness and answer correctness of the built-in collection's answers by their written quality."""
    from ragmetrics import evaluate_rag
    from ragmetrics.judge.backends.local import LocalJudge
    from ragmetrics.trust.agreement import roc_auc

    path = Path(__file__).resolve().parent.parent / "ragmetrics" / "collection" / "data" / "qa.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    fields = ("id", "question", "contexts", "answer", "reference")
    result = evaluate_rag(
        [{k: r[k] for k in fields} for r in rows], list(METRICS), LocalJudge(), progress=False
    )
    out: dict[str, Any] = {}
    for metric in METRICS:
        by: dict[str, list[float]] = defaultdict(list)
        for row in rows:
            value = result.per_query[row["id"]].get(metric)
            if value is not None:
                by[row["answer_quality"]].append(value)
        pairs = [(v, 1) for v in by["good"]] + [(v, 0) for v in by["wrong"]]
        out[metric] = {
            "mean_by_quality": {k: round(sum(v) / len(v), 3) for k, v in sorted(by.items())},
            "roc_auc_good_vs_wrong": round(roc_auc([v for v, _ in pairs], [lab for _, lab in pairs]), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--show", action="store_true", help="print every item's scores")
    parser.add_argument("--builtin", action="store_true", help="also score the built-in collection's answers")
    args = parser.parse_args()
    items = plain_items()
    scores = score_plain(items)
    if args.show:
        for item in items:
            print(item.label, item.kind.ljust(18), *(f"{scores[m][item.row['id']]}" for m in METRICS),
                  item.row["answer"])  # fmt: skip
    figures: dict[str, Any] = summary(items, scores)
    if args.builtin:
        figures["builtin_collection"] = builtin_figures()
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
