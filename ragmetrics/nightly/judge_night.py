"""Judge metrics of a night's runs through one judge: plain, repeated, adaptive (batches until the
decisions are settled), a cascade, or a panel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ragmetrics.judge.base import RagSample
from ragmetrics.nightly.answers import AnsweredRun
from ragmetrics.nightly.config import NightlyConfig
from ragmetrics.nightly.qa_dataset import QADataset
from ragmetrics.nightly.runs import judge_plan
from ragmetrics.schema import AdaptiveSummary, JudgeInfo, Report, RunResult, RunTrust

if TYPE_CHECKING:
    from ragmetrics.engines import Engine
    from ragmetrics.engines.base import JudgeSession
    from ragmetrics.retrieval.run import Run


def score_judge(
    config: NightlyConfig,
    dataset: QADataset,
    runs: Mapping[str, Run | None],
    notes: list[str],
    *,
    progress: bool = False,
    engine: Engine | None = None,
    answered: Mapping[str, AnsweredRun] | None = None,
    judged: dict[str, list[RagSample]] | None = None,
    baseline: Report | None = None,
    adaptive: list[AdaptiveSummary] | None = None,
    retrieval: Mapping[str, RunResult] | None = None,
) -> tuple[dict[str, RunResult], JudgeInfo | None]:
    """Judge metrics per run through one judge (one cache, one usage count); returns the judge's final info.
    `judged`, when given, receives each run's samples exactly as the judge saw them. With `judge.adaptive`
    the questions are judged in batches until every decision is settled (`nightly.adaptive_night`; the gate's
    decisions against `baseline`), and the night's summary is appended to `adaptive`.

    With `judge.repeats` = k > 1 every unit is judged k times with seeds seed, seed + 1, ... (each repeat
    cached under its own key); the results keep repeat 0's scores and carry the noise figures in `trust.noise`.
    """
    from ragmetrics.engines import LocalEngine

    plan = judge_plan(config, dataset, runs, notes, answered)
    if judged is not None:
        judged.update({name: samples for name, (samples, _) in plan.items()})
    if not plan:
        return {}, None
    assert config.judge is not None
    base = config.judge.settings()
    if config.judge.cascade and config.judge.adaptive is None:
        from ragmetrics.nightly.cascade_night import judge_cascade

        return judge_cascade(config, plan, notes, engine=engine)
    if config.judge.adaptive is not None:
        from ragmetrics.nightly.adaptive_night import judge_adaptively

        # the night's request budget is also the judge's hard cap: trimming batches to it (adaptive_night) is
        # planned, the cap is what no request in flight can pass
        caps = [c for c in (base.max_requests, config.judge.adaptive.max_calls) if c is not None]
        capped = base.model_copy(update={"max_requests": min(caps) if caps else None})
        cascade = None
        # a cascade's batches: decided items only, the abstained counted in its notes
        if config.judge.cascade:
            from ragmetrics.nightly.cascade_night import CascadeSession

            # its judges share one request cap, the budget's (the planned trimming counts them all: estimate)
            capped_judge = config.judge.model_copy(update={"max_requests": capped.max_requests})
            cascade = CascadeSession(config.model_copy(update={"judge": capped_judge}), plan)
        session: JudgeSession = cascade or (engine or LocalEngine()).judge_session(capped)
        try:
            results, summary = judge_adaptively(config, dataset, plan, session, baseline=baseline, progress=progress,
                                                retrieval=retrieval)  # fmt: skip
            if cascade is not None:
                notes.extend(cascade.finish(results))
            adaptive_info = session.info()
        finally:
            session.close()
        if adaptive is not None:
            adaptive.append(summary)
        return results, adaptive_info
    rounds: list[dict[str, RunResult]] = []
    info: JudgeInfo | None = None
    for repeat in range(base.repeats):
        settings = base if repeat == 0 else base.model_copy(update={"seed": (base.seed or 0) + repeat})
        session = (engine or LocalEngine()).judge_session(settings)
        try:
            rounds.append(
                {
                    name: session.score(
                        samples,
                        metrics,
                        name=name if repeat == 0 else f"{name} (repeat {repeat})",
                        progress=progress,
                    )
                    for name, (samples, metrics) in plan.items()
                }
            )
            if repeat == 0:
                info = session.info()
        finally:
            session.close()
    out = rounds[0]
    if len(rounds) > 1:
        from ragmetrics.trust import judge_noise_stats

        for name, result in out.items():
            noise = [
                stats
                for metric in result.metadata.metrics
                if (stats := judge_noise_stats([r[name] for r in rounds], metric, seed=config.compare.seed))
                is not None
            ]
            result.trust = (result.trust or RunTrust()).model_copy(update={"noise": noise})
        if base.backend == "local" or (info is not None and info.backend == "local"):
            notes.append(
                "judge.repeats with the local judge: it is deterministic, so repeats agree exactly (noise 0)"
            )
    if base.panel is not None:  # run-wide combinations and the panel's agreement (ragmetrics.panels.night)
        from ragmetrics.panels.night import finish_panel_night, people_labels

        out, info = finish_panel_night(base.panel, out, info, people=people_labels(config.human_labels))
    return out, info
