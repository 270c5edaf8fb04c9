"""What `ragmetrics judges` writes: the table (judges.md, printed), the numbers (judges.json), the chart
(cost_vs_agreement.png, drawn by the CLI: render sits above this part) and the config snippet for the chosen candidate (chosen_judge.yaml)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from ragmetrics.panels.run import JudgesOutcome, snippet
from ragmetrics.trust.agreement import Estimate

__all__ = ["table", "write_outputs"]


def _ci(e: Estimate | None) -> str:
    if e is None or math.isnan(e.value):
        return "n/a"
    if math.isnan(e.low):
        return f"{e.value:.3f}"
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def table(outcome: JudgesOutcome) -> str:
    c = outcome.choice
    lines = [
        f"Candidates on {c.n_units} labelled units ({c.n_samples} samples; metrics: {', '.join(outcome.metrics)}).",
        "",
        "| candidate | accuracy [95% CI] | kappa [95% CI] | AUC [95% CI] | cost USD | latency s/unit | "
        "gap to best (upper) | not worse by the margin | McNemar p (Holm) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in c.rows:
        mark = " (chosen)" if r.name == c.chosen else " (best)" if r.name == c.best else ""
        latency = "cached" if r.latency_s is None else f"{r.latency_s:.3f}"
        lines.append(
            f"| {r.name}{mark} | {_ci(r.accuracy)} | {_ci(r.kappa)} | {_ci(r.auc)} | {r.cost_usd:.6f} | {latency} | "
            f"{r.gap_to_best:+.3f} ({r.gap_upper:+.3f}) | {'yes' if r.not_worse else 'no'} | {r.mcnemar_p_holm:.3g} |"
        )
    lines += [
        "",
        f"Chosen: {c.chosen}, the cheapest candidate whose accuracy the data show to be at most {c.margin:g} below "
        f"the best ({c.best}) (the one-sided {1 - c.alpha:.0%} paired-bootstrap upper bound of the gap is below "
        f"{c.margin:g}) and that is not significantly worse than it (McNemar, Holm-adjusted, level {c.alpha:g}). "
        "A learned panel is scored cross-fitted: never on the labels its weights were fitted on.",
        "Agreement among the judges (Krippendorff alpha on their verdicts): "
        + ("n/a" if outcome.judges_alpha is None else f"{outcome.judges_alpha:.3f}")
        + "; among the people: "
        + ("n/a (one labeller per item)" if outcome.people_alpha is None else f"{outcome.people_alpha:.3f}")
        + ".",
    ]
    lines += outcome.notes
    return "\n".join(lines)


def _numbers(outcome: JudgesOutcome) -> dict[str, Any]:
    def est(e: Estimate | None) -> dict[str, float | None] | None:
        if e is None:
            return None
        return {
            k: (None if math.isnan(v) else v)
            for k, v in (("value", e.value), ("low", e.low), ("high", e.high))
        }

    c = outcome.choice
    return {
        "chosen": c.chosen,
        "best": c.best,
        "margin": c.margin,
        "alpha": c.alpha,
        "units": c.n_units,
        "samples": c.n_samples,
        "metrics": outcome.metrics,
        "calls": outcome.calls,
        "judges_alpha": outcome.judges_alpha,
        "people_alpha": outcome.people_alpha,
        "candidates": [
            {
                "name": r.name,
                "accuracy": est(r.accuracy),
                "kappa": est(r.kappa),
                "auc": est(r.auc),
                "cost_usd": r.cost_usd,
                "latency_s": r.latency_s,
                "gap_to_best": r.gap_to_best,
                "gap_upper": r.gap_upper,
                "not_worse": r.not_worse,
                "non_inferiority_p": r.non_inferiority_p,
                "non_inferiority_p_holm": r.non_inferiority_p_holm,
                "mcnemar_p": r.mcnemar_p,
                "mcnemar_p_holm": r.mcnemar_p_holm,
                "significantly_worse": r.significantly_worse,
            }
            for r in c.rows
        ],
        "left_out": [f.model_dump() for f in outcome.left_out],
    }


def write_outputs(outcome: JudgesOutcome, out: Path) -> str:
    out.mkdir(parents=True, exist_ok=True)
    text = table(outcome)
    (out / "judges.md").write_text(text + "\n", encoding="utf-8")
    (out / "judges.json").write_text(json.dumps(_numbers(outcome), indent=2, allow_nan=False, default=str) + "\n",
                                     encoding="utf-8")  # fmt: skip
    (out / "chosen_judge.yaml").write_text(
        f"# ragmetrics judges: {outcome.choice.chosen} (paste into your night's config)\n"
        + yaml.safe_dump(snippet(outcome), sort_keys=False),
        encoding="utf-8",
    )
    return text
