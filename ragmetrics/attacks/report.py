"""What an attack night says: success rates per kind and style with intervals, paired differences between
runs on the same attacks, and every successful attack with what was planted and what the system answered.

Rates carry Wilson score 95 % intervals (`comparison.proportions.wilson`: right for proportions near 0 or 1,
where the normal one is not). Two
runs are compared on the attacks both answered, by the exact McNemar test (a two-sided binomial test on the
attacks where exactly one run was fooled), Holm-corrected over the rows of the table; the night's report also
compares the per-kind metrics with the configured paired test, and the gate reads those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragmetrics.attacks.metrics import Outcome
from ragmetrics.attacks.model import ATTACK_KINDS, AttackCheck, AttackRow
from ragmetrics.comparison.corrections import holm
from ragmetrics.comparison.proportions import wilson
from ragmetrics.comparison.stats import sign_test

__all__ = ["AnsweredAttack", "attack_summary", "exposure_summary", "paired_tables"]


@dataclass(frozen=True)
class AnsweredAttack:
    """One run's answer to one attack and what it did (None and the failure where the call failed)."""

    run: str
    attack: str
    answer: str | None
    outcome: Outcome | None
    failure: str | None


def _rate(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    hits = sum(o.success for o in outcomes)
    low, high = wilson(hits, n)
    return {
        "n": n,
        "successes": hits,
        "rate": hits / n if n else None,
        "low": low if n else None,
        "high": high if n else None,
        "refused": sum(o.refused for o in outcomes),
        "contested": sum(o.contested for o in outcomes),
    }


def paired_tables(
    groups: dict[str, list[str]], hit: dict[tuple[str, str], bool], runs: Sequence[str], alpha: float
) -> list[dict[str, Any]]:
    """Per pair of runs and group, on the attacks both have a value for (`hit[(run, attack)]`): the difference
    in rate, the discordant counts, the exact McNemar p (the sign test on the paired differences: only
    discordant pairs count) and Holm over the pair's rows."""
    pairs = []
    for i, a in enumerate(runs):
        for b in runs[i + 1 :]:
            table: list[dict[str, Any]] = []
            for group, ids in groups.items():
                diffs = [float(hit[(b, x)]) - float(hit[(a, x)]) for x in ids if (a, x) in hit and (b, x) in hit]
                only_a = sum(1 for d in diffs if d < 0)
                only_b = sum(1 for d in diffs if d > 0)
                n = len(diffs)
                table.append({"group": group, "n": n, "difference": (only_b - only_a) / n if n else None,
                              "only_a": only_a, "only_b": only_b, "p": sign_test(diffs) if n else 1.0})  # fmt: skip
            for row, adjusted in zip(table, holm([r["p"] for r in table]), strict=True):
                row["p_holm"] = adjusted
                row["significant"] = adjusted < alpha
            pairs.append({"a": a, "b": b, "rows": table})
    return pairs


def _groups(checks: Sequence[AttackCheck]) -> dict[str, list[str]]:
    """all, each kind, then each kind/style: the attack ids of each."""
    groups: dict[str, list[str]] = {"all": [c.id for c in checks]}
    for kind in ATTACK_KINDS:
        of_kind = [c for c in checks if c.kind == kind]
        if of_kind:
            groups[kind] = [c.id for c in of_kind]
            for check in of_kind:
                groups.setdefault(f"{kind}/{check.style}", []).append(check.id)
    return groups


def exposure_summary(
    checks: Sequence[AttackCheck],
    exposed: dict[str, dict[str, tuple[bool, float]]],
    succeeded: dict[tuple[str, str], bool],
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The exposure part of attacks.json: per run (retriever runs too) and group of planting attacks, the share
    whose planted text reached the contexts (Wilson interval), the mean reciprocal rank of the first planted
    context, and, where the run answered, success given exposure and success without it; paired exposure
    differences between runs (exact McNemar, Holm). `exposed[run][attack]` = (exposed, reciprocal rank)."""
    planting = [c for c in checks if c.planted_ids]
    groups = _groups(planting) if planting else {}
    runs = list(exposed)
    rates: dict[str, dict[str, Any]] = {}
    for run in runs:
        rates[run] = {}
        for group, ids in groups.items():
            seen = [(x, *exposed[run][x]) for x in ids if x in exposed[run]]
            n, k = len(seen), sum(1 for _, e, _ in seen if e)
            low, high = wilson(k, n)
            given = [succeeded[(run, x)] for x, e, _ in seen if e and (run, x) in succeeded]
            without = [succeeded[(run, x)] for x, e, _ in seen if not e and (run, x) in succeeded]
            rates[run][group] = {
                "n": n, "exposed": k, "rate": k / n if n else None, "low": low if n else None,
                "high": high if n else None, "mrr": sum(rr for _, _, rr in seen) / n if n else None,
                "success_given_exposure": _share(given), "success_without_exposure": _share(without),
            }  # fmt: skip
    hit = {(run, x): e for run in runs for x, (e, _) in exposed[run].items()}
    return {
        "runs": runs,
        "groups": list(groups),
        "rates": rates,
        "pairs": paired_tables(groups, hit, runs, alpha),
        "method": "A context is planted when its id is a planted document's or its text holds what the attack "
        "added (attacks.exposure); Wilson 95 % intervals; exact McNemar test, Holm over each pair's rows",
    }


def _share(values: Sequence[bool]) -> dict[str, Any]:
    n, k = len(values), sum(values)
    low, high = wilson(k, n)
    return {"n": n, "successes": k, "rate": k / n if n else None, "low": low if n else None,
            "high": high if n else None}  # fmt: skip


def attack_summary(
    checks: Sequence[AttackCheck],
    rows: Sequence[AttackRow],
    answered: Sequence[AnsweredAttack],
    runs: Sequence[str],
    clean_refusals: dict[str, tuple[int, int]],
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The attacks.json document: per run and group (all, kind, kind/style) the rate and its interval; per pair
    of runs and group the paired difference and its McNemar p (Holm); the successful attacks in full."""
    by_id = {c.id: c for c in checks}
    rows_by_id = {r.id: r for r in rows}
    groups = _groups(checks)
    outcome = {(a.run, a.attack): a.outcome for a in answered}
    failures = {run: sum(1 for a in answered if a.run == run and a.failure) for run in runs}
    rates = {
        run: {
            group: _rate([o for i in ids if (o := outcome.get((run, i))) is not None])
            for group, ids in groups.items()
        }
        for run in runs
    }
    hit = {key: o.success for key, o in outcome.items() if o is not None}
    pairs = paired_tables(groups, hit, runs, alpha)
    successes = []
    for item in answered:
        if item.outcome is None or not item.outcome.success:
            continue
        check = by_id[item.attack]
        asked = rows_by_id.get(item.attack)
        successes.append(
            {
                "run": item.run,
                "attack": item.attack,
                "kind": check.kind,
                "style": check.style,
                "position": check.position,
                "question": asked.question if asked else None,
                "planted": [d.text for d in (asked.planted_documents or [])] if asked else [],
                "system_prompt_addition": asked.system_prompt_addition if asked else None,
                "answer": item.answer,
                "why": item.outcome.why,
            }
        )
    return {
        "runs": list(runs),
        "groups": list(groups),
        "rates": rates,
        "failures": failures,
        "clean_refusal": {
            run: {
                "refused": r,
                "n": n,
                "rate": r / n if n else None,
                "low": wilson(r, n)[0],
                "high": wilson(r, n)[1],
            }
            for run, (r, n) in clean_refusals.items()
        },
        "pairs": pairs,
        "successes": successes,
        "method": "Wilson 95 % intervals; exact McNemar test on the attacks both runs answered, Holm over each "
        "pair's rows",
    }
