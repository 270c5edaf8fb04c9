"""The figures of docs/trust.md: a simulation of CI width against the number of labels, and the worked example
on the built-in collection (the local judge's context_precision against labels made from the qrels).

    python tools/trust_figures.py            # print the Markdown
    python tools/trust_figures.py --write    # and replace the generated part of docs/trust.md

Deterministic (fixed seeds); takes about a minute (the worked example runs the quickstart's judge, cached).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def simulation_table() -> list[str]:
    """Coverage and mean CI width of each interval, by number of labels (2,000 judged samples, 1,000 datasets)."""
    from ragmetrics.trust.ppi import estimate_mean

    rng = np.random.default_rng(2023)
    truth, unlabeled, datasets = 0.6, 2000, 1000
    lines = [
        "| labels n | judge-only covers | judge-only width | classical covers | classical width "
        "| PPI covers | PPI width | PPI++ covers | PPI++ width |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in (25, 50, 100, 200, 400, 800):
        covered = {k: 0 for k in ("judge_only", "classical", "ppi", "ppi_plus")}
        widths = {k: 0.0 for k in covered}
        for _ in range(datasets):
            y = (rng.random(n + unlabeled) < truth).astype(float)
            f = np.clip(0.7 * y + 0.25 + rng.normal(0, 0.15, y.size), 0, 1)
            est = estimate_mean(f[:n], y[:n], f[n:])
            for key in covered:
                interval = getattr(est, key)
                covered[key] += interval.covers(truth)
                widths[key] += interval.width
        cells = " | ".join(f"{covered[k] / datasets:.1%} | {widths[k] / datasets:.3f}" for k in covered)
        lines.append(f"| {n} | {cells} |")
    return lines


def worked_example() -> list[str]:
    """The local judge's context_precision on the quickstart's three runs, against human labels from the qrels."""
    from ragmetrics.judge.formulas import context_precision_score
    from ragmetrics.nightly.config import load_config
    from ragmetrics.nightly.dataset import load_dataset
    from ragmetrics.nightly.pipeline import build_runs, run_pipeline
    from ragmetrics.schema import RunResult
    from ragmetrics.trust import judge_agreement
    from ragmetrics.trust.labels import HumanLabel, HumanLabels

    config = load_config(ROOT / "configs" / "quickstart.yaml")
    config.judge.metrics = ["context_precision"]  # type: ignore[union-attr]
    outcome = run_pipeline(config, write=False, progress=False)
    dataset = load_dataset(config.dataset)
    runs = build_runs(config, dataset)
    grades = dataset.qrels().to_dict()
    context_ids = {s.id: list(s.context_ids or []) for s in dataset.samples}
    pooled: dict[str, dict[str, float | None]] = {}
    labels: list[HumanLabel] = []
    for result in outcome.report.runs:
        ranking = runs[result.name].to_dict()
        for qid, scores in result.per_query.items():
            ids = context_ids[qid] if result.name == "pipeline" else list(ranking.get(qid, {}))[:3]
            human = context_precision_score([grades.get(qid, {}).get(d, 0) >= 1 for d in ids])
            key = f"{result.name}:{qid}"
            pooled[key] = {"context_precision": scores.get("context_precision")}
            labels.append(HumanLabel(key, "context_precision", human, human, None, len(labels) + 1))
    combined = RunResult(name="pooled", per_query=pooled)
    combined.metadata.metrics = ["context_precision"]
    true_mean = float(np.mean([lab.value for lab in labels]))
    rng = np.random.default_rng(7)
    order = rng.permutation(len(labels))
    lines = [
        f"{len(labels)} samples (64 questions x 3 runs); the people's mean context_precision (from the qrels) is "
        f"**{true_mean:.3f}**, the local judge's mean is "
        f"**{np.mean([v['context_precision'] for v in pooled.values()]):.3f}**.",
        "",
        "| labels | judge-only | labels only (classical) | PPI | PPI++ (lambda) | balanced accuracy | Spearman | bias |",
        "|---:|---|---|---|---|---|---|---|",
    ]

    def ci(i: object) -> str:
        if i is None or getattr(i, "estimate", None) is None:
            return "-"
        return f"{i.estimate:.3f} [{i.low:.3f}, {i.high:.3f}]"  # type: ignore[attr-defined]

    for n in (50, 100, len(labels)):
        subset = HumanLabels(source="qrels", labels=tuple(labels[i] for i in order[:n]))
        trust = judge_agreement(combined, subset, metrics=["context_precision"], seed=0)
        (agree,), (est,) = trust.agreement, trust.ppi
        lam = f" ({est.ppi_lambda:.2f})" if est.ppi_lambda is not None else ""
        lines.append(
            f"| {n} | {ci(est.judge_only)} | {ci(est.classical)} | {ci(est.ppi)} | {ci(est.ppi_plus)}{lam} "
            f"| {ci(agree.balanced_accuracy)} | {ci(agree.spearman)} | {ci(agree.bias)} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help="replace the generated part of docs/trust.md")
    args = parser.parse_args()
    body = [
        "### Simulation: coverage and width of 95 % intervals",
        "",
        "A judge of binary human labels (people's mean 0.6) that is biased and noisy: judge = clip(0.7 y + 0.25 + "
        "N(0, 0.15)), so its own mean is about 0.67. 1,000 simulated datasets per row, 2,000 judged-only samples.",
        "",
        *simulation_table(),
        "",
        "### Worked example: the built-in collection, local judge",
        "",
        *worked_example(),
    ]
    text = "\n".join(body)
    print(text)
    if args.write:
        doc = ROOT / "docs" / "trust.md"
        current = doc.read_text(encoding="utf-8")
        a, b = current.index(START) + len(START), current.index(END)
        doc.write_text(current[:a] + "\n" + text + "\n" + current[b:], encoding="utf-8")
        print(f"wrote {doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
