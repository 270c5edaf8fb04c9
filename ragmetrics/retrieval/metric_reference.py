"""The metric reference generated from the registry: the CLI's one-line help and docs/metrics.md."""

from __future__ import annotations

from ragmetrics.retrieval.registry import REGISTRY
from ragmetrics.retrieval.registry.spec import NO_LEVEL


def metric_help() -> str:
    """One line per metric for the CLI's help text."""
    return "\n".join(f"  {spec.name:<12} {spec.description}" for spec in REGISTRY)


def _cell(text: str | None) -> str:
    return "-" if not text else text.replace("|", "\\|")


def render_reference() -> str:
    """The Markdown metric reference (docs/metrics.md), generated from the registry."""
    lines = [
        "# Retrieval metric reference",
        "",
        "Generated from the registry (`ragmetrics/retrieval/registry/`) by `python -m ragmetrics.retrieval.metrics`; edit the "
        "registry, not this file.",
        "",
        "## Syntax",
        "",
        "A metric string reads `name[@k][-lN]`: `@k` cuts the ranking at rank k, `-lN` makes grade >= N relevant "
        "(default 1). Rank-biased precision is `rbp.P` with persistence 0.P (`rbp.80` is p = 0.8). Names are "
        "case-insensitive. trec_eval spellings with the cutoff after an underscore (`P_10`, `recall_100`, "
        "`ndcg_cut_10`, `map_cut_10`, `success_5`) and the aliases listed below are accepted; results are keyed "
        "by the spelling you used, and `metadata.metric_settings['metrics']` records the canonical form. "
        "Two metrics take a real number after `@` instead of a cutoff: `iprec@0.3` (interpolated precision at "
        "recall 0.3; trec_eval's `iprec_at_recall_0.30`) and `rprec_mult@0.5` (precision at 0.5 R; "
        "`Rprec_mult_0.50`). `rbp_resid.P` takes a persistence as `rbp.P` does. The intent-aware metrics (`alpha_ndcg`, `err_ia`, "
        "`nerr_ia`, `nrbp`, `nnrbp`, `p_ia`, `strec`, `map_ia`) need subtopic qrels: "
        "`ragmetrics.evaluate(SubtopicQrels.from_trec(path), run, [...])` reads the TREC diversity format "
        "(`query subtopic document grade`) and scores the other metrics on its collapsed form (a document's "
        "highest grade over the subtopics); `ragmetrics retrieval` and `compare` read the qrels file in that format "
        "whenever an intent-aware metric is asked for. `udcg` takes its weights after the name: `udcg@5` is "
        "the paper's (relevant 1, irrelevant -1/3), `udcg.irr=-0.5@5` and `udcg.rel=2.irr=-1/2@10-l2` others "
        "(decimals or fractions); it reads per-passage abstention probabilities given as "
        "`evaluate(..., utilities=)` or `--utilities PATH` (see docs/utilities.md), and the relevance labels "
        "alone without them.",
        "",
        "**Aggregates.** A run's figure is the mean over queries, except the counts `num_ret`, `num_rel` and "
        "`num_q` (summed, as trec_eval prints them) and `gm_map` and `gm_bpref` (geometric mean of the "
        "per-query values floored at 1e-5, trec_eval's). Per-query values are always the plain ones (AP for "
        "gm_map), and so are the paired tests of a comparison; `metadata.metric_settings['aggregation']` "
        "records the rule, so a merged or reloaded result keeps it.",
        "",
        "**Token budgets.** `@Ntok` (or `@Nktok`, thousands) in place of `@k` cuts each query's ranking where the "
        "retrieved passages stop fitting into N tokens: `recall@512tok`, `ndcg@2ktok`, `precision@1ktok-l2`. The "
        "metric is then the `@k` metric at that query's depth k_q (precision's denominator and nDCG's ideal "
        "ranking at k_q too). A passage that straddles the budget is left out (`straddle='exclude'`, default: "
        "what fits whole; a first passage longer than the budget scores 0) or counted (`'include'`). Token "
        "counts per document come from `evaluate(..., lengths=)` (a mapping, or a `retrieval.budget.TokenLengths` "
        "built once), counted by `retrieval.budget.count_tokens(passages, tokenizer)`: whitespace words by "
        "default, or a `tokenizers` JSON file; a model's own tokenizer gives its true budget. rbp, bpref and "
        "r-precision take no budget; a retrieved document without a count is an error.",
        "",
        "## Conventions",
        "",
        "- Ranking: score descending, ties broken by document id descending (as trec_eval), so a result never "
        "depends on input order.",
        "- R is the number of documents of the query with grade >= the relevance level; N the number with "
        "0 <= grade < level (judged non-relevant). Negative grades mean judged-but-unassessed: unjudged for bpref, "
        "non-relevant (gain 0) everywhere else. Documents absent from the qrels are non-relevant and unjudged.",
        "- Query set: by default the mean is over every query of the qrels, and a qrels query absent from the "
        "run scores 0 on every metric (trec_eval -c). `query_set='intersection'` (CLI `--intersection`) gives "
        "trec_eval's default: the mean over queries both have. Run queries missing from the qrels are reported "
        "in `metadata.extra_queries` and left out.",
        "- Queries whose qrels hold no relevant document are evaluated, as trec_eval does: every metric is 0 "
        "for them (recall, map, ndcg, r-precision and bpref define 0/0 as 0) and they count in the mean.",
        "- An empty ranking scores 0 on every metric (precision without cutoff defines 0/0 as 0).",
        "",
        "## Differences from trec_eval and ranx",
        "",
        "- `hits` is averaged over queries; trec_eval's `num_rel_ret` is summed over queries.",
        "- `precision` without a cutoff is hits / retrieved (trec_eval `set_P`, ranx `precision`); trec_eval's "
        "`P` always has a cutoff.",
        "- `ndcg`/`dcg` with -lN: trec_eval ignores -l for ndcg and rbp (gain = grade always); here grades "
        "below N gain 0, as in ranx.",
        "- `rbp`: gains normalised to [0, 1] by the query's highest grade as in trec_eval; ranx uses the raw grade.",
        "- `bpref` with no judged non-relevant document: trec_eval (and ragmetrics) count each retrieved relevant "
        "document as 1; ranx produces NaN.",
        "- Tied scores: ranx's order for ties is not specified; ragmetrics and trec_eval break ties by document "
        "id descending.",
        "- Query set: ranx averages over the run's and qrels' common queries and raises on mismatches; "
        "ragmetrics scores missing queries 0 by default and reports both kinds of mismatch.",
        "",
        "## Verification",
        "",
        "- `tests/retrieval/test_trec_eval_conformance.py`: equal, to the 4 printed decimals, to trec_eval 10.0's "
        "own outputs on its test collection (default, -q, -c, -l2) for every measure both define.",
        "- `tests/retrieval/test_properties.py`: per-query equality (1e-9) with pytrec_eval on random data with "
        "tied scores and relevance levels, and with ranx on untied data.",
        "- `tests/retrieval/test_properties.py` also compares infAP (a grade of -1 pooled but unjudged), "
        "interpolated precision and 11pt_avg, Rprec_mult, set_map, gm_map, gm_bpref, num_ret and num_rel with "
        "pytrec_eval (trec_eval 9, which placed recall levels with floor(r R + 0.9) where trec_eval 10 rounds: "
        "compared where both agree).",
        "- `tests/retrieval/test_ir_measures.py`: ERR@k equal to ir_measures' (gdeval, 5 decimals), nERR@k to "
        "gdeval's ERR of the run over that of the ideal run, Judged@k to ir_measures'.",
        "- `tests/retrieval/test_seed_cases.py`: the shared acceptance cases.",
        "- `tests/retrieval/test_udcg.py`: udcg equal to 1e-12 to the values GiovanniTRA/UDCG's "
        "`compute_udcg_score` gives on its sample data and on random passage lists (a fixture of its outputs); "
        "`python benchmarks/check_udcg_reference.py` runs the reference code itself on thousands more.",
        "- trec_eval reads stale memory for a query whose judgements are all negative; ragmetrics scores such a "
        "query 0 on every metric.",
        "",
        "## Metrics",
        "",
        "| metric | description | cutoff | trec_eval | ranx | aliases |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in REGISTRY:
        aliases = ", ".join(f"`{a}`" for a in spec.aliases)
        name = f"`{spec.name}.P`" if spec.persistence else f"`{spec.name}`"
        lines.append(
            f"| {name} | {_cell(spec.description)} | {'yes' if spec.cutoff else 'no'} | "
            f"{_cell(spec.trec_eval)} | {_cell(spec.ranx)} | {_cell(aliases)} |"
        )
    for spec in REGISTRY:
        lines += ["", f"### {spec.name}", "", spec.description, "", f"- Formula: `{spec.formula}`"]
        levels = "not accepted" if spec.kind in NO_LEVEL else "accepted"
        lines.append(f"- Cutoff `@k`: {'accepted' if spec.cutoff else 'not accepted'}; `-lN`: {levels}")
        if spec.persistence:
            lines.append(
                "- Persistence: required, written `rbp.P` (bare `rbp` means p = 0.9, trec_eval's default)"
            )
        if spec.weights:
            lines.append(
                "- Weights: `.rel=W` (relevant, default 1) and `.irr=W` (irrelevant, default -1/3) after the "
                "name, decimals or fractions: `udcg.irr=-0.5@5`"
            )
        lines.append(f"- trec_eval: {spec.trec_eval or 'not defined'}; ranx: {spec.ranx or 'not defined'}")
        if spec.aliases:
            lines.append(f"- Aliases: {', '.join(f'`{a}`' for a in spec.aliases)}")
        if spec.notes:
            lines.append(f"- Notes: {spec.notes}")
        lines.append(f"- Reference: {spec.citation}")
    return "\n".join(lines) + "\n"
