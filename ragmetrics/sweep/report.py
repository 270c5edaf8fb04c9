"""The sweep's summary: one JSON-ready dict (sweep.json), and the Markdown and HTML pages drawn from it.

The winner's curse gap is in the headline of every format, beside the confirmation means, never only in a table.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from ragmetrics._format import format_p
from ragmetrics.sweep.pareto import COST_AXES, pareto_front
from ragmetrics.sweep.run import SweepResult, selection_means
from ragmetrics.sweep.select import mean_of
from ragmetrics.sweep.stages import IndexUse

__all__ = ["summary", "to_markdown", "write_outputs"]


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def _use(use: IndexUse | None) -> dict[str, Any]:
    """What an index (or a reranker's passage vectors) cost from the persisted store; nulls without one."""
    if use is None:
        return {"embedded": None, "reused": None, "index_written": None}
    return {"embedded": use.embedded, "reused": use.reused, "index_written": use.built}


def _stages(result: SweepResult) -> dict[str, Any]:
    stages = result.stages
    return {
        "index_dir": None if stages.index_dir is None else str(stages.index_dir),
        "index_builds": [
            {
                "chunking": ch,
                "retriever": r,
                "builds": n,
                "seconds": _r(stages.index_seconds[(ch, r)], 3),
                **_use(stages.index_use.get((ch, r))),
            }
            for (ch, r), n in stages.index_builds.items()
        ],
        "fusions": sum(stages.fusions.values()),
        "reranks": sum(stages.reranks.values()),
        "rerank_vectors": [
            {"chunking": ch, "arm": arm, "reranker": rr, "embedded": use.embedded, "reused": use.reused}
            for (ch, arm, rr), use in stages.rerank_use.items()
        ],
        "embedded": None
        if stages.index_dir is None
        else sum(u.embedded for u in [*stages.index_use.values(), *stages.rerank_use.values()]),
    }


def summary(result: SweepResult) -> dict[str, Any]:
    c = result.confirmation
    means = selection_means(result)
    dropped = {d.name: d for d in result.drops}
    confirmation_means = {
        name: _r(mean_of(result.scores[name], result.split.confirmation))
        for name in {c.winner, result.baseline.name, *([result.runner_up] if result.runner_up else [])}
    }
    return {
        "name": result.name,
        "metric": result.metric,
        "metric_kind": result.metric_kind,
        "configurations": len(result.grid),
        "baseline": result.baseline.name,
        "split": {
            "selection": len(result.split.selection),
            "confirmation": len(result.split.confirmation),
            "strata": result.split.strata_source,
            "counts": {s: list(n) for s, n in result.split.counts().items()},
            "left_out": dict(sorted(Counter(result.left_out.values()).items())),
        },
        "winner": {
            "name": c.winner,
            "selection_mean": _r(c.selection_mean),
            "confirmation_mean": _r(c.confirmation_mean),
            "gap": _r(c.gap),
        },
        "runner_up": result.runner_up,
        "confirmation_means": confirmation_means,
        "qrels": {"source": result.qrels_source, "note": result.qrels_note},
        "checks": [
            {
                "against": k.against,
                "role": k.role,
                "questions": k.questions,
                "mean_difference": _r(k.mean_difference),
                "p": k.p_value,
                "p_adjusted": k.p_adjusted,
                "confirmed": k.confirmed,
            }
            for k in c.checks
        ],
        "test": c.test,
        "correction": c.correction,
        "alpha": c.alpha,
        "stages": _stages(result),
        "early_drop": {
            "dropped": [
                {"name": d.name, "by": d.by, "after": d.after, "upper": _r(d.high)} for d in result.drops
            ],
            "units_asked": result.units_asked,
            "units_without_dropping": result.units_full,
            "units_avoided": result.units_avoided,
            "judge_calls": result.judge_calls,
            "judged": result.metric_kind == "judge",
        },
        "points": [
            {
                "name": p.name,
                "quality": _r(p.quality),
                "questions": p.questions,
                "latency_ms": _r(p.latency_ms, 3),
                "tokens": _r(p.tokens, 1),
                "cost_usd": p.cost_usd,
                "dropped": p.name in dropped,
                "selection_mean": _r(means[p.name]),
            }
            for p in result.points
        ],
        "pareto": {axis: pareto_front(result.points, axis) for axis in COST_AXES},
        "failures": result.failures,
    }


def _fmt(value: Any, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def to_markdown(s: dict[str, Any]) -> str:
    w, e = s["winner"], s["early_drop"]
    saving = (
        f"{e['units_avoided']} of {e['units_without_dropping']} judge units avoided by early dropping "
        f"({e['judge_calls']} judgments made after sharing identical contexts)"
        if e["judged"]
        else f"{e['units_avoided']} of {e['units_without_dropping']} scores skipped by early dropping "
        f"({s['metric']} is a retrieval metric: no judge call to save)"
    )
    lines = [
        f"# Sweep: {s['name']}",
        "",
        f"- {s['configurations']} configurations, metric **{s['metric']}**; selection half {s['split']['selection']} "
        f"questions, confirmation half {s['split']['confirmation']} (strata: {s['split']['strata']}; "
        + ", ".join(f"{k} {a}/{b}" for k, (a, b) in s["split"]["counts"].items())
        + ")",
        *(f"- {n} questions left out: {why}" for why, n in s["split"]["left_out"].items()),
        f"- **Winner: `{w['name']}`**: {_fmt(w['selection_mean'])} on the selection half, "
        f"{_fmt(w['confirmation_mean'])} on the confirmation half: **winner's curse gap {_fmt(w['gap'])}**",
        f"- Baseline `{s['baseline']}`; runner-up `{s['runner_up']}`",
        f"- Judged on {s['qrels']['note']}",
        f"- {saving}; {len(e['dropped'])} configurations dropped",
        "",
        f"## Confirmation ({s['test']} test, {s['correction']} over {len(s['checks'])}, alpha {s['alpha']})",
        "",
        "| against | role | questions | mean difference | p | p adjusted | confirmed |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for k in s["checks"]:
        lines.append(
            f"| `{k['against']}` | {k['role']} | {k['questions']} | {k['mean_difference']:+.4f} | {format_p(k['p'])} | "
            f"{format_p(k['p_adjusted'])} | {'yes' if k['confirmed'] else 'no'} |"
        )
    lines += ["", "Confirmation-half means: " + ", ".join(
        f"`{n}` {_fmt(v)}" for n, v in sorted(s["confirmation_means"].items())
    ), "", "## Shared stages", ""]  # fmt: skip
    stages = s["stages"]
    if stages["index_dir"] is None:
        lines.append("- indexes built in memory (index_dir: null): every chunk embedded again by every sweep")
    else:
        lines.append(
            f"- indexes and chunk vectors from `{stages['index_dir']}`, shared with nights and test-set builds: "
            f"{stages['embedded']} chunks embedded by this sweep"
        )
    for b in stages["index_builds"]:
        lines.append(
            f"- index `{b['retriever']}` over `{b['chunking']}`: {b['builds']}x ({b['seconds']} s)" + _how(b)
        )
    for v in stages["rerank_vectors"]:
        lines.append(
            f"- reranker `{v['reranker']}` over `{v['arm']}` on `{v['chunking']}`: candidates' vectors "
            f"{v['embedded']} embedded, {v['reused']} read from the store"
        )
    lines += [
        f"- fusions: {stages['fusions']}, reranks: {stages['reranks']}",
        "",
        "## Configurations",
        "",
    ]
    lines += [
        "| configuration | quality | questions | latency ms | tokens | cost USD | Pareto (latency/tokens/cost) | dropped |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    fronts = s["pareto"]
    for p in sorted(s["points"], key=lambda p: -(p["quality"] if p["quality"] is not None else -1.0)):
        marks = "/".join("*" if p["name"] in fronts[a] else "-" for a in COST_AXES)
        lines.append(
            f"| `{p['name']}` | {_fmt(p['quality'])} | {p['questions']} | {_fmt(p['latency_ms'], 2)} | "
            f"{_fmt(p['tokens'], 1)} | {p['cost_usd']:.2e} | {marks} | {'yes' if p['dropped'] else ''} |"
        )
    if s["failures"]:
        lines += ["", "## Scores that failed", ""]
        for name, rows in s["failures"].items():
            for qid, why in rows.items():
                lines.append(f"- `{name}` on `{qid}`: {why}")
    return "\n".join(lines) + "\n"


def _how(build: dict[str, Any]) -> str:
    if build["index_written"] is None:
        return ", in memory"
    made = "written now" if build["index_written"] else "read from the store"
    return f", index {made}; chunks embedded {build['embedded']}, vectors reused {build['reused']}"


def write_outputs(result: SweepResult, out_dir: Path, *, plots: bool = True) -> dict[str, Any]:
    """sweep.json, sweep.md, and (with matplotlib) pareto.png and sweep.html in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    s = summary(result)
    (out_dir / "sweep.json").write_text(json.dumps(s, indent=2) + "\n", encoding="utf-8")
    (out_dir / "sweep.md").write_text(to_markdown(s), encoding="utf-8")
    if plots:
        from ragmetrics.render.sweep import write_pareto_page

        write_pareto_page(s, out_dir)
    return s
