"""Which judge to pay for, and panels, by simulation: `ragmetrics judges` at scripted servers names the judge the
simulation's truth says it should, and never one significantly worse; learned panel weights against a plain mean
when one judge is biased; Dawid-Skene's accuracy estimates without labels.

    .venv/bin/python benchmarks/sim_judges.py [--seeds 20] [--items 500] [--reps 200]

Judges are simulated (tests/judge/loopback.py, `Persona`): on item i judge j is right iff
sqrt(shared) * z_i + sqrt(1 - shared) * e_ij < Phi^-1(accuracy_j), z_i the item's difficulty (people's hard items
are hard for every judge), e_ij the judge's own noise; so P(right) = accuracy exactly. People's labels are the
truth. Prices are per million tokens, so cost follows the tokens the scripted servers report.

1. `judges` at scripted servers (real openai client, two endpoints, faults injected: rate limits and 500s),
   `--seeds` runs of `--items` labelled items, scenarios in turn:
   - cheaper-as-good: big 0.90 ($10/$30), mid 0.90 ($1/$3), small 0.72 ($0.1/$0.3), their majority panel;
     truth: mid
   - only-the-best: big 0.92, mid 0.80, small 0.70, their majority panel; truth: big
   - cheapest-enough: big 0.88, mid 0.88, small 0.88; truth: small
   - poll (PoLL): big 0.90 ($10/$30) against three small judges 0.85 ($0.5/$1.5) and their majority panel (true
     accuracy by Monte Carlo, about 0.94); truth: the panel
   In the first three the judges' errors fall mostly on the same hard items (shared = 0.9), as judges' errors
   do on items people find hard; in the PoLL scenario the judges err independently (shared = 0), as judges
   from different model families do, which is what makes their majority better than each.
   The truth is the cheapest candidate whose true accuracy is at most `margin` (0.05) below the best true
   accuracy. Reported: how often the named judge is the truth's, how often it is truly worse than the best by
   the margin or more, how often it is significantly worse than the measured best (McNemar, Holm-adjusted, as
   the choice reads it) and how often it is by McNemar alone, unadjusted; the requests each run sent against
   items x single judges (panels ask nothing of their own) and the requests a rerun sent.
2. The same choice on the same scenarios with the judges simulated in numpy (`--reps` per scenario): the rate
   with a tighter interval.
3. Learned weights (cross-fitted, 5 folds) against the plain mean, the majority and Dawid-Skene, when one of
   three judges (two at 0.85) says "yes" to a share `bias` of the items that are "no": accuracy on labels never
   used for fitting, mean over `--reps` sets of `--items` items.
4. Dawid-Skene without labels: five judges (0.92, 0.85, 0.75, 0.68, 0.62), prevalence 0.3, 2000 items: the mean
   absolute error of each judge's estimated accuracy over `--reps` sets.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "judge"))

from loopback import LoopbackServer  # noqa: E402

from ragmetrics.alignment.folds import stratified_folds  # noqa: E402
from ragmetrics.cli.main import main as cli  # noqa: E402
from ragmetrics.panels.judge_choice import JudgeEvidence, choose_judge  # noqa: E402
from ragmetrics.trust.panel_combine import combine_scores, dawid_skene  # noqa: E402

MARGIN = 0.05
KEY_ENV = "RAGMETRICS_SIM_JUDGES_KEY"
METRIC = "context_sufficiency"


@dataclass(frozen=True)
class Judge:
    name: str
    accuracy: float
    price: tuple[float, float]  # USD per 1M prompt, completion tokens
    shared: float
    server: int  # 0 or 1: the endpoint it sits on


@dataclass(frozen=True)
class Scenario:
    name: str
    judges: tuple[Judge, ...]
    panels: tuple[tuple[str, tuple[str, ...], str], ...]  # (name, members, combine)


SCENARIOS = (
    Scenario("cheaper-as-good", (Judge("big", 0.90, (10, 30), 0.9, 0), Judge("mid", 0.90, (1, 3), 0.9, 0),
             Judge("small", 0.72, (0.1, 0.3), 0.9, 1)),
             (("poll", ("big", "mid", "small"), "majority"),)),
    Scenario("only-the-best", (Judge("big", 0.92, (10, 30), 0.9, 0), Judge("mid", 0.80, (1, 3), 0.9, 0),
             Judge("small", 0.70, (0.1, 0.3), 0.9, 1)),
             (("poll", ("big", "mid", "small"), "majority"),)),
    Scenario("cheapest-enough", (Judge("big", 0.88, (10, 30), 0.9, 0), Judge("mid", 0.88, (1, 3), 0.9, 0),
             Judge("small", 0.88, (0.1, 0.3), 0.9, 1)),
             ()),
    Scenario("poll", (Judge("big", 0.90, (10, 30), 0.0, 0), Judge("s1", 0.85, (0.5, 1.5), 0.0, 1),
             Judge("s2", 0.85, (0.5, 1.5), 0.0, 1), Judge("s3", 0.85, (0.5, 1.5), 0.0, 1)),
             (("poll", ("s1", "s2", "s3"), "majority"),)),
)  # fmt: skip


def _right(judge: Judge, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    latent = math.sqrt(judge.shared) * z + math.sqrt(1 - judge.shared) * rng.standard_normal(z.shape)
    return latent < norm.ppf(judge.accuracy)


def true_accuracy(scenario: Scenario) -> dict[str, float]:
    """Each single judge's accuracy (by construction) and each panel's, by Monte Carlo under the same model."""
    out = {j.name: j.accuracy for j in scenario.judges}
    rng = np.random.default_rng(12345)
    z = rng.standard_normal(400_000)
    right = {j.name: _right(j, z, rng) for j in scenario.judges}
    for name, members, _ in scenario.panels:
        votes = np.column_stack([right[m] for m in members]).sum(axis=1)
        out[name] = float((votes * 2 > len(members)).mean())
    return out


def _price(scenario: Scenario) -> dict[str, float]:
    """Cost per item up to a constant: prompt and completion tokens are about the same for every judge."""
    single = {j.name: j.price[0] * 10 + j.price[1] for j in scenario.judges}
    for name, members, _ in scenario.panels:
        single[name] = sum(single[m] for m in members)
    return single


def truth_of(scenario: Scenario) -> tuple[str, dict[str, float]]:
    acc = true_accuracy(scenario)
    cost = _price(scenario)
    best = max(acc.values())
    eligible = [n for n in acc if acc[n] >= best - MARGIN]
    return min(eligible, key=lambda n: (cost[n], -acc[n])), acc


# -- 1. at scripted servers -------------------------------------------------------------------------------------


def _write(folder: Path, scenario: Scenario, servers: list[LoopbackServer], items: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    rows, labels = [], ["sample_id,metric,label"]
    for i in range(items):
        truth = rng.random() < 0.5
        rows.append({"id": f"s{seed}-q{i}", "question": f"seed {seed} question {i} [z:{rng.gauss(0, 1):.4f}]",
                     "answer": "an answer", "contexts": ["a context" + (" [enough]" if truth else "")]})  # fmt: skip
        labels.append(f"s{seed}-q{i},{METRIC},{int(truth)}")
    (folder / "qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "labels.csv").write_text("\n".join(labels) + "\n", encoding="utf-8")
    candidates: list[dict[str, object]] = []
    for j in scenario.judges:
        model = f"{j.name}-{seed}"
        servers[j.server].persona(model, j.accuracy, shared=j.shared)
        candidates.append({"name": j.name, "base_url": servers[j.server].url, "model": model,
                           "price_per_million_tokens": {"prompt": j.price[0], "completion": j.price[1]}})  # fmt: skip
    candidates += [{"name": n, "panel": list(m), "combine": c} for n, m, c in scenario.panels]
    judge = {"cache_path": str(folder / "verdicts.sqlite"), "api_key_env": KEY_ENV, "max_concurrency": 16}
    (folder / "candidates.yaml").write_text(yaml.safe_dump({"judge": judge, "candidates": candidates}), encoding="utf-8")
    return [str(folder / "labels.csv"), "--samples", str(folder / "qa.jsonl"), "--candidates",
            str(folder / "candidates.yaml"), "--resamples", "1000", "--no-plot"]  # fmt: skip


def at_servers(seeds: int, items: int) -> list[dict[str, object]]:
    os.environ[KEY_ENV] = "sk-sim-judges"
    servers = [LoopbackServer().start(), LoopbackServer().start()]
    rows: list[dict[str, object]] = []
    try:
        for seed in range(seeds):
            scenario = SCENARIOS[seed % len(SCENARIOS)]
            truth, acc = truth_of(scenario)
            servers[0].inject("rate_limit", times=2)
            servers[1].inject("server_error", times=1)
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                args = _write(folder, scenario, servers, items, seed)
                before = [s.count(path="/v1/chat/completions", status=200) for s in servers]
                started = time.monotonic()
                with contextlib.redirect_stdout(io.StringIO()):
                    code = cli(["judges", *args, "-o", str(folder / "out")])
                seconds = time.monotonic() - started
                asked = sum(s.count(path="/v1/chat/completions", status=200) for s in servers) - sum(before)
                numbers = json.loads((folder / "out" / "judges.json").read_text(encoding="utf-8"))
                again_before = sum(s.count(path="/v1/chat/completions") for s in servers)
                with contextlib.redirect_stdout(io.StringIO()):
                    cli(["judges", *args, "-o", str(folder / "again")])
                rerun = sum(s.count(path="/v1/chat/completions") for s in servers) - again_before
            by_name = {r["name"]: r for r in numbers["candidates"]}
            chosen = numbers["chosen"]
            rows.append({
                "seed": seed, "scenario": scenario.name, "exit": code, "truth": truth, "chosen": chosen,
                "right": chosen == truth, "truly_worse": acc[chosen] < max(acc.values()) - MARGIN,
                "significantly_worse": bool(by_name[chosen]["significantly_worse"]),
                "raw_mcnemar": by_name[chosen]["mcnemar_p"] < 0.05 and by_name[chosen]["gap_to_best"] > 0,
                "requests": asked, "expected_requests": items * len(scenario.judges), "rerun_requests": rerun,
                "seconds": seconds,
            })  # fmt: skip
            print(f"  seed {seed:2d} {scenario.name:16s} chosen {chosen:8s} truth {truth:8s} "
                  f"requests {asked} (expected {items * len(scenario.judges)}), rerun {rerun}, {seconds:.0f} s",
                  flush=True)  # fmt: skip
    finally:
        for s in servers:
            s.stop()
    return rows


# -- 2. the same choice in numpy ---------------------------------------------------------------------------------


def in_numpy(reps: int, items: int) -> dict[str, tuple[float, float, float]]:
    out = {}
    for scenario in SCENARIOS:
        truth, acc = truth_of(scenario)
        cost = _price(scenario)
        right = worse = significant = 0
        for rep in range(reps):
            rng = np.random.default_rng(1000 + rep)
            y = (rng.random(items) < 0.5).astype(np.float64)
            z = rng.standard_normal(items)
            verdicts = {j.name: np.where(_right(j, z, rng), y, 1 - y) for j in scenario.judges}
            evidence = [JudgeEvidence(n, v, cost[n]) for n, v in verdicts.items()]
            folds = stratified_folds(list(y), 5, rep)
            for name, members, combine in scenario.panels:
                matrix = np.column_stack([verdicts[m] for m in members])
                scores = combine_scores(combine, matrix, labels=y, fold_of=folds)
                evidence.append(JudgeEvidence(name, scores, cost[name]))
            choice = choose_judge(evidence, y, np.arange(items), margin=MARGIN, resamples=1000, seed=rep)
            right += choice.chosen == truth
            worse += acc[choice.chosen] < max(acc.values()) - MARGIN
            significant += choice.row(choice.chosen).significantly_worse
        out[scenario.name] = (right / reps, worse / reps, significant / reps)
    return out


# -- 3. learned weights against the mean when one judge is biased -------------------------------------------------


def biased(reps: int, items: int) -> dict[float, dict[str, tuple[float, float]]]:
    out = {}
    for bias in (0.0, 0.5, 0.9):
        acc: dict[str, list[float]] = {"mean": [], "majority": [], "learned": [], "dawid_skene": []}
        for rep in range(reps):
            rng = np.random.default_rng(rep)
            y = (rng.random(items) < 0.4).astype(np.float64)
            right = rng.random((items, 3)) < np.array([0.85, 0.85, 0.85])
            v = np.where(right, y[:, None], 1 - y[:, None])
            v[(y == 0) & (rng.random(items) < bias), 2] = 1.0
            folds = stratified_folds(list(y), 5, rep)
            for method in acc:
                s = combine_scores(method, v, labels=y, fold_of=folds)
                acc[method].append(float(((s >= 0.5) == (y == 1)).mean()))
        out[bias] = {m: (float(np.mean(a)), float(np.std(a))) for m, a in acc.items()}
    return out


# -- 4. Dawid-Skene without labels --------------------------------------------------------------------------------


def dawid_skene_recovery(reps: int) -> tuple[list[float], list[float]]:
    accuracies = [0.92, 0.85, 0.75, 0.68, 0.62]
    errors = []
    for rep in range(reps):
        rng = np.random.default_rng(rep)
        y = (rng.random(2000) < 0.3).astype(np.float64)
        right = rng.random((2000, 5)) < np.array(accuracies)
        fitted = dawid_skene(np.where(right, y[:, None], 1 - y[:, None]))
        errors.append(np.abs(np.array(fitted.accuracy()) - accuracies))
    return accuracies, list(np.mean(errors, axis=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="runs of `ragmetrics judges` at scripted servers")
    parser.add_argument("--items", type=int, default=500, help="labelled items per run")
    parser.add_argument("--reps", type=int, default=200, help="numpy repetitions per setting")
    args = parser.parse_args()

    print(f"1. `ragmetrics judges` at scripted servers: {args.seeds} seeds x {args.items} labelled items")
    rows = at_servers(args.seeds, args.items)
    print("\n| scenario | seeds | names the truth's judge | truly worse by >= margin | significantly worse "
          "(Holm) | McNemar p < 0.05 alone | requests = items x judges | rerun requests |")
    print("|---|---|---|---|---|---|---|---|")
    for scenario in SCENARIOS:
        mine = [r for r in rows if r["scenario"] == scenario.name]
        if not mine:
            continue
        print(f"| {scenario.name} (truth: {truth_of(scenario)[0]}) | {len(mine)} | "
              f"{sum(bool(r['right']) for r in mine)}/{len(mine)} | {sum(bool(r['truly_worse']) for r in mine)} | "
              f"{sum(bool(r['significantly_worse']) for r in mine)} | {sum(bool(r['raw_mcnemar']) for r in mine)} | "
              f"{sum(r['requests'] == r['expected_requests'] for r in mine)}/{len(mine)} | "
              f"{sum(int(r['rerun_requests']) for r in mine)} |")  # fmt: skip
    total = len(rows)
    print(f"| all | {total} | {sum(bool(r['right']) for r in rows)}/{total} "
          f"({sum(bool(r['right']) for r in rows) / max(total, 1):.0%}) | "
          f"{sum(bool(r['truly_worse']) for r in rows)} | {sum(bool(r['significantly_worse']) for r in rows)} | "
          f"{sum(bool(r['raw_mcnemar']) for r in rows)} | "
          f"{sum(r['requests'] == r['expected_requests'] for r in rows)}/{total} | "
          f"{sum(int(r['rerun_requests']) for r in rows)} |")  # fmt: skip

    print(f"\n2. The same choice, judges simulated in numpy: {args.reps} repetitions x {args.items} items per scenario")
    print("\n| scenario | truth | names the truth's judge | truly worse by >= margin | significantly worse (Holm) |")
    print("|---|---|---|---|---|")
    for name, (right, worse, significant) in in_numpy(args.reps, args.items).items():
        truth = truth_of(next(s for s in SCENARIOS if s.name == name))[0]
        print(f"| {name} | {truth} | {right:.1%} | {worse:.1%} | {significant:.1%} |")

    print(f"\n3. One of three judges (0.85 each) biased to 'yes': accuracy against people, {args.reps} sets of "
          f"{args.items} items (learned: cross-fitted, 5 folds)")
    print("\n| share of 'no' items the biased judge calls 'yes' | mean | majority | learned weights | Dawid-Skene |")
    print("|---|---|---|---|---|")
    for bias, by_method in biased(args.reps, args.items).items():
        cells = " | ".join(f"{by_method[m][0]:.3f} ± {by_method[m][1]:.3f}"
                           for m in ("mean", "majority", "learned", "dawid_skene"))  # fmt: skip
        print(f"| {bias:.1f} | {cells} |")

    accuracies, errors = dawid_skene_recovery(min(args.reps, 100))
    print(f"\n4. Dawid-Skene without labels ({min(args.reps, 100)} sets of 2000 items): mean absolute error of "
          "each judge's estimated accuracy")
    print("\n| true accuracy | " + " | ".join(f"{a:.2f}" for a in accuracies) + " |")
    print("|---|" + "---|" * len(accuracies))
    print("| mean abs. error | " + " | ".join(f"{e:.4f}" for e in errors) + " |")


if __name__ == "__main__":
    main()
