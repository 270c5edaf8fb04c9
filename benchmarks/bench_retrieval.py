"""ragmetrics vs ranx vs pytrec_eval on synthetic retrieval data: build, warm evaluate, fresh process, memory.

    .venv/bin/python benchmarks/bench_retrieval.py [--quick] [--repeat N] [--json PATH]

Two synthetic collections (fixed seed): 10,000 queries x 100 retrieved documents and 7,000 x 1,000, each
with graded qrels (grades 0-3, about half of the judged documents retrieved). For every library, in its own
subprocess (so ranx's numba settings and each library's memory stay apart):

- build: containers from the same Python dicts (pytrec_eval: the evaluator over the qrels);
- warm evaluate: ndcg@10, map@100, mrr, recall@100, precision@10 after one warm-up call (best of N);
- warm evaluate, breadth (ragmetrics and pytrec_eval, which ranx cannot follow): those five plus every
  further trec_eval measure both compute (bpref, r-precision, infAP, gm_map, gm_bpref, the 11 interpolated
  precisions, 11pt_avg, 10 Rprec_mult points, set_map, num_ret, num_rel); ragmetrics also with err@20,
  nerr@20 and rbp_resid added (pytrec_eval has none of them);
- peak RSS of the worker, and its RSS once the input dicts were loaded (the difference is the library's);
- fresh process: a new interpreter that imports the library, reads the TREC files and evaluates (median of
  N; numba's on-disk cache warmed first); plus `import ragmetrics` alone against a bare interpreter.

Targets (docs/benchmarks.md): warm evaluate >= 4x faster than pytrec_eval, fresh process < 1.5 s,
`import ragmetrics` < 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
METRICS = ["ndcg@10", "map@100", "mrr", "recall@100", "precision@10"]
TREC_MEASURES = {"ndcg@10": "ndcg_cut_10", "map@100": "map_cut_100", "mrr": "recip_rank",
                 "recall@100": "recall_100", "precision@10": "P_10"}  # fmt: skip
_POINTS = [f"{i / 10:.2f}" for i in range(11)]
_MULTIPLES = [f"{m / 10:.2f}" for m in range(2, 21, 2)]
BREADTH = {
    **{m: m for m in METRICS},
    "bpref": "bpref", "r-precision": "Rprec", "infap": "infAP", "gm_map": "gm_map", "gm_bpref": "gm_bpref",
    **{f"iprec@{p}": f"iprec_at_recall_{p}" for p in _POINTS}, "11pt_avg": "11pt_avg",
    **{f"rprec_mult@{m}": f"Rprec_mult_{m}" for m in _MULTIPLES},
    "set_map": "set_map", "num_ret": "num_ret", "num_rel": "num_rel",
}  # fmt: skip
"""ragmetrics metric -> pytrec_eval output key, for the breadth comparison (the first five via TREC_MEASURES)."""
BREADTH_MEASURES = {*TREC_MEASURES.values(), "bpref", "Rprec", "infAP", "gm_map", "gm_bpref",
                    "iprec_at_recall", "11pt_avg", "Rprec_mult", "set_map", "num_ret", "num_rel"}  # fmt: skip
ONLY_OURS = ["err@20", "nerr@20", "rbp_resid.9"]
DATASETS = {"10k x 100": (10_000, 100), "7k x 1000": (7_000, 1_000)}
QUICK = {"10k x 100": (1_000, 100), "7k x 1000": (700, 1_000)}
LIBRARIES = ("ragmetrics", "ranx", "pytrec_eval")
JUDGED_PER_QUERY = 20


# ------------------------------------------------------------------------------------------- data


def make_data(
    n_queries: int, depth: int, seed: int = 13
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Columns of qrels (query, doc, grade) and run (query, doc, score); doc ids drawn from a 2M corpus."""
    rng = np.random.default_rng(seed)
    corpus = 2_000_000
    q_rep = np.repeat(np.arange(n_queries), depth)
    # distinct documents per query: a random start plus distinct offsets
    offsets = np.argsort(rng.random((n_queries, depth * 2)), axis=1)[:, :depth]
    start = rng.integers(0, corpus, n_queries)[:, None]
    docs = ((start + offsets * 97) % corpus).ravel()
    scores = np.round(rng.random(n_queries * depth) * 100, 3)  # 3 decimals: some tied scores
    # judged: half taken from the run's documents, half from elsewhere
    from_run = docs.reshape(n_queries, depth)[:, : JUDGED_PER_QUERY // 2]
    elsewhere = (start + (depth * 2 + np.arange(JUDGED_PER_QUERY // 2)) * 97) % corpus
    judged = np.concatenate([from_run, elsewhere], axis=1).ravel()
    grades = rng.choice([0, 0, 1, 1, 2, 3], size=judged.shape[0])
    qids = np.char.add("q", np.arange(n_queries).astype(str))
    qrels = {"q": np.repeat(qids, JUDGED_PER_QUERY), "d": np.char.add("doc", judged.astype(str)), "v": grades}
    run = {"q": qids[q_rep], "d": np.char.add("doc", docs.astype(str)), "v": scores}
    return qrels, run


def write_files(folder: Path, name: str, qrels: dict[str, np.ndarray], run: dict[str, np.ndarray]) -> None:
    with open(folder / f"{name}.qrels", "w", encoding="utf-8") as out:
        out.writelines(f"{q} 0 {d} {g}\n" for q, d, g in zip(qrels["q"], qrels["d"], qrels["v"], strict=True))
    ranks = np.tile(np.arange(1, 1 + len(run["q"]) // len(np.unique(run["q"]))), len(np.unique(run["q"])))
    with open(folder / f"{name}.run", "w", encoding="utf-8") as out:
        out.writelines(
            f"{q} Q0 {d} {r} {s:.3f} synth\n"
            for q, d, r, s in zip(run["q"], run["d"], ranks, run["v"], strict=True)
        )
    np.savez(
        folder / f"{name}.npz",
        **{f"qrels_{k}": v for k, v in qrels.items()},
        **{f"run_{k}": v for k, v in run.items()},
    )


def nested(
    q: np.ndarray, d: np.ndarray, v: np.ndarray, cast: Callable[[Any], Any]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for qid, doc, value in zip(q.tolist(), d.tolist(), v.tolist(), strict=True):
        out.setdefault(qid, {})[doc] = cast(value)
    return out


def _status_mib(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> None:
    """Reset the kernel's peak-RSS mark (VmHWM), so the peak that follows is the library's own."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")


# ------------------------------------------------------------------------------------------- worker


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def worker(library: str, npz: Path, repeat: int) -> dict[str, Any]:
    """Build and warm-evaluate with one library in this process; returns timings, means and memory."""
    arrays = np.load(npz)
    qrels = nested(arrays["qrels_q"], arrays["qrels_d"], arrays["qrels_v"], int)
    run = nested(arrays["run_q"], arrays["run_d"], arrays["run_v"], float)
    del arrays
    base_rss = _status_mib("VmRSS:")
    reset_peak()
    if library == "ragmetrics":
        from ragmetrics import Qrels, Run, evaluate
        from ragmetrics.retrieval.evaluate import score_matrix

        build, (q, r) = _best(lambda: (Qrels.from_dict(qrels), Run.from_dict(run)), repeat)
        evaluate(q, r, METRICS)
        seconds, result = _best(lambda: evaluate(q, r, METRICS), repeat)
        matrix_seconds, _ = _best(lambda: score_matrix(q, r, METRICS), repeat)
        means = result.aggregate
        wide = list(BREADTH)
        evaluate(q, r, wide)
        breadth_s, _ = _best(lambda: evaluate(q, r, wide), repeat)
        all_s, _ = _best(lambda: evaluate(q, r, [*wide, *ONLY_OURS]), repeat)
        extra = {"score_matrix_s": matrix_seconds, "breadth_s": breadth_s, "breadth_and_ours_s": all_s}
    elif library == "ranx":
        import ranx

        build, (q, r) = _best(lambda: (ranx.Qrels(qrels), ranx.Run(run)), repeat)
        ranx.evaluate(q, r, METRICS)
        seconds, means = _best(lambda: ranx.evaluate(q, r, METRICS), repeat)
        means = {k: float(v) for k, v in means.items()}
        extra = {}
    else:
        import pytrec_eval

        measures = set(TREC_MEASURES.values())
        build, evaluator = _best(lambda: pytrec_eval.RelevanceEvaluator(qrels, measures), repeat)
        evaluator.evaluate(run)
        seconds, per_query = _best(lambda: evaluator.evaluate(run), repeat)
        # pytrec_eval averages over queries both have (all of them here)
        means = {m: statistics.fmean(s[t] for s in per_query.values()) for m, t in TREC_MEASURES.items()}
        wide_evaluator = pytrec_eval.RelevanceEvaluator(qrels, BREADTH_MEASURES)
        wide_evaluator.evaluate(run)
        breadth_s, _ = _best(lambda: wide_evaluator.evaluate(run), repeat)
        extra = {"breadth_s": breadth_s}
    peak = _status_mib("VmHWM:")
    return {"build_s": build, "evaluate_s": seconds, "means": means, "base_rss_mib": base_rss,
            "peak_rss_mib": peak, **extra}  # fmt: skip


FRESH = {
    "ragmetrics": (
        "import time; t0 = time.perf_counter()\n"
        "import json, sys, ragmetrics as rm; t1 = time.perf_counter()\n"
        "q = rm.Qrels.from_trec(sys.argv[1]); t2 = time.perf_counter()\n"
        "r = rm.Run.from_trec(sys.argv[2]); t3 = time.perf_counter()\n"
        "res = rm.evaluate(q, r, {metrics}); t4 = time.perf_counter()\n"
        "print(json.dumps({{'import': t1 - t0, 'read_qrels': t2 - t1, 'read_run': t3 - t2, "
        "'first_evaluate': t4 - t3}}))\n"
    ),
    "ranx": (
        "import ranx, sys\n"
        "q = ranx.Qrels.from_file(sys.argv[1], kind='trec'); r = ranx.Run.from_file(sys.argv[2], kind='trec')\n"
        "print(ranx.evaluate(q, r, {metrics})['ndcg@10'])\n"
    ),
    "pytrec_eval": (
        "import pytrec_eval, sys\n"
        "q = {{}}; r = {{}}\n"
        "for line in open(sys.argv[1]):\n"
        "    a, _, d, g = line.split(); q.setdefault(a, {{}})[d] = int(g)\n"
        "for line in open(sys.argv[2]):\n"
        "    a, _, d, _, s, _ = line.split(); r.setdefault(a, {{}})[d] = float(s)\n"
        "res = pytrec_eval.RelevanceEvaluator(q, {measures}).evaluate(r)\n"
        "print(sum(v['ndcg_cut_10'] for v in res.values()) / len(res))\n"
    ),
}


def fresh_process(library: str, folder: Path, name: str, repeat: int) -> tuple[float, dict[str, float]]:
    """Median wall time of a new interpreter doing import + read + evaluate; ragmetrics also reports phases
    (the first evaluate includes importing numba and loading the cached kernels)."""
    code = FRESH[library].format(metrics=METRICS, measures=set(TREC_MEASURES.values()))
    argv = [sys.executable, "-c", code, str(folder / f"{name}.qrels"), str(folder / f"{name}.run")]
    subprocess.run(argv, check=True, capture_output=True, cwd=REPO)  # warms numba's on-disk caches
    times, phases = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        out = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=REPO)
        times.append(time.perf_counter() - start)
        if library == "ragmetrics":
            phases.append(json.loads(out.stdout.strip().splitlines()[-1]))
    median = {key: statistics.median(p[key] for p in phases) for key in phases[0]} if phases else {}
    if median:  # what the phases do not cover: interpreter start-up and tear-down (numba's objects are many)
        median["start_and_exit"] = statistics.median(
            t - sum(p.values()) for t, p in zip(times, phases, strict=True)
        )
    return statistics.median(times), median


def import_time(repeat: int) -> tuple[float, float]:
    """Median wall time of `python -c 'import ragmetrics'` and of a bare `python -c pass`."""

    def median(code: str) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    return median("import ragmetrics"), median("pass")


# ------------------------------------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the queries (a smoke run)")
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (default 3)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "NPZ"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], Path(args.worker[1]), args.repeat)))
        return 0

    figures: dict[str, Any] = {"cpus": os.cpu_count(), "repeat": args.repeat, "datasets": {}}
    with tempfile.TemporaryDirectory(prefix="bench_retrieval_") as tmp:
        folder = Path(tmp)
        for label, (n_queries, depth) in (QUICK if args.quick else DATASETS).items():
            name = label.replace(" ", "")
            qrels, run = make_data(n_queries, depth)
            write_files(folder, name, qrels, run)
            os.sync()  # flush the freshly written files now, not while a timed process runs
            print(
                f"\n== {label}: {n_queries:,} queries x {depth:,} docs, {len(qrels['q']):,} judgements",
                flush=True,
            )
            rows: dict[str, Any] = {}
            for library in LIBRARIES:
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", library, str(folder / f"{name}.npz"), "--repeat",
                     str(args.repeat)],
                    check=True, capture_output=True, text=True, cwd=REPO,
                )  # fmt: skip
                rows[library] = json.loads(out.stdout.strip().splitlines()[-1])
                rows[library]["fresh_s"], rows[library]["fresh_phases_s"] = fresh_process(
                    library, folder, name, args.repeat
                )
                print(f"   {library:<12} done", flush=True)
            figures["datasets"][label] = rows
            _report(label, rows)
    ragmetrics_import, bare = import_time(max(args.repeat, 5))
    figures["import_ragmetrics_s"] = ragmetrics_import
    figures["bare_python_s"] = bare
    print(f"\nimport ragmetrics: {ragmetrics_import:.3f} s (bare interpreter {bare:.3f} s, "
          f"difference {ragmetrics_import - bare:.3f} s; target < 0.3 s)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


def _report(label: str, rows: dict[str, Any]) -> None:
    ours = rows["ragmetrics"]
    print(f"{'library':<12} {'build s':>9} {'evaluate s':>11} {'fresh s':>9} {'peak MiB':>9} {'lib MiB':>8}"
          f" {'eval speed-up':>14}")  # fmt: skip
    for library, row in rows.items():
        ratio = row["evaluate_s"] / ours["evaluate_s"]
        print(f"{library:<12} {row['build_s']:>9.3f} {row['evaluate_s']:>11.3f} {row['fresh_s']:>9.3f} "
              f"{row['peak_rss_mib']:>9.0f} {row['peak_rss_mib'] - row['base_rss_mib']:>8.0f} {ratio:>13.1f}x")  # fmt: skip
    print(f"ragmetrics score_matrix (no per-query dicts): {ours['score_matrix_s']:.3f} s")
    theirs = rows["pytrec_eval"]["breadth_s"]
    print(f"breadth ({len(BREADTH)} measures both compute): ragmetrics {ours['breadth_s']:.3f} s, pytrec_eval "
          f"{theirs:.3f} s: {theirs / ours['breadth_s']:.1f}x; ragmetrics with {', '.join(ONLY_OURS)} too: "
          f"{ours['breadth_and_ours_s']:.3f} s ({theirs / ours['breadth_and_ours_s']:.1f}x)")  # fmt: skip
    phases = ", ".join(f"{k} {v:.3f}" for k, v in ours["fresh_phases_s"].items())
    print(f"ragmetrics fresh process phases (s): {phases}")
    for metric in METRICS:
        values = {lib: row["means"][metric] for lib, row in rows.items()}
        spread = max(values.values()) - min(values.values())
        print(
            f"  {metric:<13} "
            + "  ".join(f"{lib} {v:.6f}" for lib, v in values.items())
            + f"  (spread {spread:.1e})"
        )


if __name__ == "__main__":
    sys.exit(main())
