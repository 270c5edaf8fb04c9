"""The validity study where the truth is known: does `ragmetrics validity` name the right metric, and do its
intervals cover the true tau at their nominal rate?

    PYTHONPATH=. python benchmarks/sim_validity.py            # 200 seeds, about a minute on one core
    PYTHONPATH=. python benchmarks/sim_validity.py --seeds 50 --questions 150

The world: each question has 20 passages. Two are useful (the generator answers correctly from them:
ground-truth utility); three more are on topic but do not hold the answer (what a relevance assessor marks
relevant too); the rest are off topic. The generator reads the top 3 of a run: it answers correctly with a
probability that falls with the rank of the first useful passage it sees (0.9, 0.75, 0.6) and is lowered by
each on-topic-but-useless passage beside it (distraction); otherwise it scores a partial-credit token F1 in
[0, 0.3). Six runs (fixed systems) rank the passages by a noisy score that weighs usefulness and topicality
differently, so some runs chase topic and others the answer.

The metrics, all scored by ragmetrics' own retrieval metrics on three qrels sets:
- `ndcg@3 (utility)`: the true utility labels, at the generator's depth: the most valid by construction;
- `recall@6 (utility)`: the true labels, but to a depth of 6 where the generator reads 3;
- `ndcg@3 (human)`: assessor-style noisy labels: each useful passage missed with probability 0.3, each
  on-topic-but-useless one marked relevant with probability 0.5;
- `ndcg@3 (irrelevant)`: labels drawn at random (no validity; its tau should be near 0).

The truth: each metric's tau-b with the answers over (question, run) pairs, from one simulation of 20,000
questions (scipy.stats.kendalltau on 120,000 pairs). Per seed: a night of `--questions` questions, the study
exactly as `ragmetrics validity` runs it (`validity_data`, `validity_study`), then: was the truly best metric
named (and the data said it could tell), and did each metric's interval cover its true tau?
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

PASSAGES = 20
USEFUL, TOPICAL = 2, 3
DEPTH = 3
ANSWER_METRIC = "token_f1"
# (weight on usefulness, weight on topicality, noise) per run: fixed systems
RUNS: dict[str, tuple[float, float, float]] = {
    "answer-chaser": (2.2, 0.4, 1.0),
    "balanced": (1.6, 1.2, 1.0),
    "topic-chaser": (0.7, 2.2, 1.0),
    "weak": (0.8, 0.8, 1.2),
    "strong": (2.8, 1.0, 0.9),
    "noisy": (1.2, 1.2, 2.0),
}
METRICS = ("ndcg@3 (utility)", "recall@6 (utility)", "ndcg@3 (human)", "ndcg@3 (irrelevant)")


def simulate(questions: int, rng: np.random.Generator) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """Qrels sets, runs and answer qualities of `questions` questions: ({'qrels': {set: qrels}, 'runs': ...},
    run -> question -> answer quality)."""
    qrels: dict[str, dict[str, dict[str, int]]] = {"utility": {}, "human": {}, "irrelevant": {}}
    runs: dict[str, dict[str, dict[str, float]]] = {name: {} for name in RUNS}
    answers: dict[str, dict[str, float]] = {name: {} for name in RUNS}
    for q in range(questions):
        qid = f"q{q:05d}"
        docs = [f"{qid}-d{d:02d}" for d in range(PASSAGES)]
        useful = np.zeros(PASSAGES, dtype=bool)
        topical = np.zeros(PASSAGES, dtype=bool)
        useful[:USEFUL] = True
        topical[USEFUL : USEFUL + TOPICAL] = True
        qrels["utility"][qid] = {docs[d]: 1 for d in np.flatnonzero(useful)}
        labelled = (useful & (rng.random(PASSAGES) >= 0.3)) | (topical & (rng.random(PASSAGES) < 0.5))
        qrels["human"][qid] = {docs[d]: 1 for d in np.flatnonzero(labelled)} or {docs[-1]: 0}
        qrels["irrelevant"][qid] = {docs[d]: 1 for d in rng.choice(PASSAGES, USEFUL + TOPICAL, replace=False)}
        ease = rng.normal(0.0, 0.5)  # a question's difficulty, shared by every run
        for name, (w_useful, w_topic, noise) in RUNS.items():
            score = w_useful * useful + w_topic * topical + rng.normal(0.0, noise, PASSAGES)
            order = np.argsort(-score, kind="stable")
            runs[name][qid] = {docs[d]: float(PASSAGES - r) for r, d in enumerate(order)}
            top = order[:DEPTH]
            first = next((r for r, d in enumerate(top) if useful[d]), None)
            distraction = int(topical[top].sum())
            p = 0.0 if first is None else (0.9, 0.75, 0.6)[first] * (0.9**distraction)
            p = float(1.0 / (1.0 + np.exp(-(np.log(p / (1 - p)) + ease)))) if 0 < p < 1 else p
            correct = rng.random() < p
            answers[name][qid] = 1.0 if correct else float(rng.uniform(0.0, 0.3))
    return {"qrels": qrels, "runs": runs}, answers


def night_report(world: dict[str, Any], answers: dict[str, dict[str, float]]) -> Any:
    """The simulated night as a Report: every metric on its qrels set, the answer quality beside."""
    from ragmetrics.retrieval.evaluate import evaluate
    from ragmetrics.retrieval.qrels import Qrels
    from ragmetrics.retrieval.run import Run
    from ragmetrics.schema import ComparisonSettings, Report, RunMetadata, RunResult

    by_label: dict[str, list[str]] = {}
    for metric in METRICS:
        base, label = metric[:-1].split(" (")
        by_label.setdefault(label, []).append(base)
    qrels = {label: Qrels.from_dict(world["qrels"][label]) for label in by_label}
    results = []
    for name, ranking in world["runs"].items():
        run = Run.from_dict(ranking, name=name)
        per_query: dict[str, dict[str, float | None]] = {q: {ANSWER_METRIC: a} for q, a in answers[name].items()}
        for label, bases in by_label.items():
            scored = evaluate(qrels[label], run, bases, name=name)
            for q, values in scored.per_query.items():
                per_query[q].update({f"{base} ({label})": values[base] for base in bases})
        results.append(RunResult(name=name, per_query=per_query,
                                 metadata=RunMetadata(metrics=[*METRICS, ANSWER_METRIC])))  # fmt: skip
    return Report(runs=results, metrics=[*METRICS, ANSWER_METRIC],
                  settings=ComparisonSettings(test="t", correction="holm", seed=0))  # fmt: skip


def true_taus(questions: int, seed: int) -> dict[str, float]:
    from scipy.stats import kendalltau

    world, answers = simulate(questions, np.random.default_rng(seed))
    report = night_report(world, answers)
    out = {}
    for metric in METRICS:
        x = [r.per_query[q][metric] for r in report.runs for q in r.per_query]
        y = [r.per_query[q][ANSWER_METRIC] for r in report.runs for q in r.per_query]
        out[metric] = float(kendalltau(x, y).statistic)
    return out


def main(argv: list[str] | None = None) -> int:
    from ragmetrics.validity import ValiditySettings, validity_data, validity_study

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--questions", type=int, default=150)
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap resamples per study")
    parser.add_argument("--truth-questions", type=int, default=20_000)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    truth = true_taus(args.truth_questions, seed=10**6)
    best = max(truth, key=lambda m: truth[m])
    named = cannot_tell = wrong = 0
    covered = dict.fromkeys(METRICS, 0)
    widths: dict[str, list[float]] = {m: [] for m in METRICS}
    for seed in range(args.seeds):
        world, answers = simulate(args.questions, np.random.default_rng(seed))
        data = validity_data(night_report(world, answers), answer_metric=ANSWER_METRIC)
        settings = ValiditySettings(answer_metric=ANSWER_METRIC, samples=args.samples, confidence=0.95,
                                    seed=seed, alpha=0.05, test="t", correction="holm", permutations=1000)  # fmt: skip
        result = validity_study(data, settings)
        if result.verdict.best == best:
            named += 1
        elif result.verdict.best is None:
            cannot_tell += 1
        else:
            wrong += 1
        for item in result.metrics:
            tau = item.per_query
            if tau.low is not None and tau.high is not None:
                covered[item.metric] += int(tau.low <= truth[item.metric] <= tau.high)
                widths[item.metric].append(tau.high - tau.low)
    seconds = time.perf_counter() - started
    n = args.seeds
    print(f"{n} seeds x {args.questions} questions x {len(RUNS)} runs; {args.samples} bootstrap resamples; "
          f"truth from {args.truth_questions} questions; {seconds:.0f} s\n")  # fmt: skip
    print("| metric | true tau | 95% interval covers the truth | mean interval width |")
    print("|:---|---:|---:|---:|")
    for metric in sorted(METRICS, key=lambda m: -truth[m]):
        width = float(np.mean(widths[metric])) if widths[metric] else float("nan")
        print(f"| {metric}{' (best)' if metric == best else ''} | {truth[metric]:.3f} | "
              f"{covered[metric] / n:.1%} ({covered[metric]}/{n}) | {width:.3f} |")  # fmt: skip
    print()
    print("| verdict | seeds |")
    print("|:---|---:|")
    print(f"| named {best} (right) | {named / n:.1%} ({named}/{n}) |")
    print(f"| data cannot tell | {cannot_tell / n:.1%} ({cannot_tell}/{n}) |")
    print(f"| named another metric (wrong) | {wrong / n:.1%} ({wrong}/{n}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
